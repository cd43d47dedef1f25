"""Parser backend ``"layout"``: PyMuPDF's layout model (PyMuPDF >= 2.0, ``pymupdf4llm``).

The layout model (a graph network over the page's text, vector and image boxes, with
ONNX image features; offline) classes regions of a page as ``section-header``,
``title``, ``text``, ``list-item``, ``formula``, ``table``, ``picture``, ``caption``,
``footnote``, ``page-header`` and ``page-footer``; ``pymupdf4llm`` orders them for
reading and reads table grids. This backend takes the regions and their order from
the model and the *text* from the embedded parser's span stage
(:func:`~docmaster_core.parsing.pdf.spans.extract_page_lines`: spaces from glyph
gaps, ligature repair, exponents), so both backends read words the same way.

Mapping (``extra["layout_class"]`` keeps the model's class):

* ``section-header`` / ``title`` -> TITLE. Level from the PDF outline when the heading
  matches an entry, else from its numbering ("3.2.1" -> 3), else from its font size
  (the level of numbered headings of the same size, else the rank of its size). The
  document title (largest heading of page 1 above the first section) becomes
  ``ParsedDocument.title``, not a section. Figure labels (short unnumbered headers
  inside or next to a picture), captions, table-of-contents entries and long
  sentences classed as headers are not sections.
* ``formula`` -> EQUATION (the whole display, all its lines, with its number).
* ``table`` -> TABLE: rows and cells from the model's table grid (cell texts from the
  characters); tables the model finds without a grid get rows from a word grid. The
  caption ("Table 3: ...") next to it is ``extra["caption"]``.
* ``picture`` (+ ``caption``) -> IMAGE with the caption as text; text inside the
  picture is ``extra["figure_text"]``.
* ``text`` / ``list-item`` -> TEXT (list items ``extra["list"]``, bullets as "•").
* ``page-header`` / ``page-footer`` are dropped (and repeated lines in the top/bottom
  bands, as in the embedded parser); ``footnote`` -> TEXT with
  ``extra["role"] = "footnote"`` emitted before the next section heading, so that
  a paragraph continuing on the next page is not cut.
* Table-of-contents lines (dot leaders ending in a page number) are not text; they are
  kept in ``metadata["toc_lines"]``.

Text the model leaves outside every box becomes TEXT placed after the nearest box
above it. Pages are 1-based, boxes in PDF points, ``settings.page_limit`` applies
(checked before any page is analysed).

Speed: the model costs ~0.5-0.9 s a page on a 2-core CPU, about 60 % of it in the
image-feature network; OCR probing is switched off (``use_ocr=NEVER``: born-digital
pages need none, and a page without a text layer is refused like in the embedded
parser). ``settings.layout_features="rf"`` uses the model variant without image
features (2.5x faster, but it misses some display formulas; see
docs/results/parsing_layout.md).
"""
from __future__ import annotations

import re
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from ..config import ParsingSettings
from ..errors import EmptyDocumentError, ParseError
from ..model import Element, NodeType, ParsedDocument
from .base import clean_text, heading_numbering, is_caption, normalize_heading, numbering_level
from .pdf.common import FRONT_BACK_MATTER, Line, PageInfo
from .pdf.layout import mark_headers_footers
from .pdf.opening import first_line, open_pdf
from .pdf.spans import apply_ligature_map, extract_page_lines

__all__ = ["LayoutParser", "layout_available", "TOC_LINE_RE"]

_LOCK = threading.Lock()
_MODELS: dict[str, Any] = {}

#: A table-of-contents line: dot (or space-dot) leaders then a page number.
TOC_LINE_RE = re.compile(r"(?:\.\s?){4,}\s*[0-9ivxlcdm]{1,5}\s*$|\s(?:\. ?){3,}[0-9]{1,4}$|\t\s*[0-9]{1,4}\s*$", re.I)
_BULLETS = "•◦▪▫●○■□►▸‣⁃∙·–-*"
_EQNUM_RE = re.compile(r"\(\s*(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})?[a-z]?\s*\)\s*$")
_HEAD_MAX_WORDS = 20
_BOX = tuple[float, float, float, float]


def layout_available() -> bool:
    """True when ``pymupdf4llm`` with the layout model (``pymupdf.layout``) imports."""
    try:
        import pymupdf.layout  # noqa: F401
        import pymupdf4llm  # noqa: F401
    except Exception:
        return False
    return True


def _model(features: str, threads: int | None = None):
    """The layout model for a feature set ("imf+rf" default, "rf" without image
    features) and ONNX Runtime thread count, created once per process (call inside
    ``_ort_threads(threads)`` so that the sessions get the count)."""
    key = f"{features}/{threads or 0}"
    m = _MODELS.get(key)
    if m is None:
        from pymupdf.layout import DocumentLayoutAnalyzer as DLA

        m = DLA.get_model(feature_set_name=features, n_workers=1, use_sort=True, table_grid_model_ver="V4")
        _MODELS[key] = m
    return m


