"""Stage "gate": the layout model on the pages that need it (issue 34, item 1).

After the marks and regions stages, a cheap per-page test (:func:`gate_reasons`, no
model, no rendering) looks for what the heuristic stages got wrong:

* ``"formula"``: display-formula lines left as body text: an equation number "(3)"
  standing alone at the right of the column, short lines set mostly in math fonts
  (CMMI, CMSY, *Math*, ...), or centred / indented short lines with operators, that
  :func:`~.marks.mark_equations` did not make an equation.
* ``"table"``: a "Table N" caption whose table region got no rows, or a run of
  body lines with column gaps / numeric cells that :mod:`.tables` did not make a
  table.

Only the gated pages go to PyMuPDF's layout model
(:func:`~docmaster_core.parsing.layout_model.run_layout`, loaded lazily, once per
process). From its output only the regions of the kinds that triggered the gate are
taken (:func:`apply_layout_regions`): ``formula`` regions make their lines one
equation group, ``table`` regions replace the fast parser's table items they overlap
(rows from the model's grid, else a word grid). Headings and body text stay the fast
parser's (the model's heading precision is lower; docs/results/parsing_layout.md).

Pages are 0-based here (``Line.page``), 1-based in ``ParsedDocument.metadata
["layout_pages"]``; boxes in PDF points.
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Any

from ...model import NodeType
from .common import EQNUM_RE, Line, PageInfo, ParseContext, box_union
from .marks import math_like
from .tables import is_numeric_row_text

__all__ = ["gate_reasons", "formula_signals", "table_signals", "apply_layout_regions", "run_gate", "layout_note",
           "layout_gate_available"]

log = logging.getLogger(__name__)

_WARNED = False
_BOX = tuple[float, float, float, float]


def layout_gate_available() -> bool:
    """True when the layout model can run; says once (log warning) when it cannot."""
    global _WARNED
    from ..layout_model import layout_available

    ok = layout_available()
    if not ok and not _WARNED:
        _WARNED = True
        log.warning("layout gate off: pymupdf4llm / pymupdf.layout is not installed (pip install pymupdf4llm==2.0); "
                    "every page is read by the fast parser")
    return ok


def _colx(p: PageInfo) -> dict[int, tuple[float, float]]:
    """Left/right text edge (10th / 90th percentile of long body lines) per column."""
    xs0: dict[int, list[float]] = defaultdict(list)
    xs1: dict[int, list[float]] = defaultdict(list)
    for l in p.lines:
        if l.nchars >= 25 and l.role in ("", "heading?"):
            xs0[l.col].append(l.x0)
            xs1[l.col].append(l.x1)
    out = {}
    for c in xs0:
        a, b = sorted(xs0[c]), sorted(xs1[c])
        out[c] = (a[len(a) // 10], b[(9 * len(b)) // 10])
    return out


def formula_signals(p: PageInfo, body: float) -> list[Line]:
    """Body lines of one page that look like a display formula the fast parser missed.

    A line counts when its role is still body text (``""``) and it is (a) an equation
    number alone ("(3)") right of the column centre, (b) a short line (<= 3 words)
    with >= 50 % of its characters in math fonts, or (c) a centred / indented narrow
    line with operators and <= 6 words (:func:`~.marks.math_like`) set in a math font
    for >= 30 % or ending in an equation number.
    """
    colx = _colx(p)
    out = []
    for l in p.lines:
        if l.role != "" or l.nchars < 1:
            continue
        t = l.text.strip()
        cx0, cx1 = colx.get(l.col, (0.0, p.width))
        if EQNUM_RE.fullmatch(t) and l.x0 > 0.5 * (cx0 + cx1):
            out.append(l)
        elif l.math >= 0.5 and l.nwords <= 3 and len(t.replace(" ", "")) >= 3 and (l.x1 - l.x0) < 0.85 * max(cx1 - cx0, 1):
            out.append(l)
        elif math_like(l, colx, body) and (l.math >= 0.3 or EQNUM_RE.search(t)):
            out.append(l)
    return out


def table_signals(p: PageInfo, body: float) -> list[Any]:
    """Evidence of a table the fast parser did not make: "Table N" captions for which
    it found no region at all (``method == "caption-only"``; a region it read without
    a grid is mostly boxed text, a prompt or a listing, where the model finds no table
    either), or >= 4 body lines of one column in a row that each hold
    a wide gap between pieces or end in >= 2 numbers."""
    out: list[Any] = [it for it in p.items if it.get("type") == NodeType.TABLE
                      and (it.get("extra") or {}).get("method") == "caption-only"]
    run: list[Line] = []
    best: list[Line] = []
    for l in sorted((q for q in p.lines if q.role in ("", "heading?")), key=lambda q: (q.col, q.y0)):
        cell_like = l.max_gap >= 2.0 * max(body, 4) or is_numeric_row_text(l.text)
        if cell_like and (not run or (run[-1].col == l.col and l.y0 - run[-1].y1 < 1.5 * max(body, 4))):
            run.append(l)
        else:
            if len(run) > len(best):
                best = run
            run = [l] if cell_like else []
    if len(run) > len(best):
        best = run
    if len(best) >= 4:
        out.extend(best)
    return out


def gate_reasons(p: PageInfo, body: float) -> list[str]:
    """Why one page should go to the layout model: a subset of ``["formula",
    "table"]`` in that order (empty: the fast parser's reading stands).

    Args:
        p: The page after the marks and regions stages (line roles set).
        body: Body font size in points.
    """
    reasons = []
    f = formula_signals(p, body)
    if any(EQNUM_RE.fullmatch(l.text.strip()) for l in f) or len(f) >= 2:
        reasons.append("formula")
    if table_signals(p, body):
        reasons.append("table")
    return reasons


def _inside(l: Line, b: _BOX, pad: float = 1.5) -> bool:
    cx, cy = 0.5 * (l.x0 + l.x1), 0.5 * (l.y0 + l.y1)
    return b[0] - pad <= cx <= b[2] + pad and b[1] - pad <= cy <= b[3] + pad


def _overlap(a: _BOX, b: _BOX) -> float:
    """Intersection area over the smaller box's area."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    sa = max(1e-3, (a[2] - a[0]) * (a[3] - a[1]))
    sb = max(1e-3, (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / min(sa, sb)


def apply_layout_regions(ctx: ParseContext, p: PageInfo, pno: int, reasons: list[str], boxes: list,
                         raw: list[dict]) -> dict[str, int]:
    """Take from the model's regions of one page those of the gated kinds.

    ``formula`` regions: the body / equation lines whose smallest enclosing model
    region is the formula (centre inside; body lines with >= 3 words and < 20 % math
    font stay text) become one equation group per text column (a group holding more
    than 12 words of prose outside math fonts is left alone). ``table`` regions that
    do not overlap a table the fast parser read
    (with rows) become table items (rows from the model's grid, else a word grid of
    the lines); the nearest caption-only table item within 40 pt above or below (else
    the page's only one, when the model found one table there) gives its caption and
    is replaced; the region's body lines get ``role = "region"``.

    Args:
        ctx: The parse context (settings, body size, ligatures).
        p: The page (lines and items are changed in place).
        pno: 0-based page number.
        reasons: The gate's reasons for this page.
        boxes: pymupdf4llm's boxes of this page (``x0..y1``, ``boxclass``, ``table``).
        raw: The model's raw regions of this page (tables without a grid).

    Returns:
        Counts of regions taken: ``{"formula": n, "table": m}``.
    """
    from ..layout_model import LayoutParser, _Box

    taken = {"formula": 0, "table": 0}
    regs = [_Box((float(b.x0), float(b.y0), float(b.x1), float(b.y1)), b.boxclass, k, b.table)
            for k, b in enumerate(boxes)]
    LayoutParser.gridless_tables(regs, raw)
    if "formula" in reasons:
        gid = 1 + max((l.group for l in p.lines if l.role == "equation"), default=0) + 1000
        # each line belongs to the smallest model region holding its centre
        area = lambda bb: (bb[2] - bb[0]) * (bb[3] - bb[1])  # noqa: E731
        owned: dict[int, list[Line]] = defaultdict(list)
        for l in p.lines:
            if l.role not in ("", "equation") or (l.role == "" and l.nwords >= 3 and l.math < 0.2):
                continue  # prose lines ("Lemma 10 It holds that") stay text
            inside = [k for k, r in enumerate(regs) if _inside(l, r.bbox)]
            if inside:
                k = min(inside, key=lambda k: area(regs[k].bbox))
                if regs[k].cls == "formula":
                    owned[k].append(l)
        for k in sorted(owned):
            by_col: dict[int, list[Line]] = defaultdict(list)
            for l in owned[k]:  # a region across both columns of a page is one display per column
                by_col[l.col].append(l)
            for ls in by_col.values():
                if sum(l.nwords for l in ls if l.math < 0.3) > 12:
                    continue  # prose the model took for a formula
                if len({l.group for l in ls if l.role == "equation"}) == 1 and all(l.role == "equation" for l in ls):
                    continue  # the fast parser has this display already
                for l in ls:
                    l.role = "equation"
                    l.group = gid
                gid += 1
                taken["formula"] += 1
    if "table" in reasons:
        lp = LayoutParser(ctx.settings)
        for r in regs:
            if r.cls != "table":
                continue
            tables = [it for it in p.items if it.get("type") == NodeType.TABLE]
            if any((it.get("extra") or {}).get("rows") and _overlap(it["bbox"], r.bbox) >= 0.5 for it in tables):
                continue  # the fast parser read this table already: its reading stands
            r.lines = [l for l in p.lines if l.role == "" and _inside(l, r.bbox)]
            el = lp.table_element(r, [], pno + 1, ctx.body_size, ctx.ligatures, p)
            if el is None or not el.extra.get("rows"):
                continue
            # the caption: the nearest table item without rows just above or below the region
            cap_it, best = None, None
            for it in tables:
                if (it.get("extra") or {}).get("rows"):
                    continue
                ib = it["bbox"]
                gap = max(0.0, max(ib[1], r.bbox[1]) - min(ib[3], r.bbox[3]))
                xo = max(0.0, min(ib[2], r.bbox[2]) - max(ib[0], r.bbox[0])) / max(1e-3, min(ib[2] - ib[0], r.bbox[2] - r.bbox[0]))
                if gap <= 40 and xo >= 0.3 and (best is None or gap < best):
                    cap_it, best = it, gap
            if cap_it is None:  # one caption without a table on the page, one table without a caption
                lone = [it for it in tables if (it.get("extra") or {}).get("method") == "caption-only"]
                if len(lone) == 1 and sum(1 for q in regs if q.cls == "table") == 1:
                    cap_it = lone[0]
            cap = ((cap_it.get("extra") or {}).get("caption") or "") if cap_it is not None else ""
            if cap_it is not None:
                p.items[:] = [it for it in p.items if it is not cap_it]
            for l in r.lines:
                l.role = "region"
            md = el.extra["markdown"]
            extra = {**el.extra, "caption": cap, "method": "layout-model-" + el.extra.get("method", ""),
                     "region_bbox": list(r.bbox)}
            bbox = box_union([r.bbox] + ([tuple(cap_it["bbox"])] if cap_it is not None else []))
            p.items.append({"type": NodeType.TABLE, "bbox": bbox, "text": (cap + "\n\n" + md) if cap else md,
                            "caption_group": cap_it.get("caption_group") if cap_it is not None else None,
                            "extra": extra})
            taken["table"] += 1
    return taken


def run_gate(ctx: ParseContext, doc, pages: list[PageInfo]) -> dict[str, Any]:
    """Gate every page, run the layout model once on the gated pages, take its regions.

    Args:
        ctx: The parse context (``settings.layout_features`` picks the model variant).
        doc: The open ``pymupdf.Document``.
        pages: The pages after the marks and regions stages.

    Returns:
        ``{"layout_pages": [{"page": 1-based, "reasons": [...], "taken": {...}}],
        "layout_seconds": float}``; empty lists when no page is gated. A failure of
        the model is a warning in ``ctx.warnings`` (the fast reading stands).
    """
    gated = [(pno, r) for pno, p in enumerate(pages) if (r := gate_reasons(p, ctx.body_size))]
    if not gated or not layout_gate_available():
        return {"layout_pages": [], "layout_seconds": 0.0}
    from ..layout_model import run_layout

    t0 = time.perf_counter()
    try:
        lpages, raw = run_layout(doc, getattr(ctx.settings, "layout_features", "imf+rf"), [pno for pno, _ in gated],
                                 threads=getattr(ctx.settings, "layout_threads", None))
    except Exception as exc:  # the fast reading stands
        ctx.warnings.append(f"layout model failed on the gated pages: {type(exc).__name__}: {exc}")
        return {"layout_pages": [], "layout_seconds": round(time.perf_counter() - t0, 3)}
    by_page = {lp.page_number - 1: lp for lp in lpages}
    out = []
    for pno, reasons in gated:
        lp = by_page.get(pno)
        taken = apply_layout_regions(ctx, pages[pno], pno, reasons, list(lp.boxes) if lp is not None else [],
                                     raw.get(pno, []))
        out.append({"page": pno + 1, "reasons": reasons, "taken": taken})
    return {"layout_pages": out, "layout_seconds": round(time.perf_counter() - t0, 3)}


def layout_note(layout_pages: list[dict], n_pages: int) -> str:
    """One line for the ingest report, in words a user follows, e.g. "2 of 15 pages re-read
    with the layout model, which reads formulas and tables more exactly (2 for a formula, 1 for
    a table)": counts of pages by reason (a page may have both); "" when no page went."""
    if not layout_pages:
        return ""
    by: dict[str, int] = defaultdict(int)
    for r in layout_pages:
        for k in r["reasons"]:
            by[k] += 1
    # counts of pages by reason, in words ("formula 1, table 18" read as page numbers to a newcomer)
    why = ", ".join(f"{v} for {'a formula' if k == 'formula' else 'a table' if k == 'table' else k}"
                    for k, v in sorted(by.items()))
    return (f"{len(layout_pages)} of {n_pages} pages re-read with the layout model, which reads formulas and "
            f"tables more exactly ({why})")
