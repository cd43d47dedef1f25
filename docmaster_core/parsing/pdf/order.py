"""Stage "reading order and paragraphs": page items sorted by band, column and y;
body lines grouped into paragraphs."""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import numpy as np

from ...model import Element, NodeType
from ..base import SENTENCE_END_RE, clean_text, heading_numbering, normalize_heading
from .common import BULLET_RE, EQNUM_RE, Line, PageInfo, box_union
from .layout import assign_col


# ------------------------------------------------------------------ reading order
def _page_items(p: PageInfo) -> list[dict[str, Any]]:
    """The items of one page before ordering: regions (tables/figures with their
    captions), equation groups, headings (run-in headings split from their text)
    and body lines."""
    items: list[dict[str, Any]] = []
    # region items (tables/figures with their captions)
    for it in p.items:
        items.append({**it, "kind": "region"})
    # equation groups
    eqs: dict[int, list[Line]] = defaultdict(list)
    for l in p.lines:
        if l.role == "equation":
            eqs[l.group].append(l)
    for g, ls in eqs.items():
        ls = _equation_lines_in_order(ls)
        items.append({"kind": "equation", "type": NodeType.EQUATION,
                      "bbox": box_union((l.x0, l.y0, l.x1, l.y1) for l in ls),
                      "text": clean_text(" ".join(l.text for l in ls)), "extra": {"lines": len(ls)}})
    for l in p.lines:
        if l.role in ("heading", "heading-runin"):
            items.append({"kind": "heading", "line": l, "bbox": (l.x0, l.y0, l.x1, l.y1)})
            if l.role == "heading-runin":
                rest = l.text.strip()
                ht = l.heading_text
                # drop the heading words from the line text
                k = 0
                hn = normalize_heading(ht)
                words = rest.split()
                for n in range(1, len(words) + 1):
                    if normalize_heading(" ".join(words[:n])) == hn or len(normalize_heading(" ".join(words[:n]))) >= len(hn):
                        k = n
                        break
                rest_text = " ".join(words[k:]).lstrip(".: ")
                if l.heading_chars:
                    rest_text = rest[l.heading_chars:].lstrip(".:;-–— ")
                if rest_text:
                    frac = len(ht) / max(1, len(rest))
                    bx = l.x0 + frac * (l.x1 - l.x0)
                    items.append({"kind": "line", "line": l, "text": rest_text, "bbox": (bx, l.y0 + 0.01, l.x1, l.y1),
                                  "para_start": True})
        elif l.role in ("", "legend"):  # a filing's legend above the title is text, never a heading
            items.append({"kind": "line", "line": l, "text": l.text, "bbox": (l.x0, l.y0, l.x1, l.y1)})
    return items


def _sort_items(p: PageInfo, items: list[dict[str, Any]]) -> None:
    """Sort page items in reading order (in place): bands separated by full-width
    items (column -1), then column, then y, then x."""
    # column of each item, then sort by band / column / y
    for it in items:
        b = it["bbox"]
        it["col"] = it["line"].col if "line" in it and it["line"].block != -1 else assign_col(b[0], b[2], p.gutters, p.width)
    fulls = sorted(it["bbox"][1] for it in items if it["col"] == -1)
    fa = np.asarray(fulls) if fulls else None

    def key(it):
        b = it["bbox"]
        if it["col"] == -1:
            band = 2 * int(np.searchsorted(fa, b[1], side="left")) + 1
            return (band, 0, b[1], b[0])
        band = 2 * int(np.searchsorted(fa, (b[1] + b[3]) / 2, side="left")) if fa is not None else 0
        return (band, it["col"], b[1], b[0])

    items.sort(key=key)