def run_layout(doc, features: str = "imf+rf", pages: list[int] | None = None,
               threads: int | None = None) -> tuple[list[Any], dict[int, list]]:
    """Run PyMuPDF's layout model (OCR off) on ``pages`` of an open document.

    Args:
        doc: An open ``pymupdf.Document``.
        features: Model variant, ``"imf+rf"`` (with image features) or ``"rf"``.
        pages: 0-based page numbers; ``None`` = every page.
        threads: ONNX Runtime intra-op threads of the model's sessions (``None`` =
            ONNX Runtime's default, one per physical core). Sessions are made with
            the count of their first call (the model is cached per process).

    Returns:
        (pymupdf4llm's page records (``page_number`` 1-based, ``boxes`` with
        ``x0..y1`` in PDF points, ``boxclass``, ``table``), the raw model output per
        0-based page (tables without a grid included)).

    Raises:
        ImportError: pymupdf4llm / pymupdf.layout not installed.
    """
    import pymupdf
    import pymupdf4llm  # noqa: F401  (activates the layout module)
    from pymupdf4llm.helpers import document_layout as dl
    from pymupdf4llm.ocr import OCRMode

    raw: dict[int, list] = {}
    model = None

    def predict(page, *a, **k):
        out = model.predict(page, *a, **k)
        raw[page.number] = [dict(b) for b in out] if out else []
        return out

    with _LOCK, _ort_threads(threads):
        model = _model(features, threads)
        saved = pymupdf._get_layout
        pymupdf._get_layout = predict
        try:
            parsed = dl.parse_document(doc, pages=pages, use_ocr=OCRMode.NEVER, force_text=False, embed_images=False,
                                       write_images=False, show_progress=False)
        finally:
            pymupdf._get_layout = saved
    return parsed.pages, raw


class _ort_threads:
    """Context: ONNX Runtime sessions created inside get ``intra_op_num_threads =
    n`` (and one inter-op thread); ``n=None`` changes nothing."""

    def __init__(self, n: int | None) -> None:
        self.n = n
        self.saved = None

    def __enter__(self):
        if not self.n:
            return self
        import onnxruntime as ort

        self.saved = ort.InferenceSession
        orig, n = ort.InferenceSession, int(self.n)

        def make(path_or_bytes, sess_options=None, *a, **k):
            so = sess_options or ort.SessionOptions()
            so.intra_op_num_threads = n
            so.inter_op_num_threads = 1
            return orig(path_or_bytes, so, *a, **k)

        ort.InferenceSession = make
        return self

    def __exit__(self, *exc) -> None:
        if self.saved is not None:
            import onnxruntime as ort

            ort.InferenceSession = self.saved


# --------------------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------------------
def _inter(a: _BOX, b: _BOX) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def _area(a: _BOX) -> float:
    return max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])


