"""MinerU backend (SPEC F1): import MinerU output, or run an installed ``mineru``.

MinerU (opendatalab) writes, per PDF, a ``<stem>_content_list.json`` (blocks in
reading order) and a ``<stem>_middle.json`` (``layout.json`` from the cloud API) with
per-page layout. The content-list format changed between versions; all four variants
in the DocMaster corpus are read:

* **0.x / 1.x (magic-pdf)**: no ``bbox``; images carry ``img_caption``/``img_footnote``;
  types ``text``, ``image``, ``table``, ``equation``. Boxes are taken from the middle
  JSON (``para_blocks``, PDF points) by aligning blocks page by page.
* **2.x**: every block has ``bbox`` on a 0-1000 scale per page; ``image_caption``;
  ``discarded`` blocks.
* **3.x**: adds ``header``, ``footer``, ``page_number``, ``page_footnote``,
  ``aside_text`` (dropped), ``list`` (``list_items``), ``code`` (``code_body``) and
  ``chart``; ``text_level`` 1 is the document title and 2 the sections.
* ``_content_list_v2.json`` (mineru >= 2.7): a list of pages of ``{type, bbox,
  content}``; read when it is the only file or passed explicitly.

0-1000 boxes are converted to PDF points with the page size of the PDF (or, without
the PDF, the ``page_size`` of the middle JSON); without either they stay per-mille
and ``metadata["bbox_units"] == "per-mille"``.

MinerU gives every heading the same ``text_level``. Real levels are assigned from the
numbering ("3" -> 1, "3.2" -> 2, "A.1" -> 2, Roman numerals) and, for unnumbered
headings, from the font size of the heading text in the PDF (or the line height in
the middle JSON), compared with the sizes of numbered headings.

Source: MinerU output format (opendatalab/MinerU, ``docs/output_file*.md``); the
corpus samples in ``shared/corpus/mineru/README.md``.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ..config import ParsingSettings
from ..errors import ConfigError, ParseError
from ..model import BBox, Element, NodeType, ParsedDocument
from .base import clean_text, heading_numbering, normalize_heading, numbering_level

__all__ = ["import_mineru", "find_mineru_output", "find_middle_json", "MinerUImporter", "MinerUParser",
           "html_table_rows"]

_DROP_TYPES = {"header", "footer", "page_number", "page_footnote", "discarded", "aside_text",
               "page_header", "page_footer", "page_aside_text"}
_FRONT_BACK = {"abstract", "references", "bibliography", "acknowledgments", "acknowledgements", "appendix",
               "keywords", "limitations", "contents"}


# --------------------------------------------------------------------------------------
# Locating MinerU output
# --------------------------------------------------------------------------------------


def find_mineru_output(pdf_path: str | Path) -> Path | None:
    """Find MinerU output that belongs to ``pdf_path``.

    Looks, in this order, for ``<dir>/<stem>_content_list.json``, any
    ``<dir>/<stem>/**/<stem>_content_list.json`` (e.g. ``<stem>/auto/...``,
    ``<stem>/ocr/...``), any ``<dir>/<stem>/**/*_content_list.json``, and finally a
    single ``*_content_list.json`` in a folder that holds exactly one PDF (the MinerU
    cloud API names files by task id). ``_content_list_v2.json`` files are used only
    when no classic content list exists.

    Returns:
        Path of the content list, or ``None``.
    """
    pdf = Path(pdf_path)
    d, stem = pdf.parent, pdf.stem
    direct = d / f"{stem}_content_list.json"
    if direct.is_file():
        return direct
    sub = d / stem
    if sub.is_dir():
        named = sorted(sub.rglob(f"{stem}_content_list.json"))
        if named:
            return named[0]
        anyl = sorted(p for p in sub.rglob("*_content_list.json"))
        if anyl:
            return anyl[0]
        v2 = sorted(sub.rglob("*_content_list_v2.json"))
        if v2:
            return v2[0]
    if (d / f"{stem}_content_list_v2.json").is_file():
        return d / f"{stem}_content_list_v2.json"
    try:
        pdfs = [p for p in d.iterdir() if p.suffix.lower() == ".pdf"]
        cls = [p for p in d.iterdir() if p.name.endswith("_content_list.json")]
    except OSError:
        return None
    if len(pdfs) == 1 and len(cls) == 1:
        return cls[0]
    return None


def find_middle_json(content_list_path: str | Path) -> Path | None:
    """The middle JSON next to a content list (``<prefix>_middle.json`` or the cloud
    API's ``layout.json``), or ``None``."""
    p = Path(content_list_path)
    prefix = re.sub(r"_content_list(_v2)?\.json$", "", p.name)
    for cand in (p.parent / f"{prefix}_middle.json", p.parent / "layout.json"):
        if cand.is_file():
            return cand
    mids = sorted(p.parent.glob("*_middle.json"))
    return mids[0] if len(mids) == 1 else None


def _find_pdf(content_list_path: Path) -> Path | None:
    prefix = re.sub(r"_content_list(_v2)?\.json$", "", content_list_path.name)
    for d in [content_list_path.parent, *list(content_list_path.parents)[:3]]:
        cand = d / f"{prefix}.pdf"
        if cand.is_file():
            return cand
    try:
        pdfs = [p for p in content_list_path.parent.iterdir() if p.suffix.lower() == ".pdf" and "_origin" not in p.name
                and "_layout" not in p.name and "_span" not in p.name and "_model" not in p.name]
    except OSError:
        return None
    return pdfs[0] if len(pdfs) == 1 else None


# --------------------------------------------------------------------------------------
# HTML tables
# --------------------------------------------------------------------------------------


class _TableHTML(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._span = 1

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
            self._span = 1
            for k, v in attrs:
                if k == "colspan" and v and v.isdigit():
                    self._span = max(1, min(int(v), 50))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            if self._row is None:
                self._row = []
            txt = clean_text("".join(self._cell))
            self._row.append(txt)
            self._row.extend([""] * (self._span - 1))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_table_rows(html: str) -> list[list[str]]:
    """Rows x cells of an HTML ``<table>`` (colspans repeated as empty cells)."""
    if not html or "<t" not in html:
        return []
    p = _TableHTML()
    try:
        p.feed(html)
        p.close()
    except Exception:  # malformed HTML from OCR: keep what was parsed
        pass
    return p.rows


def _rows_markdown(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    n = max(len(r) for r in rows)
    norm = [[c.replace("|", "\\|") for c in r] + [""] * (n - len(r)) for r in rows]
    out = ["| " + " | ".join(norm[0]) + " |", "|" + "---|" * n]
    out += ["| " + " | ".join(r) + " |" for r in norm[1:]]
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------


def _strip_math(t: str) -> str:
    t = t.strip()
    if t.startswith("$$") and t.endswith("$$"):
        t = t[2:-2]
    return t.strip()


def _join(parts: Any) -> str:
    if parts is None:
        return ""
    if isinstance(parts, str):
        return clean_text(parts)
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            c = p.get("content")
            if isinstance(c, str):
                out.append(f"${c}$" if p.get("type") == "equation_inline" else c)
            elif isinstance(c, list):
                out.append(_join(c))
            elif "item_content" in p:
                out.append(_join(p["item_content"]))
    return clean_text(" ".join(out))


class MinerUImporter:
    """Reads MinerU output into a :class:`ParsedDocument` (``parser="mineru-import"``).

    Args:
        content_list_path: ``*_content_list.json`` (or ``*_content_list_v2.json``).
        pdf_path: The source PDF (optional; found next to the output when omitted).
            Used for page sizes (box conversion) and heading font sizes.
        middle_json_path: ``*_middle.json`` / ``layout.json`` (optional; found next to
            the content list when omitted). Used for 0.x boxes and page sizes.
    """

    name = "mineru-import"

    def __init__(self, content_list_path: str | Path, pdf_path: str | Path | None = None,
                 middle_json_path: str | Path | None = None) -> None:
        self.path = Path(content_list_path)
        if not self.path.is_file():
            raise ParseError(f"{self.path.name}: MinerU content list not found")
        self.pdf_path = Path(pdf_path) if pdf_path else _find_pdf(self.path)
        if self.pdf_path is not None and not self.pdf_path.is_file():
            self.pdf_path = None
        mj = Path(middle_json_path) if middle_json_path else find_middle_json(self.path)
        self.middle_path = mj if (mj is not None and mj.is_file()) else None

    # ------------------------------------------------------------------
    def load(self) -> ParsedDocument:
        """Import; raises :class:`ParseError` for unreadable or malformed JSON."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ParseError(f"{self.path.name}: cannot read MinerU content list ({exc})") from exc
        if not isinstance(data, list):
            raise ParseError(f"{self.path.name}: MinerU content list is not a JSON list")
        is_v2 = bool(data) and all(isinstance(p, list) for p in data)
        middle = self._load_middle()
        page_sizes = self._page_sizes(middle, data, is_v2)
        blocks = self._v2_blocks(data) if is_v2 else [b for b in data if isinstance(b, dict)]
        has_bbox = any("bbox" in b for b in blocks)
        version = "v2" if is_v2 else ("3.x" if any(b.get("type") in ("page_number", "list", "code", "chart", "header", "footer")
                                                   for b in blocks) else ("2.x" if has_bbox else "0.x"))
        mid_boxes = self._middle_boxes(middle, blocks) if (not has_bbox and middle) else {}
        elements: list[Element] = []
        base = self.path.parent
        for i, b in enumerate(blocks):
            t = b.get("type", "")
            if t in _DROP_TYPES:
                continue
            page = int(b.get("page_idx", 0)) + 1
            bbox = self._bbox(b, page, page_sizes, mid_boxes.get(i))
            el = self._element(b, t, page, bbox, base)
            if el is not None:
                elements.append(el)
        title = self._assign_levels(elements, blocks, version)
        for k, e in enumerate(elements):
            e.order = k
        n_pages = max([e.page for e in elements] + [len(page_sizes)] + [int(b.get("page_idx", 0)) + 1 for b in blocks] + [1])
        meta = {
            "mineru_version": version,
            "content_list": str(self.path),
            "middle_json": str(self.middle_path) if self.middle_path else None,
            "bbox_units": "points" if (has_bbox and page_sizes) or mid_boxes else ("per-mille" if has_bbox else "none"),
            "mineru_version_name": (middle or {}).get("_version_name"),
        }
        return ParsedDocument(
            path=str(self.pdf_path) if self.pdf_path else str(self.path),
            title=title,
            n_pages=n_pages,
            elements=elements,
            parser=self.name,
            outline=self._outline(),
            page_sizes=page_sizes,
            metadata=meta,
        )

    # ------------------------------------------------------------------ inputs
    def _load_middle(self) -> dict | None:
        if self.middle_path is None:
            return None
        try:
            d = json.loads(self.middle_path.read_text(encoding="utf-8"))
            return d if isinstance(d, dict) and "pdf_info" in d else None
        except (OSError, ValueError):
            return None

    def _page_sizes(self, middle: dict | None, data: list, is_v2: bool) -> list[tuple[float, float]]:
        if self.pdf_path is not None:
            try:
                import pymupdf

                with pymupdf.open(str(self.pdf_path)) as doc:
                    if doc.needs_pass:
                        doc.authenticate("")
                    return [(float(p.rect.width), float(p.rect.height)) for p in doc]
            except Exception:  # unreadable PDF: fall back to the middle JSON
                pass
        if middle:
            out = []
            for p in middle.get("pdf_info", []):
                ps = p.get("page_size") or [0, 0]
                out.append((float(ps[0]), float(ps[1])))
            return out
        return []

    def _outline(self) -> list[tuple[int, str, int]]:
        if self.pdf_path is None:
            return []
        try:
            import pymupdf

            with pymupdf.open(str(self.pdf_path)) as doc:
                if doc.needs_pass:
                    doc.authenticate("")
                return [(int(l), clean_text(t), int(p)) for l, t, p in doc.get_toc(simple=True)]
        except Exception:
            return []

    @staticmethod
    def _v2_blocks(pages: list) -> list[dict]:
        """Flatten ``_content_list_v2.json`` into classic content-list-like blocks."""
        out = []
        for pi, page in enumerate(pages):
            for b in page:
                if not isinstance(b, dict):
                    continue
                t = b.get("type", "")
                c = b.get("content") or {}
                nb: dict[str, Any] = {"page_idx": pi, "bbox": b.get("bbox")}
                if t == "title":
                    nb.update(type="text", text=_join(c.get("title_content")), text_level=c.get("level", 1))
                elif t == "paragraph":
                    nb.update(type="text", text=_join(c.get("paragraph_content")))
                elif t == "equation_interline":
                    nb.update(type="equation", text=c.get("math_content", ""), img_path=(c.get("image_source") or {}).get("path"))
                elif t == "image":
                    nb.update(type="image", img_path=(c.get("image_source") or {}).get("path"),
                              image_caption=[_join(c.get("image_caption"))], image_footnote=[_join(c.get("image_footnote"))])
                elif t == "chart":
                    nb.update(type="chart", img_path=(c.get("image_source") or {}).get("path"), content=c.get("content", ""),
                              chart_caption=[_join(c.get("chart_caption"))], chart_footnote=[_join(c.get("chart_footnote"))])
                elif t == "table":
                    nb.update(type="table", img_path=(c.get("image_source") or {}).get("path"), table_body=c.get("html", ""),
                              table_caption=[_join(c.get("table_caption"))], table_footnote=[_join(c.get("table_footnote"))])
                elif t == "list":
                    nb.update(type="list", sub_type=c.get("list_type", ""),
                              list_items=[_join(it.get("item_content")) if isinstance(it, dict) else str(it) for it in c.get("list_items", [])])
                elif t in ("algorithm", "code"):
                    nb.update(type="code", sub_type="algorithm", code_body=_join(c.get("algorithm_content") or c.get("code_content")),
                              code_caption=[_join(c.get("algorithm_caption") or c.get("code_caption"))])
                else:
                    nb.update(type=t)
                out.append(nb)
        return out

    # ------------------------------------------------------------------ boxes
    @staticmethod
    def _bbox(b: dict, page: int, sizes: list[tuple[float, float]], mid: BBox | None) -> BBox:
        bb = b.get("bbox")
        if bb and len(bb) == 4:
            x0, y0, x1, y1 = (float(v) for v in bb)
            if 0 < page <= len(sizes) and sizes[page - 1][0] > 0:
                w, h = sizes[page - 1]
                return (x0 * w / 1000.0, y0 * h / 1000.0, x1 * w / 1000.0, y1 * h / 1000.0)
            return (x0, y0, x1, y1)
        if mid is not None:
            return mid
        return (0.0, 0.0, 0.0, 0.0)

    @staticmethod
    def _middle_boxes(middle: dict, blocks: list[dict]) -> dict[int, BBox]:
        """Boxes (PDF points) for a 0.x content list by aligning it, page by page,
        with the middle JSON's ``para_blocks`` (type-compatible, in order, with a text
        check for text blocks)."""
        compat = {
            "text": {"text", "title", "list", "index"},
            "image": {"image"},
            "table": {"table"},
            "equation": {"interline_equation"},
        }
        by_page: dict[int, list[dict]] = defaultdict(list)
        for pi, p in enumerate(middle.get("pdf_info", [])):
            for pb in p.get("para_blocks", []):
                if pb.get("lines_deleted"):
                    continue
                by_page[int(p.get("page_idx", pi))].append(pb)

        def block_text(pb: dict) -> str:
            parts = []
            for ln in pb.get("lines", []):
                for sp in ln.get("spans", []):
                    if isinstance(sp.get("content"), str):
                        parts.append(sp["content"])
            for sub in pb.get("blocks", []) or []:
                parts.append(block_text(sub))
            return normalize_heading(" ".join(parts))

        out: dict[int, BBox] = {}
        cursor: dict[int, int] = defaultdict(int)
        for i, b in enumerate(blocks):
            t = b.get("type", "")
            pg = int(b.get("page_idx", 0))
            cands = by_page.get(pg, [])
            want = compat.get(t)
            if not want:
                continue
            key = normalize_heading(b.get("text", ""))[:24] if t == "text" else ""
            start = cursor[pg]
            hit = None
            for k in range(start, len(cands)):
                pb = cands[k]
                if pb.get("type") not in want:
                    continue
                if key and key not in block_text(pb):
                    continue
                hit = k
                break
            if hit is None and key:
                for k in range(len(cands)):
                    if cands[k].get("type") in want and key in block_text(cands[k]):
                        hit = k
                        break
            if hit is None:
                continue
            cursor[pg] = max(cursor[pg], hit + 1)
            bb = cands[hit].get("bbox")
            if bb and len(bb) == 4:
                out[i] = tuple(float(v) for v in bb)  # type: ignore[assignment]
        return out

    # ------------------------------------------------------------------ elements
    def _element(self, b: dict, t: str, page: int, bbox: BBox, base: Path) -> Element | None:
        def path_of(key: str = "img_path") -> str | None:
            p = b.get(key)
            return str((base / p).resolve()) if p else None

        if t == "text":
            txt = clean_text(b.get("text", ""))
            if not txt:
                return None
            lvl = b.get("text_level")
            if lvl:
                return Element(NodeType.TITLE, txt, page, bbox, level=int(lvl), extra={"mineru_level": int(lvl)})
            return Element(NodeType.TEXT, txt, page, bbox)
        if t in ("image", "chart"):
            cap = _join(b.get("image_caption") or b.get("img_caption") or b.get("chart_caption") or [])
            foot = _join(b.get("image_footnote") or b.get("img_footnote") or b.get("chart_footnote") or [])
            text = clean_text(" ".join(x for x in (cap, foot, clean_text(str(b.get("content") or ""))) if x))
            return Element(NodeType.IMAGE, text, page, bbox, extra={
                "caption": cap, "footnote": foot, "image_path": path_of(), "kind": t})
        if t == "table":
            cap = _join(b.get("table_caption") or [])
            foot = _join(b.get("table_footnote") or [])
            body = b.get("table_body") or ""
            rows = html_table_rows(body)
            md = _rows_markdown(rows)
            text = "\n\n".join(x for x in (cap, md, foot) if x)
            return Element(NodeType.TABLE, text, page, bbox, extra={
                "caption": cap, "footnote": foot, "rows": rows, "markdown": md, "html": body, "image_path": path_of()})
        if t == "equation":
            tex = _strip_math(b.get("text", ""))
            if not tex:
                return None
            return Element(NodeType.EQUATION, tex, page, bbox, extra={
                "format": b.get("text_format", "latex"), "image_path": path_of()})
        if t == "list":
            items = [clean_text(str(x)) for x in b.get("list_items", []) if str(x).strip()]
            if not items:
                return None
            return Element(NodeType.TEXT, "\n".join(items), page, bbox, extra={"list": True, "sub_type": b.get("sub_type", "")})
        if t == "code":
            cap = _join(b.get("code_caption") or [])
            body = b.get("code_body") or ""
            text = "\n".join(x for x in (cap, body.strip()) if x)
            if not text:
                return None
            return Element(NodeType.TEXT, text, page, bbox, extra={"code": True, "sub_type": b.get("sub_type", "")})
        if t in ("interline_equation",):
            return Element(NodeType.EQUATION, _strip_math(b.get("text", "")), page, bbox)
        return None

    # ------------------------------------------------------------------ heading levels
    def _heading_sizes(self, elements: list[Element]) -> dict[int, float]:
        """Font size (points) of each TITLE element, from the PDF text under its box."""
        heads = [(i, e) for i, e in enumerate(elements) if e.type == NodeType.TITLE and e.bbox[2] > e.bbox[0]]
        if not heads or self.pdf_path is None:
            return {}
        out: dict[int, float] = {}
        try:
            import pymupdf

            with pymupdf.open(str(self.pdf_path)) as doc:
                if doc.needs_pass:
                    doc.authenticate("")
                for i, e in heads:
                    if not (1 <= e.page <= doc.page_count):
                        continue
                    page = doc[e.page - 1]
                    r = pymupdf.Rect(*e.bbox) + (-2, -2, 2, 2)
                    sizes: Counter = Counter()
                    d = page.get_text("dict", clip=r, flags=pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES)
                    for blk in d.get("blocks", []):
                        for ln in blk.get("lines", []):
                            for sp in ln.get("spans", []):
                                k = len(sp.get("text", "").strip())
                                if k:
                                    sizes[round(float(sp.get("size", 0)) * 2) / 2] += k
                    if sizes:
                        out[i] = max(sizes.items(), key=lambda kv: kv[1])[0]
        except Exception:
            return out
        return out

    def _assign_levels(self, elements: list[Element], blocks: list[dict], version: str) -> str:
        """Give TITLE elements real levels; return the document title (removed from
        the elements when it is the first heading on page 1)."""
        heads = [e for e in elements if e.type == NodeType.TITLE]
        if not heads:
            return ""
        sizes = self._heading_sizes(elements)
        size_of = {id(elements[i]): s for i, s in sizes.items()}
        doc_title = ""
        first = heads[0]
        others = heads[1:]
        mineru_lvls = {e.extra.get("mineru_level", 1) for e in heads}
        is_title = False
        if first.page == 1 and heading_numbering(first.text) is None and normalize_heading(first.text) not in _FRONT_BACK and others:
            if len(mineru_lvls) > 1 and first.extra.get("mineru_level") == min(mineru_lvls) and \
                    sum(1 for e in heads if e.extra.get("mineru_level") == min(mineru_lvls)) == 1:
                is_title = True
            elif id(first) in size_of and all(size_of.get(id(e), 0) < size_of[id(first)] for e in others):
                is_title = True
            elif id(first) not in size_of and elements.index(first) <= 2:
                is_title = True
        if is_title:
            doc_title = first.text
            elements.remove(first)
            heads = others
        # numbered headings: level from numbering
        known: dict[float, Counter] = defaultdict(Counter)
        for e in heads:
            hn = heading_numbering(e.text)
            if hn is not None:
                e.level = min(6, numbering_level(hn[0]))
                e.extra["numbering"] = hn[0]
                if id(e) in size_of:
                    known[size_of[id(e)]][e.level] += 1
            else:
                e.level = None
        size_level = {s: c.most_common(1)[0][0] for s, c in known.items()}
        distinct = sorted({size_of[id(e)] for e in heads if id(e) in size_of}, reverse=True)
        any_numbered = any(e.level is not None for e in heads)
        for e in heads:
            if id(e) in size_of:
                e.extra["font_size"] = size_of[id(e)]
            if e.level is not None:
                continue
            s = size_of.get(id(e))
            if normalize_heading(e.text) in _FRONT_BACK and any_numbered:
                e.level = 1  # Abstract / References / Acknowledgements sit at section level
            elif s is not None and size_level:
                close = [k for k in size_level if abs(k - s) <= 0.5]
                if close:
                    e.level = size_level[min(close, key=lambda k: abs(k - s))]
                else:
                    bigger = [lv for k, lv in size_level.items() if k > s]
                    e.level = (max(bigger) + 1) if bigger else 1
            elif s is not None and distinct:
                e.level = distinct.index(s) + 1
            elif not any_numbered and len(mineru_lvls) > 1:
                e.level = max(1, int(e.extra.get("mineru_level", 1)) - min(mineru_lvls) + (0 if is_title else 1))
            else:
                e.level = 1
            e.level = min(int(e.level), 6)
        return doc_title


def import_mineru(content_list_path: str | Path, pdf_path: str | Path | None = None,
                  middle_json_path: str | Path | None = None) -> ParsedDocument:
    """Import MinerU output as a :class:`ParsedDocument` (``parser="mineru-import"``).

    Args:
        content_list_path: ``<stem>_content_list.json`` of any MinerU version (0.x,
            2.x, 3.x) or a ``_content_list_v2.json``.
        pdf_path: The source PDF; optional, looked up next to the output when omitted.
            With it, 0-1000 boxes become PDF points and heading font sizes are read.
        middle_json_path: ``<stem>_middle.json`` / ``layout.json``; optional, looked up
            next to the content list when omitted. Gives boxes for 0.x output.

    Returns:
        Elements in MinerU's reading order with 1-based pages and boxes in PDF points
        (see the module docstring for the per-mille fallback). Headers, footers, page
        numbers, page footnotes and discarded blocks are dropped.

    Raises:
        ParseError: the content list is missing, unreadable or not a JSON list.
    """
    return MinerUImporter(content_list_path, pdf_path, middle_json_path).load()


class MinerUParser:
    """Runs an installed MinerU (``mineru`` or ``magic-pdf`` command) as a subprocess
    into a temporary folder and imports its output.

    Args:
        settings: ``mineru_command`` names the executable.
        timeout: Seconds before the subprocess is killed.

    Attributes:
        name: ``"mineru"``.
    """

    name = "mineru"

    def __init__(self, settings: ParsingSettings | None = None, timeout: float = 3600.0) -> None:
        self.settings = settings or ParsingSettings()
        self.timeout = timeout

    @property
    def command(self) -> str | None:
        """Absolute path of the MinerU executable, or ``None`` when not on PATH."""
        return shutil.which(self.settings.mineru_command)

    def parse(self, path: str | Path) -> ParsedDocument:
        """Parse ``path`` with MinerU.

        Raises:
            ConfigError: MinerU is not installed.
            ParseError: MinerU failed, timed out or wrote no content list.
        """
        exe = self.command
        pdf = Path(path)
        if exe is None:
            raise ConfigError(f"MinerU command {self.settings.mineru_command!r} not found on PATH")
        if not pdf.is_file():
            raise ParseError(f"{pdf.name}: file not found")
        with tempfile.TemporaryDirectory(prefix="docmaster-mineru-") as out:
            cmd = [exe, "-p", str(pdf), "-o", out]
            if Path(exe).name.startswith("magic-pdf"):
                cmd += ["-m", "auto"]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise ParseError(f"{pdf.name}: MinerU timed out after {self.timeout:g} s") from exc
            except OSError as exc:
                raise ParseError(f"{pdf.name}: cannot run MinerU ({exc})") from exc
            found = sorted(Path(out).rglob(f"{pdf.stem}_content_list.json")) or sorted(Path(out).rglob("*_content_list.json"))
            if proc.returncode != 0 or not found:
                tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
                raise ParseError(f"{pdf.name}: MinerU failed (exit {proc.returncode}): {tail[0][:200]}")
            parsed = import_mineru(found[0], pdf_path=pdf)
            parsed.parser = self.name
            parsed.path = str(pdf)
            # image paths point into the temporary folder, which is removed now
            for e in parsed.elements:
                if e.extra.get("image_path"):
                    e.extra["image_path"] = None
            return parsed

