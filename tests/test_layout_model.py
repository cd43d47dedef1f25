"""The ``layout`` parser backend (issue 27): PyMuPDF's layout model via pymupdf4llm.

Every test parses a PDF it builds with PyMuPDF, except the corpus test on the
Transformer paper, which is skipped when ``../shared`` is absent. The layout model is
an ONNX model shipped with PyMuPDF 2.0 (offline); the tests are skipped when
pymupdf4llm is not installed.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.errors import ConfigError, ParseError
from docmaster_core.model import NodeType
from docmaster_core.parsing import LayoutParser, PyMuPDFParser, get_parser, layout_available
from docmaster_core.parsing.base import heading_numbering, numbering_level
from docmaster_core.tree.build import build_tree

try:
    from support.layout_factory import make_equation_pdf, make_multiline_cell_table_pdf
    from support.pdf_factory import make_many_pages_pdf, make_paper_pdf
except ImportError:  # tests imported as a package
    from tests.layout_factory import make_equation_pdf, make_multiline_cell_table_pdf
    from tests.pdf_factory import make_many_pages_pdf, make_paper_pdf

pytestmark = [
    pytest.mark.skipif(not layout_available(), reason="pymupdf4llm / pymupdf.layout not installed"),
    pytest.mark.slow,  # every test loads the layout model (~20 s the first time)
]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRANSFORMER = sorted((SHARED / "corpus" / "pdf").glob("1706.03762*.pdf")) if (SHARED / "corpus" / "pdf").is_dir() else []

W, H = 612.0, 792.0
LEADER_RE = re.compile(r"(?:\.\s?){4,}")


def _put(page, x, y, text, size=10.0, font="tiro"):
    page.insert_text((x, y), text, fontsize=size, fontname=font)


def _para(page, y, lines, size=10.0, x=72.0):
    for k, t in enumerate(lines):
        _put(page, x, y + k * 13, t, size)
    return y + len(lines) * 13


PROSE = [
    "Document analysis systems read long reports and scientific papers and must keep their",
    "structure: the sections, the paragraphs in reading order, the tables and the equations.",
    "This paragraph is ordinary running text that continues over several lines of the page,",
    "so that a layout model sees a regular block of body text in the main font of the page.",
]


def make_three_line_equation_pdf(path: Path) -> list[str]:
    """Prose, a centred three-line display equation numbered (3) on its last line, prose."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    y = _para(page, 90, PROSE) + 24
    eq = ["f(x) = a_0 + a_1 x + a_2 x^2", "+ a_3 x^3 + a_4 x^4", "+ sum_k b_k sin(k x)"]
    for k, t in enumerate(eq):
        _put(page, 220 + (30 if k else 0), y + k * 16, t, 10, "tiit")
    _put(page, 520, y + 32, "(3)", 10)
    y += 32 + 30
    _para(page, y, ["where the coefficients are fitted by least squares on the training points, and the",
                    "sum runs over the first ten harmonics of the signal that we observed in the data."])
    doc.save(str(path))
    doc.close()
    return eq


HEADER = "Journal of Structured Documents, Vol. 7"


def make_running_header_pdf(path: Path, pages: int = 3) -> None:
    """Pages with a running header, a page-number footer and body text per page."""
    import pymupdf

    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=W, height=H)
        _put(page, 72, 40, HEADER, 8, "helv")
        _put(page, W / 2 - 20, H - 30, f"Page {p + 1} of {pages}", 8, "helv")
        y = 90.0
        if p == 0:
            _put(page, 72, y, f"{p + 1} Overview of the Study", 12, "tibo")
            y += 24
        for k in range(3):
            y = _para(page, y, [f"Section text on page {p + 1}, paragraph {k + 1}: " + PROSE[0][:60]] + PROSE[1:]) + 14
    doc.save(str(path))
    doc.close()


TOC = [("1 Safety", 3), ("1.1 General safety instructions", 3), ("2 Installation", 4), ("3 Operation", 5)]


