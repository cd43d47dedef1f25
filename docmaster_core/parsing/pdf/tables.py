"""Stage "tables": table regions next to "Table N" captions, and tables found by
layout alone (ruled grids, aligned numeric columns).

Rows of a region come from ``page.find_tables(clip=region, strategy="lines",
use_layout=False)`` when the region is a ruled grid (kept only when its words agree
with the page's words, and only within the per-document ``find_tables`` budget),
else from a word grid (rows by y, columns by gaps in the x-coverage).
"""
from __future__ import annotations

import math
import re
import time
from collections import defaultdict

import numpy as np

from ...model import NodeType
from ..base import clean_text, fix_ligatures
from .common import Line, overlap_x, box_union
from .region_env import Box, RegionEnv


def rows_to_markdown(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    ncol = max(len(r) for r in rows)
    norm = [[(c or "").replace("|", "\\|").replace("\n", " ").strip() for c in r] + [""] * (ncol - len(r)) for r in rows]
    lines = ["| " + " | ".join(norm[0]) + " |", "|" + "---|" * ncol]
    lines += ["| " + " | ".join(r) + " |" for r in norm[1:]]
    return "\n".join(lines)


def word_grid(words: list[tuple], body: float) -> list[list[str]]:
    """Rows x columns of a borderless table from ``page.get_text("words")`` tuples:
    rows by clustering word centres in y, columns by gaps in the x-coverage."""
    if not words:
        return []
    ws = sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0]))
    rows: list[list[tuple]] = []
    for w in ws:
        yc = (w[1] + w[3]) / 2
        if rows:
            r = rows[-1]
            ryc = sum((q[1] + q[3]) / 2 for q in r) / len(r)
            rh = max(q[3] - q[1] for q in r)
            if abs(yc - ryc) <= 0.45 * max(rh, w[3] - w[1], 2.0):
                r.append(w)
                continue
        rows.append([w])
    if len(rows) < 2:
        return []
    x0 = min(w[0] for w in ws)
    x1 = max(w[2] for w in ws)
    n = int(x1 - x0) + 2
    cover = np.zeros(n, dtype=np.int32)
    for w in ws:
        a = int(w[0] - x0)
        b = int(w[2] - x0) + 1
        cover[a:b] += 1
    # a column gap is a run (at least half a text height wide) covered by few rows
    # (spanning header cells may cross it)
    hmed = float(np.median([w[3] - w[1] for w in ws]))
    min_gap = max(3.0, 0.5 * hmed)
    allowed = int(0.12 * len(rows))
    cuts = []
    run_start = None
    for i in range(n):
        if cover[i] <= allowed:
            if run_start is None:
                run_start = i
        else:
            if run_start is not None and i - run_start >= min_gap:
                cuts.append(x0 + (run_start + i) / 2)
            run_start = None
    bounds = [-math.inf] + cuts + [math.inf]
    out = []
    for r in rows:
        cells = [[] for _ in range(len(bounds) - 1)]
        for w in sorted(r, key=lambda q: q[0]):
            c = (w[0] + w[2]) / 2
            k = int(np.searchsorted(np.asarray(cuts), c)) if cuts else 0
            cells[k].append(w[4])
        out.append([clean_text(" ".join(c)) for c in cells])
    centres = [sum((q[1] + q[3]) / 2 for q in r) / len(r) for r in rows]
    return join_wrapped_cells(out, centres, hmed)