def reading_order(pages: list[PageInfo], body: float) -> list[Element]:
    """Elements of all pages in reading order (1-based pages, boxes in points); body
    lines are grouped into TEXT paragraphs (:func:`_new_paragraph`)."""
    elements: list[Element] = []
    order = 0
    for pno, p in enumerate(pages):
        items = _page_items(p)
        if not items:
            continue
        _sort_items(p, items)
        # paragraphs
        para: list[dict] = []

        def flush():
            nonlocal order, para
            if not para:
                return
            texts = []
            for it in para:
                t = it["text"].strip()
                if texts and texts[-1].endswith("-") and len(texts[-1]) > 1 and texts[-1][-2].isalpha() and t[:1].islower():
                    texts[-1] = texts[-1][:-1] + t
                else:
                    texts.append(t)
            txt = clean_text(" ".join(texts))
            if txt:
                sizes = [it["line"].size for it in para]
                elements.append(Element(
                    type=NodeType.TEXT, text=txt, page=pno + 1,
                    bbox=box_union(it["bbox"] for it in para), order=order, level=None,
                    extra={"font_size": float(np.median(sizes)), "lines": len(para), "col": para[0]["col"]},
                ))
                order += 1
            para = []

        for it in items:
            if it["kind"] != "line":
                flush()
                if it["kind"] == "heading":
                    l = it["line"]
                    hn = heading_numbering(l.heading_text)
                    elements.append(Element(
                        type=NodeType.TITLE, text=l.heading_text, page=pno + 1, bbox=it["bbox"], order=order,
                        level=l.heading_level or 1,
                        extra={"font_size": l.size, "bold": l.bold >= 0.8, "source": l.heading_source,
                               "numbering": hn[0] if hn else None},
                    ))
                else:
                    elements.append(Element(type=it["type"], text=it["text"], page=pno + 1, bbox=tuple(it["bbox"]),
                                            order=order, extra=it.get("extra", {})))
                order += 1
                continue
            if para and _new_paragraph(para, it, body):
                flush()
            para.append(it)
        flush()
    return elements

def _new_paragraph(para: list[dict], it: dict, body: float) -> bool:
    prev = para[-1]
    pl: Line = prev["line"]
    l: Line = it["line"]
    if it.get("para_start"):
        return True
    if it["col"] != prev["col"]:
        return True
    pb, b = prev["bbox"], it["bbox"]
    size = max(l.size, 4.0)
    gap = b[1] - pb[3]
    if gap > 0.9 * size or gap < -0.6 * size:
        return True
    if abs(l.size - pl.size) > 1.2:
        return True
    txt = it["text"]
    ptxt = prev["text"]
    if BULLET_RE.match(txt):
        return True
    left = min(q["bbox"][0] for q in para)
    right = max(q["bbox"][2] for q in para)
    ended = bool(SENTENCE_END_RE.search(ptxt))
    full_stop = bool(re.search(r"[.!?][\"'”’)\]]*$", ptxt))
    if full_stop and b[0] > pb[0] + 0.8 * size and pb[0] <= left + 1.0:
        return True  # first-line indent
    if ended and len(para) >= 2 and pb[2] < right - 0.15 * (right - left):
        return True  # short last line
    return False


def _equation_lines_in_order(ls: list[Line]) -> list[Line]:
    """Lines of one display equation in reading order: rows (lines whose vertical
    extents overlap) top to bottom, left to right within a row, the equation
    number ("(3)") last."""
    nums = [l for l in ls if EQNUM_RE.fullmatch(l.text.strip())]
    rest = sorted((l for l in ls if l not in nums), key=lambda l: l.yc)
    rows: list[list[Line]] = []
    for l in rest:
        if rows:
            r = rows[-1]
            lo = max(min(q.y0 for q in r), l.y0)
            hi = min(max(q.y1 for q in r), l.y1)
            if hi - lo >= 0.4 * min(l.h, max(q.h for q in r)):
                r.append(l)
                continue
        rows.append([l])
    out = [l for r in rows for l in sorted(r, key=lambda q: q.x0)]
    return out + sorted(nums, key=lambda l: l.y0)