def make_toc_pdf(path: Path) -> None:
    """A contents page with dot leaders, then the sections it lists."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    _put(page, 72, 80, "Table of Contents", 16, "tibo")
    y = 120.0
    for title, pg in TOC:
        indent = 20 if "." in title.split()[0] else 0
        text = title + " " + "." * (70 - len(title) - indent // 4) + f" {pg}"
        _put(page, 72 + indent, y, text, 10)
        y += 18
    for title, _ in TOC:
        page = doc.new_page(width=W, height=H)
        _put(page, 72, 80, title, 14 if "." not in title.split()[0] else 12, "tibo")
        _para(page, 110, PROSE)
    doc.save(str(path))
    doc.close()


def make_figure_label_pdf(path: Path) -> None:
    """A numbered section, a vector figure with two short bold labels above its two
    panels and a caption below, then text."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    _put(page, 72, 80, "3 Model Architecture", 12, "tibo")
    y = _para(page, 100, PROSE) + 20
    for x0, label in ((130, "Encoder Block"), (350, "Decoder Block")):
        _put(page, x0 + 10, y + 8, label, 9, "hebo")
        shape = page.new_shape()
        for k in range(4):
            shape.draw_rect(pymupdf.Rect(x0, y + 16 + k * 34, x0 + 120, y + 40 + k * 34))
        shape.draw_line((x0 + 60, y + 40), (x0 + 60, y + 150))
        shape.finish(color=(0, 0, 0), fill=(0.85, 0.85, 0.95), width=0.8)
        shape.commit()
        for k in range(4):
            _put(page, x0 + 20, y + 32 + k * 34, ["Attention", "Add & Norm", "Feed Forward", "Add & Norm"][k], 8, "helv")
    y += 170
    _put(page, 140, y, "Figure 1: The two blocks of the model, side by side.", 9)
    _para(page, y + 30, PROSE)
    doc.save(str(path))
    doc.close()


@pytest.fixture(scope="module")
def parsed(tmp_path_factory):
    """Parse each built PDF once (the model costs ~0.5-1 s a page)."""
    d = tmp_path_factory.mktemp("layout")
    out = {}
    parser = LayoutParser()
    make_equation_pdf(d / "eq2.pdf")
    out["eq3_lines"] = make_three_line_equation_pdf(d / "eq3.pdf")
    out["table"] = make_multiline_cell_table_pdf(d / "table.pdf")
    make_running_header_pdf(d / "headers.pdf")
    make_toc_pdf(d / "toc.pdf")
    make_figure_label_pdf(d / "figure.pdf")
    out["paper"] = make_paper_pdf(d / "paper.pdf")
    for name in ("eq2", "eq3", "table", "headers", "toc", "figure", "paper"):
        out[name + ".pdf"] = parser.parse(d / f"{name}.pdf")
    out["dir"] = d
    return out


def _types(doc, t):
    return [e for e in doc.elements if e.type == t]


def test_registered_names():
    assert isinstance(get_parser("layout"), LayoutParser)
    assert isinstance(get_parser("fast"), PyMuPDFParser)
    assert isinstance(get_parser("pymupdf"), PyMuPDFParser)  # alias kept
    assert ParsingSettings(parser="layout").parser == "layout"
    with pytest.raises(ConfigError):
        get_parser("nonsense")


def test_two_line_display_equation_kept_whole(parsed):
    doc = parsed["eq2.pdf"]
    eqs = _types(doc, NodeType.EQUATION)
    assert len(eqs) == 2, [e.text for e in doc.elements]
    assert "softmax" in eqs[0].text and "KL(q_j" in eqs[0].text and eqs[0].extra["eq_number"] == "(1)"
    assert not any("softmax" in e.text for e in _types(doc, NodeType.TEXT))
    assert eqs[1].extra["eq_number"] == "(2)"
    assert [e.page for e in doc.elements] == [1] * len(doc.elements)