def join_wrapped_cells(rows: list[list[str]], centres: list[float], h: float) -> list[list[str]]:
    """Join the continuation lines of multi-line cells to their row.

    A grid row is a continuation of the row above when it is closer to it than the
    table's row pitch (centre distance <= 1.5 text heights and < 0.8 x the 75th
    percentile of the row pitches, or it starts in lower case), holds no number,
    and leaves empty a cell that the row above fills (in the column headers, above
    the first row with a number, any such tight row). Its cells are appended to the
    cells above with a space.

    Args:
        rows: The grid's cell texts, row by row (top to bottom), equal lengths.
        centres: Vertical centre of each row in PDF points, len(rows).
        h: The table's median text height in PDF points.

    Returns:
        The rows with continuation rows merged into the row above (a new list).
    """
    if len(rows) < 2:
        return rows
    pitch = np.diff(np.asarray(centres, dtype=float))
    p75 = float(np.percentile(pitch, 75)) if pitch.size else 0.0
    has_num = [any(_NUM_TOKEN_RE.match(t) for x in r for t in x.split()) for r in rows]
    first_num = has_num.index(True) if any(has_num) else len(rows)
    out = [list(rows[0])]
    last_c = centres[0]
    for k, (r, c) in enumerate(zip(rows[1:], centres[1:]), start=1):
        prev = out[-1]
        d = c - last_c
        filled = [bool(x) for x in r]
        text_only = not any(_NUM_TOKEN_RE.match(t) for x in r for t in x.split())
        gap_left = any(p and not f for p, f in zip(prev, filled))
        first = next((x for x in r if x), "")
        header = k < first_num  # column headers wrapped onto a second line
        tight = d <= 1.5 * max(h, 1.0) and (d < 0.8 * p75 or first[:1].islower() or header)
        if tight and text_only and gap_left and any(filled) and not prev[0].endswith(":"):
            out[-1] = [(p + " " + x).strip() if x else p for p, x in zip(prev, r)]
        else:
            out.append(list(r))
        last_c = c
    return out


def _words_in(words: list[tuple], rb: tuple) -> list[tuple]:
    """Words whose centre lies inside the box ``rb``."""
    return [w for w in words if rb[0] - 1 <= (w[0] + w[2]) / 2 <= rb[2] + 1 and rb[1] - 1 <= (w[1] + w[3]) / 2 <= rb[3] + 1]


def _is_ruled_grid(vrules: list[tuple], rb: tuple) -> bool:
    """True when vertical rules cover >= 3 distinct x positions over >= half of the
    region height each (a ruled grid that ``find_tables(strategy="lines")`` handles)."""
    if len(vrules) < 3:
        return False
    height = max(rb[3] - rb[1], 1.0)
    cover: dict[int, float] = defaultdict(float)
    for v in vrules:
        cover[int(round((v[0] + v[2]) / 2 / 3.0))] += v[3] - v[1]
    return sum(1 for c in cover.values() if c >= 0.5 * height) >= 3


def _rows_agree_with_words(rows: list[list[str]], words: list[tuple]) -> bool:
    """Guard against garbled ``find_tables`` output: its tokens must mostly be the
    page's words in the region (Jaccard >= 0.5)."""
    toks = {t for r in rows for c in r for t in (c or "").split()}
    ws = {t for w in words for t in clean_text(w[4]).split()}
    if not toks or not ws:
        return False
    return len(toks & ws) / len(toks | ws) >= 0.5


# --------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------


def _page_words(env: RegionEnv, rb: Box, exponents: bool = False) -> list[tuple]:
    """Words ``(x0, y0, x1, y1, text)`` whose centre lies in ``rb``: PyMuPDF's words
    (the page's, or clipped to ``rb``), or, when the region's lines hold exponents,
    words built from the characters (``rawdict``) so that they stay marked
    ("10^20"). Ligature and private-use glyphs are mapped like the page's lines, a
    glyph between digits is a decimal point, a lone currency sign joins its number."""
    import pymupdf

    from .spans import PUA_SHIFT

    page = env.doc[env.pno]
    words: list[tuple] = []
    if exponents:
        try:
            words = _char_words(page.get_text("rawdict", clip=pymupdf.Rect(rb[0] - 1, rb[1] - 1, rb[2] + 1, rb[3] + 1)))
        except Exception:  # PyMuPDF's own words below
            words = []
    if not words:
        raw = env.p.words if env.p.words is not None else page.get_text("words", clip=pymupdf.Rect(*rb))
        words = [(w[0], w[1], w[2], w[3], _DIGIT_GLYPH_RE.sub(".", w[4]).translate(PUA_SHIFT)) for w in raw]
    table = env.ctx.ligatures
    out = []
    for w in words:
        t = fix_ligatures(w[4])
        if table:
            t = t.translate(table)
        if t.strip():
            out.append((w[0], w[1], w[2], w[3], t))
    return _words_in(_attach_currency(out), rb)


