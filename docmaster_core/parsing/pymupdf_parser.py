"""Embedded default parser on PyMuPDF (SPEC F1): no model download.

Pipeline (one :class:`PyMuPDFParser.parse` call):

1. **Open and check** the file: empty, not a PDF, truncated/damaged, encrypted with a
   non-empty password, too many pages -> a :class:`~docmaster_core.errors.ParseError`
   subclass with a one-line reason naming the file. PDFs encrypted with an *empty*
   user password open normally.
2. **Extract lines** page by page with ``page.get_text("dict")`` (image data off for
   speed): spans are joined with a space where the horizontal gap says so (old Type 3
   fonts split words at kerning points), ligature control characters are fixed and
   per-line style statistics (size, bold/math fraction, dominant font) are kept. Only
   these compact line records stay in memory, never the page objects.
3. **Running headers/footers and page numbers** (text repeated in the top/bottom band
   on many pages; bare numbers there) are dropped; rotated margin text (arXiv stamps)
   too.
4. **Per page layout**: the column gutter of two-column pages, visual lines (pieces on
   one baseline merged), captions ("Figure N", "Table N"), display equations (lines
   dense in math fonts/symbols or ending in an equation number "(N)"), figure regions
   (raster images and vector-graphics clusters next to a figure caption) and table
   regions (the non-prose lines next to a table caption). Table rows come from
   ``page.find_tables(clip=region, strategy="lines", use_layout=False)`` when the
   region is a ruled grid (its output is kept only if its words agree with the
   page's words), else from a word grid (rows by y, columns by x-gaps). So
   ``find_tables`` only runs on candidate regions, within a per-document time budget
   (1 s + 0.05 s/page): it costs 0.1-1 s a call (0.3-0.5 s with the layout model,
   whose "text" strategy output garbles numbers on the corpus' borderless tables).
5. **Headings** from the PDF outline when present and ``settings.use_outline``
   (outline titles matched to lines of their page), otherwise from numbering
   ("3.2 Method", "A.1", Roman) and font size/weight relative to the body text.
6. **Reading order**: items sorted by band (separated by full-width items) then column
   then y; body lines grouped into paragraphs by spacing, indentation, short last
   lines and style changes.

Sources: PyMuPDF documentation (``Page.get_text``, ``Page.find_tables``,
``Document.get_toc``); DocMaster (arXiv 2607.08539) Sec. 2.2 for the element types.
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..config import ParsingSettings
from ..errors import EmptyDocumentError, EncryptedPDFError, ParseError
from ..model import Element, NodeType, ParsedDocument
from .base import (
    SENTENCE_END_RE,
    clean_text,
    fix_ligatures,
    heading_numbering,
    is_caption,
    normalize_heading,
    numbering_level,
)

__all__ = ["PyMuPDFParser", "open_pdf", "FRONT_BACK_MATTER"]

# Unnumbered headings that papers carry but outlines often omit (used by the outline
# mode to add them, and by scripts/eval_headings.py to ignore them when unmatched).
FRONT_BACK_MATTER = frozenset(
    {
        "abstract", "references", "bibliography", "acknowledgments", "acknowledgements",
        "acknowledgment", "acknowledgement", "appendix", "appendices", "keywords",
        "contents", "tableofcontents", "index", "glossary", "notes", "limitations",
        "ethicsstatement", "broaderimpact", "broaderimpactstatement", "impactstatement",
        "reproducibilitystatement", "supplementarymaterial", "authorcontributions",
        "conflictofinterest", "dataavailability", "funding", "preface", "foreword",
        "ccsconcepts", "generalterms", "categoriesandsubjectdescriptors", "summary",
        "executivesummary", "introduction",
    }
)

_MATH_FONT_RE = re.compile(
    r"(^|[+_-])(cmmi|cmsy|cmex|cmbsy|msbm|msam|eufm|eusm|rsfs|stix.*math|stixgeneral|"
    r"cambriamath|cambria-math|symbol|mtextra|mt-?symbol|euclid|lmmath|latinmodernmath|"
    r"lmroman.*math|txmi|txsy|txex|pxmi|pxsy|zxxmi|mathematicalpi|mathpi|esint|wasy|"
    r"ntxmi|ntxsy|newtxmath|cmmib|ptmri8m)",
    re.IGNORECASE,
)
_BOLD_FONT_RE = re.compile(
    r"(bold|black|heavy|semibold|demibold|demi|-medi|medium|-sb\b|cmbx|cmssbx|-bd\b|\.b$|,b$|-b$|bx\d)",
    re.IGNORECASE,
)
_MONO_FONT_RE = re.compile(r"(courier|mono|cmtt|sftt|consolas|menlo|typewriter|lmtt)", re.IGNORECASE)
_MATH_CHARS = set(
    "=+−×÷±∓∑∏∫∮∂∇∆√∞∝≈≠≡≤≥≪≫∈∉∋⊂⊃⊆⊇∪∩∧∨¬∀∃∅→←↔⇒⇐⇔↦⟨⟩‖∥⊥⊗⊕⊙∘·⋅∗†′″"
    "αβγδεζηθικλμνξοπρστυφχψωϵϑϕϱςΓΔΘΛΞΠΣΥΦΨΩ^_|{}[]<>"
)
_PAGENUM_RE = re.compile(
    r"^(?:page\s*)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:of|/)\s*\d{1,4})?$|^[-–—]\s*\d{1,4}\s*[-–—]$",
    re.IGNORECASE,
)
_EQNUM_RE = re.compile(r"\(\s*(?:[A-Z]\.)?\d{1,3}(?:\.\d{1,3})?[a-z]?\s*\)\s*$")
_BULLET_RE = re.compile(r"^(?:[•◦▪▫●○■□►▸‣⁃∙·\-–—*]|\(?\d{1,2}[.)]|\(?[a-z][.)]|\([ivx]+\))\s")
_WORD_RE = re.compile(r"[A-Za-z]{3,}")
_TABLE_HINT_RE = re.compile(r"^\s*(?:Table|TABLE|Tab\.)\s*[A-Z]?[0-9IVX]")

_FLAGS_CACHE: dict[str, int] = {}


def _text_flags() -> int:
    import pymupdf

    if "dict" not in _FLAGS_CACHE:
        _FLAGS_CACHE["dict"] = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES
    return _FLAGS_CACHE["dict"]


# --------------------------------------------------------------------------------------
# Line records
# --------------------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Line:
    """One visual line (after merging pieces on the same baseline). Internal."""

    page: int  # 0-based page index
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float  # dominant font size (points); <= 0 when unknown (Type 3)
    bold: float  # fraction of characters in bold fonts
    italic: float
    math: float  # fraction of characters in math fonts
    mono: float
    font: str
    block: int
    nchars: int
    nwords: int  # words (>= 3 letters) outside math fonts
    size_hi: float = 0.0  # largest non-math font size on the line (small caps headings)
    bold_prefix: str = ""  # leading bold text when the rest is not bold (run-in heading)
    italic_prefix: str = ""  # leading italic text when the rest is not italic
    max_gap: float = 0.0  # largest horizontal gap between merged pieces (points)
    role: str = ""  # "" body | header | pagenum | caption | heading | equation | region | doctitle
    col: int = 0  # 0 left/single, 1 right, -1 full width
    heading_level: int | None = None
    heading_text: str = ""
    heading_source: str = ""
    group: int = -1  # caption/equation/region group id on the page

    @property
    def h(self) -> float:
        return self.y1 - self.y0

    @property
    def w(self) -> float:
        return self.x1 - self.x0

    @property
    def yc(self) -> float:
        return 0.5 * (self.y0 + self.y1)


def _font_is_bold(font: str, flags: int) -> bool:
    return bool(flags & 16) or _font_class(font)[0]


_FONT_CLASS: dict[str, tuple[bool, bool, bool]] = {}


def _font_class(font: str) -> tuple[bool, bool, bool]:
    """(bold name, math font, monospace name) of a font name, cached."""
    c = _FONT_CLASS.get(font)
    if c is None:
        c = (bool(_BOLD_FONT_RE.search(font)), bool(_MATH_FONT_RE.search(font)), bool(_MONO_FONT_RE.search(font)))
        if len(_FONT_CLASS) < 10000:
            _FONT_CLASS[font] = c
    return c


def _extract_page_lines(page, pno: int, textpage=None) -> tuple[list[_Line], int]:
    """Raw lines of one page from ``get_text("dict")``; returns (lines, n_rotated)."""
    d = page.get_text("dict", flags=_text_flags(), textpage=textpage)
    out: list[_Line] = []
    n_rot = 0
    for bi, b in enumerate(d.get("blocks", ())):
        if b.get("type", 0) != 0:
            continue
        for ln in b.get("lines", ()):
            dx, dy = ln.get("dir", (1.0, 0.0))
            spans = [s for s in ln.get("spans", ()) if s.get("text")]
            if not spans:
                continue
            if abs(dy) > 0.05 or dx <= 0:
                n_rot += 1
                continue
            lb = ln["bbox"]
            lh = lb[3] - lb[1]
            parts: list[str] = []
            prev_x1 = None
            prev_txt = ""
            csize: dict[float, int] = defaultdict(int)
            cfont: dict[str, int] = defaultdict(int)
            nb = ni = nm = nmono = n = nwords = 0
            size_hi = 0.0
            bold_prefix: list[str] = []
            prefix_open = True
            ital_prefix: list[str] = []
            iprefix_open = True
            for s in spans:
                txt = fix_ligatures(s["text"])
                if not txt:
                    continue
                sb = s["bbox"]
                size = float(s.get("size", 0.0))
                em = size if size >= 2.5 else (lh if lh >= 2.5 else 10.0)
                if prev_x1 is not None:
                    gap = sb[0] - prev_x1
                    if gap > 0.18 * em and not prev_txt.endswith(" ") and not txt.startswith(" "):
                        parts.append(" ")
                parts.append(txt)
                prev_x1 = sb[2]
                prev_txt = txt
                k = len(txt.strip())
                if k == 0:
                    if prefix_open and bold_prefix:
                        bold_prefix.append(txt)
                    if iprefix_open and ital_prefix:
                        ital_prefix.append(txt)
                    continue
                font = s.get("font", "")
                flags = int(s.get("flags", 0))
                fb, is_math, fmono = _font_class(font)
                is_bold = bool(flags & 16) or fb
                n += k
                csize[round(size, 1) if size >= 2.5 else -1.0] += k
                cfont[font] += k
                if is_bold:
                    nb += k
                if flags & 2:
                    ni += k
                if is_math:
                    nm += k
                else:
                    nwords += len(_WORD_RE.findall(txt))
                    if size >= 2.5 and size > size_hi and any(ch.isalpha() for ch in txt):
                        size_hi = size
                if flags & 8 or fmono:
                    nmono += k
                if prefix_open:
                    if is_bold:
                        bold_prefix.append(txt)
                    else:
                        prefix_open = False
                if iprefix_open:
                    if flags & 2:
                        ital_prefix.append(txt)
                    else:
                        iprefix_open = False
            if n == 0:
                continue
            text = re.sub(r"\s+", " ", "".join(parts)).strip()
            if not text:
                continue
            size = max(csize.items(), key=lambda kv: kv[1])[0]
            if size < 0 and lh >= 2.5:
                size = round(lh * 0.85, 1)
            font = max(cfont.items(), key=lambda kv: kv[1])[0]
            bp = re.sub(r"\s+", " ", "".join(bold_prefix)).strip() if (not prefix_open and nb < n) else ""
            ip = re.sub(r"\s+", " ", "".join(ital_prefix)).strip() if (not iprefix_open and ni < n) else ""
            out.append(
                _Line(
                    page=pno, x0=lb[0], y0=lb[1], x1=lb[2], y1=lb[3], text=text, size=float(size),
                    bold=nb / n, italic=ni / n, math=nm / n, mono=nmono / n, font=font, block=bi,
                    nchars=n, nwords=nwords, bold_prefix=bp, size_hi=size_hi, italic_prefix=ip,
                )
            )
    return out, n_rot


def _merge_pieces(pieces: list[_Line]) -> _Line:
    """Merge line pieces on one baseline (sorted by x) into one visual line."""
    if len(pieces) == 1:
        return pieces[0]
    pieces = sorted(pieces, key=lambda l: l.x0)
    texts = []
    max_gap = 0.0
    for i, p in enumerate(pieces):
        if i:
            gap = p.x0 - pieces[i - 1].x1
            max_gap = max(max_gap, gap)
            em = p.size if p.size > 0 else 10.0
            if gap > 0.15 * em or not (texts[-1][-1:].isalnum() and p.text[:1].isalnum()):
                texts.append(" ")
        texts.append(p.text)
    n = sum(p.nchars for p in pieces)
    main = max(pieces, key=lambda p: p.nchars)
    sizes: dict[float, int] = defaultdict(int)
    for p in pieces:
        sizes[p.size] += p.nchars
    first = pieces[0]
    bold_all = sum(p.bold * p.nchars for p in pieces) / n
    bp = first.bold_prefix
    if not bp and first.bold > 0.99 and bold_all < 0.99:
        # "1" + "Introduction" bold and the rest regular -> run-in prefix
        k = 0
        acc = []
        for p in pieces:
            if p.bold > 0.99:
                acc.append(p.text)
                k += 1
            else:
                break
        bp = " ".join(acc)
    return _Line(
        page=first.page,
        x0=min(p.x0 for p in pieces),
        y0=min(p.y0 for p in pieces),
        x1=max(p.x1 for p in pieces),
        y1=max(p.y1 for p in pieces),
        text=re.sub(r"\s+", " ", "".join(texts)).strip(),
        size=max(sizes.items(), key=lambda kv: kv[1])[0],
        bold=bold_all,
        italic=sum(p.italic * p.nchars for p in pieces) / n,
        math=sum(p.math * p.nchars for p in pieces) / n,
        mono=sum(p.mono * p.nchars for p in pieces) / n,
        font=main.font,
        block=first.block,
        nchars=n,
        nwords=sum(p.nwords for p in pieces),
        size_hi=max(p.size_hi for p in pieces),
        bold_prefix=bp,
        italic_prefix=first.italic_prefix if first.italic < 0.99 else (first.text if sum(p.italic * p.nchars for p in pieces) / n < 0.99 else ""),
        max_gap=max(max_gap, max(p.max_gap for p in pieces)),
        role=first.role,
        col=first.col,
    )


# --------------------------------------------------------------------------------------
# Opening
# --------------------------------------------------------------------------------------


def open_pdf(path: str | Path, settings: ParsingSettings | None = None):
    """Open a PDF with PyMuPDF after the input checks of SPEC F1.

    Args:
        path: PDF file.
        settings: Parsing settings (``max_file_mb``, ``page_limit``).

    Returns:
        An open ``pymupdf.Document`` (authenticated when it had an empty password).

    Raises:
        ParseError: missing, empty, larger than ``max_file_mb``, not a PDF, truncated
            or damaged, no pages, more than ``page_limit`` pages.
        EncryptedPDFError: encrypted with a non-empty password.
    """
    import pymupdf

    st = settings or ParsingSettings()
    p = Path(path)
    name = p.name
    if not p.is_file():
        raise ParseError(f"{name}: file not found")
    size = p.stat().st_size
    if size == 0:
        raise ParseError(f"{name}: empty file (0 bytes)")
    if size > st.max_file_mb * 1024 * 1024:
        raise ParseError(f"{name}: file is {size / 2**20:.1f} MiB, over the {st.max_file_mb:g} MiB limit")
    with open(p, "rb") as fh:
        head = fh.read(1024)
        fh.seek(max(0, size - 2048))
        tail = fh.read()
    if b"%PDF-" not in head:
        raise ParseError(f"{name}: not a PDF file (no %PDF header)")
    try:
        try:
            str(p).encode("utf-8")
        except UnicodeEncodeError:
            # a non-UTF-8 file name (bytes decoded with surrogateescape): MuPDF takes
            # UTF-8 names only, so the bytes are handed over instead
            doc = pymupdf.open(stream=p.read_bytes(), filetype="pdf")
        else:
            doc = pymupdf.open(str(p), filetype="pdf")
    except Exception as exc:  # PyMuPDF raises FileDataError/RuntimeError on broken files
        raise ParseError(f"{name}: cannot open PDF ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'damaged'})") from exc
    try:
        if doc.needs_pass:
            if not doc.authenticate(""):
                raise EncryptedPDFError(f"{name}: PDF is encrypted with a password")
        truncated = b"%%EOF" not in tail
        n = doc.page_count
        if n == 0:
            raise ParseError(f"{name}: PDF has no pages (truncated or damaged)")
        if truncated and getattr(doc, "is_repaired", False):
            raise ParseError(f"{name}: PDF is truncated (no %%EOF marker, cross-reference table damaged)")
        if n > st.page_limit:
            raise ParseError(f"{name}: {n} pages, over the page limit of {st.page_limit}")
    except ParseError:
        doc.close()
        raise
    except Exception as exc:  # a damaged page tree: PyMuPDF raises RuntimeError/ValueError
        doc.close()
        raise ParseError(f"{name}: damaged PDF ({_first_line(exc)})") from exc
    return doc


def _first_line(exc: BaseException) -> str:
    """``"Type: first line of the message"`` of an exception (one line, at most 160 chars)."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:160]}" if msg else type(exc).__name__