def test_three_line_display_equation_kept_whole(parsed):
    doc = parsed["eq3.pdf"]
    eqs = _types(doc, NodeType.EQUATION)
    assert len(eqs) == 1, [(e.type.value, e.text) for e in doc.elements]
    for line in parsed["eq3_lines"]:
        assert line.split()[-1] in eqs[0].text
    assert eqs[0].extra["eq_number"] == "(3)"
    assert not any("a_3" in e.text or "b_k" in e.text for e in _types(doc, NodeType.TEXT))


def test_table_with_wrapped_cells(parsed):
    doc = parsed["table.pdf"]
    tabs = _types(doc, NodeType.TABLE)
    assert len(tabs) == 1
    rows = tabs[0].extra["rows"]
    assert rows[0] == parsed["table"]["header"]
    assert rows[1:] == parsed["table"]["rows"]
    assert tabs[0].extra["caption"].startswith("Table 1:")
    # the table's words are not also body text
    assert not any("write-ahead" in e.text for e in _types(doc, NodeType.TEXT))


def test_running_headers_and_footers_excluded(parsed):
    doc = parsed["headers.pdf"]
    body = " ".join(e.text for e in doc.elements)
    assert "Journal of Structured Documents" not in body
    assert "Page 2 of 3" not in body and "Page 1 of 3" not in body
    assert [e.text for e in _types(doc, NodeType.TITLE)] == ["1 Overview of the Study"]
    assert sorted({e.page for e in doc.elements}) == [1, 2, 3]
    for p in (1, 2, 3):
        assert any(f"page {p}, paragraph 1" in e.text for e in doc.elements if e.page == p)


def test_table_of_contents_not_text_with_dot_leaders(parsed):
    doc = parsed["toc.pdf"]
    assert not any(LEADER_RE.search(e.text) for e in doc.elements), [e.text for e in doc.elements if LEADER_RE.search(e.text)]
    titles = [(e.text, e.level, e.page) for e in _types(doc, NodeType.TITLE)]
    # the sections are found once each, on their own pages, at the depth of their numbering
    assert [(t, lv) for t, lv, _ in titles] == [(t, numbering_level(heading_numbering(t)[0])) for t, _ in TOC]
    assert all(pg >= 2 for _, _, pg in titles)
    assert len(doc.metadata["toc_lines"]) >= len(TOC)
    tree = build_tree(doc, "toc")
    assert not any(LEADER_RE.search(n.content) for n in tree.nodes)


def test_figure_labels_are_not_sections(parsed):
    doc = parsed["figure.pdf"]
    titles = [e.text for e in _types(doc, NodeType.TITLE)]
    assert titles == ["3 Model Architecture"], titles
    imgs = _types(doc, NodeType.IMAGE)
    assert imgs and any(e.text.startswith("Figure 1:") for e in imgs)


def test_paper_elements_pages_boxes_and_order(parsed):
    doc = parsed["paper.pdf"]
    info = parsed["paper"]
    assert doc.parser == "layout" and doc.n_pages == 2
    assert doc.title == info["title"]
    titles = [e.text for e in _types(doc, NodeType.TITLE)]
    for h, _ in info["headings"]:
        assert h in titles
    lv = {e.text: e.level for e in _types(doc, NodeType.TITLE)}
    assert lv["2.1 Model Details"] == 2 and lv["3 Results"] == 1
    tab = _types(doc, NodeType.TABLE)[0]
    assert tab.extra["rows"] == info["table_rows"] and tab.extra["caption"] == info["table_caption"]
    img = _types(doc, NodeType.IMAGE)[0]
    assert img.text == info["figure_caption"]
    assert [e.order for e in doc.elements] == list(range(len(doc.elements)))
    for e in doc.elements:
        assert 1 <= e.page <= 2
        x0, y0, x1, y1 = e.bbox
        assert 0 <= x0 <= x1 <= W + 1 and 0 <= y0 <= y1 <= H + 1
    # reading order: sections in document order
    order = [titles.index(h) for h, _ in info["headings"] if h in titles]
    assert order == sorted(order)
    tree = build_tree(doc, "paper")
    tree.validate()
    assert tree.nodes[0].content == info["title"]


