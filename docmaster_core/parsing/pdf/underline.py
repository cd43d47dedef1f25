"""Stage "underlined titles": the text a line's underline covers, from the page's drawings.

Contracts drafted in a word processor often set their clause titles in the body font,
unnumbered and underlined: ``"Dedication.  During the Term, ..."`` with only
*Dedication* underlined. In PDF an underline is not a font property (MuPDF reports it
only when text styles are collected, which makes ``get_text("dict")`` several times
slower): it is a thin stroke or filled rectangle drawn under the glyphs. This stage reads
the page's vector paths (``Page.get_cdrawings``) only on pages where a paragraph could
open with such a title (:func:`may_open_with_title`: unstyled, digit-free words that read
as a title before the first ``.`` or ``:``), and sets :attr:`~.common.Line.underline_prefix` to the text the underline covers when it
starts at the line's left edge. :mod:`.clauses` decides whether that text is a heading.
"""
from __future__ import annotations

import re

from .clauses import sentence_case_title, title_like
from .common import Line

__all__ = ["mark_underlined_prefixes", "may_open_with_title"]

# "Dedication. During ...", "Commencement Date Facilities.", "Nominations:" (1-8 words)
_OPENING_TITLE_RE = re.compile(r"^[A-Z][\w'’\-,&/()]*(?:\s+[\w'’\-,&/()]+){0,7}?[.:](?:\s+\S|$)")

_MAX_RULE_H = 1.6  # points: thicker shapes are boxes or bars, not underlines


def may_open_with_title(l: Line, above: Line | None = None) -> bool:
    """Whether a body line could open with an underlined title: it starts a paragraph
    (no line ``above`` it in its column, or that line ends a sentence, or a gap or an
    indent sets it apart), is not mostly bold, and its words before the first ``.`` or
    ``:`` (at most eight) read as a title (:func:`~.clauses.title_like`, or a short one
    in sentence case) and hold no digit. A line opening with bold or italic words is left
    to :mod:`.headings`."""
    if l.role != "" or l.bold >= 0.5 or l.bold_prefix or l.italic_prefix:
        return False  # a styled run-in title is found by its style (.headings)
    if above is not None:
        em = l.size if l.size > 0 else 10.0
        if not (above.text.rstrip()[-1:] in ".:;" or l.y0 - above.y1 > 0.45 * em or l.x0 > above.x0 + em):
            return False  # a sentence running on from the line above
    t = l.text.strip()
    if _OPENING_TITLE_RE.match(t) is None:
        return False
    head = re.split(r"[.:]", t, maxsplit=1)[0]  # the words before the first "." / ":"
    if re.search(r"\d", head):
        return False  # "Figure 1:", "Springer, 1998.": captions and references, not clause titles
    return title_like(head, 8) or sentence_case_title(head, 6)


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


def mark_underlined_prefixes(page, lines: list[Line], textpage=None) -> int:
    """Set ``underline_prefix`` on the lines whose opening words are underlined.

    An underline belongs to a line when it lies between 0.45 em above the line box's
    bottom and 0.35 em below it, starts within 0.5 em of the line's left edge and runs
    on (pieces at most 0.6 em apart merged); its text is the line's words (``get_text("words")``,
    read once per page) whose centres lie before the underline's end.

    Args:
        page: The ``pymupdf.Page`` the lines come from.
        lines: The page's merged visual lines (boxes in PDF points, top-left origin).
        textpage: The page's ``pymupdf.TextPage`` when the caller has one (else one is made).

    Returns:
        The number of lines marked (0 without reading the drawings when no line could
        open with a title).
    """
    cands = []
    above: dict[int, Line] = {}
    for l in lines:  # sorted by y, then x (page_layout)
        if may_open_with_title(l, above.get(l.col)):
            cands.append(l)
        above[l.col] = l
    if not cands:
        return 0
    rules = _rules(page)
    if not rules:
        return 0
    words = None
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
        if words is None:  # the page's words, once (get_textbox is ~100x slower per call)
            words = page.get_text("words", textpage=textpage)
        band = 0.3 * l.h  # the line's middle only: its box may overlap the next line's
        text = " ".join(w[4] for w in sorted(
            (w for w in words if l.y0 + band <= 0.5 * (w[1] + w[3]) <= l.y1 - band
             and w[0] >= l.x0 - 1.0 and 0.5 * (w[0] + w[2]) <= end + 0.5), key=lambda w: w[0]))
        if text and l.text.strip().startswith(text[: max(1, len(text) - 1)]):
            l.underline_prefix = text
            marked += 1
    return marked
