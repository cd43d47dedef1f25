"""Stage "underlined titles": the text a line's underline covers, from the page's drawings.

Contracts drafted in a word processor often set their clause titles in the body font,
unnumbered and underlined: ``"Dedication.  During the Term, ..."`` with only
*Dedication* underlined. In PDF an underline is not a font property (MuPDF reports it
only when text styles are collected, which makes ``get_text("dict")`` several times
slower): it is a thin stroke or filled rectangle drawn under the glyphs. This stage reads
the page's vector paths (``Page.get_cdrawings``) only on pages where a line could open
with such a title (a short capitalised prefix ending in ``.`` or ``:``, not in bold), and
sets :attr:`~.common.Line.underline_prefix` to the text the underline covers when it
starts at the line's left edge. :mod:`.clauses` decides whether that text is a heading.
"""
from __future__ import annotations

import re

from .common import Line

__all__ = ["mark_underlined_prefixes", "may_open_with_title"]

# "Dedication. During ...", "Commencement Date Facilities.", "Nominations:" (1-8 words)
_OPENING_TITLE_RE = re.compile(r"^[A-Z][\w'’\-,&/()]*(?:\s+[\w'’\-,&/()]+){0,7}?[.:](?:\s+\S|$)")

_MAX_RULE_H = 1.6  # points: thicker shapes are boxes or bars, not underlines


def may_open_with_title(l: Line) -> bool:
    """Whether a body line could open with an underlined title: not mostly bold, at most
    eight words before its first ``.`` or ``:``, a capital start."""
    return l.role == "" and l.bold < 0.5 and _OPENING_TITLE_RE.match(l.text.strip()) is not None


def _rules(page) -> list[tuple[float, float, float]]:
    """Thin horizontal marks of a page as ``(x0, x1, y)`` in PDF points: stroked lines and
    filled rectangles at most 1.6 pt high, at least 3 pt wide, narrower than 90 % of the page."""
    out: list[tuple[float, float, float]] = []
    width = float(page.rect.width)
    for path in page.get_cdrawings():
        x0, y0, x1, y1 = path["rect"]
        if y1 - y0 > _MAX_RULE_H or x1 - x0 < 3.0 or x1 - x0 > 0.9 * width:
            continue
        if path.get("type") == "s" and not all(it[0] == "l" for it in path["items"]):
            continue  # a stroked curve
        out.append((float(x0), float(x1), 0.5 * (float(y0) + float(y1))))
    return out


def mark_underlined_prefixes(page, lines: list[Line]) -> int:
    """Set ``underline_prefix`` on the lines whose opening words are underlined.

    An underline belongs to a line when it lies between 0.45 em above the line box's
    bottom and 0.35 em below it, starts within 0.5 em of the line's left edge and runs
    on (pieces at most 0.6 em apart merged); its text is ``page.get_textbox`` of the line's
    middle band cut at the underline's end (the whole line when all of it is underlined).

    Args:
        page: The ``pymupdf.Page`` the lines come from.
        lines: The page's merged visual lines (boxes in PDF points, top-left origin).

    Returns:
        The number of lines marked (0 without reading the drawings when no line could
        open with a title).
    """
    cands = [l for l in lines if may_open_with_title(l)]
    if not cands:
        return 0
    rules = _rules(page)
    if not rules:
        return 0
    import pymupdf

    marked = 0
    for l in cands:
        em = l.size if l.size > 0 else max(4.0, l.h)
        near = sorted((r for r in rules if l.y1 - 0.45 * em <= r[2] <= l.y1 + 0.35 * em
                       and r[1] > l.x0 and r[0] < l.x1), key=lambda r: r[0])
        if not near or abs(near[0][0] - l.x0) > 0.5 * em:
            continue
        end = near[0][1]
        for r in near[1:]:
            if r[0] - end > 0.6 * em:
                break
            end = max(end, r[1])
        band = 0.3 * l.h  # the line's middle only: its box may overlap the next line's
        text = " ".join(page.get_textbox(pymupdf.Rect(l.x0 - 1.0, l.y0 + band, end + 0.5, l.y1 - band)).split())
        if text and l.text.strip().startswith(text[: max(1, len(text) - 1)]):
            l.underline_prefix = text
            marked += 1
    return marked