# --------------------------------------------------------------------------------------
# Page-level geometry helpers
# --------------------------------------------------------------------------------------


def _find_gutter(lines: list[_Line], width: float) -> float | None:
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


def _assign_col(x0: float, x1: float, gutter: float | None, width: float) -> int:
    if gutter is None:
        return 0
    if x0 < gutter - 0.03 * width and x1 > gutter + 0.03 * width:
        return -1
    return 0 if (x0 + x1) / 2 < gutter else 1


def _visual_lines(raw: list[_Line], gutter: float | None = None, width: float = 612.0) -> list[_Line]:
    """Merge raw lines of the same column whose vertical extents overlap.

    Pieces of one PyMuPDF block on one baseline are first joined across the gutter
    when the gap is word-like (a heading that crosses the column middle), then the
    column of each joined piece is assigned again.
    """
    if gutter is not None:
        byb: dict[int, list[_Line]] = defaultdict(list)
        for l in raw:
            byb[l.block].append(l)
        joined: list[_Line] = []
        for _, ls in byb.items():
            ls.sort(key=lambda l: (l.yc, l.x0))
            runs: list[list[_Line]] = []
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
                    joined.append(_merge_pieces(run))
                else:
                    joined.extend(run)
        for l in joined:
            l.col = _assign_col(l.x0, l.x1, gutter, width)
        raw = joined
    out: list[_Line] = []
    for col in sorted({l.col for l in raw}):
        ls = sorted((l for l in raw if l.col == col), key=lambda l: (l.yc, l.x0))
        groups: list[list[_Line]] = []
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
                if gap > limit and not _EQNUM_RE.fullmatch(l.text.strip()):
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
        out.extend(_merge_pieces(g) for g in groups)
    return out


