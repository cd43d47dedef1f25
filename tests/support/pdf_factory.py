"""Small test PDFs generated with PyMuPDF (no files from outside the repository).

Every ``make_*`` function writes one PDF to ``path`` and returns the path (the paper
fixtures return a dict of what was put on the pages, so tests can state exact
expectations). Fonts are the PDF base-14 fonts: ``tiro`` (Times-Roman), ``tibo``
(Times-Bold), ``helv`` (Helvetica), ``hebo`` (Helvetica-Bold), ``cour`` (Courier).

Units: PDF points (1/72 inch), US-Letter pages (612 x 792), origin top-left.

Usage::

    from tests.pdf_factory import make_paper_pdf
    info = make_paper_pdf(tmp_path / "paper.pdf")
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "PAGE_W",
    "PAGE_H",
    "PAPER_HEADINGS",
    "make_paper_pdf",
    "make_two_column_pdf",
    "make_encrypted_pdf",
    "make_empty_password_pdf",
    "make_no_text_pdf",
    "make_truncated_pdf",
    "make_not_pdf",
    "make_empty_file",
    "make_many_pages_pdf",
    "make_simple_pdf",
]

PAGE_W, PAGE_H = 612.0, 792.0

#: The headings of :func:`make_paper_pdf`, in reading order, with their levels.
PAPER_HEADINGS: list[tuple[str, int]] = [
    ("Abstract", 1),
    ("1 Introduction", 1),
    ("2 Method", 1),
    ("2.1 Model Details", 2),
    ("3 Results", 1),
    ("4 Conclusion", 1),
    ("References", 1),
]

_P_INTRO_1 = (
    "Document analysis systems read long reports and scientific papers. They must keep the "
    "structure of the original document, because sections and subsections carry meaning that a "
    "flat list of chunks loses. This paragraph introduces the problem in plain words."
)
# ends without a sentence end: continues at the top of the right column
_P_INTRO_2 = (
    "A second paragraph explains why headings matter for retrieval. Readers navigate by the "
    "table of contents and expect answers to cite the section they came from, and a good parser "
    "therefore has to recover the headings together with"
)
_P_INTRO_2_CONT = (
    "the reading order of the two columns, the tables, the figures and the display equations that "
    "appear between the paragraphs of the text."
)
_P_METHOD = (
    "We describe the method in this section. The parser extracts text lines with their fonts, "
    "groups them into paragraphs and detects headings from numbering and font size."
)
_P_MODEL = (
    "The model combines a linear layer with a bias term. Its output is given by the following "
    "display equation, which is numbered on the right margin."
)
_P_AFTER_EQ = (
    "After the equation the text goes on with a short remark about the weights and the bias of "
    "the layer, which are learned from the training data."
)
_P_RESULTS = (
    "Table 1 reports the accuracy of the three variants on the test set. The full model is the most "
    "accurate, and Figure 1 shows an example page from the collection."
)
_P_CONCLUSION = (
    "We presented a structure-aware parser. It recovers headings, paragraphs, tables, figures and "
    "equations from born-digital PDF files without any model download."
)
_P_REFS = "[1] A. Author and B. Author. A study of document parsing. Journal of Tests, 2024."
_ABSTRACT = (
    "This test paper has a title, an abstract, numbered sections in two columns, a table with a "
    "caption, an image with a caption and a display equation. It is used to check the parser."
)
TITLE = "A Structure-Aware Test Paper for DocMaster"
HEADER = "DocMaster Test Paper - Preprint"


def _box(page, rect, text, size=10.0, font="tiro", align=0) -> float:
    """Write wrapped text into ``rect`` (x0, y0, x1, _): the bottom is extended as
    needed; returns the y of the bottom of the last line."""
    import pymupdf

    r = pymupdf.Rect(rect[0], rect[1], rect[2], max(rect[3], rect[1] + 400))
    rc = page.insert_textbox(r, text, fontsize=size, fontname=font, align=align)
    if rc < 0:
        raise ValueError(f"text does not fit into {rect}: {text[:40]!r}")
    return r.y0 + (r.height - rc)


def _header_footer(page, pno: int) -> None:
    page.insert_text((72, 40), HEADER, fontsize=8, fontname="helv")
    page.insert_text((PAGE_W / 2 - 3, PAGE_H - 30), str(pno), fontsize=9, fontname="helv")


def make_paper_pdf(path: str | Path, with_outline: bool = False) -> dict[str, Any]:
    """A two-page, two-column paper.

    Page 1: title (18 pt bold, centred), authors, "Abstract" (12 pt bold) with a
    full-width abstract, then two columns: "1 Introduction" (two paragraphs; the
    second breaks off at the bottom of the left column and continues, starting in
    lower case, at the top of the right column), "2 Method", "2.1 Model Details"
    (10.5 pt bold) with a display equation ``z = W x + b   (1)``. Page 2 (one column):
    "3 Results" with a ruled table under the caption "Table 1: ..." (3 columns x 4
    rows), an image with the caption "Figure 1: ..." below it, "4 Conclusion",
    "References". Every page has a running header and a page number.

    Args:
        path: Output file.
        with_outline: Also write a PDF outline with the numbered headings.

    Returns:
        ``{"path", "title", "headings", "table_rows", "figure_caption",
        "table_caption", "n_text_paragraphs"}`` where ``n_text_paragraphs`` counts the
        body paragraphs after joining the column continuation (authors line included).
    """
    import pymupdf

    doc = pymupdf.open()
    # ---------------- page 1
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    _header_footer(page, 1)
    _box(page, (72, 70, 540, 95), TITLE, size=18, font="tibo", align=1)
    _box(page, (72, 102, 540, 118), "Ada Lovelace and Alan Turing, Analytical Engine Lab", size=10, font="tiro", align=1)
    _box(page, (72, 132, 540, 148), "Abstract", size=12, font="tibo", align=1)
    y = _box(page, (90, 152, 522, 200), _ABSTRACT, size=10)
    # two columns
    lx0, lx1, rx0, rx1 = 72.0, 296.0, 316.0, 540.0
    y = 215.0
    _box(page, (lx0, y, lx1, y + 16), "1 Introduction", size=12, font="tibo")
    y = _box(page, (lx0, y + 20, lx1, y + 110), _P_INTRO_1) + 8
    # the second paragraph fills the column to its bottom
    y2 = _box(page, (lx0, 672, lx1, 735), _P_INTRO_2)
    del y2
    # right column: continuation, then method
    ry = _box(page, (rx0, 215, rx1, 265), _P_INTRO_2_CONT) + 12
    _box(page, (rx0, ry, rx1, ry + 16), "2 Method", size=12, font="tibo")
    ry = _box(page, (rx0, ry + 20, rx1, ry + 90), _P_METHOD) + 12
    _box(page, (rx0, ry, rx1, ry + 15), "2.1 Model Details", size=10.5, font="tibo")
    ry = _box(page, (rx0, ry + 18, rx1, ry + 80), _P_MODEL) + 10
    page.insert_text((rx0 + 70, ry + 10), "z = W x + b", fontsize=10, fontname="tiro")
    page.insert_text((rx1 - 18, ry + 10), "(1)", fontsize=10, fontname="tiro")
    ry += 24
    _box(page, (rx0, ry, rx1, ry + 60), _P_AFTER_EQ)
    # ---------------- page 2 (single column)
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    _header_footer(page, 2)
    y = 70.0
    _box(page, (72, y, 540, y + 16), "3 Results", size=12, font="tibo")
    y = _box(page, (72, y + 20, 540, y + 70), _P_RESULTS) + 14
    cap_t = "Table 1: Accuracy of the three variants on the test set."
    _box(page, (150, y, 460, y + 14), cap_t, size=9)
    y += 18
    rows = [["Model", "Accuracy", "Speed"], ["Base", "71.2", "fast"], ["Large", "78.4", "medium"], ["Full", "83.9", "slow"]]
    cols = [170.0, 280.0, 380.0]
    page.draw_line((160, y), (450, y), width=0.8)
    for i, r in enumerate(rows):
        yy = y + 12 + i * 14
        for x, c in zip(cols, r):
            page.insert_text((x, yy), c, fontsize=9, fontname="tiro")
        if i == 0:
            page.draw_line((160, yy + 4), (450, yy + 4), width=0.5)
    y = y + 12 + len(rows) * 14 - 6
    page.draw_line((160, y), (450, y), width=0.8)
    y += 24
    # image
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 80, 50), False)
    pix.clear_with(180)
    page.insert_image(pymupdf.Rect(226, y, 386, y + 100), pixmap=pix)
    y += 106
    cap_f = "Figure 1: An example page from the collection."
    _box(page, (150, y, 460, y + 14), cap_f, size=9, align=1)
    y += 30
    _box(page, (72, y, 540, y + 16), "4 Conclusion", size=12, font="tibo")
    y = _box(page, (72, y + 20, 540, y + 70), _P_CONCLUSION) + 14
    _box(page, (72, y, 540, y + 16), "References", size=12, font="tibo")
    _box(page, (72, y + 20, 540, y + 50), _P_REFS)
    if with_outline:
        doc.set_toc([[1, "1 Introduction", 1], [1, "2 Method", 1], [2, "2.1 Model Details", 1],
                     [1, "3 Results", 2], [1, "4 Conclusion", 2]])
    doc.save(str(path))
    doc.close()
    return {
        "path": Path(path),
        "title": TITLE,
        "headings": list(PAPER_HEADINGS),
        "table_rows": rows,
        "table_caption": cap_t,
        "figure_caption": cap_f,
        # authors, abstract, intro 1, intro 2 (+continuation), method, model,
        # after-equation, results, conclusion, references entry
        "n_text_paragraphs": 10,
    }


def make_two_column_pdf(path: str | Path) -> Path:
    """One page, two columns of four short paragraphs each, labelled ``L1``..``L4``
    (left, top to bottom) and ``R1``..``R4`` (right). Written right column first so
    that the file's content-stream order differs from the reading order."""
    doc = _new_doc()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    body = "is a paragraph in the {} column with enough words to fill two lines of the column width here."
    for col, x0, x1 in (("R", 316, 540), ("L", 72, 296)):
        for i in range(4):
            y = 80 + i * 80
            _box(page, (x0, y, x1, y + 60), f"{col}{i + 1} " + body.format("left" if col == "L" else "right"))
    doc.save(str(path))
    doc.close()
    return Path(path)


