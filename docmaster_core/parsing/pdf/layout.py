"""Stage "page layout": columns, visual lines, running headers/footers, body style
and the document title."""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Callable

import numpy as np

from ...text.words import letters_key
from ..base import clean_text, heading_numbering, is_caption, join_lines
from .common import EQNUM_RE, FORM_FIELD_RE, PAGENUM_RE, Line, PageInfo
from .spans import merge_pieces


def _find_gutter(lines: list[Line], width: float) -> float | None:
    """x of the gap between two text columns, or None for a single-column page."""
    cand = [l for l in lines if l.nchars >= 15 and l.role == ""]
    if len(cand) < 8:
        return None
    x0 = np.fromiter((l.x0 for l in cand), float, len(cand))
    x1 = np.fromiter((l.x1 for l in cand), float, len(cand))
    gs = np.arange(0.36 * width, 0.64 * width, 2.0)
    cross = ((x0[:, None] < gs[None, :] - 2.0) & (x1[:, None] > gs[None, :] + 2.0)).sum(0)
    left = (x1[:, None] <= gs[None, :] + 2.0).sum(0)
    right = (x0[:, None] >= gs[None, :] - 2.0).sum(0)
    ok = (left >= 4) & (right >= 4) & (np.minimum(left, right) >= 0.15 * len(cand)) & (cross <= 0.35 * len(cand))
    if not ok.any():
        return None
    score = np.where(ok, cross * 1000 + np.abs(gs - width / 2), np.inf)
    return float(gs[int(np.argmin(score))])


def _find_gutters(lines: list[Line], width: float) -> list[float]:
    """x positions of the vertical whitespace gaps between text columns (empty for a
    single-column page).

    Gutter detection over line boxes: lines wider than 60 % of the text width are
    full-width (titles, single-column paragraphs, spanning figures) and left out; a
    gutter is a strip at least 4 pt wide that at most 10 % of the remaining lines
    cross, with >= 4 lines wholly inside each resulting column and the columns side
    by side (their y-ranges overlap). Three or more columns come from this search;
    two columns from :func:`_find_gutter` (all lines, page middle), retried on the
    narrow lines alone when full-width text dominates the page.
    """
    cand = [l for l in lines if l.nchars >= 8 and l.role == ""]
    if len(cand) < 8:
        return []
    tx0 = min(l.x0 for l in cand)
    tx1 = max(l.x1 for l in cand)
    tw = max(tx1 - tx0, 1.0)
    narrow = [l for l in cand if l.w <= 0.6 * tw]
    gut = _multi_gutters(narrow, tx0, tx1) if len(narrow) >= 12 else []
    if len(gut) == 2 and _columns_are_text(narrow, gut, tx0, tx1):
        return gut
    g = _find_gutter(lines, width)
    if g is None and len(narrow) >= 8 and len(narrow) < len(cand):
        g = _find_gutter(narrow, width)
        if g is not None and not _columns_are_text(narrow, [g], tx0, tx1):
            g = None
    return [g] if g is not None else []


def _columns_are_text(ls: list[Line], gutters: list[float], tx0: float, tx1: float) -> bool:
    """True when the columns that ``gutters`` cut are columns of running text (not
    the columns of a table or a figure): each holds >= 5 lines of >= 3 words that
    mostly fill its width, and the columns have similar widths."""
    bounds = [tx0] + list(gutters) + [tx1]
    widths = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        inside = [l for l in ls if l.x0 >= a - 2.0 and l.x1 <= b + 2.0]
        wordy = [l for l in inside if l.nwords >= 3]
        if len(wordy) < 5 or len(wordy) < 0.6 * len(inside):
            return False
        cw = b - a
        fill = float(np.median([l.w for l in wordy]))
        if fill < 0.6 * (cw - 12.0):
            return False
        widths.append(cw)
    return max(widths) <= 1.8 * min(widths)