def _union(boxes: Iterable[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    bs = list(boxes)
    return (min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs))


def _graphics_clusters(rects: list[tuple[float, float, float, float]], width: float, height: float,
                       cell: float = 4.0, pad: float = 3.0) -> list[tuple[float, float, float, float]]:
    """Cluster graphics rectangles (vector paths, images) by rasterising them onto a
    coarse grid (``cell`` points) and labelling connected components (scipy)."""
    if not rects:
        return []
    from scipy import ndimage

    gw = int(math.ceil(width / cell)) + 1
    gh = int(math.ceil(height / cell)) + 1
    grid = np.zeros((gh, gw), dtype=bool)
    for x0, y0, x1, y1 in rects:
        a = max(0, int((x0 - pad) / cell))
        b = min(gw, int((x1 + pad) / cell) + 1)
        c = max(0, int((y0 - pad) / cell))
        d = min(gh, int((y1 + pad) / cell) + 1)
        if a < b and c < d:
            grid[c:d, a:b] = True
    lab, n = ndimage.label(grid)
    out = []
    for sl in ndimage.find_objects(lab):
        if sl is None:
            continue
        ys, xs = sl
        out.append((xs.start * cell + pad, ys.start * cell + pad, xs.stop * cell - pad, ys.stop * cell - pad))
    return out


def _overlap_x(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _rows_to_markdown(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    ncol = max(len(r) for r in rows)
    norm = [[(c or "").replace("|", "\\|").replace("\n", " ").strip() for c in r] + [""] * (ncol - len(r)) for r in rows]
    lines = ["| " + " | ".join(norm[0]) + " |", "|" + "---|" * ncol]
    lines += ["| " + " | ".join(r) + " |" for r in norm[1:]]
    return "\n".join(lines)


def _word_grid(words: list[tuple], body: float) -> list[list[str]]:
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


@dataclass
class _PageInfo:
    width: float
    height: float
    lines: list[_Line] = field(default_factory=list)
    gutter: float | None = None
    items: list[dict[str, Any]] = field(default_factory=list)  # regions, equations
    words: list[tuple] | None = None  # get_text("words") tuples on table-caption pages
    images: list[tuple] = field(default_factory=list)  # raster image boxes (points)


class PyMuPDFParser:
    """The embedded default parser (PyMuPDF >= 2.0). See the module docstring.

    Args:
        settings: Parsing settings; defaults to ``ParsingSettings()``.

    Attributes:
        name: ``"pymupdf"``.
    """

    name = "pymupdf"

    def __init__(self, settings: ParsingSettings | None = None) -> None:
        self.settings = settings or ParsingSettings()

    # ------------------------------------------------------------------ entry point
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
            (``"outline"``/``"fonts"``), ``two_column_pages``, counters of dropped
            lines, ``find_tables_calls``, ``seconds`` (extract/tables/total),
            ``warnings``.

        Raises:
            ParseError: unreadable input (see :func:`open_pdf`).
            EncryptedPDFError: password-protected PDF.
            EmptyDocumentError: no text layer at all (e.g. a scan without OCR).
        """
        t0 = time.perf_counter()
        st = self.settings
        name = Path(path).name
        doc = open_pdf(path, st)
        # find_tables budget per document (seconds): it costs ~0.1-1 s per call
        self._table_seconds = 0.0
        self._table_budget = 1.0 + 0.05 * doc.page_count
        try:
            return self._parse_open(doc, path, name, t0)
        except ParseError:
            raise
        except Exception as exc:  # PyMuPDF on a damaged object (RuntimeError, ValueError, ...)
            raise ParseError(f"{name}: damaged PDF, parsing failed ({_first_line(exc)})") from exc
        finally:
            doc.close()

    # ------------------------------------------------------------------ main body
    def _parse_open(self, doc, path, name: str, t0: float) -> ParsedDocument:
        st = self.settings
        n_pages = doc.page_count
        pages: list[_PageInfo] = []
        n_rot = 0
        images: list[list[tuple[float, float, float, float]]] = []
        warnings: list[str] = []
        for pno in range(n_pages):
            try:
                page = doc[pno]
                rect = page.rect
                tp = page.get_textpage(flags=_text_flags())
                lines, nr = _extract_page_lines(page, pno, tp)
                # words for the borderless-table grid, only where a table caption may be
                words = None
                if st.tables and any(_TABLE_HINT_RE.match(l.text) for l in lines):
                    words = page.get_text("words", textpage=tp)
                del tp
                imgs = []
                for info in (page.get_image_info() if page.get_images(full=False) else ()):
                    b = info.get("bbox")
                    if b is None:
                        continue
                    b = tuple(float(v) for v in b)
                    if b[2] - b[0] >= 2 and b[3] - b[1] >= 2:
                        imgs.append(b)
            except Exception as exc:  # a damaged page: keep going, record it
                warnings.append(f"page {pno + 1}: {type(exc).__name__}: {exc}")
                pages.append(_PageInfo(612.0, 792.0))
                images.append([])
                continue
            n_rot += nr
            pi = _PageInfo(float(rect.width), float(rect.height))
            pi.words = words
            pi.images = imgs
            pi.gutter = _find_gutter(lines, pi.width)
            for l in lines:
                l.col = _assign_col(l.x0, l.x1, pi.gutter, pi.width)
            pi.lines = sorted(_visual_lines(lines, pi.gutter, pi.width), key=lambda l: (l.y0, l.x0))
            pages.append(pi)
            images.append(imgs)
        t_extract = time.perf_counter() - t0
        total_chars = sum(l.nchars for p in pages for l in p.lines)
        if total_chars < 20:
            raise EmptyDocumentError(
                f"{name}: no extractable text layer ({total_chars} characters in {n_pages} pages; scanned without OCR?)"
            )

        self._mark_headers_footers(pages)
        body_size, body_font = self._body_style(pages)
        if body_size <= 0:
            body_size = 10.0
        for p in pages:
            for l in p.lines:
                if l.size <= 0:
                    l.size = body_size

        doc_title = self._doc_title(doc, pages, body_size)

        # per-page layout: gutter, visual lines, captions, equations, regions
        n_table_calls = 0
        t_tables = 0.0
        for pno, p in enumerate(pages):
            self._mark_captions(p, body_size)
            self._mark_equations(p, body_size)
            self._mark_strong_headings(p, body_size)
            nt, tt = self._regions(doc, pno, p, images[pno], body_size)
            n_table_calls += nt
            t_tables += tt

        # headings
        outline = []
        try:
            outline = [(int(l), clean_text(t), int(pg)) for l, t, pg in doc.get_toc(simple=True)]
        except Exception as exc:
            warnings.append(f"outline unreadable: {exc}")
        dests = self._outline_dests(doc) if outline else []
        self._detect_headings(pages, body_size, doc)
        used_outline = False
        if st.use_outline and len(outline) >= 3 and not (n_pages > 20 and len(outline) < 3):
            used_outline = self._apply_outline(pages, outline, dests, body_size)

        elements = self._reading_order(pages, body_size)
        meta = {
            "body_font_size": body_size,
            "body_font": body_font,
            "headings_from": "outline" if used_outline else "fonts",
            "two_column_pages": sum(1 for p in pages if p.gutter is not None),
            "rotated_lines_dropped": n_rot,
            "header_footer_lines_dropped": sum(1 for p in pages for l in p.lines if l.role in ("header", "pagenum")),
            "find_tables_calls": n_table_calls,
            "seconds": {
                "extract": round(t_extract, 3),
                "tables": round(t_tables, 3),
                "total": round(time.perf_counter() - t0, 3),
            },
            "warnings": warnings,
        }
        return ParsedDocument(
            path=str(path),
            title=doc_title,
            n_pages=n_pages,
            elements=elements,
            parser=self.name,
            outline=outline,
            page_sizes=[(p.width, p.height) for p in pages],
            metadata=meta,
        )

    # ------------------------------------------------------------------ headers/footers
    @staticmethod
    def _mark_headers_footers(pages: list[_PageInfo]) -> None:
        n = len(pages)
        keys: dict[tuple, set[int]] = defaultdict(set)
        for pno, p in enumerate(pages):
            for l in p.lines:
                band = "t" if l.y1 < 0.12 * p.height else ("b" if l.y0 > 0.88 * p.height else "")
                if not band:
                    continue
                t = l.text.strip()
                if _PAGENUM_RE.match(t):
                    l.role = "pagenum"
                    continue
                k = (band, re.sub(r"\d+", "#", re.sub(r"\s+", "", t.lower())))
                keys[k].add(pno)
        need = max(2, math.ceil(0.25 * n)) if n >= 3 else 2
        rep = {k for k, v in keys.items() if len(v) >= need}
        if not rep:
            return
        for p in pages:
            for l in p.lines:
                if l.role:
                    continue
                band = "t" if l.y1 < 0.12 * p.height else ("b" if l.y0 > 0.88 * p.height else "")
                if band and (band, re.sub(r"\d+", "#", re.sub(r"\s+", "", l.text.strip().lower()))) in rep:
                    l.role = "header"

    @staticmethod
    def _body_style(pages: list[_PageInfo]) -> tuple[float, str]:
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

    @staticmethod
    def _doc_title(doc, pages: list[_PageInfo], body: float) -> str:
        """Largest text in the upper part of page 1 (marked ``doctitle``), else metadata."""
        title = ""
        if pages and pages[0].lines:
            p = pages[0]
            cand = [l for l in p.lines if not l.role and l.y0 < 0.5 * p.height and l.nchars >= 3]
            if cand:
                mx = max(l.size for l in cand)
                if mx >= 1.25 * body:
                    tl = sorted((l for l in cand if abs(l.size - mx) < 0.6), key=lambda l: (l.y0, l.x0))
                    # keep the first run of adjacent lines
                    run = [tl[0]]
                    for l in tl[1:]:
                        if l.y0 - run[-1].y1 < 1.2 * mx:
                            run.append(l)
                        else:
                            break
                    txt = clean_text(" ".join(l.text for l in run))
                    hn = heading_numbering(txt)
                    if (hn is None or hn[0] in ("A", "I")) and len(txt) <= 300:
                        title = txt
                        for l in run:
                            l.role = "doctitle"
        if not title:
            mt = clean_text((doc.metadata or {}).get("title") or "")
            if len(mt) > 5 and not re.match(r"^(microsoft\s+word|untitled|slide|doi)", mt, re.I) and not mt.lower().endswith((".pdf", ".doc", ".docx", ".dvi", ".tex")):
                title = mt
        return title

    # ------------------------------------------------------------------ captions
    @staticmethod
    def _mark_captions(p: _PageInfo, body: float) -> None:
        gid = 0
        lines = p.lines
        for i, l in enumerate(lines):
            if l.role:
                continue
            t = l.text
            kind = is_caption(t, strict=True)
            if kind is None:
                k2 = is_caption(t, strict=False)
                if k2 is not None and (l.bold_prefix[:3].lower() == t[:3].lower() or l.size < 0.95 * body):
                    kind = k2
            if kind is None:
                continue
            # a caption starts its block: previous line of the same column must not be
            # running text that flows into it
            prev = None
            for q in reversed(lines[:i]):
                if q.col == l.col and q.y1 <= l.y0 + 1 and _overlap_x(q.x0, q.x1, l.x0, l.x1) > 0:
                    prev = q
                    break
            if prev is not None and prev.role == "" and prev.block == l.block and l.y0 - prev.y1 < 0.5 * l.size \
                    and not SENTENCE_END_RE.search(prev.text):
                continue
            l.role = "caption"
            l.group = gid
            l.heading_source = kind  # reuse the field: caption kind
            # continuation lines: same block, same column, directly below, same size
            last = l
            for q in lines[i + 1:]:
                if q.role or q.col != l.col:
                    continue
                if q.y0 < last.y1 - 1:
                    continue
                if q.block == l.block and q.y0 - last.y1 < 0.8 * max(l.size, 4) and abs(q.size - l.size) < 1.0 \
                        and is_caption(q.text) is None:
                    q.role = "caption"
                    q.group = gid
                    q.heading_source = kind
                    last = q
                elif q.y0 - last.y1 < 0.6 * max(l.size, 4) and abs(q.size - l.size) < 0.6 and q.block != l.block \
                        and _overlap_x(q.x0, q.x1, l.x0, l.x1) > 0.5 * min(q.w, l.w) and is_caption(q.text) is None \
                        and l.size < 0.97 * body:
                    q.role = "caption"
                    q.group = gid
                    q.heading_source = kind
                    last = q
                else:
                    break
            gid += 1

    # ------------------------------------------------------------------ equations
    @staticmethod
    def _mark_equations(p: _PageInfo, body: float) -> None:
        lines = p.lines
        xs0 = defaultdict(list)
        xs1 = defaultdict(list)
        for l in lines:
            if l.nchars >= 25 and l.role == "":
                xs0[l.col].append(l.x0)
                xs1[l.col].append(l.x1)
        colx = {c: (float(np.percentile(xs0[c], 10)), float(np.percentile(xs1[c], 90))) for c in xs0}

        def is_eq(l: _Line) -> bool:
            if l.role:
                return False
            t = l.text
            ns = len(t.replace(" ", ""))
            if ns == 0:
                return False
            sym = sum(1 for ch in t if ch in _MATH_CHARS) / ns
            eqnum = bool(_EQNUM_RE.search(t))
            cx0, cx1 = colx.get(l.col, (l.x0, l.x1))
            cw = max(cx1 - cx0, 1.0)
            indented = l.x0 > cx0 + 0.06 * cw
            centered = abs((l.x0 + l.x1) / 2 - (cx0 + cx1) / 2) < 0.2 * cw and (l.x1 - l.x0) < 0.85 * cw
            if l.math >= 0.5 and l.nwords <= 3 and (indented or centered or eqnum):
                return True
            if eqnum and (l.math >= 0.2 or sym >= 0.08 or "=" in t) and l.nwords <= 8:
                return True
            if sym >= 0.2 and l.nwords <= 2 and ns >= 3 and (indented or centered):
                return True
            return False

        flags = [is_eq(l) for l in lines]
        gid = 0
        groups: list[list[int]] = []
        for i, f in enumerate(flags):
            if not f:
                continue
            l = lines[i]
            if groups:
                g = groups[-1]
                last = lines[g[-1]]
                if last.col == l.col and l.y0 - last.y1 < 1.2 * body:
                    g.append(i)
                    continue
            groups.append([i])
        for g in groups:
            gcol = lines[g[0]].col
            gx0 = min(lines[i].x0 for i in g)
            gx1 = max(lines[i].x1 for i in g)
            gy0 = min(lines[i].y0 for i in g)
            gy1 = max(lines[i].y1 for i in g)
            # absorb short fragments (limits, fractions, equation numbers) nearby
            for j, q in enumerate(lines):
                if q.role or flags[j] or (gcol != -1 and q.col != gcol):
                    continue
                ns = len(q.text.replace(" ", ""))
                near = q.y0 > gy0 - 0.9 * body and q.y1 < gy1 + 0.9 * body
                inside = q.y0 >= gy0 - 2 and q.y1 <= gy1 + 2
                if near and (ns <= 8 or _EQNUM_RE.fullmatch(q.text.strip()) or (inside and q.nwords <= 3 and ns <= 40)) \
                        and (q.nwords <= 1 or inside) and (
                    _overlap_x(q.x0, q.x1, gx0 - 60, gx1 + 20) > 0 or _EQNUM_RE.fullmatch(q.text.strip())
                ):
                    g.append(j)
            for i in g:
                lines[i].role = "equation"
                lines[i].group = gid
            gid += 1

    # ------------------------------------------------------------------ strong headings
    @staticmethod
    def _heading_features(l: _Line, body: float) -> dict[str, Any] | None:
        t = l.text.strip()
        if not t or len(t) > 160:
            return None
        # cheap gate: a heading differs from the body in size, weight, slant or case,
        # or starts with a bold/italic run-in prefix
        if l.size < 1.1 * body and l.bold < 0.8 and l.italic < 0.8 and not l.bold_prefix \
                and not l.italic_prefix and not (l.size_hi >= 0.75 * body and t.upper() == t):
            return None
        letters = sum(ch.isalpha() for ch in t)
        if letters < 2 or letters < 0.45 * len(t.replace(" ", "")):
            return None
        num = heading_numbering(t)
        caps = t.upper() == t and letters >= 4
        size = max(l.size, l.size_hi) if caps else l.size
        ratio = size / body if body > 0 else 1.0
        return {"num": num, "ratio": ratio, "bold": l.bold >= 0.8, "caps": caps, "len": len(t), "words": len(t.split()),
                "italic": l.italic >= 0.8}

    def _mark_strong_headings(self, p: _PageInfo, body: float) -> None:
        """Numbered lines in a heading style: marked early so regions stop at them."""
        for l in p.lines:
            if l.role:
                continue
            f = self._heading_features(l, body)
            if f is None or f["num"] is None:
                continue
            styled = f["ratio"] >= 1.1 or (f["bold"] and f["ratio"] >= 0.9) or (f["caps"] and f["ratio"] >= 0.75)
            if styled and f["words"] <= 16 and not l.text.rstrip().endswith((",", ";")):
                l.role = "heading?"

    # ------------------------------------------------------------------ regions
    def _regions(self, doc, pno: int, p: _PageInfo, imgs: list, body: float) -> tuple[int, float]:
        """Figure and table regions on one page; returns (#find_tables calls, seconds)."""
        lines = p.lines
        caps: dict[int, list[_Line]] = defaultdict(list)
        for l in lines:
            if l.role == "caption":
                caps[l.group].append(l)
        page_area = p.width * p.height
        has_text = sum(l.nchars for l in lines) > 200
        big_imgs = [
            b for b in imgs
            if (b[2] - b[0]) >= 24 and (b[3] - b[1]) >= 24
            and not (has_text and (b[2] - b[0]) * (b[3] - b[1]) > 0.6 * page_area)
        ]
        body_lines = [l for l in lines if l.nchars >= 25 and l.role == ""]
        cx0 = min((l.x0 for l in body_lines), default=0.05 * p.width)
        cx1 = max((l.x1 for l in body_lines), default=0.95 * p.width)
        n_calls = 0
        t_tab = 0.0
        drawings = None  # lazily fetched

        def get_drawings():
            nonlocal drawings
            if drawings is None:
                drawings = {"graphics": [], "hrules": [], "vrules": []}
                try:
                    paths = doc[pno].get_cdrawings()
                except Exception:
                    paths = []
                for d in paths[:5000]:
                    r = d.get("rect")
                    if r is None:
                        continue
                    x0, y0, x1, y1 = (float(v) for v in r)
                    w, h = x1 - x0, y1 - y0
                    if w >= 0.8 * p.width or h >= 0.8 * p.height:
                        continue  # page frames, borders, backgrounds
                    if h <= 2.0 and w >= 15:
                        drawings["hrules"].append((x0, y0, x1, y1))
                    elif w <= 2.0 and h >= 6:
                        drawings["vrules"].append((x0, y0, x1, y1))
                    if w > 0.5 or h > 0.5:
                        drawings["graphics"].append((x0, y0, x1, y1))
            return drawings

        def is_prose(l: _Line) -> bool:
            if l.role in ("heading?", "caption"):
                return False
            ratio = l.size / body
            alpha = sum(ch.isalpha() for ch in l.text) / max(1, len(l.text.replace(" ", "")))
            return (
                l.role == "" and l.nchars >= 28 and 0.85 <= ratio <= 1.25 and alpha >= 0.6
                and l.max_gap < 1.6 * max(l.size, 4) and l.nwords >= 4
            )

        def col_range(c: int, x0: float, x1: float) -> tuple[float, float]:
            if p.gutter is None or c == -1:
                return min(cx0, x0), max(cx1, x1)
            if c == 0:
                return min(cx0, x0), max(p.gutter, x1)
            return min(p.gutter, x0), max(cx1, x1)

        consumed_imgs: set[int] = set()
        items = p.items
        for gid, cl in sorted(caps.items()):
            cb = _union((l.x0, l.y0, l.x1, l.y1) for l in cl)
            kind = cl[0].heading_source
            c = _assign_col(cb[0], cb[2], p.gutter, p.width)
            rx0, rx1 = col_range(c, cb[0], cb[2])
            # side-by-side captions (two tables/figures next to each other) split the range
            for og, ol in caps.items():
                if og == gid:
                    continue
                ob = _union((l.x0, l.y0, l.x1, l.y1) for l in ol)
                if min(ob[3], cb[3]) - max(ob[1], cb[1]) > -2.0 * body:
                    if ob[0] >= cb[2] - 2:
                        rx1 = min(rx1, (cb[2] + ob[0]) / 2)
                    elif ob[2] <= cb[0] + 2:
                        rx0 = max(rx0, (ob[2] + cb[0]) / 2)
            caption = clean_text(" ".join(l.text for l in cl))

            def neighbours(direction: int) -> list[_Line]:
                ls = [
                    l for l in lines
                    if l.role not in ("caption",) and l not in cl
                    and _overlap_x(l.x0, l.x1, rx0, rx1) > 0.5 * max(l.w, 1.0)
                    and ((l.y0 >= cb[3] - 1) if direction > 0 else (l.y1 <= cb[1] + 1))
                ]
                return sorted(ls, key=lambda l: l.y0 if direction > 0 else -l.y1)

            def grow(direction: int, allow_prose_in: list[tuple] | None = None) -> tuple[list[_Line], float]:
                """Lines of the region next to the caption; returns (lines, stop edge)."""
                got: list[_Line] = []
                edge = cb[3] if direction > 0 else cb[1]
                stop = (p.height if direction > 0 else 0.0)
                for l in neighbours(direction):
                    gap = (l.y0 - edge) if direction > 0 else (edge - l.y1)
                    inside_graphic = allow_prose_in and any(
                        l.x0 >= g[0] - 2 and l.x1 <= g[2] + 2 and l.y0 >= g[1] - 2 and l.y1 <= g[3] + 2 for g in allow_prose_in
                    )
                    if l.role in ("header", "pagenum"):
                        continue
                    if not inside_graphic and (is_prose(l) or l.role in ("heading?", "region")):
                        stop = l.y0 if direction > 0 else l.y1
                        break
                    if gap > (4.0 * body if not inside_graphic else 6.0 * body):
                        stop = l.y0 if direction > 0 else l.y1
                        break
                    got.append(l)
                    edge = max(edge, l.y1) if direction > 0 else min(edge, l.y0)
                return got, stop

            if kind == "table":
                down = neighbours(1)
                up = neighbours(-1)
                first_down = next((l for l in down if l.role not in ("header", "pagenum")), None)
                first_up = next((l for l in up if l.role not in ("header", "pagenum")), None)
                region_lines: list[_Line] = []
                options = []
                if first_down is not None and not is_prose(first_down) and first_down.role != "heading?" \
                        and first_down.y0 - cb[3] < 4 * body:
                    options.append(grow(1)[0])
                if first_up is not None and not is_prose(first_up) and first_up.role != "heading?" \
                        and cb[1] - first_up.y1 < 4 * body:
                    options.append(grow(-1)[0])
                if options:
                    # the side with more table text (ties: below, the usual convention)
                    region_lines = max(options, key=lambda ls: sum(l.nchars for l in ls))
                # a raster table image next to the caption
                img_box = None
                for k, b in enumerate(big_imgs):
                    if k in consumed_imgs:
                        continue
                    if _overlap_x(b[0], b[2], rx0, rx1) > 0.5 * (b[2] - b[0]) and (
                        0 <= b[1] - cb[3] < 3 * body or 0 <= cb[1] - b[3] < 3 * body
                    ):
                        img_box = b
                        consumed_imgs.add(k)
                        break
                rows: list[list[str]] = []
                method = ""
                rb = None
                if region_lines:
                    rb = _union((l.x0, l.y0, l.x1, l.y1) for l in region_lines)
                    dr = get_drawings()
                    hr = [h for h in dr["hrules"] if _overlap_x(h[0], h[2], rb[0], rb[2]) > 0.5 * (h[2] - h[0])
                          and rb[1] - 1.2 * body <= h[1] <= rb[3] + 1.2 * body]
                    if hr:
                        rb = _union([rb] + hr)
                    vr = [v for v in dr["vrules"] if v[0] >= rb[0] - 2 and v[2] <= rb[2] + 2 and v[1] >= rb[1] - 2 and v[3] <= rb[3] + 2]
                    words = None
                    if self.settings.tables and len(hr) >= 2 and _is_ruled_grid(vr, rb) \
                            and self._table_seconds < self._table_budget:
                        import pymupdf

                        ts = time.perf_counter()
                        words = _words_in(p.words, rb) if p.words is not None else doc[pno].get_text("words", clip=pymupdf.Rect(*rb))
                        try:
                            tabs = doc[pno].find_tables(
                                clip=pymupdf.Rect(rb[0] - 2, rb[1] - 2, rb[2] + 2, rb[3] + 2),
                                use_layout=False, strategy="lines",
                            )
                            n_calls += 1
                            best = max(tabs.tables, key=lambda t: t.row_count * t.col_count, default=None)
                            if best is not None and best.row_count >= 2 and best.col_count >= 2:
                                cand_rows = [[clean_text(c or "") for c in r] for r in best.extract()]
                                if _rows_agree_with_words(cand_rows, words):
                                    rows = cand_rows
                                    method = "find_tables"
                        except Exception as exc:  # find_tables is best effort; fall back below
                            method = f"find_tables failed: {type(exc).__name__}"
                        dt = time.perf_counter() - ts
                        t_tab += dt
                        self._table_seconds += dt
                    if not rows and self.settings.tables:
                        import pymupdf

                        if words is None:
                            words = _words_in(p.words, rb) if p.words is not None else doc[pno].get_text("words", clip=pymupdf.Rect(*rb))
                        rows = _word_grid(words, body)
                        method = "word-grid"
                    for l in region_lines:
                        l.role = "region"
                boxes = [cb] + ([rb] if rb else []) + ([img_box] if img_box else [])
                md = _rows_to_markdown(rows) if rows else ""
                text = caption + ("\n\n" + md if md else "")
                items.append({
                    "type": NodeType.TABLE, "bbox": _union(boxes), "text": text, "caption_group": gid,
                    "extra": {"caption": caption, "rows": rows, "markdown": md, "method": method or ("image" if img_box else "caption-only"),
                              "region_bbox": list(rb) if rb else (list(img_box) if img_box else None)},
                })
            else:  # figure
                gboxes = [b for k, b in enumerate(big_imgs) if k not in consumed_imgs]
                dr = get_drawings()
                graphics = _graphics_clusters(dr["graphics"] + [b for b in gboxes], p.width, p.height) if (dr["graphics"] or gboxes) else []
                graphics = [g for g in graphics if (g[2] - g[0]) >= 20 and (g[3] - g[1]) >= 12]

                def near(direction: int) -> list[tuple]:
                    out = []
                    for g in graphics:
                        if _overlap_x(g[0], g[2], rx0, rx1) < 0.3 * min(g[2] - g[0], rx1 - rx0):
                            continue
                        if direction < 0 and g[3] <= cb[1] + 4 and cb[1] - g[3] < 0.5 * p.height:
                            out.append(g)
                        if direction > 0 and g[1] >= cb[3] - 4 and g[1] - cb[3] < 0.5 * p.height:
                            out.append(g)
                    return out

                up_g = near(-1)
                down_g = near(1)
                direction = -1
                if not up_g and down_g:
                    direction = 1
                gs = up_g if direction < 0 else down_g
                region_lines, stop = grow(direction, allow_prose_in=gs)
                if direction < 0:
                    gs = [g for g in gs if g[1] >= stop - 2]
                else:
                    gs = [g for g in gs if g[3] <= stop + 2]
                boxes = [(l.x0, l.y0, l.x1, l.y1) for l in region_lines] + gs
                for l in region_lines:
                    l.role = "region"
                # lines fully inside the chosen graphics are figure text as well
                fig_text = [l.text for l in region_lines]
                for l in lines:
                    if l.role in ("", "equation") and any(
                        l.x0 >= g[0] - 2 and l.x1 <= g[2] + 2 and l.y0 >= g[1] - 2 and l.y1 <= g[3] + 2 for g in gs
                    ):
                        l.role = "region"
                        fig_text.append(l.text)
                for k, b in enumerate(big_imgs):
                    if any(b[0] >= g[0] - 4 and b[2] <= g[2] + 4 and b[1] >= g[1] - 4 and b[3] <= g[3] + 4 for g in gs):
                        consumed_imgs.add(k)
                rb = _union(boxes) if boxes else None
                items.append({
                    "type": NodeType.IMAGE, "bbox": _union([cb] + ([rb] if rb else [])), "text": caption, "caption_group": gid,
                    "extra": {"caption": caption, "figure_bbox": list(rb) if rb else None, "figure_text": clean_text(" ".join(fig_text))[:2000],
                              "kind": "raster" if any(k in consumed_imgs for k in range(len(big_imgs))) and rb else ("vector" if rb else "caption-only")},
                })
        # uncaptioned raster images of a reasonable size
        for k, b in enumerate(big_imgs):
            if k in consumed_imgs:
                continue
            if (b[2] - b[0]) < 40 or (b[3] - b[1]) < 40:
                continue
            if any(it["bbox"][0] - 2 <= b[0] and b[2] <= it["bbox"][2] + 2 and it["bbox"][1] - 2 <= b[1] and b[3] <= it["bbox"][3] + 2 for it in items):
                continue
            inside = [l for l in lines if l.role == "" and l.x0 >= b[0] - 1 and l.x1 <= b[2] + 1 and l.y0 >= b[1] - 1 and l.y1 <= b[3] + 1]
            for l in inside:
                l.role = "region"
            items.append({"type": NodeType.IMAGE, "bbox": b, "text": "", "caption_group": None,
                          "extra": {"caption": "", "figure_bbox": list(b), "figure_text": clean_text(" ".join(l.text for l in inside))[:2000], "kind": "raster"}})
        # caption lines stay attached to their item
        for l in lines:
            if l.role == "caption":
                l.role = "caption-used"
        return n_calls, t_tab

    # ------------------------------------------------------------------ headings
    @staticmethod
    def _is_toc_page(p: _PageInfo) -> bool:
        """A table-of-contents page: many lines ending in a page number (dot leaders)."""
        n = sum(1 for l in p.lines if l.role == "" and re.search(r"(?:\.\s*){3,}\s*\d{1,4}$|\s\d{1,4}$", l.text)
                and sum(ch.isalpha() for ch in l.text) >= 3)
        return n >= 6 and n >= 0.3 * max(1, sum(1 for l in p.lines if l.role == ""))

    def _detect_headings(self, pages: list[_PageInfo], body: float, doc=None) -> None:
        """Decide heading lines from numbering and font size/weight (SPEC F1).

        Numbered lines ("3.2 Method", "A.1", "II.") in a style that differs from the
        body (larger, bold, italic, capitals) that stand alone are headings. Unnumbered
        lines need a rare, larger or bold style, a capital start and no tabular gaps;
        in documents whose headings are mostly numbered, unnumbered ones must share a
        numbered heading's style (or be front/back matter, or be larger). Lines on
        table-of-contents pages, bullets, and text inside graphics are never headings.
        """
        cands: list[_Line] = []
        style_chars: Counter = Counter()
        for p in pages:
            for l in p.lines:
                if l.role in ("", "heading?"):
                    style_chars[(round(l.size * 2) / 2, l.bold >= 0.8)] += l.nchars
        total = sum(style_chars.values()) or 1
        feats: dict[int, dict] = {}
        for pno, p in enumerate(pages):
            toc = self._is_toc_page(p)
            lines = p.lines
            order = sorted(range(len(lines)), key=lambda i: (lines[i].col if lines[i].col >= 0 else -1, lines[i].y0))
            for idx, i in enumerate(order):
                l = lines[i]
                if l.role not in ("", "heading?"):
                    continue
                if l.role == "heading?":
                    l.role = ""
                f = self._heading_features(l, body)
                if f is None:
                    continue
                t = l.text.strip()
                if toc and normalize_heading(t) not in ("contents", "tableofcontents"):
                    continue
                if t[:1] in "•>›»▪■●◦–—*-" or (f["num"] is None and _BULLET_RE.match(t)):
                    continue
                nxt = prv = None
                for j in order[idx + 1:]:
                    q = lines[j]
                    if q.col == l.col and q.role not in ("header", "pagenum"):
                        nxt = q
                        break
                for j in reversed(order[:idx]):
                    q = lines[j]
                    if q.col == l.col and q.role not in ("header", "pagenum"):
                        prv = q
                        break
                # continuation lines of a wrapped heading (same style, directly below)
                cont: list[_Line] = []
                last = l
                for j in order[idx + 1:idx + 4]:
                    q = lines[j]
                    if q.col != l.col or q.role in ("header", "pagenum"):
                        continue
                    if q.role == "" and len(cont) < 2 and abs(q.size - l.size) <= 0.3 and (q.bold >= 0.8) == (l.bold >= 0.8) \
                            and abs(q.italic - l.italic) < 0.3 and -0.3 * l.size <= q.y0 - last.y1 < 0.5 * l.size \
                            and heading_numbering(q.text) is None and not SENTENCE_END_RE.search(last.text.rstrip("?")) \
                            and len(t.split()) + len(q.text.split()) + sum(len(c.text.split()) for c in cont) <= 24:
                        cont.append(q)
                        last = q
                        continue
                    break
                if cont:
                    after = None
                    for j in order[idx + 1:]:
                        q = lines[j]
                        if q.col == l.col and q.role not in ("header", "pagenum") and q not in cont and q.y0 >= last.y0:
                            after = q
                            break
                    cont_ok = after is None or after.block != last.block or abs(after.size - l.size) > 0.6 \
                        or (after.bold >= 0.8) != (l.bold >= 0.8) or after.y0 - last.y1 > 0.45 * l.size
                    if cont_ok:
                        nxt = after
                    else:
                        cont = []
                styled_size = f["ratio"] >= 1.12
                styled_bold = l.bold >= 0.95 and f["ratio"] >= 0.9
                styled_caps = f["caps"] and f["ratio"] >= 0.95 and f["words"] <= 8
                same_style = lambda q: abs(q.size - l.size) <= 0.6 and (q.bold >= 0.8) == (l.bold >= 0.8)
                standalone = nxt is None or nxt.block != l.block or not same_style(nxt) or nxt.y0 - l.y1 > 0.45 * l.size \
                    or (nxt.role == "" and heading_numbering(nxt.text) is not None)
                starts = prv is None or prv.block != l.block or l.y0 - prv.y1 > 0.45 * l.size or not same_style(prv) \
                    or bool(SENTENCE_END_RE.search(prv.text))
                if cont:
                    t = t + " " + " ".join(c.text.strip() for c in cont)
                    f = dict(f, words=len(t.split()))
                bad_end = t.endswith((",", ";", "-")) or (t.endswith(".") and f["words"] > 12)
                tabular = l.max_gap > 2.0 * max(l.size, 4.0)
                key = (round(l.size * 2) / 2, l.bold >= 0.8)
                rare = style_chars[key] <= 0.15 * total
                styled_num = styled_size or styled_bold or (f["caps"] and f["ratio"] >= 0.75) or \
                    (f["italic"] and f["ratio"] >= 0.9 and f["words"] <= 12)
                accepted = None
                runin = None
                if tabular or not standalone and f["num"] is None:
                    pass
                elif f["num"] is not None and styled_num and standalone and starts and not bad_end and f["words"] <= 20:
                    accepted = "numbering"
                elif f["num"] is None and rare and (styled_size or styled_bold or (styled_caps and l.bold >= 0.5)) \
                        and standalone and starts and not bad_end and f["words"] <= 14 and not t.endswith(":") \
                        and (t[:1].isupper() or t[:1].isdigit() or f["ratio"] >= 1.3):
                    accepted = "font"
                if accepted is None and f["num"] is not None and (l.bold_prefix or l.italic_prefix) and starts and not tabular:
                    # run-in numbered heading: "4.8.1 Ring Membership. The ..." in bold,
                    # "1) Data Structure: ..." in italics
                    for bp, need_punct in ((l.bold_prefix.strip(), False), (l.italic_prefix.strip(), True)):
                        if not bp:
                            continue
                        hn = heading_numbering(bp)
                        if need_punct and not bp.endswith((":", ".")):
                            continue
                        if hn is not None and 2 <= len(hn[1]) <= 100 and len(bp) < len(l.text.strip()) and len(bp.split()) <= 14:
                            runin = bp
                            break
                if accepted:
                    l.role = "heading"
                    l.heading_text = clean_text(t)
                    l.heading_source = accepted
                    cands.append(l)
                    feats[id(l)] = f
                    for c in cont:
                        c.role = "merged"
                        l.y1 = max(l.y1, c.y1)
                        l.x1 = max(l.x1, c.x1)
                elif runin:
                    l.role = "heading-runin"
                    l.heading_text = clean_text(runin).rstrip(".:")
                    l.heading_source = "numbering"
                    cands.append(l)
                    feats[id(l)] = f
        # multi-line headings: a heading followed by a same-style line (not numbered)
        for p in pages:
            ls = sorted(p.lines, key=lambda l: (l.col, l.y0))
            for i, h in enumerate(ls):
                if h.role != "heading":
                    continue
                for q in ls[i + 1:i + 3]:
                    if q.role not in ("", "heading") or q.col != h.col:
                        continue
                    if -0.3 * h.size <= q.y0 - h.y1 < 0.6 * h.size and abs(q.size - h.size) < 0.3 \
                            and (q.bold >= 0.8) == (h.bold >= 0.8) and heading_numbering(q.text) is None \
                            and q.nwords <= 10 and _overlap_x(q.x0, q.x1, h.x0 - 5, h.x1 + 200) > 0 \
                            and len(h.heading_text) + len(q.text) < 160 and not SENTENCE_END_RE.search(h.heading_text) \
                            and not _BULLET_RE.match(q.text):
                        h.heading_text = clean_text(h.heading_text + " " + q.text)
                        h.y1 = max(h.y1, q.y1)
                        h.x1 = max(h.x1, q.x1)
                        if q.role == "heading":
                            cands = [c for c in cands if c is not q]
                        q.role = "merged"
                    break
        cands = [c for c in cands if c.role in ("heading", "heading-runin")]
        # page 1: unnumbered lines above the abstract / first numbered heading are the
        # title block (authors, affiliations), not section headings
        if pages:
            p1 = [l for l in cands if l.page == 0]
            anchors = [l for l in p1 if normalize_heading(l.heading_text) in ("abstract", "introduction")
                       or heading_numbering(l.heading_text) is not None]
            if not anchors:
                anchors = [l for l in pages[0].lines if l.role == "" and re.match(r"^\s*abstract\b", l.text, re.I)]
            if anchors:
                ytop = min(a.y0 for a in anchors)
                for l in p1:
                    if l.heading_source == "font" and l.y1 <= ytop + 1 and l not in anchors:
                        l.role = ""
        cands = [c for c in cands if c.role in ("heading", "heading-runin")]
        # documents with numbered sections: unnumbered headings must look like them
        numbered = [c for c in cands if c.heading_source == "numbering"]
        if len(numbered) >= 4 and len(numbered) >= 0.5 * len(cands):
            num_styles = {(round(c.size * 2) / 2, c.bold >= 0.8) for c in numbered}
            max_ratio = max(feats[id(c)]["ratio"] for c in numbered)
            for c in cands:
                if c.heading_source != "font":
                    continue
                keyc = (round(c.size * 2) / 2, c.bold >= 0.8)
                if normalize_heading(c.heading_text) in FRONT_BACK_MATTER or keyc in num_styles \
                        or feats[id(c)]["ratio"] > max_ratio + 0.05:
                    continue
                c.role = ""
        cands = [c for c in cands if c.role in ("heading", "heading-runin")]
        # drop font-only candidates whose style is too frequent (labels, table headers)
        by_style: dict[tuple, list[_Line]] = defaultdict(list)
        for l in cands:
            by_style[(round(l.size * 2) / 2, l.bold >= 0.8)].append(l)
        n_pages = max(1, len(pages))
        for key, ls in by_style.items():
            font_only = [l for l in ls if l.heading_source == "font"]
            if not font_only:
                continue
            per_page = Counter(l.page for l in font_only)
            if len(font_only) > 3 * n_pages + 6:
                for l in font_only:
                    l.role = ""
                continue
            for l in font_only:
                if per_page[l.page] > 8:  # many on one page: labels or table cells
                    l.role = ""
        # a font-only "heading" text repeated many times is a label ("Caution", "Note")
        reps = Counter(normalize_heading(l.heading_text) for l in cands if l.heading_source == "font" and l.role == "heading")
        for l in cands:
            if l.heading_source == "font" and reps[normalize_heading(l.heading_text)] >= 4:
                l.role = ""
        # font-only headings inside vector graphics/images are figure labels
        if doc is not None:
            for pno in sorted({c.page for c in cands if c.role == "heading" and c.heading_source == "font"}):
                gs = self._page_graphics(doc, pno, pages[pno])
                for c in cands:
                    if c.page == pno and c.heading_source == "font" and any(
                        c.x0 >= g[0] - 2 and c.x1 <= g[2] + 2 and c.y0 >= g[1] - 2 and c.y1 <= g[3] + 2
                        and (g[2] - g[0]) * (g[3] - g[1]) > 4 * (c.x1 - c.x0) * max(c.y1 - c.y0, 1.0) for g in gs
                    ):
                        c.role = ""
        self._assign_levels([l for p in pages for l in p.lines if l.role in ("heading", "heading-runin")])

    @staticmethod
    def _page_graphics(doc, pno: int, p: _PageInfo) -> list[tuple]:
        """Clusters of vector graphics and images on a page (boxes in points)."""
        try:
            page = doc[pno]
            rects = []
            for d in page.get_cdrawings()[:5000]:
                r = d.get("rect")
                if r is None:
                    continue
                x0, y0, x1, y1 = (float(v) for v in r)
                if (x1 - x0) >= 0.8 * p.width or (y1 - y0) >= 0.8 * p.height:
                    continue  # page frames, borders, backgrounds
                if (x1 - x0) > 0.5 or (y1 - y0) > 0.5:
                    rects.append((x0, y0, x1, y1))
            rects.extend(p.images)
        except Exception:
            return []
        gs = _graphics_clusters(rects, p.width, p.height)
        area = p.width * p.height
        return [g for g in gs if (g[2] - g[0]) >= 20 and (g[3] - g[1]) >= 12 and (g[2] - g[0]) * (g[3] - g[1]) < 0.6 * area]

    @staticmethod
    def _assign_levels(heads: list[_Line]) -> None:
        """Levels: numbering depth for numbered headings; for unnumbered ones the level
        of numbered headings with the same style (size, weight, capitals), else the
        rank of their style among the heading styles. Front/back matter (Abstract,
        References, ...) sits at the top numbered level."""

        def caps(h: _Line) -> bool:
            t = re.sub(r"^[\dIVXA-Z.\s]*\s", "", h.heading_text) or h.heading_text
            return t.upper() == t and sum(ch.isalpha() for ch in t) >= 3

        def style(h: _Line) -> tuple:
            return (round(h.size * 2) / 2, h.bold >= 0.8, caps(h))

        known: dict[tuple, Counter] = defaultdict(Counter)
        for h in heads:
            hn = heading_numbering(h.heading_text)
            if hn is not None:
                h.heading_level = min(6, numbering_level(hn[0]))
                known[style(h)][h.heading_level] += 1
        styles = sorted({style(h) for h in heads}, key=lambda s: (-s[0], -int(s[1]), -int(s[2])))
        kl = {s: c.most_common(1)[0][0] for s, c in known.items()}
        top = min(kl.values()) if kl else 1
        for h in heads:
            if h.heading_level is not None:
                continue
            s = style(h)
            if kl and normalize_heading(h.heading_text) in FRONT_BACK_MATTER - {"introduction", "summary", "notes"}:
                h.heading_level = top
                continue
            if s in kl:
                h.heading_level = kl[s]
                continue
            # same size as a known style (weight or case differs) -> that level
            same = [kl[k] for k in kl if k[0] == s[0] and k[1] == s[1]] or [kl[k] for k in kl if k[0] == s[0]]
            if same:
                h.heading_level = min(same)
                continue
            bigger = [kl[k] for k in kl if (k[0], int(k[1])) > (s[0], int(s[1]))]
            if kl:
                h.heading_level = (max(bigger) + 1) if bigger else 1
            else:
                h.heading_level = sorted({k[:2] for k in styles}, key=lambda k: (-k[0], -int(k[1]))).index(s[:2]) + 1
            h.heading_level = min(h.heading_level, 6)

    # ------------------------------------------------------------------ outline
    @staticmethod
    def _outline_dests(doc) -> list[float | None]:
        out: list[float | None] = []
        try:
            for e in doc.get_toc(simple=False):
                d = e[3] if len(e) > 3 and isinstance(e[3], dict) else {}
                to = d.get("to")
                out.append(float(to.y) if to is not None and hasattr(to, "y") else None)
        except Exception:
            return []
        return out

    def _apply_outline(self, pages: list[_PageInfo], outline: list[tuple[int, str, int]],
                       dests: list[float | None], body: float) -> bool:
        """Headings = outline entries matched to lines on their page (plus detected
        front/back-matter headings the outline lacks). Returns True when used."""
        # keep detected headings to fall back on for front/back matter
        detected = [l for p in pages for l in p.lines if l.role in ("heading", "heading-runin")]
        for l in detected:
            l.role = "" if l.role == "heading" else ""
            l.heading_level = None
        matched = 0
        prev_level = 0
        used: set[int] = set()
        norm_cache: dict[int, str] = {}
        last_pos: tuple[int, float] = (-1, 0.0)

        def norm(l: _Line) -> str:
            v = norm_cache.get(id(l))
            if v is None:
                v = normalize_heading(l.text)
                norm_cache[id(l)] = v
            return v

        inserted: list[tuple[int, float, str, int]] = []
        for k, (lvl, title, pg) in enumerate(outline):
            target = normalize_heading(title)
            alt = normalize_heading(title[2:]) if re.match(r"^[A-Z]\s", title) else ""
            if not target:
                continue
            hn = heading_numbering(title)
            level = numbering_level(hn[0]) if hn is not None else lvl
            level = max(1, min(level, prev_level + 1 if prev_level else level, 6))
            y_hint = dests[k] if k < len(dests) else None
            best = None
            for dp in (0, 1, -1):
                pi = pg - 1 + dp
                if not (0 <= pi < len(pages)):
                    continue
                for l in pages[pi].lines:
                    if id(l) in used or l.role in ("header", "pagenum", "caption-used", "doctitle", "region", "equation", "merged"):
                        continue
                    nl = norm(l)
                    if not nl:
                        continue
                    score = None
                    if alt and nl == alt and nl != target:
                        target = alt  # "C bAbI." in the outline, "Appendix C. bAbI." printed
                    if nl == target:
                        score = 0
                    elif target.startswith(nl) and len(nl) >= 0.3 * len(target):
                        score = 1  # heading wraps over several lines
                    elif nl.startswith(target) and len(target) >= 4:
                        score = 2  # run-in heading or trailing text
                    if score is None:
                        continue
                    # outline targets are in PDF (bottom-up) coordinates in some files
                    dist = min(abs(l.y0 - y_hint), abs(l.y0 - (pages[pi].height - y_hint))) \
                        if (y_hint is not None and dp == 0) else 1000.0
                    cand = (dp != 0, score, dist, l, pi)
                    if best is None or cand[:3] < best[:3]:
                        best = cand
                if best is not None and best[0] is False:
                    break
            if best is None:
                # outline page numbers are sometimes wrong: an exact match anywhere else
                hits = [(pi, l) for pi, pg_ in enumerate(pages) if abs(pi - (pg - 1)) > 1
                        for l in pg_.lines if id(l) not in used and l.role not in ("header", "pagenum", "caption-used", "doctitle")
                        and norm(l) in (target, alt)]
                # outline entries are in document order: the first hit after the last match
                hits = sorted((h for h in hits if (h[0], h[1].y0) > last_pos), key=lambda h: (h[0], h[1].y0))
                if hits:
                    best = (False, 0, 0.0, hits[0][1], hits[0][0])
            if best is None:
                yh = 0.0
                if y_hint is not None and 0 <= pg - 1 < len(pages):
                    yh = min(max(pages[pg - 1].height - y_hint, 0.0), pages[pg - 1].height)
                inserted.append((pg - 1, yh, title, level))
                prev_level = level
                continue
            _, score, _, l, pi = best
            used.add(id(l))
            matched += 1
            last_pos = (pi, l.y0)
            if score == 1:
                # extend with following lines until the outline title is covered
                acc = normalize_heading(l.text)
                text = l.text
                for q in sorted(pages[pi].lines, key=lambda q: q.y0):
                    if q is l or q.col != l.col or q.y0 < l.y1 - 1 or q.y0 - l.y1 > 1.5 * max(l.size, 4):
                        continue
                    nq = normalize_heading(q.text)
                    if target.startswith(acc + nq) and nq:
                        acc += nq
                        text += " " + q.text
                        q.role = "merged"
                        l.y1 = max(l.y1, q.y1)
                        if acc == target:
                            break
                l.role = "heading"
                l.heading_text = clean_text(text)
            elif score == 2 and len(normalize_heading(l.text)) > len(target) + 2:
                # the heading is the first part of the line (run-in)
                words = l.text.split()
                cut = len(words)
                for n in range(1, len(words) + 1):
                    if normalize_heading(" ".join(words[:n])).startswith(target) or normalize_heading(" ".join(words[:n])) == target:
                        cut = n
                        break
                l.role = "heading-runin"
                l.heading_text = clean_text(" ".join(words[:cut])).rstrip(".:")
            else:
                l.role = "heading"
                l.heading_text = clean_text(l.text)
            if hn is None:
                hn2 = heading_numbering(l.heading_text)
                if hn2 is not None:
                    level = min(6, numbering_level(hn2[0]))
            l.heading_level = level
            l.heading_source = "outline"
            prev_level = level
        if matched == 0:
            # outline does not match the text at all: fall back to detection
            for l in detected:
                if l.role == "":
                    l.role = "heading"
            self._assign_levels(detected)
            return False
        # front/back matter headings found by detection but absent from the outline
        for l in detected:
            if l.role == "" and normalize_heading(l.heading_text or l.text) in FRONT_BACK_MATTER and id(l) not in used:
                l.role = "heading"
                l.heading_level = 1
                l.heading_source = "font"
        for pi, y, title, level in inserted:
            if 0 <= pi < len(pages):
                p = pages[pi]
                ghost = _Line(page=pi, x0=0.0, y0=y, x1=p.width, y1=y, text=title, size=body, bold=1.0, italic=0.0,
                              math=0.0, mono=0.0, font="", block=-1, nchars=len(title), nwords=0, role="heading", col=0)
                ghost.heading_text = clean_text(title)
                ghost.heading_level = level
                ghost.heading_source = "outline-only"
                p.lines.append(ghost)
        return True

    # ------------------------------------------------------------------ reading order
    def _reading_order(self, pages: list[_PageInfo], body: float) -> list[Element]:
        elements: list[Element] = []
        order = 0
        for pno, p in enumerate(pages):
            items: list[dict[str, Any]] = []
            # region items (tables/figures with their captions)
            for it in p.items:
                items.append({**it, "kind": "region"})
            # equation groups
            eqs: dict[int, list[_Line]] = defaultdict(list)
            for l in p.lines:
                if l.role == "equation":
                    eqs[l.group].append(l)
            for g, ls in eqs.items():
                ls.sort(key=lambda l: (l.y0, l.x0))
                items.append({"kind": "equation", "type": NodeType.EQUATION,
                              "bbox": _union((l.x0, l.y0, l.x1, l.y1) for l in ls),
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
                        if rest_text:
                            frac = len(ht) / max(1, len(rest))
                            bx = l.x0 + frac * (l.x1 - l.x0)
                            items.append({"kind": "line", "line": l, "text": rest_text, "bbox": (bx, l.y0 + 0.01, l.x1, l.y1),
                                          "para_start": True})
                elif l.role == "":
                    items.append({"kind": "line", "line": l, "text": l.text, "bbox": (l.x0, l.y0, l.x1, l.y1)})
            if not items:
                continue
            # column of each item, then sort by band / column / y
            for it in items:
                b = it["bbox"]
                it["col"] = it["line"].col if "line" in it and it["line"].block != -1 else _assign_col(b[0], b[2], p.gutter, p.width)
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
                        bbox=_union(it["bbox"] for it in para), order=order, level=None,
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
                if para and self._new_paragraph(para, it, body):
                    flush()
                para.append(it)
            flush()
        return elements

    @staticmethod
    def _new_paragraph(para: list[dict], it: dict, body: float) -> bool:
        prev = para[-1]
        pl: _Line = prev["line"]
        l: _Line = it["line"]
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
        if _BULLET_RE.match(txt):
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
