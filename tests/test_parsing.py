"""Tests of the parsing backends (SPEC F1) on generated PDFs and real corpus PDFs."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.errors import ConfigError, EmptyDocumentError, EncryptedPDFError, ParseError
from docmaster_core.model import NodeType
from docmaster_core.parsing import AutoParser, PyMuPDFParser, get_parser, parse_document
from docmaster_core.parsing.base import clean_text, fix_ligatures, heading_numbering, is_caption, normalize_heading, numbering_level
try:
    from tests.support import pdf_factory as pf
except ImportError:  # run without the repository root on sys.path
    import support.pdf_factory as pf  # type: ignore[no-redef]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "pdf"


def _corpus(name: str) -> Path:
    p = CORPUS / name
    if not p.is_file():
        pytest.skip(f"corpus file {name} not available")
    return p


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    info = pf.make_paper_pdf(tmp_path_factory.mktemp("paper") / "paper.pdf")
    parsed = PyMuPDFParser().parse(info["path"])
    return info, parsed


def _of(parsed, t: NodeType):
    return [e for e in parsed.elements if e.type == t]


# ------------------------------------------------------------------ text helpers


def test_characters_lost_inside_words_are_counted_and_said_at_ingest(tmp_path, embedder):
    """Old Type 3 fonts without a text mapping give control codes for digits ("BM\\x02\\x05"
    for "BM25"); the text loses them, and the ingest report says how many and where (a
    formula's standalone bracket codes are not counted)."""
    import pymupdf

    from docmaster_core.parsing.base import count_unreadable, unreadable_note
    from docmaster_core.pipeline import DocMaster

    assert count_unreadable("We combined BM\x02\x05 and BM\x01\x01 over \x01\x050 million") == 6
    assert count_unreadable("O\n\x00 1\n\x02\n 𝑓(𝑥)\x03 \ufffd") == 0  # standalone codes: no word lost them
    assert unreadable_note({3: 4}) == ""  # a few stray codes are not reported
    assert unreadable_note({1: 4, 9: 30, 2: 1}).startswith("35 characters inside words could not be read on 3 pages "
                                                           "(most on page 9)")
    doc = pymupdf.open()
    for k in range(2):
        page = doc.new_page(width=612, height=792)
        page.insert_text((72, 80), f"{k + 1} Ranking functions", fontname="hebo", fontsize=13)
        for i in range(8):
            page.insert_text((72, 110 + 14 * i), "We combined BM\x02\x05 and BM\x01\x01 into one function over "
                             "\x01\x050 million pages of the collection.", fontname="helv", fontsize=10)
    doc.save(tmp_path / "okapi-like.pdf")
    doc.close()
    dm = DocMaster(tmp_path / "ws", embedder=embedder)
    res = dm.ingest([tmp_path / "okapi-like.pdf"])
    assert res[0].status == "ingested", res[0].reason
    assert "96 characters inside words could not be read on 2 pages" in res[0].reason, res[0].reason
    assert "BM and BM" in " ".join(n.content for n in dm.tree(res[0].doc_id).nodes)  # what the text holds


def test_ligatures_and_whitespace():
    assert fix_ligatures("e\x0bects di\x0ced \x0cnal \x0eeld \x0fe") == "effects dified final ffield ffle"
    assert fix_ligatures("\ufb01ne \ufb02ow e\ufb03cient") == "fine flow efficient"
    assert clean_text("  a\u00a0 b\t\nc\u00ad d ") == "a b c d"


@pytest.mark.parametrize(
    "text,num,level",
    [
        ("1 Introduction", "1", 1),
        ("3.2 Method", "3.2", 2),
        ("2.1.3 Details", "2.1.3", 3),
        ("1. INTRODUCTION", "1", 1),
        ("4.1 . Setup", "4.1", 2),
        ("A Related Work", "A", 1),
        ("A.1 Proofs", "A.1", 2),
        ("II. Interpretation and Application", "II", 1),
        ("III.1.4 What a solution looks like", "III.1.4", 3),
        ("Appendix B Details", "B", 1),
        ("1) Data Structure: Initially", "1", 1),
    ],
)
def test_heading_numbering(text, num, level):
    hn = heading_numbering(text)
    assert hn is not None and hn[0] == num
    assert numbering_level(hn[0]) == level


@pytest.mark.parametrize("text", ["Introduction", "2019 was a good year", "a. lower case", "I think this is a sentence that goes on and on here"])
def test_not_numbered(text):
    assert heading_numbering(text) is None


def test_normalize_and_caption():
    assert normalize_heading("3.2. Proof  Details!") == "proofdetails"
    assert normalize_heading("II. INTRODUCTION") == "introduction"
    assert is_caption("Figure 2: Overview") == "figure"
    assert is_caption("Fig. 3. Curves") == "figure"
    assert is_caption("TABLE II") == "table"
    assert is_caption("Table 2 shows that the model is better") is None
    assert is_caption("Table 2 shows", strict=False) == "table"


# ------------------------------------------------------------------ generated paper


def test_paper_headings_exact(paper):
    info, parsed = paper
    titles = [(e.text, e.level) for e in _of(parsed, NodeType.TITLE)]
    assert titles == info["headings"]
    assert parsed.title == info["title"]
    assert parsed.parser == "pymupdf"
    assert parsed.n_pages == 2
    assert parsed.metadata["headings_from"] == "fonts"


def test_paper_counts_exact(paper):
    info, parsed = paper
    counts = {t: len(_of(parsed, t)) for t in NodeType if t != NodeType.ROOT}
    # 11 TEXT elements: the continued paragraph is still two pieces before tree building
    assert counts == {NodeType.TITLE: 7, NodeType.TEXT: 11, NodeType.IMAGE: 1, NodeType.TABLE: 1, NodeType.EQUATION: 1}


def test_paper_table(paper):
    info, parsed = paper
    (table,) = _of(parsed, NodeType.TABLE)
    assert table.extra["rows"] == info["table_rows"]
    assert table.extra["caption"] == info["table_caption"]
    assert table.text.startswith(info["table_caption"])
    assert "| Model | Accuracy | Speed |" in table.extra["markdown"]
    # table text is not duplicated as TEXT
    assert not any("83.9" in e.text for e in _of(parsed, NodeType.TEXT))
    assert table.page == 2


def test_paper_image_and_equation(paper):
    info, parsed = paper
    (img,) = _of(parsed, NodeType.IMAGE)
    assert img.text == info["figure_caption"]
    x0, y0, x1, y1 = img.extra["figure_bbox"]
    assert 220 <= x0 <= 232 and 380 <= x1 <= 392 and (y1 - y0) >= 95  # the 160x100 pt raster
    (eq,) = _of(parsed, NodeType.EQUATION)
    assert eq.text.replace(" ", "") == "z=Wx+b(1)"
    assert eq.page == 1


def test_paper_header_footer_dropped(paper):
    info, parsed = paper
    for e in parsed.elements:
        assert pf.HEADER not in e.text
        assert not re.fullmatch(r"\d+", e.text.strip())


def test_paper_order_pages_boxes(paper):
    _, parsed = paper
    orders = [e.order for e in parsed.elements]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    for e in parsed.elements:
        assert 1 <= e.page <= parsed.n_pages
        x0, y0, x1, y1 = e.bbox
        assert 0 <= x0 <= x1 <= pf.PAGE_W and 0 <= y0 <= y1 <= pf.PAGE_H
    # the continued paragraph: left column bottom, then right column top
    texts = [e.text for e in _of(parsed, NodeType.TEXT)]
    i = next(k for k, t in enumerate(texts) if t.startswith("A second paragraph"))
    assert texts[i + 1].startswith("the reading order of the two columns")


def test_two_column_reading_order(tmp_path):
    p = pf.make_two_column_pdf(tmp_path / "two.pdf")
    parsed = PyMuPDFParser().parse(p)
    labels = [e.text.split()[0] for e in parsed.elements]
    assert labels == ["L1", "L2", "L3", "L4", "R1", "R2", "R3", "R4"]
    assert parsed.metadata["two_column_pages"] == 1


def test_outline_mode(tmp_path):
    info = pf.make_paper_pdf(tmp_path / "paper_o.pdf", with_outline=True)
    parsed = PyMuPDFParser().parse(info["path"])
    assert parsed.metadata["headings_from"] == "outline"
    assert parsed.outline[0] == (1, "1 Introduction", 1)
    titles = _of(parsed, NodeType.TITLE)
    assert [(e.text, e.level) for e in titles] == info["headings"]
    src = {e.text: e.extra["source"] for e in titles}
    assert src["2.1 Model Details"] == "outline" and src["References"] == "font"
    # use_outline=False ignores it
    parsed2 = PyMuPDFParser(ParsingSettings(use_outline=False)).parse(info["path"])
    assert parsed2.metadata["headings_from"] == "fonts"


def test_tables_off(tmp_path):
    info = pf.make_paper_pdf(tmp_path / "p.pdf")
    parsed = PyMuPDFParser(ParsingSettings(tables=False)).parse(info["path"])
    (table,) = _of(parsed, NodeType.TABLE)
    assert table.extra["rows"] == []


# ------------------------------------------------------------------ bad inputs


@pytest.mark.parametrize(
    "maker,exc,pattern",
    [
        (pf.make_empty_file, ParseError, "empty file"),
        (pf.make_not_pdf, ParseError, "not a PDF"),
        (pf.make_truncated_pdf, ParseError, "truncated"),
        (pf.make_encrypted_pdf, EncryptedPDFError, "password"),
        (pf.make_no_text_pdf, EmptyDocumentError, "no extractable text"),
    ],
)
def test_bad_inputs(tmp_path, maker, exc, pattern):
    path = maker(tmp_path / "bad input.pdf")
    with pytest.raises(exc) as ei:
        PyMuPDFParser().parse(path)
    msg = str(ei.value)
    assert "bad input.pdf" in msg and pattern in msg and "\n" not in msg
    assert isinstance(ei.value, ParseError)


def test_specific_error_classes_are_distinct(tmp_path):
    p = pf.make_not_pdf(tmp_path / "x.pdf")
    with pytest.raises(ParseError) as ei:
        PyMuPDFParser().parse(p)
    assert not isinstance(ei.value, (EncryptedPDFError, EmptyDocumentError))


def test_missing_file(tmp_path):
    with pytest.raises(ParseError, match="not found"):
        PyMuPDFParser().parse(tmp_path / "nope.pdf")


def test_empty_password_opens(tmp_path):
    p = pf.make_empty_password_pdf(tmp_path / "open.pdf")
    parsed = PyMuPDFParser().parse(p)
    assert "empty user password" in parsed.elements[0].text


def test_page_and_size_limits(tmp_path):
    p = pf.make_many_pages_pdf(tmp_path / "long.pdf", 12)
    with pytest.raises(ParseError, match="12 pages, over the page limit of 10"):
        PyMuPDFParser(ParsingSettings(page_limit=10)).parse(p)
    assert PyMuPDFParser(ParsingSettings(page_limit=12)).parse(p).n_pages == 12
    with pytest.raises(ParseError, match="MiB limit"):
        PyMuPDFParser(ParsingSettings(max_file_mb=0.0001)).parse(p)


# ------------------------------------------------------------------ backend selection


def test_get_parser_names(monkeypatch):
    assert isinstance(get_parser("pymupdf"), PyMuPDFParser)
    assert isinstance(get_parser(), AutoParser)
    with pytest.raises(ConfigError, match="unknown parser"):
        get_parser("nope")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match="not on PATH"):
        get_parser("mineru")