def _multi_gutters(ls: list[Line], tx0: float, tx1: float) -> list[float]:
    """Gutters of a page with three or more columns (see :func:`_find_gutters`)."""
    n = len(ls)
    x0 = np.fromiter((l.x0 for l in ls), float, n)
    x1 = np.fromiter((l.x1 for l in ls), float, n)
    gs = np.arange(tx0 + 0.12 * (tx1 - tx0), tx1 - 0.12 * (tx1 - tx0), 1.0)
    if gs.size == 0:
        return []
    cross = ((x0[:, None] < gs[None, :] - 1.0) & (x1[:, None] > gs[None, :] + 1.0)).sum(0)
    free = cross <= max(1, int(0.1 * n))
    gut: list[float] = []
    k = 0
    while k < gs.size:
        if not free[k]:
            k += 1
            continue
        j = k
        while j + 1 < gs.size and free[j + 1]:
            j += 1
        if gs[j] - gs[k] >= 3.0:
            run = np.arange(k, j + 1)
            best = run[cross[run] == cross[run].min()]
            gut.append(float(gs[best].mean()))
        k = j + 1
    if len(gut) < 2:
        return []
    bounds = [-np.inf] + gut + [np.inf]
    spans = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        inside = (x0 >= a - 1.0) & (x1 <= b + 1.0)
        if inside.sum() < 4:
            return []
        ys = [l.y0 for l, f in zip(ls, inside) if f] + [l.y1 for l, f in zip(ls, inside) if f]
        spans.append((min(ys), max(ys)))
    for (a0, a1), (b0, b1) in zip(spans[:-1], spans[1:]):
        if min(a1, b1) - max(a0, b0) < 0.3 * min(a1 - a0, b1 - b0):
            return []
    return gut


def assign_col(x0: float, x1: float, gutters: list[float] | None, width: float) -> int:
    """Column index (0 = leftmost) of a box spanning ``[x0, x1]`` on a page whose
    column gaps are at ``gutters`` (x, points); -1 when it crosses a gutter by more
    than 3 % of the page width on both sides (a full-width or spanning item)."""
    if not gutters:
        return 0
    tol = 0.03 * width
    for g in gutters:
        if x0 < g - tol and x1 > g + tol:
            return -1
    c = 0.5 * (x0 + x1)
    return sum(1 for g in gutters if c >= g)