def _char_words(d: dict) -> list[tuple]:
    """Words from a ``rawdict`` page dict: characters joined until a space or a gap
    of a quarter em; a raised smaller digit span after a number gets a "^"."""
    from .spans import is_exponent, pua_text

    words: list[tuple] = []
    for b in d.get("blocks", ()):
        for ln in b.get("lines", ()):
            cur: list = []  # [x0, y0, x1, y1, text]
            prev_span: dict = {}
            for s in ln.get("spans", ()):
                chars = s.get("chars", ())
                if not chars:
                    continue
                size = float(s.get("size", 0.0)) or 8.0
                raw = "".join(c["c"] for c in chars)
                exp = bool(cur) and is_exponent(prev_span, s, cur[4], raw)
                for c in chars:
                    ch = c["c"]
                    cb = c["bbox"]
                    if ch.isspace():
                        if cur:
                            words.append(tuple(cur))
                        cur = []
                        continue
                    if cur and not exp and cb[0] - cur[2] > 0.25 * size:
                        words.append(tuple(cur))
                        cur = []
                    if not cur:
                        cur = [cb[0], cb[1], cb[2], cb[3], ""]
                    if exp:
                        cur[4] += "^"
                        exp = False
                    cur[4] += pua_text(ch, s.get("font", "")) if 0xE000 <= ord(ch) <= 0xF8FF else ch
                    cur[0], cur[1] = min(cur[0], cb[0]), min(cur[1], cb[1])
                    cur[2], cur[3] = max(cur[2], cb[2]), max(cur[3], cb[3])
                prev_span = s
            if cur:
                words.append(tuple(cur))
    return [(w[0], w[1], w[2], w[3], _DIGIT_GLYPH_RE.sub(".", w[4])) for w in words]


_CURRENCY = {"$", "€", "£", "¥", "US$"}


def _attach_currency(words: list[tuple]) -> list[tuple]:
    """A lone currency sign ("$") joined to the number right of it on its line
    ("$ 1,234" -> "$1,234"), so that it does not make a column of its own."""
    out: list[tuple] = []
    ws = sorted(words, key=lambda w: (round((w[1] + w[3]) / 2), w[0]))
    i = 0
    while i < len(ws):
        w = ws[i]
        if w[4] in _CURRENCY and i + 1 < len(ws):
            n = ws[i + 1]
            h = max(w[3] - w[1], 1.0)
            same_row = abs((n[1] + n[3]) / 2 - (w[1] + w[3]) / 2) < 0.5 * h
            if same_row and 0 <= n[0] - w[2] < 6 * h and n[4][:1].isdigit() or (same_row and n[4][:1] == "(" and 0 <= n[0] - w[2] < 6 * h):
                out.append((w[0], min(w[1], n[1]), n[2], max(w[3], n[3]), w[4] + n[4]))
                i += 2
                continue
        out.append(w)
        i += 1
    return out


_DIGIT_GLYPH_RE = re.compile(r"(?<=\d)[\ue000-\uf8ff](?=\d)")


def _ruled_rows(env: RegionEnv, rb: Box, words: list[tuple]) -> tuple[list[list[str]], str]:
    """Rows from ``find_tables(strategy="lines")`` on a ruled region (timed against
    the budget); ``([], reason)`` when it finds nothing the page's words confirm."""
    import pymupdf

    ts = time.perf_counter()
    rows: list[list[str]] = []
    method = ""
    try:
        tabs = env.doc[env.pno].find_tables(
            clip=pymupdf.Rect(rb[0] - 2, rb[1] - 2, rb[2] + 2, rb[3] + 2),
            use_layout=False, strategy="lines",
        )
        env.n_calls += 1
        best = max(tabs.tables, key=lambda t: t.row_count * t.col_count, default=None)
        if best is not None and best.row_count >= 2 and best.col_count >= 2:
            cand_rows = [[clean_text(c or "") for c in r] for r in best.extract()]
            if _rows_agree_with_words(cand_rows, words):
                rows = cand_rows
                method = "find_tables"
    except Exception as exc:  # find_tables is best effort; the word grid follows
        method = f"find_tables failed: {type(exc).__name__}"
    dt = time.perf_counter() - ts
    env.t_tables += dt
    env.ctx.table_seconds += dt
    return rows, method


