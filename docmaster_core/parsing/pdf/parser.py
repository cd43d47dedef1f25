"""The staged PyMuPDF parser: threads a :class:`ParseContext` through the stages.

Stages (one module each, testable alone on a page a test builds):

1. :mod:`.opening` — open and check the file (:func:`open_pdf`).
2. :mod:`.spans` — lines and spans of each page (``get_text("dict")``).
3. :mod:`.layout` — text columns, visual lines, running headers/footers, body style,
   document title; :mod:`.underline` — the words an underline drawn under a line's
   opening covers (on pages where a paragraph may open with a title).
4. :mod:`.marks` — captions, display equations, strongly styled numbered headings.
5. :mod:`.figures` / :mod:`.tables` (driven by :mod:`.regions`) — figure and table
   regions.
   Then, with ``gate=True`` (``parser="auto"``), :mod:`.gate` — pages holding display
   formulas or tables the stages above missed go to the layout model, whose formula /
   table regions replace the fast reading there.
6. :mod:`.headings` / :mod:`.outline` — headings from fonts and numbering, or from
   the PDF outline; :mod:`.clauses` — headings from numbering, keywords and underlines
   in documents set in one font (contracts).
7. :mod:`.order` — reading order and paragraphs -> elements.
"""
from __future__ import annotations

import time
from pathlib import Path

from ...config import ParsingSettings
from ...errors import EmptyDocumentError, ParseError
from ...model import ParsedDocument
from ..base import clean_text, count_unreadable, unreadable_note
from .common import TABLE_HINT_RE, ParseContext, PageInfo
from .clauses import detect_centred_caps_headings, detect_clause_headings, mark_signature_blocks
from .headings import detect_headings
from .layout import body_style, document_title, document_vocabulary, mark_headers_footers, page_layout
from .marks import mark_captions, mark_equations, mark_strong_headings
from .opening import first_line, open_pdf
from .order import reading_order
from .outline import apply_outline, outline_dests
from .regions import page_regions
from .spans import extract_page_lines, text_flags, apply_ligature_map
from .underline import mark_underlined_prefixes


def _read_page(ctx: ParseContext, doc, pno: int) -> tuple[PageInfo, int]:
    """Lines (with columns and visual-line merging), raster image boxes and, where a
    table may be, the words of one page; returns (page record, rotated lines dropped).
    A damaged page becomes an empty letter-size page and a warning."""
    try:
        page = doc[pno]
        rect = page.rect
        tp = page.get_textpage(flags=text_flags())
        lines, nr = extract_page_lines(page, pno, tp)
        lost = count_unreadable(page.get_text("text", textpage=tp))
        if lost:
            ctx.unreadable[pno + 1] = lost
        # words for the table grids of captioned tables (elsewhere fetched per region)
        words = None
        if ctx.settings.tables and any(TABLE_HINT_RE.match(l.text) for l in lines):
            words = page.get_text("words", textpage=tp)
        imgs = []
        for info in (page.get_image_info() if page.get_images(full=False) else ()):
            b = info.get("bbox")
            if b is None:
                continue
            b = tuple(float(v) for v in b)
            if b[2] - b[0] >= 2 and b[3] - b[1] >= 2:
                imgs.append(b)
    except Exception as exc:  # a damaged page: keep going, record it
        ctx.warnings.append(f"page {pno + 1}: {type(exc).__name__}: {exc}")
        return PageInfo(612.0, 792.0), 0
    pi = PageInfo(float(rect.width), float(rect.height))
    pi.words = words
    pi.images = imgs
    page_layout(pi, lines)
    try:
        mark_underlined_prefixes(page, pi.lines, tp)
    except Exception as exc:  # drawings of a damaged page: the titles stay unmarked, say so
        ctx.warnings.append(f"page {pno + 1}: underlines not read ({type(exc).__name__}: {exc})")
    del tp
    return pi, nr