def _visual_lines(raw: list[Line], gutters: list[float] | None = None, width: float = 612.0) -> list[Line]:
    """Merge raw lines of the same column whose vertical extents overlap.

    Pieces of one PyMuPDF block on one baseline are first joined across the gutter
    when the gap is word-like (a heading that crosses the column middle), then the
    column of each joined piece is assigned again.
    """
    if gutters:
        byb: dict[int, list[Line]] = defaultdict(list)
        for l in raw:
            byb[l.block].append(l)
        joined: list[Line] = []
        for _, ls in byb.items():
            ls.sort(key=lambda l: (l.yc, l.x0))
            runs: list[list[Line]] = []
            for l in ls:
                if runs:
                    last = runs[-1][-1]
                    same = abs(last.yc - l.yc) < 0.3 * max(last.h, l.h, 1.0)
                    gap = l.x0 - last.x1
                    wordy = last.math < 0.3 and l.math < 0.3 and last.nwords >= 1 and l.nwords >= 1
                    if same and wordy and -1.0 <= gap <= 2.5 * max(last.size, l.size, 4.0):
                        runs[-1].append(l)
                        continue
                runs.append([l])
            for run in runs:
                if len(run) > 1 and len({q.col for q in run}) > 1:
                    joined.append(merge_pieces(run))
                else:
                    joined.extend(run)
        for l in joined:
            l.col = assign_col(l.x0, l.x1, gutters, width)
        raw = joined
    out: list[Line] = []
    for col in sorted({l.col for l in raw}):
        ls = sorted((l for l in raw if l.col == col), key=lambda l: (l.yc, l.x0))
        groups: list[list[Line]] = []
        # per group: [ref (most characters), x0, x1, shortest piece length, blocks]
        stats: list[list] = []
        for l in ls:
            placed = False
            llen = len(l.text.replace(" ", ""))
            for gi in range(max(0, len(groups) - 4), len(groups)):
                ref, gx0, gx1, gmin, gblocks = stats[gi]
                lo = ref.y0 if ref.y0 > l.y0 else l.y0
                hi = ref.y1 if ref.y1 < l.y1 else l.y1
                mh = min(ref.h, l.h)
                same = (hi - lo) >= 0.5 * mh if mh > 1.0 else abs(ref.yc - l.yc) < 1.5
                if not same:
                    continue
                if l.x0 < gx1 - 1.0 and l.x1 > gx0 + 1.0:
                    continue  # overlaps horizontally: a different line (e.g. overprint)
                gap = l.x0 - gx1 if l.x0 >= gx1 - 1.0 else gx0 - l.x1
                em = max(ref.size, l.size, 4.0)
                small = llen <= 8 or gmin <= 8
                same_block = l.block in gblocks
                limit = max(4.0 * em, 30.0) if same_block else (1.5 * em if small else 0.45 * em)
                if gap > limit and not EQNUM_RE.fullmatch(l.text.strip()):
                    continue
                if not same_block and is_caption(l.text) is not None:
                    continue
                groups[gi].append(l)
                stats[gi] = [l if l.nchars > ref.nchars else ref, min(gx0, l.x0), max(gx1, l.x1), min(gmin, llen),
                             gblocks | {l.block}]
                placed = True
                break
            if not placed:
                groups.append([l])
                stats.append([l, l.x0, l.x1, llen, {l.block}])
        out.extend(merge_pieces(g) for g in groups)
    return out


def page_layout(p: PageInfo, lines: list[Line]) -> None:
    """Columns of the page, the column of each raw line, and the visual lines
    (``p.gutters``, ``p.lines`` sorted by y then x)."""
    p.gutters = _find_gutters(lines, p.width)
    for l in lines:
        l.col = assign_col(l.x0, l.x1, p.gutters, p.width)
    p.lines = sorted(_visual_lines(lines, p.gutters, p.width), key=lambda l: (l.y0, l.x0))


_RULE_RE = re.compile(r"^[-_=*~.\s]{5,}$")
_DASHED_PAGENUM_RE = re.compile(r"^(?:[-–—]\s*\d{1,4}\s*[-–—]|page\s+\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?)$",
                                re.IGNORECASE)


def _running_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", "", text.strip().lower()))


def _labels_its_row(l: Line, p: PageInfo, rep: set, band: str) -> bool:
    """Whether a line without letters ("17.") shares its row with a line of words that is no running
    text ("NOTICE"): a clause number printed near the top of a page, whose digits-blind text recurs
    there on other pages, not a running header."""
    if any(ch.isalpha() for ch in l.text):
        return False
    return any(q is not l and not q.role and min(q.y1, l.y1) - max(q.y0, l.y0) > 0.5 * min(q.y1 - q.y0, l.y1 - l.y0)
               and sum(ch.isalpha() for ch in q.text) >= 3 and (band, _running_key(q.text.strip())) not in rep
               for q in p.lines)