def _region_rows(env: RegionEnv, region_lines: list[Line], ruled: bool = True) -> tuple[Box, list[list[str]], str]:
    """Box (widened to its horizontal rules), rows and method of a table region;
    ``find_tables`` is tried only when ``ruled`` and the region is a ruled grid."""
    body = env.body
    rb = box_union((l.x0, l.y0, l.x1, l.y1) for l in region_lines)
    dr = env.drawings()
    hr = [h for h in dr["hrules"] if overlap_x(h[0], h[2], rb[0], rb[2]) > 0.5 * (h[2] - h[0])
          and rb[1] - 1.2 * body <= h[1] <= rb[3] + 1.2 * body]
    if hr:
        rb = box_union([rb] + hr)
    vr = [v for v in dr["vrules"] if v[0] >= rb[0] - 2 and v[2] <= rb[2] + 2 and v[1] >= rb[1] - 2 and v[3] <= rb[3] + 2]
    rows: list[list[str]] = []
    method = ""
    words = None
    st = env.ctx.settings
    exps = any("^" in l.text for l in region_lines)
    if ruled and st.tables and len(hr) >= 2 and _is_ruled_grid(vr, rb) and env.ctx.table_time_left():
        words = _page_words(env, rb, exps)
        rows, method = _ruled_rows(env, rb, words)
    if not rows and st.tables:
        if words is None:
            words = _page_words(env, rb, exps)
        rows = word_grid(words, body)
        method = "word-grid"
    return rb, rows, method


def table_sides(env: RegionEnv, cl: list[Line], cb: Box, rng: tuple[float, float]) -> tuple[bool, bool]:
    """``(below, above)``: whether a block of non-prose lines starts within four body lines
    below / above the table caption ``cl`` (box ``cb``), i.e. where its table may be."""
    body = env.body
    rx0, rx1 = rng
    down = env.neighbours(cl, cb, rx0, rx1, 1)
    up = env.neighbours(cl, cb, rx0, rx1, -1)
    first_down = next((l for l in down if l.role not in ("header", "pagenum")), None)
    first_up = next((l for l in up if l.role not in ("header", "pagenum")), None)
    below = first_down is not None and not env.is_prose(first_down) and first_down.role not in ("heading?", "region") \
        and first_down.y0 - cb[3] < 4 * body
    above = first_up is not None and not env.is_prose(first_up) and first_up.role not in ("heading?", "region") \
        and cb[1] - first_up.y1 < 4 * body
    return below, above