def make_simple_pdf(path: str | Path, text: str = "Hello DocMaster. This page has a short text layer.") -> Path:
    """One page with one paragraph of text."""
    doc = _new_doc()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    _box(page, (72, 72, 540, 200), text)
    doc.save(str(path))
    doc.close()
    return Path(path)


def make_encrypted_pdf(path: str | Path, user_pw: str = "secret", owner_pw: str = "owner") -> Path:
    """A one-page PDF encrypted (AES-256) with a non-empty user password."""
    import pymupdf

    doc = _new_doc()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    _box(page, (72, 72, 540, 200), "Secret text behind a password.")
    doc.save(str(path), encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw=user_pw, owner_pw=owner_pw)
    doc.close()
    return Path(path)


def make_empty_password_pdf(path: str | Path) -> Path:
    """A PDF encrypted with an owner password only (empty user password, RC4-128):
    it must open like the two such files in the corpus."""
    import pymupdf

    doc = _new_doc()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    _box(page, (72, 72, 540, 200), "This document is encrypted with an empty user password. It opens without one.")
    doc.save(str(path), encryption=pymupdf.PDF_ENCRYPT_RC4_128, user_pw="", owner_pw="owner",
             permissions=int(pymupdf.PDF_PERM_PRINT | pymupdf.PDF_PERM_COPY))
    doc.close()
    return Path(path)