def mark_headers_footers(pages: list[PageInfo]) -> None:
    """Mark running text so it stays out of the content (roles ``header`` and ``pagenum``).

    * Lines in the top or bottom 12 % of the page whose text (digits ignored) recurs on
      at least a quarter of the pages (2 pages in short documents): running headers
      and footers.
    * Anywhere on the page: lines of 4-25 words whose text recurs on at least
      ``max(3, 30 %)`` of the pages (a filing's redaction note "***Confidential
      Information has been omitted ..." printed where the original page broke; not
      when such lines are over 15 % of all lines: then they are the content), rule
      lines of dashes or underscores, page numbers written ``-18-``, ``Page 3 of 9`` or
      ``Page 3/9``, and a bare number or roman numeral that is the first or last line left
      on a page.
    * In a one-page document, its last line when it stands alone in the bottom 12 % far
      below the text (more than a tenth of the page and five line heights): the footer.
    * Short lines (at most 6 words, 3 letters or more) on the row of a page number whose
      text recurs on at least ``max(3, 30 %)`` of the pages: the rest of a footer printed
      wherever the page's content ended ("AZUL–ATR  Page 3/9  Amendment N° 1" half-way down
      a page), too short for the rule above.
    """
    n = len(pages)
    keys: dict[tuple, set[int]] = defaultdict(set)
    anywhere: dict[str, set[int]] = defaultdict(set)
    sizes: dict[str, Counter] = defaultdict(Counter)
    short: dict[str, set[int]] = defaultdict(set)
    for pno, p in enumerate(pages):
        for l in p.lines:
            t = l.text.strip()
            if sum(ch.isalpha() for ch in t) >= 15 and 4 <= len(t.split()) <= 25:
                k = _running_key(t)
                anywhere[k].add(pno)
                sizes[k][round(l.size * 2) / 2] += 1
            if len(t.split()) <= 6 and sum(ch.isalpha() for ch in t) >= 3:
                short[_running_key(t)].add(pno)
            band = "t" if l.y1 < 0.12 * p.height else ("b" if l.y0 > 0.88 * p.height else "")
            if not band:
                continue
            if PAGENUM_RE.match(t):
                l.role = "pagenum"
                continue
            keys[(band, _running_key(t))].add(pno)
    need = max(2, math.ceil(0.25 * n)) if n >= 3 else 2
    rep = {k for k, v in keys.items() if len(v) >= need}
    need_any = max(3, math.ceil(0.3 * n))
    rep_any = {k for k, v in anywhere.items() if len(v) >= need_any} if n >= 3 else set()
    n_lines = sum(len(p.lines) for p in pages)
    if sum(len(anywhere[k]) for k in rep_any) > 0.15 * n_lines:
        rep_any = set()  # the repeated lines are the document itself (a form, a generated report), not running text
    for p in pages:
        for l in p.lines:
            if l.role:
                continue
            t = l.text.strip()
            band = "t" if l.y1 < 0.12 * p.height else ("b" if l.y0 > 0.88 * p.height else "")
            if band and (band, _running_key(t)) in rep and not _labels_its_row(l, p, rep, band):
                l.role = "header"
            elif (_running_key(t) in rep_any and round(l.size * 2) / 2 == sizes[_running_key(t)].most_common(1)[0][0]) \
                    or _RULE_RE.match(t):
                l.role = "header"  # (the title, printed larger on page 1 than in the running header, stays)
            elif _DASHED_PAGENUM_RE.match(t):
                l.role = "pagenum"
        if n >= 3:  # the rest of a footer on a page number's row
            rows = [(l.y0, l.y1) for l in p.lines if l.role == "pagenum"]
            for l in p.lines:
                if not l.role and len(short.get(_running_key(l.text.strip()), ())) >= need_any and any(
                        min(l.y1, b) - max(l.y0, a) > 0.5 * min(l.y1 - l.y0, b - a) for a, b in rows):
                    l.role = "header"
        left = sorted((l for l in p.lines if not l.role), key=lambda l: (l.y0, l.x0))
        for l in (left[:1] + left[-1:]) if len(left) >= 3 else []:
            if PAGENUM_RE.match(l.text.strip()) and l.nchars <= 8:
                l.role = "pagenum"
        if n == 1 and len(left) >= 3:
            # a one-page document has no second page to repeat its footer: its last line, alone in the
            # bottom band far below the text ("Source: GLU MOBILE INC, S-1/A, 3/19/2007"), is the footer
            last, above = left[-1], left[-2]
            height = max(1.0, last.y1 - last.y0)
            if not last.role and last.y0 > 0.88 * p.height and last.y0 - above.y1 > 0.1 * p.height \
                    and last.y0 - above.y1 > 5 * height and len(last.text.split()) <= 25:
                last.role = "header"