def table_region(env: RegionEnv, gid: int, cl: list[Line], cb: Box, rng: tuple[float, float], caption: str,
                 prefer: int = 0) -> None:
    """The TABLE item of the caption group ``gid`` (caption lines ``cl``, box ``cb``):
    the non-prose block above or below the caption, or a raster image there; appended to
    ``env.p.items``. With a block on both sides, ``prefer`` picks the side (1: below, -1:
    above: the page's convention, :func:`caption_side`); 0: the side with more text."""
    rx0, rx1 = rng
    region_lines: list[Line] = []
    below, above = table_sides(env, cl, cb, rng)
    options = {d: env.grow(cl, cb, rx0, rx1, d)[0] for d, ok in ((1, below), (-1, above)) if ok}
    options = {d: ls for d, ls in options.items() if ls}
    if prefer and (prefer in options or len(options) > 1):
        # the page's side; one line there is no table (2202.00535's "Table 1" sits under examples set as
        # prose): the caption then takes nothing, the block on its other side being the next caption's, and the
        # layout model is asked for its table (a caption-only table gates the page)
        region_lines = options.get(prefer, [])
        if len(region_lines) < 2:
            region_lines = []
    elif options:
        # the side with more table text (ties: below, the usual convention)
        region_lines = max(options.values(), key=lambda ls: sum(l.nchars for l in ls))
    # a raster table image next to the caption
    img_box = None
    for k, b in enumerate(env.big_imgs):
        if k in env.consumed_imgs:
            continue
        if overlap_x(b[0], b[2], rx0, rx1) > 0.5 * (b[2] - b[0]) and (
            0 <= b[1] - cb[3] < 3 * env.body or 0 <= cb[1] - b[3] < 3 * env.body
        ):
            img_box = b
            env.consumed_imgs.add(k)
            break
    rows: list[list[str]] = []
    method = ""
    rb = None
    if region_lines:
        rb, rows, method = _region_rows(env, region_lines)
        for l in region_lines:
            l.role = "region"
    boxes = [cb] + ([rb] if rb else []) + ([img_box] if img_box else [])
    md = rows_to_markdown(rows) if rows else ""
    text = caption + ("\n\n" + md if md else "")
    env.p.items.append({
        "type": NodeType.TABLE, "bbox": box_union(boxes), "text": text, "caption_group": gid,
        "extra": {"caption": caption, "rows": rows, "markdown": md, "method": method or ("image" if img_box else "caption-only"),
                  "region_bbox": list(rb) if rb else (list(img_box) if img_box else None)},
    })


def caption_side(sides: list[tuple[bool, bool]]) -> int:
    """The page's table-caption convention from the captions whose table can only be on one
    side (:func:`table_sides` of each table caption): 1 when more of them have their table
    below, -1 when more have it above (ResNet's "Table 5" under the last table of its column),
    0 when none or as many. A caption with a block on both sides (a table above, the next table
    below) then takes the side the page's others take: ResNet's "Table 3" took "Table 4"'s rows
    below it, having more text, and "Table 4" those of "Table 5" (a newcomer's wrong answer)."""
    below = sum(b and not a for b, a in sides)
    above = sum(a and not b for b, a in sides)
    return (below > above) - (above > below)


def _page_rows(lines: list[Line]) -> list[list[Line]]:
    """Free lines (no role yet) grouped into visual rows: lines of one column whose
    vertical extents overlap, top to bottom; a row's lines sorted by x."""
    rows: list[list[Line]] = []
    for col in sorted({l.col for l in lines}):
        ls = sorted((l for l in lines if l.col == col), key=lambda l: l.yc)
        cur: list[Line] = []
        for l in ls:
            if cur:
                lo = max(min(q.y0 for q in cur), l.y0)
                hi = min(max(q.y1 for q in cur), l.y1)
                if hi - lo >= 0.5 * min(l.h, max(q.h for q in cur)):
                    cur.append(l)
                    continue
                rows.append(sorted(cur, key=lambda q: q.x0))
            cur = [l]
        if cur:
            rows.append(sorted(cur, key=lambda q: q.x0))
    return rows


def _row_text(r: list[Line]) -> str:
    return " ".join(l.text for l in r)


def _is_label_row(env: RegionEnv, r: list[Line]) -> bool:
    """A short non-prose row that may sit inside a table (a group label such as
    "Operating expenses:", a units line, a title)."""
    t = _row_text(r)
    return len(t) <= 80 and not t.rstrip().endswith(".") and all(not env.is_prose(l) for l in r) \
        and all(l.role == "" for l in r) and sum(len(l.text.split()) for l in r) <= 10