def test_auto_prefers_mineru_output_then_pymupdf(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    pdf = pf.make_simple_pdf(tmp_path / "doc.pdf")
    assert parse_document(pdf).parser == "pymupdf"
    (tmp_path / "doc").mkdir()
    (tmp_path / "doc" / "auto").mkdir()
    (tmp_path / "doc" / "auto" / "doc_content_list.json").write_text(
        '[{"type": "text", "text": "Imported heading", "text_level": 1, "page_idx": 0},'
        ' {"type": "text", "text": "Imported body text from MinerU.", "page_idx": 0}]', encoding="utf-8")
    parsed = parse_document(pdf)
    assert parsed.parser == "mineru-import"
    assert [e.text for e in parsed.elements] == ["Imported heading", "Imported body text from MinerU."]
    assert parsed.path == str(pdf)


# ------------------------------------------------------------------ real corpus PDFs


def test_corpus_rag_paper():
    parsed = PyMuPDFParser(ParsingSettings(use_outline=False)).parse(_corpus("2005.11401_rag-knowledge-intensive-nlp.pdf"))
    titles = [e.text for e in _of(parsed, NodeType.TITLE)]
    assert parsed.n_pages == 19
    assert parsed.title.startswith("Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks")
    assert len(titles) >= 25
    for t in ("Abstract", "1 Introduction", "2.1 Models", "4 Results", "6 Discussion", "References"):
        assert t in titles
    lv = {e.text: e.level for e in _of(parsed, NodeType.TITLE)}
    assert lv["1 Introduction"] == 1 and lv["2.1 Models"] == 2
    assert len(_of(parsed, NodeType.TABLE)) >= 5
    assert len(_of(parsed, NodeType.IMAGE)) >= 3
    assert len(_of(parsed, NodeType.EQUATION)) >= 2
    # the arXiv stamp in the margin is not text
    assert not any("arXiv:2005.11401" in e.text for e in parsed.elements)
    t1 = next(e for e in _of(parsed, NodeType.TABLE) if e.text.startswith("Table 1:"))
    assert len(t1.extra["rows"]) >= 5 and any("RAG-Token" in " ".join(r) for r in t1.extra["rows"])


def test_corpus_two_column_dpr():
    parsed = PyMuPDFParser().parse(_corpus("2004.04906_dense-passage-retrieval.pdf"))
    assert parsed.metadata["two_column_pages"] >= 10
    titles = [e.text for e in _of(parsed, NodeType.TITLE)]
    assert "Abstract" in titles and "1 Introduction" in titles and "3.1 Overview" in titles
    # page 2 in reading order: left column text before right column text
    p2 = [e for e in parsed.elements if e.page == 2 and e.type == NodeType.TEXT]
    xs = [e.bbox[0] for e in p2]
    first_right = next(i for i, x in enumerate(xs) if x > 300)
    assert all(x > 300 for x in xs[first_right:])


@pytest.mark.slow
def test_corpus_empty_password_and_type3_ligatures():
    parsed = PyMuPDFParser().parse(_corpus("doc_ntsb-aviation-accident-report.pdf"))
    assert parsed.n_pages == 5 and len(parsed.elements) > 10
    okapi = PyMuPDFParser().parse(_corpus("okapi-at-trec3.pdf"))
    text = " ".join(e.text for e in okapi.elements)
    assert "\x0b" not in text and "\x0c" not in text
    assert "effect" in text and "fi" in text