def test_page_limit_and_empty_text(tmp_path):
    make_many_pages_pdf(tmp_path / "many.pdf", 5)
    with pytest.raises(ParseError, match="page limit"):
        LayoutParser(ParsingSettings(page_limit=3)).parse(tmp_path / "many.pdf")
    try:
        from support.pdf_factory import make_no_text_pdf
    except ImportError:
        from tests.pdf_factory import make_no_text_pdf
    from docmaster_core.errors import EmptyDocumentError

    make_no_text_pdf(tmp_path / "scan.pdf")
    with pytest.raises(EmptyDocumentError):
        LayoutParser().parse(tmp_path / "scan.pdf")


DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


@pytest.mark.skipif(not DEJAVU.is_file(), reason="DejaVuSans.ttf (a font with ligature glyphs) not installed")
def test_ligatures_repaired(tmp_path):
    """Unicode ligature glyphs (U+FB01 ...) come out as letters; the private-use
    ligatures of TeX fonts are covered by the Transformer corpus test."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=W, height=H)
    page.insert_font(fontname="dejavu", fontfile=str(DEJAVU))
    page.insert_text((72, 90), "The \ufb01rst e\ufb00ect of the \ufb02ow is signi\ufb01cant for every \ufb01le that we read.",
                     fontsize=10, fontname="dejavu")
    _para(page, 110, PROSE)
    doc.save(str(tmp_path / "lig.pdf"))
    parsed = LayoutParser().parse(tmp_path / "lig.pdf")
    text = " ".join(e.text for e in parsed.elements)
    assert "first effect of the flow is significant" in text


@pytest.mark.skipif(not TRANSFORMER, reason="corpus (../shared) not available")
def test_transformer_paper_sections_equations_root_summary():
    from docmaster_core.embedding.embedders import get_embedder
    from docmaster_core.llm import OfflineLLM, summarize_tree

    doc = LayoutParser().parse(TRANSFORMER[0])
    assert doc.title == "Attention Is All You Need"
    numbered = [(e.text, e.level) for e in _types(doc, NodeType.TITLE) if heading_numbering(e.text)]
    expected = ["1", "2", "3", "3.1", "3.2", "3.2.1", "3.2.2", "3.2.3", "3.3", "3.4", "3.5", "4", "5", "5.1", "5.2",
                "5.3", "5.4", "6", "6.1", "6.2", "6.3", "7"]
    assert [heading_numbering(t)[0] for t, _ in numbered] == expected
    assert [lv for _, lv in numbered] == [numbering_level(n) for n in expected]
    titles = [e.text for e in _types(doc, NodeType.TITLE)]
    assert "Scaled Dot-Product Attention" not in titles and "Multi-Head Attention" not in titles  # figure labels
    eqs = [e.text for e in _types(doc, NodeType.EQUATION)]
    assert any(t.startswith("FFN(x) = max(0, xW1 + b1)W2 + b2") for t in eqs), eqs
    assert any(t.startswith("MultiHead(Q, K, V ) = Concat(") and "where headi = Attention(" in t for t in eqs), eqs
    assert any(t.startswith("Attention(Q, K, V ) = softmax(") for t in eqs), eqs
    assert not any("FFN(x) = max(0" in e.text for e in _types(doc, NodeType.TEXT))
    text = " ".join(e.text for e in doc.elements)
    assert not re.search("[\U000F0000-\U000F18FF]", text) and "first" in text and "significantly" in text
    tree = build_tree(doc, "transformer")
    tree.validate()
    depth = {n.content: n.depth for n in tree.nodes if n.type == NodeType.TITLE}
    assert depth["3.2.1 Scaled Dot-Product Attention"] == 3 and depth["3.2 Attention"] == 2 and depth["7 Conclusion"] == 1
    summarize_tree(tree, OfflineLLM(get_embedder()))
    root = tree.nodes[0].summary
    assert root and "@" not in root
    for name in ("Vaswani", "Shazeer", "Polosukhin", "Kaiser", "Niki", "Google Brain", "Listing order"):
        assert name not in root, root
    assert any(w in root for w in ("Transformer", "BLEU", "attention", "translation")), root