def _numeric_blocks(env: RegionEnv, rows: list[list[Line]]) -> list[tuple[int, int]]:
    """Index ranges ``[a, b)`` of row runs that form a borderless numeric table:
    >= 3 rows ending in >= 2 number-like tokens, at least half the run, label rows
    in between, row gaps <= 2.5 text heights."""
    body = env.body
    numeric = [is_numeric_row_text(_row_text(r)) and all(not env.is_prose(l) for l in r) for r in rows]
    out = []
    i = 0
    n = len(rows)
    while i < n:
        if not numeric[i]:
            i += 1
            continue
        j = i + 1
        last_num = i
        while j < n:
            prev_y1 = max(q.y1 for q in rows[j - 1])
            gap = min(q.y0 for q in rows[j]) - prev_y1
            if rows[j][0].col != rows[i][0].col or gap > 2.5 * max(body, 4.0) or gap < -0.5 * body:
                break
            if numeric[j]:
                last_num = j
            elif not _is_label_row(env, rows[j]):
                break
            j += 1
        run = range(i, last_num + 1)
        k = sum(1 for m in run if numeric[m])
        if k >= 3 and k >= 0.5 * len(run):
            out.append((i, last_num + 1))
        i = last_num + 1
    return out


def layout_tables(env: RegionEnv) -> None:
    """Tables without a caption, found by layout: runs of rows ending in aligned
    numbers (financial statements, specification sheets; see
    :func:`_numeric_blocks`), with up to three header/title rows directly above them
    (column years, units, the statement's title). The rows come from the word grid
    (multi-line cells joined); the title rows (one cell only, above the column
    headers) become the table's caption. Lines taken get ``role = "region"`` so
    their bold row labels are never headings. Appended to ``env.p.items``."""
    if not env.ctx.settings.tables:
        return
    free = [l for l in env.lines if l.role == ""]
    # cheap gate: at least three lines ending in a number-like token
    if sum(1 for l in free if _NUM_TOKEN_RE.match(l.text.rsplit(None, 1)[-1])) < 3:
        return
    rows = _page_rows(free)
    for a, b in _numeric_blocks(env, rows):
        top = a
        while top > 0 and a - top < 3:
            r = rows[top - 1]
            gap = min(q.y0 for q in rows[top]) - max(q.y1 for q in r)
            if r[0].col != rows[a][0].col or gap > 2.5 * max(env.body, 4.0) or not _is_label_row(env, r):
                break
            top -= 1
        block = rows[top:b]
        lines = [l for r in block for l in r]
        if any(l.role for l in lines):
            continue  # taken by an earlier block
        title_rows = []
        for r in block:
            if len(r) == 1 and not is_numeric_row_text(r[0].text) and not any(ch.isdigit() for ch in r[0].text[-4:]) \
                    and len(title_rows) < 2 and r is block[len(title_rows)] and r[0].text[:1] != "(":
                title_rows.append(r)
            else:
                break
        grid_lines = [l for r in block[len(title_rows):] for l in r]
        if len(grid_lines) < 3:
            continue
        # the word grid only: find_tables glues words of these grids ("Accountsreceivable")
        rb, rows_, method = _region_rows(env, grid_lines, ruled=False)
        if len(rows_) < 3 or max((len(r) for r in rows_), default=0) < 2:
            continue
        title = clean_text(" ".join(_row_text(r) for r in title_rows))
        for l in lines:
            l.role = "region"
        box = box_union([rb] + [(l.x0, l.y0, l.x1, l.y1) for l in lines])
        md = rows_to_markdown(rows_)
        env.p.items.append({
            "type": NodeType.TABLE, "bbox": box, "text": (title + "\n\n" + md) if title else md, "caption_group": None,
            "extra": {"caption": title, "rows": rows_, "markdown": md, "method": "layout-" + method,
                      "region_bbox": list(rb)},
        })


_NUM_TOKEN_RE = re.compile(r"^[\(\[]?[-–−+$€£¥]?\s?\d[\d,.]*%?[\)\]]?$|^[-–—]$|^n/?a$", re.IGNORECASE)


def is_numeric_row_text(text: str) -> bool:
    """True when a line ends in two or more number-like tokens ("1,234", "(88)",
    "12.5%", "—") after some label text: the shape of a statement/spec-sheet row."""
    toks = text.split()
    k = 0
    for t in reversed(toks):
        if _NUM_TOKEN_RE.match(t):
            k += 1
        else:
            break
    return k >= 2