def body_style(pages: list[PageInfo]) -> tuple[float, str]:
    sizes: Counter = Counter()
    fonts: Counter = Counter()
    for p in pages:
        for l in p.lines:
            if l.role:
                continue
            if l.size > 0:
                sizes[round(l.size * 2) / 2] += l.nchars
            fonts[l.font] += l.nchars
    size = sizes.most_common(1)[0][0] if sizes else 0.0
    font = fonts.most_common(1)[0][0] if fonts else ""
    return float(size), font

FILING_LABEL_RE = re.compile(r"^(?:ex(?:hibit)?[\s.\-]*\d+[\w.\-()]*|execution (?:copy|version)|confidential\w*|"
                              r"certain .* omitted.*|\[?\*+\]?|page \d+.*|table of contents|quicklinks\b.*|for immediate release)$",
                             re.IGNORECASE)
# a legend printed in capitals above a filed contract, not its title
_LEGEND_RE = re.compile(r"omitted|confidential treatment|redacted|denotes|securities and exchange commission|"
                        r"regulation s-k|\[\*+\]", re.IGNORECASE)
# ... and the words of a notice that information was left out (not the SEC's name on a cover page)
_NOTICE_RE = re.compile(r"omitted|confidential treatment|redacted|denotes|\[\*+\]", re.IGNORECASE)
# words that name what a document is: a title line holding one is preferred
_KIND_RE = re.compile(r"\b(agreement|contract|amendment|addendum|licen[cs]e|lease|terms|conditions|plan|policy|"
                      r"memorandum|deed|charter|certificate|warrant|note|guarantee|guaranty|bylaws|consent|"
                      r"understanding|arrangement|order|statement|proposal|report|manual|guide)\b", re.IGNORECASE)


# a line naming the parties under a title: "BETWEEN", "BY AND BETWEEN X", "AMONG"
_PARTIES_RE = re.compile(r"(?:by and )?(?:between|among|amongst)\b", re.IGNORECASE)


def _continues_legend(prev: Line, l: Line, text_width: float) -> bool:
    """Whether ``l`` goes on with the legend paragraph whose last line so far is ``prev``:
    the next line (less than 0.8 of a line's height below), in capitals ("... BOTH (i)"
    counts: at least 90 % of its letters), set on the same axis (centred alike or starting
    at the same x; a title under a centred legend is often set flush left)."""
    letters = [ch for ch in l.text if ch.isalpha()]
    caps = bool(letters) and sum(ch.isupper() for ch in letters) >= 0.9 * len(letters)
    aligned = abs((l.x0 + l.x1) - (prev.x0 + prev.x1)) / 2 < 0.05 * max(text_width, 1.0) or abs(l.x0 - prev.x0) < 2.0
    return caps and aligned and 0 <= l.y0 - prev.y1 < 0.8 * max(l.size, 1.0)


# a title line cannot end on a connective: "ADDENDUM TO", "AGREEMENT OF" go on below
_OPEN_END_RE = re.compile(r"\b(?:to|of|and|for|the|between|on|by|with|in|under|&)\s*$", re.IGNORECASE)
# an attachment's label that goes on below ("Attachment B to" / "Master Franchise Agreement"): the lines it
# runs over name the agreement it is attached to, not this document's title
_ANNEX_TO_RE = re.compile(r"^(?:exhibit|schedule|annex|appendix|attachment|addendum)\s+[A-Z0-9][\w.\-]{0,5}\s+"
                          r"(?:to|of)(?:\s+the)?$", re.IGNORECASE)