class PyMuPDFParser:
    """The embedded default parser (PyMuPDF >= 2.0). See the module docstring.

    Args:
        settings: Parsing settings; defaults to ``ParsingSettings()``.

    Attributes:
        name: ``"pymupdf"``.
    """

    name = "pymupdf"

    def __init__(self, settings: ParsingSettings | None = None, gate: bool = False) -> None:
        self.settings = settings or ParsingSettings()
        #: Run the layout-model gate (:mod:`.gate`) after the regions stage. ``False`` for
        #: ``parser="fast"``; the ``auto`` backend sets it from ``settings.layout_gate``.
        self.gate = bool(gate)

    def parse(self, path: str | Path) -> ParsedDocument:
        """Parse a PDF into elements in reading order.

        Args:
            path: The PDF file.

        Returns:
            A :class:`ParsedDocument` with ``parser="pymupdf"``; elements carry 1-based
            pages and boxes in PDF points. TITLE ``extra``: ``font_size``, ``bold``,
            ``source`` (``"outline"``, ``"outline-only"`` (outline entry not found in
            the text, placed at its target), ``"numbering"``, ``"font"``),
            ``numbering``. TABLE ``extra``: ``caption``, ``rows`` (list of rows of
            cell strings), ``markdown``, ``method``, ``region_bbox``. IMAGE
            ``extra``: ``caption``, ``figure_bbox``, ``figure_text``, ``kind``.
            ``metadata``: ``body_font_size``, ``headings_from``
            (``"outline"``/``"fonts"``), ``two_column_pages``, ``multi_column_pages``,
            counters of dropped lines, ``signature_paragraphs`` (TEXT elements tagged
            ``extra["role"] = "signature"``), ``find_tables_calls``, ``seconds``
            (extract/tables/total, and ``layout`` with the gate), ``table_seconds``, ``warnings``.
            With the gate on: ``layout_pages`` (``[{"page": 1-based, "reasons":
            ["formula", "table"], "taken": {"formula": n, "table": m}}]``, the pages
            read with the layout model and why) and ``layout_note`` (one line, "" when
            no page went).

        Raises:
            ParseError: unreadable input (see :func:`open_pdf`).
            EncryptedPDFError: password-protected PDF.
            EmptyDocumentError: no text layer at all (e.g. a scan without OCR).
        """
        t0 = time.perf_counter()
        name = Path(path).name
        doc = open_pdf(path, self.settings)
        # find_tables budget per document (seconds): it costs ~0.1-1 s per call
        ctx = ParseContext(settings=self.settings, name=name, table_budget=1.0 + 0.05 * doc.page_count)
        try:
            return self._parse_open(ctx, doc, path, t0)
        except ParseError:
            raise
        except Exception as exc:  # PyMuPDF on a damaged object (RuntimeError, ValueError, ...)
            raise ParseError(f"{name}: damaged PDF, parsing failed ({first_line(exc)})") from exc
        finally:
            doc.close()

    def _parse_open(self, ctx: ParseContext, doc, path, t0: float) -> ParsedDocument:
        n_pages = doc.page_count
        pages: list[PageInfo] = []
        n_rot = 0
        for pno in range(n_pages):
            pi, nr = _read_page(ctx, doc, pno)
            pages.append(pi)
            n_rot += nr
        ctx.ligatures = apply_ligature_map([l for p in pages for l in p.lines])
        t_extract = time.perf_counter() - t0
        total_chars = sum(l.nchars for p in pages for l in p.lines)
        if total_chars < 20:
            raise EmptyDocumentError(
                f"{ctx.name}: no extractable text layer ({total_chars} characters in {n_pages} pages; scanned without OCR?)"
            )
        mark_headers_footers(pages)
        body_size, ctx.body_font = body_style(pages)
        ctx.body_size = body_size if body_size > 0 else 10.0
        for p in pages:
            for l in p.lines:
                if l.size <= 0:
                    l.size = ctx.body_size
        doc_title = document_title(doc, pages, ctx.body_size)
        ctx.vocabulary = document_vocabulary(pages)  # captions join a word broken at a line end ("Mid-" / "dle")
        t_tables = 0.0
        for pno, p in enumerate(pages):
            mark_captions(p, ctx.body_size)
            mark_equations(p, ctx.body_size)
            mark_strong_headings(p, ctx.body_size)
            nt, tt = page_regions(ctx, doc, pno, p, p.images)
            ctx.table_calls += nt
            t_tables += tt
        gate = {"layout_pages": [], "layout_seconds": 0.0}
        if self.gate:
            from .gate import run_gate

            gate = run_gate(ctx, doc, pages)
        outline, used_outline = self._headings(ctx, doc, pages)
        elements = reading_order(pages, ctx.body_size)
        n_signature = mark_signature_blocks(elements)
        meta = {
            "body_font_size": ctx.body_size,
            "body_font": ctx.body_font,
            "headings_from": "outline" if used_outline else "fonts",
            "two_column_pages": sum(1 for p in pages if len(p.gutters) == 1),
            "multi_column_pages": sum(1 for p in pages if p.gutters),
            "rotated_lines_dropped": n_rot,
            "header_footer_lines_dropped": sum(1 for p in pages for l in p.lines if l.role in ("header", "pagenum")),
            "signature_paragraphs": n_signature,
            "find_tables_calls": ctx.table_calls,
            "table_seconds": round(ctx.table_seconds, 3),
            "seconds": {
                "extract": round(t_extract, 3),
                "tables": round(t_tables, 3),
                "total": round(time.perf_counter() - t0, 3),
            },
            "warnings": ctx.warnings,
            "unreadable_chars": dict(ctx.unreadable),
            "unreadable_note": unreadable_note(ctx.unreadable),
        }
        if self.gate:
            from .gate import layout_note

            meta["layout_pages"] = gate["layout_pages"]
            meta["layout_note"] = layout_note(gate["layout_pages"], n_pages)
            meta["seconds"]["layout"] = gate["layout_seconds"]
        return ParsedDocument(
            path=str(path), title=doc_title, n_pages=n_pages, elements=elements, parser=self.name,
            outline=outline, page_sizes=[(p.width, p.height) for p in pages], metadata=meta,
        )

    def _headings(self, ctx: ParseContext, doc, pages: list[PageInfo]) -> tuple[list[tuple[int, str, int]], bool]:
        """Headings from fonts/numbering, then from the outline when it is usable;
        returns (outline, whether the outline decided the headings)."""
        outline: list[tuple[int, str, int]] = []
        try:
            outline = [(int(lv), clean_text(t), int(pg)) for lv, t, pg in doc.get_toc(simple=True)]
        except Exception as exc:
            ctx.warnings.append(f"outline unreadable: {exc}")
        dests = outline_dests(doc) if outline else []
        detect_headings(pages, ctx.body_size, doc)
        detect_clause_headings(pages, ctx.body_size)
        detect_centred_caps_headings(pages, ctx.body_size)
        used = False
        n_pages = len(pages)
        if self.settings.use_outline and len(outline) >= 3 and not (n_pages > 20 and len(outline) < 3):
            used = apply_outline(pages, outline, dests, ctx.body_size)
        return outline, used