def make_no_text_pdf(path: str | Path, pages: int = 2) -> Path:
    """Image-only pages (a grey raster image each), i.e. a scan without OCR."""
    import pymupdf

    doc = _new_doc()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 60, 80), False)
    pix.clear_with(120)
    for _ in range(pages):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        page.insert_image(pymupdf.Rect(50, 50, 560, 740), pixmap=pix)
    doc.save(str(path))
    doc.close()
    return Path(path)


def make_truncated_pdf(path: str | Path, fraction: float = 0.5) -> Path:
    """A valid multi-page PDF cut after ``fraction`` of its bytes (no ``%%EOF``)."""
    import io

    doc = _new_doc()
    for i in range(3):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        _box(page, (72, 72, 540, 300), f"Page {i + 1}. " + _P_INTRO_1 * 2)
    buf = io.BytesIO()
    doc.save(buf, garbage=0, deflate=False)
    doc.close()
    data = buf.getvalue()
    Path(path).write_bytes(data[: max(16, int(len(data) * fraction))])
    return Path(path)


def make_not_pdf(path: str | Path) -> Path:
    """A plain-text file with a ``.pdf`` name."""
    Path(path).write_text("This is not a PDF file, just text with a .pdf name.\n" * 5, encoding="utf-8")
    return Path(path)


def make_empty_file(path: str | Path) -> Path:
    """A zero-byte file."""
    Path(path).write_bytes(b"")
    return Path(path)


def make_many_pages_pdf(path: str | Path, pages: int) -> Path:
    """``pages`` pages with one short line each (for page-limit tests)."""
    doc = _new_doc()
    for i in range(pages):
        page = doc.new_page(width=PAGE_W, height=PAGE_H)
        page.insert_text((72, 100), f"Page {i + 1} of a long document.", fontsize=10, fontname="tiro")
    doc.save(str(path))
    doc.close()
    return Path(path)


def _new_doc():
    import pymupdf

    return pymupdf.open()