def _title_line(p: PageInfo, kind_only: bool = False, headers: bool = False,
                vocabulary: Callable[[], set[str]] | None = None) -> str:
    """The title line of a document set in one size (a contract, a filing): above the
    first paragraph of prose on page 1, the first line in capitals (2-16 words) or a
    centred line in title case (<= 10 words) naming a kind of document ("Distribution
    Agreement"; not an author line) that is not a filing label ("EXHIBIT
    10.32", "Execution Copy"), a legend ("CONFIDENTIAL TREATMENT ... OMITTED"), a date
    or a page number; of several, the first that names a kind of document
    ("... AGREEMENT") rather than a party (with ``kind_only``, only such a line). Marked
    ``doctitle``; ``""`` when there is none. With ``headers``, lines taken for the running
    header (the title printed again at the top of every page) are candidates too."""
    lines = sorted((l for l in p.lines if not l.role or (headers and l.role == "header")), key=lambda l: (l.y0, l.x0))
    if not lines:
        return ""
    xs = [l.x0 for l in lines if l.nchars >= 40] or [l.x0 for l in lines]
    x1s = [l.x1 for l in lines if l.nchars >= 40] or [l.x1 for l in lines]
    left, right = min(xs), max(x1s)
    found: list[list[Line]] = []
    legend: Line | None = None  # the legend paragraph's last line while it may go on
    notice = False  # the legend is a notice of omitted information (its lines are marked "legend")
    opening = ""  # the first lines of prose: a contract's preamble repeats its title
    label_open = False  # the line above is an attachment's label that goes on ("Attachment B to")
    for i, l in enumerate(lines[:25]):
        t = clean_text(l.text).strip()
        words = t.split()
        is_label = bool(_ANNEX_TO_RE.match(t))
        if label_open or is_label:
            label_open = is_label or bool(_OPEN_END_RE.search(t))  # the label goes on while a line ends open
            if len(words) <= 10:
                continue
        if _LEGEND_RE.search(t) or (legend is not None and _continues_legend(legend, l, right - left)):
            # a legend paragraph in capitals, line by line, up to the line that ends its sentence; a notice's
            # lines stay text but are neither a title nor a heading
            notice = bool(_NOTICE_RE.search(t)) or (legend is not None and notice)
            legend = None if t.endswith(".") else l
            if notice:
                l.role = "legend"
            continue
        letters = [ch for ch in t if ch.isalpha()]
        caps = bool(letters) and sum(ch.isupper() for ch in letters) >= 0.9 * len(letters)
        if len(words) >= 14 and not caps:
            # the first paragraph of prose: no title below it (a long title in capitals, "AMENDMENT NO. 1
            # TO ... LLC and PREMIER NUTRITION CORPORATION MANUFACTURING AGREEMENT", is none)
            opening = opening or " ".join(q.text for q in lines[i:i + 3])
            break
        if not t or FILING_LABEL_RE.match(t) or PAGENUM_RE.match(t) or sum(ch.isalpha() for ch in t) < 4 \
                or _LEGEND_RE.search(t) or FORM_FIELD_RE.match(t):
            continue
        if re.search(r"\b(19|20)\d\d\b", t) and (len(words) <= 4 or re.search(r"\bdate\b", t, re.IGNORECASE)):
            continue  # a date line, or a form's date field ("Addendum Effective Date March 3, 2011")
        if re.fullmatch(r"\(.*\)", t):
            continue  # "(WQHT HD2)": a parenthetical under the title, not the title
        if re.match(r"^\d{1,3}(?:\.\d{1,3})*[.)]\s", t):
            continue  # "11.7. INTELLECTUAL PROPERTY RIGHTS ... The": a clause, in a file that starts inside one
        centred = abs((l.x0 + l.x1) / 2 - (left + right) / 2) < 0.1 * max(1.0, right - left) and l.x0 > left + 20
        titled = all(w[:1].isupper() or w.lower() in ("of", "and", "the", "for", "to", "in", "on", "a", "an", "by")
                     or len(w) <= 2  # "Amendment n° 01"
                     for w in re.findall(r"[A-Za-z][\w'’\-]*", t))
        # a bold first line stands for a centred one ("SCHEDULE TO Software License," over a form set off-centre)
        centred = centred or (not found and i == 0 and l.bold >= 0.8)
        if (caps and 2 <= len(words) <= 16) or (centred and titled and 2 <= len(words) <= 10 and _KIND_RE.search(t)):
            run = [l]
            for q in lines[i + 1:i + 3]:  # a title wrapped over two lines
                qt = q.text.strip()
                if _PARTIES_RE.match(qt) or re.fullmatch(r"\(.*\)", qt):
                    break  # "BETWEEN / THE JOHNS HOPKINS UNIVERSITY": the parties; "(WQHT HD2)": a parenthetical
                # a line ending on a connective ("ADDENDUM TO") goes on below, even double-spaced
                gap = (2.5 if _OPEN_END_RE.search(run[-1].text) else 1.2) * max(l.size, 1.0)
                # (line boxes of tight leading overlap a little: "THE WALT DISNEY COMPANY REPORTS" / "FIRST QUARTER
                # EARNINGS FOR FISCAL 2025")
                if caps and qt.isupper() and -0.3 * max(l.size, 1.0) <= q.y0 - run[-1].y1 < gap \
                        and len(qt.split()) <= 10 \
                        and not _LEGEND_RE.search(qt):
                    run.append(q)
                elif not caps and re.match(r"(?:to|of|and|for|between)\s", qt) and len(qt.split()) <= 10 \
                        and 0 <= q.y0 - run[-1].y1 < 2.5 * max(l.size, 1.0) \
                        and abs((q.x0 + q.x1) / 2 - (l.x0 + l.x1) / 2) < 0.1 * max(1.0, right - left):
                    run.append(q)  # "Amendment n° 01" / "to the Global Maintenance Agreement", centred
                elif not caps and run[-1].text.rstrip().endswith(",") and q.bold >= 0.8 and l.bold >= 0.8 \
                        and len(qt.split()) <= 10 \
                        and -0.3 * max(l.size, 1.0) <= q.y0 - run[-1].y1 < 1.2 * max(l.size, 1.0):
                    run.append(q)  # "SCHEDULE TO Software License," / "Customization and Maintenance Agreement", bold
                else:
                    break
            found.append(run)
        elif len(words) >= 8 and not opening:
            opening = " ".join(q.text for q in lines[i:i + 3])
    # of several candidates, the one the preamble repeats ("THIS FIRST AMENDMENT TO DISTRIBUTOR AGREEMENT (this
    # "Amendment") is made ..."), else the first that names a kind of document
    said = f" {letters_key(opening)} "
    echoed = [r for r in found if len(found) > 1 and f" {letters_key(' '.join(q.text for q in r))} " in said]
    run = next((r for r in echoed + found if _KIND_RE.search(" ".join(q.text for q in r))), None if kind_only else
               (found[0] if found else None))
    if run is None:
        return ""
    for q in run:
        q.role = "doctitle"
    return clean_text(join_lines([q.text for q in run], vocabulary))