def _xover(a: _BOX, b: _BOX) -> float:
    """Horizontal overlap as a fraction of the narrower box."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    return max(0.0, w) / max(1e-6, min(a[2] - a[0], b[2] - b[0]))


def _vgap(a: _BOX, b: _BOX) -> float:
    """Vertical distance between two boxes (0 when they overlap in y)."""
    return max(0.0, max(a[1], b[1]) - min(a[3], b[3]))


def _union(bs) -> _BOX:
    bs = list(bs)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def _lbox(l: Line) -> _BOX:
    return (l.x0, l.y0, l.x1, l.y1)


# --------------------------------------------------------------------------------------
# text helpers
# --------------------------------------------------------------------------------------
def _join_lines(lines: list[Line]) -> str:
    """Lines of one region in reading order -> text (line-end hyphens joined)."""
    out = ""
    for l in lines:
        t = l.text.strip()
        if not t:
            continue
        if not out:
            out = t
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
            out = out[:-1] + t
        else:
            out += " " + t
    return clean_text(out)


def _rows_of_lines(lines: list[Line]) -> list[list[Line]]:
    """Group lines of a region into visual rows (overlapping in y), each sorted by x."""
    rows: list[list[Line]] = []
    for l in sorted(lines, key=lambda q: (q.y0, q.x0)):
        if rows:
            r = rows[-1]
            ry0, ry1 = min(q.y0 for q in r), max(q.y1 for q in r)
            ov = min(ry1, l.y1) - max(ry0, l.y0)
            if ov > 0.5 * min(ry1 - ry0, l.y1 - l.y0):
                r.append(l)
                continue
        rows.append([l])
    return [sorted(r, key=lambda q: q.x0) for r in rows]


def _ordered(lines: list[Line]) -> list[Line]:
    """Lines in reading order inside one box: rows top to bottom, pieces left to right
    (a row's pieces are merged into one Line)."""
    out = []
    for r in _rows_of_lines(lines):
        if len(r) == 1:
            out.append(r[0])
            continue
        text = " ".join(q.text for q in r)
        n = sum(q.nchars for q in r) or 1
        first = r[0]
        out.append(Line(page=first.page, x0=min(q.x0 for q in r), y0=min(q.y0 for q in r), x1=max(q.x1 for q in r),
                        y1=max(q.y1 for q in r), text=text, size=max(r, key=lambda q: q.nchars).size,
                        bold=sum(q.bold * q.nchars for q in r) / n, italic=sum(q.italic * q.nchars for q in r) / n,
                        math=sum(q.math * q.nchars for q in r) / n, mono=0.0, font=first.font, block=first.block,
                        nchars=n, nwords=sum(q.nwords for q in r), size_hi=max(q.size_hi for q in r)))
    return out


_OPEN_END_RE = re.compile(r"(?:-|,|\b(?:with|of|over|and|or|the|a|an|in|on|for|to|by|from|per))$", re.I)


def _join_wrapped_rows(rows: list[list[str]]) -> list[list[str]]:
    """Join the continuation lines of wrapped cells that the grid put on rows of their
    own: a row with text only where the row above has text, too few cells to be a
    row, and text that continues (lower-case start, or the cell above ends open:
    "Baseline store with" + "write-ahead log")."""
    out: list[list[str]] = []
    for r in rows:
        if out:
            prev = out[-1]
            filled = [j for j, c in enumerate(r) if c]
            pfilled = sum(1 for c in prev if c)
            if filled and len(filled) < max(2, 0.5 * len(r)) and pfilled >= 2 \
                    and all(j < len(prev) and prev[j] for j in filled) \
                    and all(r[j][:1].islower() or _OPEN_END_RE.search(prev[j]) for j in filled):
                for j in filled:
                    prev[j] = (prev[j][:-1] + r[j]) if prev[j].endswith("-") and r[j][:1].islower() else (prev[j] + " " + r[j])
                continue
        out.append(list(r))
    return out


def _fix_cell(text: str, lig: dict[int, str]) -> str:
    """Cell text from the table grid: ligatures and private-use glyphs repaired."""
    from .base import fix_ligatures

    t = fix_ligatures(text or "")
    t = re.sub(r"(?<=\d)[\ue000-\uf8ff](?=\d)", ".", t)
    if lig:  # the document's ligature glyphs (decided on its text lines); other glyphs kept
        t = t.translate({cp - 0xF0000 + 0xE000: v for cp, v in lig.items()})
    t = re.sub(r"<br\s*/?>", " ", t)
    return clean_text(t)


# --------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------
class _Box:
    """One layout region during parsing."""

    __slots__ = ("bbox", "cls", "lines", "table", "order", "used", "text", "extra")

    def __init__(self, bbox: _BOX, cls: str, order: int, table: dict | None = None) -> None:
        self.bbox = bbox
        self.cls = cls
        self.lines: list[Line] = []
        self.table = table
        self.order = order
        self.used = False
        self.text = ""
        self.extra: dict[str, Any] = {}


class LayoutParser:
    """Parser backend on PyMuPDF's layout model (see the module docstring).

    Args:
        settings: Parsing settings; ``page_limit``, ``max_file_mb``, ``use_outline``,
            ``tables`` and ``layout_features`` apply.

    Attributes:
        name: ``"layout"``.
    """

    name = "layout"

    def __init__(self, settings: ParsingSettings | None = None) -> None:
        self.settings = settings or ParsingSettings()

    # ------------------------------------------------------------------ entry point
    def parse(self, path: str | Path) -> ParsedDocument:
        """Parse a PDF into elements in reading order.

        Returns:
            A :class:`ParsedDocument` with ``parser="layout"``. TITLE ``extra``:
            ``font_size``, ``bold``, ``source`` (``"outline"``, ``"numbering"``,
            ``"font"``), ``numbering``, ``layout_class``. TABLE ``extra``:
            ``caption``, ``rows``, ``markdown``, ``method`` (``"layout-grid"`` /
            ``"word-grid"``). IMAGE ``extra``: ``caption``, ``figure_bbox``,
            ``figure_text``. EQUATION ``extra``: ``eq_number``. ``metadata``:
            ``seconds`` (layout / text / total), ``layout_features``, counters,
            ``toc_lines``, ``warnings``.

        Raises:
            ParseError: unreadable input, more pages than ``page_limit``.
            EncryptedPDFError: password-protected PDF.
            EmptyDocumentError: no text layer (a scan without OCR).
        """
        t0 = time.perf_counter()
        name = Path(path).name
        doc = open_pdf(path, self.settings)
        try:
            return self._parse_open(doc, path, name, t0)
        except ParseError:
            raise
        except Exception as exc:
            raise ParseError(f"{name}: layout parsing failed ({first_line(exc)})") from exc
        finally:
            doc.close()

    # ------------------------------------------------------------------ stages
    def _layout(self, doc) -> tuple[list[Any], dict[int, list]]:
        """Run the layout model on every page (see :func:`run_layout`)."""
        return run_layout(doc, getattr(self.settings, "layout_features", "imf+rf"),
                          threads=getattr(self.settings, "layout_threads", None))

    def _parse_open(self, doc, path, name: str, t0: float) -> ParsedDocument:
        n_pages = doc.page_count
        # cheap check first: a document without a text layer is refused before the model runs
        total = 0
        for pg in doc:
            total += len(pg.get_text("text").strip())
            if total >= 20:
                break
        if total < 20:
            raise EmptyDocumentError(f"{name}: no extractable text layer ({total} characters in {n_pages} pages; scanned without OCR?)")
        warnings: list[str] = []
        outline: list[tuple[int, str, int]] = []
        try:
            outline = [(int(lv), clean_text(t), int(pg)) for lv, t, pg in doc.get_toc(simple=True)]
        except Exception as exc:
            warnings.append(f"outline unreadable: {exc}")
        t_layout0 = time.perf_counter()
        lpages, raw = self._layout(doc)
        t_layout = time.perf_counter() - t_layout0
        # text lines of every page (after the layout, which may have un-rotated pages)
        pages: list[PageInfo] = []
        for pno in range(n_pages):
            page = doc[pno]
            try:
                lines, _ = extract_page_lines(page, pno)
            except Exception as exc:
                warnings.append(f"page {pno + 1}: {type(exc).__name__}: {exc}")
                lines = []
            pi = PageInfo(float(page.rect.width), float(page.rect.height))
            pi.lines = lines
            pages.append(pi)
        lig = apply_ligature_map([l for p in pages for l in p.lines])
        mark_headers_footers(pages)
        for p in pages:  # a section number ("1" of "1 Introduction") is no page number
            for l in p.lines:
                if l.role == "pagenum" and any(q is not l and q.x0 >= l.x1 - 1 and q.x0 - l.x1 < 3 * max(l.size, 4)
                                               and min(q.y1, l.y1) - max(q.y0, l.y0) > 0.5 * min(q.h, l.h)
                                               for q in p.lines):
                    l.role = ""
        sizes: Counter = Counter()
        for p in pages:
            for l in p.lines:
                if not l.role and l.size > 0:
                    sizes[round(l.size * 2) / 2] += l.nchars
        body = float(sizes.most_common(1)[0][0]) if sizes else 10.0
        by_page = {lp.page_number - 1: lp for lp in lpages}
        page_boxes: list[list[_Box]] = []
        toc_lines: list[str] = []
        n_dropped = Counter()
        for pno, p in enumerate(pages):
            lp = by_page.get(pno)
            boxes = [_Box((float(b.x0), float(b.y0), float(b.x1), float(b.y1)), b.boxclass, k, b.table)
                     for k, b in enumerate(lp.boxes)] if lp is not None else []
            self.gridless_tables(boxes, raw.get(pno, []))
            self._assign_lines(p, boxes, n_dropped)
            page_boxes.append(boxes)
        title = self._doc_title(doc, page_boxes, body)
        elements, heads = self._elements(pages, page_boxes, body, lig, toc_lines, n_dropped)
        self._levels(heads, outline)
        for k, e in enumerate(elements):
            e.order = k
        meta = {
            "body_font_size": body,
            "layout_features": getattr(self.settings, "layout_features", "imf+rf"),
            "headings_from": "outline" if any(e.extra.get("source") == "outline" for e in heads) else "layout",
            "header_footer_lines_dropped": int(n_dropped["header"]),
            "toc_lines": toc_lines,
            "layout_classes": dict(Counter(b.cls for bs in page_boxes for b in bs)),
            "seconds": {"layout": round(t_layout, 3), "text": round(time.perf_counter() - t0 - t_layout, 3),
                        "total": round(time.perf_counter() - t0, 3)},
            "warnings": warnings,
        }
        return ParsedDocument(path=str(path), title=title, n_pages=n_pages, elements=elements, parser=self.name,
                              outline=outline, page_sizes=[(p.width, p.height) for p in pages], metadata=meta)

    @staticmethod
    def gridless_tables(boxes: list[_Box], raw: list) -> None:
        """pymupdf4llm drops table regions without a grid; add them back as tables
        (their rows come from a word grid)."""
        for r in raw:
            if r.get("class_name") != "table" or r.get("table_grid"):
                continue
            bb = tuple(float(v) for v in r.get("group_bbox") or r.get("bbox") or ())
            if len(bb) != 4 or bb[2] - bb[0] <= 2 or bb[3] - bb[1] <= 2:
                continue
            if any(b.cls == "table" and _inter(b.bbox, bb) > 0.5 * _area(bb) for b in boxes):
                continue
            # place it before the first box below it
            pos = len(boxes)
            for k, b in enumerate(boxes):
                if b.bbox[1] >= bb[1] - 1 and _xover(b.bbox, bb) > 0.3:
                    pos = k
                    break
            # boxes covered by the table are table content
            boxes[:] = [b for b in boxes if not (b.cls in ("text", "list-item") and _inter(b.bbox, bb) > 0.8 * _area(b.bbox))]
            boxes.insert(min(pos, len(boxes)), _Box(bb, "table", -1, None))

    @staticmethod
    def _assign_lines(p: PageInfo, boxes: list[_Box], dropped: Counter) -> None:
        """Each text line goes to the smallest box holding most of it; lines in no
        box become ``text`` boxes of their own, placed after the nearest box above."""
        orphans: list[Line] = []
        for l in p.lines:
            lb = _lbox(l)
            la = max(_area(lb), 1e-3)
            best, best_key = None, None
            for b in boxes:
                ov = _inter(lb, b.bbox)
                if ov >= 0.5 * la:
                    key = (_area(b.bbox),)
                    if best_key is None or key < best_key:
                        best, best_key = b, key
            if best is None:
                # a thin line box (e.g. equation pieces) may have little area: test the centre
                cx, cy = 0.5 * (l.x0 + l.x1), 0.5 * (l.y0 + l.y1)
                inside = [b for b in boxes if b.bbox[0] - 1 <= cx <= b.bbox[2] + 1 and b.bbox[1] - 1 <= cy <= b.bbox[3] + 1]
                if inside:
                    best = min(inside, key=lambda b: _area(b.bbox))
            if best is None:
                if l.role in ("header", "pagenum"):
                    dropped["header"] += 1
                else:
                    orphans.append(l)
            else:
                best.lines.append(l)
        # lines repeated in the top/bottom band of many pages (running headers, page
        # numbers) are dropped unless the model put them in a box with body lines
        for b in boxes:
            if b.lines and all(l.role in ("header", "pagenum") for l in b.lines):
                dropped["header"] += len(b.lines)
                b.lines = []
                if b.cls in ("text", "section-header", "title", "list-item", "caption", "footnote"):
                    b.cls = "page-header"
        if not orphans:
            return
        # orphan lines: one text box per run of close lines of one block
        groups: list[list[Line]] = []
        for l in sorted(orphans, key=lambda q: (q.block, q.y0, q.x0)):
            if groups and groups[-1][-1].block == l.block and l.y0 - groups[-1][-1].y1 < 1.2 * max(l.size, 4):
                groups[-1].append(l)
            else:
                groups.append([l])
        for g in groups:
            bb = _union(_lbox(l) for l in g)
            nb = _Box(bb, "text", -1)
            nb.lines = g
            nb.extra["orphan"] = True
            pos = 0
            best_y = None
            for k, b in enumerate(boxes):
                if b.bbox[3] <= bb[1] + 2 and _xover(b.bbox, bb) > 0.2 and (best_y is None or b.bbox[3] >= best_y):
                    best_y, pos = b.bbox[3], k + 1
            boxes.insert(pos, nb)

    @staticmethod
    def _doc_title(doc, page_boxes: list[list[_Box]], body: float) -> str:
        """The document title: on page 1 a ``title`` box, else the largest
        header before the first numbered/front-matter heading (font >= 1.25 x body)."""
        if not page_boxes:
            return ""
        cands = []
        for b in page_boxes[0]:
            if b.cls not in ("title", "section-header") or not b.lines:
                continue
            t = _join_lines(_ordered(b.lines))
            nh = normalize_heading(t)
            hn = heading_numbering(t)
            if (hn is not None and hn[0] not in ("A", "I")) or nh in FRONT_BACK_MATTER:
                break
            if b.bbox[1] > 0.6 * 792:
                continue
            cands.append((b, t, max(l.size for l in b.lines)))
        best = None
        for b, t, s in cands:
            if b.cls == "title" or s >= 1.25 * body:
                if best is None or s > best[2] + 0.1:
                    best = (b, t, s)
        if best is not None and 3 <= len(best[1]) <= 300:
            best[0].used = True
            best[0].extra["doctitle"] = True
            return best[1]
        mt = clean_text((doc.metadata or {}).get("title") or "")
        if len(mt) > 5 and not re.match(r"^(microsoft\s+word|untitled|slide|doi)", mt, re.I) \
                and not mt.lower().endswith((".pdf", ".doc", ".docx", ".dvi", ".tex")):
            return mt
        return ""

    # ------------------------------------------------------------------ elements
    def _elements(self, pages: list[PageInfo], page_boxes: list[list[_Box]], body: float, lig: dict[int, str],
                  toc_lines: list[str], dropped: Counter) -> tuple[list[Element], list[Element]]:
        elements: list[Element] = []
        heads: list[Element] = []
        footnotes: list[Element] = []
        for pno, boxes in enumerate(page_boxes):
            pg = pno + 1
            pictures = [b for b in boxes if b.cls == "picture"]
            # lines inside pictures are figure text
            for b in pictures:
                b.text = _join_lines(_ordered(b.lines))
            self._link_captions(boxes)
            for b in boxes:
                if b.used or b.extra.get("caption_of") is not None:
                    continue
                cls = b.cls
                if cls in ("page-header", "page-footer"):
                    dropped["header"] += len(b.lines)
                    continue
                if cls == "picture":
                    elements.extend(self._image(b, boxes, pg))
                    continue
                if cls == "table" and b.lines and sum(1 for l in b.lines if TOC_LINE_RE.search(l.text)) >= 0.5 * len(b.lines):
                    toc_lines.extend(clean_text(l.text) for l in _ordered(b.lines))  # a contents list
                    continue
                if cls == "table":
                    el = self.table_element(b, boxes, pg, body, lig, pages[pno])
                    if el is not None:
                        elements.append(el)
                    continue
                if not b.lines:
                    continue
                lines = _ordered(b.lines)
                if cls in ("text", "list-item") and len(lines) > 1:
                    cut = self._split_heading_line(lines, body)
                    if cut is not None:
                        k, hl = cut
                        before, after = lines[:k], lines[k + 1:]
                        if before:
                            elements.append(Element(NodeType.TEXT, _join_lines(before), pg, _union(_lbox(l) for l in before),
                                                    extra={"layout_class": cls}))
                        he = Element(NodeType.TITLE, clean_text(hl.text), pg, _lbox(hl), level=1,
                                     extra={"layout_class": cls, "font_size": float(hl.size), "bold": hl.bold >= 0.8,
                                            "numbering": "", "source": "split"})
                        elements.append(he)
                        heads.append(he)
                        lines = after
                        if not lines:
                            continue
                # table of contents lines (dot leaders + page number) are not text
                toc = [l for l in lines if TOC_LINE_RE.search(l.text)]
                if toc and len(toc) >= 0.5 * len(lines):
                    toc_lines.extend(clean_text(l.text) for l in toc)
                    lines = [l for l in lines if l not in toc]
                    if not lines:
                        continue
                text = _join_lines(lines)
                if not text:
                    continue
                bbox = _union(_lbox(l) for l in lines)
                extra: dict[str, Any] = {"layout_class": cls, "font_size": float(max(l.size for l in lines))}
                if cls in ("section-header", "title"):
                    kind = self._heading_kind(b, text, lines, pictures, body)
                    if kind == "heading":
                        hn = heading_numbering(text)
                        nh = normalize_heading(text)
                        if nh in ("contents", "tableofcontents"):
                            toc_lines.append(text)
                            continue
                        bold = sum(l.bold * l.nchars for l in lines) / max(1, sum(l.nchars for l in lines))
                        extra.update(bold=bold >= 0.8, numbering=hn[0] if hn else "",
                                     source="numbering" if hn else "font")
                        if footnotes:
                            elements.extend(footnotes)
                            footnotes = []
                        el = Element(NodeType.TITLE, text, pg, bbox, level=None, extra=extra)
                        elements.append(el)
                        heads.append(el)
                        continue
                    if kind == "figure-label":
                        continue
                    if kind == "caption":
                        elements.append(Element(NodeType.TEXT, text, pg, bbox, extra={**extra, "role": "caption"}))
                        continue
                    # else: ordinary text
                if cls == "formula":
                    m = _EQNUM_RE.search(text)
                    extra["eq_number"] = m.group(0).strip() if m else ""
                    extra["lines"] = len(lines)
                    elements.append(Element(NodeType.EQUATION, text, pg, bbox, extra=extra))
                    continue
                if cls == "footnote":
                    footnotes.append(Element(NodeType.TEXT, text, pg, bbox, extra={**extra, "role": "footnote"}))
                    continue
                if cls == "list-item" or text[:1] in "•◦▪●○■►▸‣⁃∙":
                    if text[:1] in _BULLETS and text[1:2] != " " and len(text) > 1 and text[:1] not in "-–*":
                        text = text[:1] + " " + text[1:]
                    extra["list"] = True
                if cls == "caption":
                    extra["role"] = "caption"
                elements.append(Element(NodeType.TEXT, text, pg, bbox, extra=extra))
        elements.extend(footnotes)
        return elements, heads

    @staticmethod
    def _split_heading_line(lines: list[Line], body: float) -> tuple[int, Line] | None:
        """A front/back-matter heading ("References", "Acknowledgments") standing
        on its own line inside a text box the model did not split."""
        for k, l in enumerate(lines):
            t = l.text.strip()
            if len(t.split()) <= 3 and normalize_heading(t) in FRONT_BACK_MATTER - {"notes", "index", "summary"} \
                    and (l.bold >= 0.8 or l.size >= 1.1 * body):
                return k, l
        return None

    @staticmethod
    def _heading_kind(b: _Box, text: str, lines: list[Line], pictures: list[_Box], body: float) -> str:
        """``"heading"``, ``"figure-label"`` (text inside or next to a picture),
        ``"caption"`` or ``"text"`` (long sentences, dot-leader lines) for a box the
        model classed as a header."""
        hn = heading_numbering(text)
        nh = normalize_heading(text)
        words = text.split()
        if is_caption(text, strict=False) and not hn:
            return "caption"
        if len(words) > _HEAD_MAX_WORDS or len(text) > 200:
            return "text"
        if TOC_LINE_RE.search(text):
            return "text"
        size = max((l.size for l in lines), default=body)
        if not hn and nh not in FRONT_BACK_MATTER and size < 1.15 * body:
            for pb in pictures:
                inside = _inter(b.bbox, pb.bbox) >= 0.5 * max(_area(b.bbox), 1e-3)
                pw = pb.bbox[2] - pb.bbox[0]
                near = _vgap(b.bbox, pb.bbox) <= 20 and _xover(b.bbox, pb.bbox) >= 0.5 \
                    and (b.bbox[2] - b.bbox[0]) <= max(1.05 * pw + 40, 2.0 * pw)
                if inside or near:
                    pb.text = clean_text((text + " " + pb.text).strip())
                    return "figure-label"
        if not any(ch.isalpha() for ch in text):
            return "text"
        return "heading"

    @staticmethod
    def _link_captions(boxes: list[_Box]) -> None:
        """Attach caption boxes (class ``caption`` or text starting "Figure N:" /
        "Table N:") to the nearest picture or table; adjacent caption pieces join."""
        caps = []
        for b in boxes:
            if not b.lines or b.used:
                continue
            t = _join_lines(_ordered(b.lines))
            kind = is_caption(t)
            if b.cls == "caption" or (b.cls in ("text", "section-header") and kind is not None):
                caps.append((b, t, kind))
        # join a caption with the caption-class piece right below it ("... Section 23" + "of WSJ)")
        for i, (b, t, kind) in enumerate(caps):
            if kind is None:
                continue
            for b2, t2, k2 in caps[i + 1:]:
                if k2 is None and not b2.used and _vgap(b.bbox, b2.bbox) < 6 and b2.bbox[1] > b.bbox[1]:
                    b.lines += b2.lines
                    b.bbox = _union([b.bbox, b2.bbox])
                    b2.extra["caption_of"] = -2
                    b2.used = True
        for b, t, kind in caps:
            if b.used:
                continue
            targets = [x for x in boxes if x.cls in ("picture", "table") and x.extra.get("caption") is None]
            if kind == "table":
                targets = [x for x in targets if x.cls == "table"] or targets
            elif kind == "figure":
                targets = [x for x in targets if x.cls == "picture"] or targets
            best = None
            for x in targets:
                g = _vgap(b.bbox, x.bbox)
                if g > 40 or _xover(b.bbox, x.bbox) < 0.3:
                    continue
                if best is None or g < best[0]:
                    best = (g, x)
            if best is None:
                continue
            x = best[1]
            x.extra["caption"] = _join_lines(_ordered(b.lines))
            b.extra["caption_of"] = x.order

    @staticmethod
    def _image(b: _Box, boxes: list[_Box], pg: int) -> list[Element]:
        cap = b.extra.get("caption") or ""
        if not cap:
            # pictures of one figure share the caption of a neighbour picture: merge
            for o in boxes:
                if o is b or o.cls != "picture" or not o.extra.get("caption"):
                    continue
                stacked = _vgap(o.bbox, b.bbox) < 15 and _xover(o.bbox, b.bbox) > 0.5
                yov = min(o.bbox[3], b.bbox[3]) - max(o.bbox[1], b.bbox[1])
                hgap = max(o.bbox[0], b.bbox[0]) - min(o.bbox[2], b.bbox[2])
                side = yov > 0.3 * min(o.bbox[3] - o.bbox[1], b.bbox[3] - b.bbox[1]) and hgap < 150
                if stacked or side:
                    o.bbox = _union([o.bbox, b.bbox])
                    o.text = clean_text(b.text + " " + o.text)
                    return []
        extra = {"caption": cap, "figure_bbox": b.bbox, "figure_text": b.text, "layout_class": "picture"}
        return [Element(NodeType.IMAGE, cap, pg, b.bbox, extra=extra)]

    def table_element(self, b: _Box, boxes: list[_Box], pg: int, body: float, lig: dict[int, str], p: PageInfo) -> Element | None:
        """The TABLE element of one model ``table`` region (also used by the layout gate,
        :mod:`.pdf.gate`).

        Rows come from the model's table grid (cell texts repaired with the ligature map
        ``lig``), else from a word grid of the region's lines, else one row per line;
        ``b.extra["caption"]`` (set when the caption was paired) becomes
        ``extra["caption"]``.

        Args:
            b: The region (box in PDF points). pg: its 1-based page. body: the body font
            size (points). ``boxes`` and ``p`` are the page's regions and lines.

        Returns:
            The element, or None when it has neither rows nor a caption.
        """
        from .pdf.tables import rows_to_markdown, word_grid

        rows: list[list[str]] = []
        method = "layout-grid"
        t = b.table or {}
        ext = t.get("extract")
        if ext:
            rows = [[_fix_cell(c or "", lig) for c in r] for r in ext]
            rows = [r for r in rows if any(c for c in r)]
            rows = _join_wrapped_rows(rows)
            # drop empty columns
            if rows:
                keep = [j for j in range(max(len(r) for r in rows)) if any(j < len(r) and r[j] for r in rows)]
                rows = [[r[j] if j < len(r) else "" for j in keep] for r in rows]
        if not rows and self.settings.tables:
            words = []
            for l in b.lines:
                words.append((l.x0, l.y0, l.x1, l.y1, l.text))
            rows = word_grid(words, body) if words else []
            method = "word-grid"
        if not rows and b.lines:
            rows = [[clean_text(" ".join(q.text for q in r))] for r in _rows_of_lines(b.lines)]
            method = "lines"
        cap = b.extra.get("caption") or ""
        if not rows and not cap:
            return None
        md = rows_to_markdown(rows)
        text = md if not cap else md
        extra = {"caption": cap, "rows": rows, "markdown": md, "method": method, "region_bbox": b.bbox,
                 "layout_class": "table"}
        return Element(NodeType.TABLE, text, pg, b.bbox, extra=extra)

    # ------------------------------------------------------------------ heading levels
    def _levels(self, heads: list[Element], outline: list[tuple[int, str, int]]) -> None:
        """Heading levels: the outline entry the heading matches, else numbering,
        else font size (the level of numbered headings of that size, else size rank)."""
        use_outline = self.settings.use_outline and len(outline) >= 3
        onorm = [(lv, normalize_heading(t), pg) for lv, t, pg in outline] if use_outline else []
        used: set[int] = set()
        for e in heads:
            if not onorm:
                break
            nh = normalize_heading(e.text)
            if not nh:
                continue
            for k, (lv, on, pg) in enumerate(onorm):
                if k in used or abs(pg - e.page) > 1:
                    continue
                if on == nh or (len(nh) >= 6 and (on.startswith(nh) or nh.startswith(on)) and min(len(on), len(nh)) >= 0.6 * max(len(on), len(nh))):
                    e.level = max(1, min(int(lv), 6))
                    e.extra["source"] = "outline"
                    used.add(k)
                    break
        size_levels: dict[float, Counter] = defaultdict(Counter)
        for e in heads:
            if e.level is None and e.extra.get("numbering"):
                e.level = min(6, numbering_level(e.extra["numbering"]))
            if e.extra.get("numbering") and e.level is not None:
                size_levels[round(float(e.extra.get("font_size", 0)) * 2) / 2][e.level] += 1
        rest = [e for e in heads if e.level is None]
        if not rest:
            return
        sizes = sorted({round(float(e.extra.get("font_size", 0)) * 2) / 2 for e in rest} | set(size_levels), reverse=True)
        for e in rest:
            s = round(float(e.extra.get("font_size", 0)) * 2) / 2
            if normalize_heading(e.text) in FRONT_BACK_MATTER:
                e.level = 1
            elif s in size_levels:
                e.level = size_levels[s].most_common(1)[0][0]
            elif size_levels:
                # between numbered sizes: the level of the nearest larger numbered size (+1 when smaller)
                larger = [x for x in size_levels if x > s]
                e.level = min(6, (size_levels[min(larger)].most_common(1)[0][0] + 1) if larger else 1)
            else:
                e.level = min(6, sizes.index(s) + 1)