_WORD_RE = re.compile(r"[A-Za-z]{2,}")


def document_vocabulary(pages: list[PageInfo]) -> Callable[[], set[str]]:
    """The lower-case words of every line of the document, computed on first call (for
    :func:`~docmaster_core.parsing.base.join_lines`: is "abstraction" a word of this document?)."""
    memo: list[set[str]] = []

    def get() -> set[str]:
        if not memo:
            memo.append({w.lower() for p in pages for ln in p.lines for w in _WORD_RE.findall(ln.text or "")})
        return memo[0]

    return get


def document_title(doc, pages: list[PageInfo], body: float) -> str:
    """The document's title: the largest text in the upper part of page 1 (marked
    ``doctitle``; a longer large line at the top rather than a few bigger words below it, a
    figure's); else, in a document set in one size, its title line
    (:func:`_title_line`); else the PDF metadata title; else ``""``. Its lines are joined
    by :func:`~docmaster_core.parsing.base.join_lines` ("VIA AB-" / "STRACTION" gives
    "VIA ABSTRACTION" in a document that uses "abstraction")."""
    title = ""
    vocabulary = document_vocabulary(pages)
    if pages and pages[0].lines:
        p = pages[0]
        cand = [l for l in p.lines if not l.role and l.y0 < 0.5 * p.height and l.nchars >= 3]
        if cand:
            mx = max(l.size for l in cand)
            large = sorted((l for l in cand if l.size >= 1.25 * body), key=lambda l: (l.y0, l.x0))
            biggest = max(cand, key=lambda l: l.size)
            if large and large[0] is not biggest and len(biggest.text.split()) <= 3 \
                    and len(large[0].text.split()) >= 4 and abs(large[0].size - mx) >= 0.6:
                # a few big words lower on the page (a teaser figure's "Paper Search") under a longer large line
                # at the top (PaSa's "PaSa: An LLM Agent for Comprehensive Academic Paper Search"): the top one
                mx = large[0].size
            if mx >= 1.25 * body:
                tl = sorted((l for l in cand if abs(l.size - mx) < 0.6), key=lambda l: (l.y0, l.x0))
                # keep the first run of adjacent lines
                run = [tl[0]]
                for l in tl[1:]:
                    if l.y0 - run[-1].y1 < 1.2 * mx:
                        run.append(l)
                    else:
                        break
                below = sorted((l for l in p.lines if not l.role and l.y0 >= run[-1].y1 - 0.5 and l.nchars >= 3),
                               key=lambda l: (l.y0, l.x0))
                if below and _OPEN_END_RE.search(run[-1].text) and below[0].size >= body - 0.5 \
                        and below[0].y0 - run[-1].y1 < 1.6 * mx:
                    run.append(below[0])  # "ADDENDUM TO" / "ZEBRA PARTNERCONNECT DISTRIBUTOR AGREEMENT"
                elif below and below[0].size >= 0.8 * mx and below[0].y0 - run[-1].y1 < 0.6 * mx \
                        and all(l.text.isupper() for l in run) and below[0].text.isupper() \
                        and len(below[0].text.split()) <= 4 \
                        and (abs(below[0].x0 - run[-1].x0) < 0.02 * p.width
                             or abs(below[0].x0 + below[0].x1 - run[-1].x0 - run[-1].x1) < 0.04 * p.width):
                    # "SOFTWARE / DEVELOPMENT" and, a size smaller, "AGREEMENT" under it (in capitals, as a
                    # paper's author line is not)
                    run.append(below[0])
                txt = clean_text(join_lines([l.text for l in run], vocabulary))
                hn = heading_numbering(txt)
                if (hn is None or hn[0] in ("A", "I")) and len(txt) <= 300 and not FILING_LABEL_RE.match(txt) \
                        and not re.fullmatch(r"\(.*\)", txt):  # "(WQHT HD2)": a parenthetical, not the title
                    if mx < 1.5 * body and not _KIND_RE.search(txt):
                        # a party's name set a little larger ("AZUL LINHAS AEREAS ...") above or below
                        # the line that names the kind of document ("Amendment n° 01 to the ... Agreement")
                        title = _title_line(p, kind_only=True, vocabulary=vocabulary)
                    if not title:
                        title = txt
                        for l in run:
                            l.role = "doctitle"
    if not title and pages:
        # a contract may print its title again at the top of every page, and page 1's line is then
        # taken for the running header: it is the title when nothing else is one
        title = _title_line(pages[0], vocabulary=vocabulary) or \
            _title_line(pages[0], kind_only=True, headers=True, vocabulary=vocabulary)
    if not title:
        mt = clean_text((doc.metadata or {}).get("title") or "")
        if len(mt) > 5 and not re.match(r"^(microsoft\s+word|untitled|slide|doi)", mt, re.I) and not mt.lower().endswith((".pdf", ".doc", ".docx", ".dvi", ".tex")):
            title = mt
    return title
