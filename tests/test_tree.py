"""Tests of document-tree building (SPEC F2)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.model import DocumentTree, Element, NodeType, ParsedDocument
from docmaster_core.parsing import PyMuPDFParser
from docmaster_core.tree.build import build_tree, split_long_text, split_sentences

try:
    from tests.support import pdf_factory as pf
except ImportError:  # run without the repository root on sys.path
    import support.pdf_factory as pf  # type: ignore[no-redef]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
T, X, I, TB, EQ = NodeType.TITLE, NodeType.TEXT, NodeType.IMAGE, NodeType.TABLE, NodeType.EQUATION

LONG = "This sentence is long enough to stand on its own as a paragraph of text. "


def _doc(spec: list[tuple], title: str = "Doc", n_pages: int = 3) -> ParsedDocument:
    """spec items: (type, text, page[, level])."""
    els = []
    for k, s in enumerate(spec):
        t, text, page = s[:3]
        level = s[3] if len(s) > 3 else None
        els.append(Element(type=t, text=text, page=page, bbox=(10.0, 10.0 * k, 100.0, 10.0 * k + 8), order=k, level=level))
    return ParsedDocument(path="/x/doc.pdf", title=title, n_pages=n_pages, elements=els, parser="test")


def _shape(tree: DocumentTree) -> list[tuple]:
    return [(n.depth, n.type.value, n.content[:12]) for n in tree.nodes]


def test_nesting_and_invariants():
    tree = build_tree(_doc([
        (X, "Front matter before the first heading, long enough to stay.", 1),
        (T, "1 Intro", 1, 1),
        (X, LONG, 1),
        (T, "1.1 Sub", 1, 2),
        (X, LONG, 2),
        (EQ, "a = b (1)", 2),
        (T, "1.1.1 Deep", 2, 3),
        (TB, "Table 1: t", 2),
        (T, "2 Next", 3, 1),
        (I, "Figure 1: f", 3),
    ]), "d1")
    tree.validate()
    assert _shape(tree) == [
        (0, "ROOT", "Doc"), (1, "TEXT", "Front matter"), (1, "TITLE", "1 Intro"), (2, "TEXT", "This sentenc"),
        (2, "TITLE", "1.1 Sub"), (3, "TEXT", "This sentenc"), (3, "EQUATION", "a = b (1)"), (3, "TITLE", "1.1.1 Deep"),
        (4, "TABLE", "Table 1: t"), (1, "TITLE", "2 Next"), (2, "IMAGE", "Figure 1: f"),
    ]
    n = tree.nodes
    assert n[0].parent is None and n[0].children == [1, 2, 9]
    assert n[8].section_path == ["1 Intro", "1.1 Sub", "1.1.1 Deep"]
    assert n[7].section_path == ["1 Intro", "1.1 Sub", "1.1.1 Deep"]
    assert n[2].page_start == 1 and n[2].page_end == 2  # a TITLE covers its section's pages
    assert n[9].page_start == 3 and n[0].page_end == 3
    assert [x.order for x in n] == list(range(len(n)))
    assert n[4].level == 2 and n[3].level is None
    assert n[3].bboxes == [(1, 10.0, 20.0, 100.0, 28.0)]
    assert tree.count_by_type() == {"ROOT": 1, "TITLE": 4, "TEXT": 3, "IMAGE": 1, "TABLE": 1, "EQUATION": 1}
    assert np.array_equal(tree.parents()[:3], [-1, 0, 0])
    assert tree.subtree(4) == [4, 5, 6, 7, 8]


def test_level_jump_and_same_level_siblings():
    tree = build_tree(_doc([
        (T, "A", 1, 1), (T, "A.x.y", 1, 3), (X, LONG, 1), (T, "B", 1, 1), (T, "B.1", 1, 2), (T, "B.2", 1, 2), (X, LONG, 1),
    ]), "d")
    tree.validate()
    assert [(n.depth, n.content) for n in tree.nodes if n.type == T] == [(1, "A"), (2, "A.x.y"), (1, "B"), (2, "B.1"), (2, "B.2")]
    assert tree.nodes[5].children == []  # B.1 empty section


def test_the_operative_part_of_a_contract_leaves_its_recitals():
    """A contract's clauses after "NOW, THEREFORE ... agree as follows:" are not recitals: the
    paragraph closes the open "WHEREAS:" heading (cuad-128 had clauses 1-8, "7. Term and
    Termination" among them, under "WHEREAS:"); a paper's "Therefore, ..." in its Background stays."""
    tree = build_tree(_doc([
        (X, "This Addendum is made between Zebra Technologies and the Distributor named below.", 1),
        (T, "WHEREAS:", 1, 1),
        (X, "(A) The Parties entered into a distributor agreement on February 12, 2014 and renamed it.", 1),
        (X, "(B) Distributor purchases Products from Zebra under the Distributor Agreement as amended.", 1),
        (X, "THEREFORE, in consideration of the mutual covenants, the Parties agree as follows:", 1),
        (X, "1. Expressions used in this Addendum have the meanings given in the Distributor Agreement.", 1),
        (X, "7. Term and Termination. This Addendum may be terminated at any time by either Party.", 2),
        (T, "Background", 2, 1),
        (X, "Therefore the Distributor shall bear the cost of delivery of every product it orders.", 2),
    ]), "c")
    tree.validate()
    assert [(n.depth, n.content[:12]) for n in tree.nodes[1:]] == [
        (1, "This Addendu"), (1, "WHEREAS:"), (2, "(A) The Part"), (2, "(B) Distribu"), (1, "THEREFORE, i"),
        (1, "1. Expressio"), (1, "7. Term and "), (1, "Background"), (2, "Therefore th")]
    assert tree.nodes[7].section_path == [] and tree.nodes[2].page_end == 1


def test_an_untitled_clause_number_closes_its_titled_sibling():
    """cuad-074 titles one sub-clause among untitled ones ("6.3 Long Lead Items" between "6.2 ..."
    and "6.4 ..."): "6.4 ..." belongs to "6. Material Procurement", not to "6.3"; "13.4 ..." closes
    a deeper "13.3.4 Maintain Credit Line"; a paragraph of a later clause ("7.1 ...") under an
    open "6." does not close it (its heading "7." was not found), nor does a number in running text
    ("2.5 million", "2.5 GHz" under "3.2 Method")."""
    tree = build_tree(_doc([
        (T, "6. Material Procurement", 1, 1),
        (X, "6.2 Contractor shall order the materials in economic quantities for each item.", 1),
        (T, "6.3 Long Lead Items", 1, 2),
        (X, "In order to manage demand fluctuations Contractor shall keep long lead items in stock.", 1),
        (X, "6.4 Contractor is responsible for monitoring the quality of its suppliers.", 1),
        (X, "7.1 Customer shall issue a monthly forecast of its needs to the Contractor.", 2),
        (T, "13. Price", 2, 1),
        (T, "13.3.4 Maintain Credit Line", 2, 3),
        (X, "Customer agrees to provide all the financial information the Contractor asks for.", 2),
        (X, "13.4 Prices are quoted in US Dollars and paid within thirty days of the invoice.", 2),
        (X, "2.5 million units is the most the Contractor makes in a year.", 2),
        (T, "3.2 Method", 3, 2),
        (X, "2.5 GHz processors ran every experiment of this section in the same rack.", 3),
    ]), "c")
    tree.validate()
    assert [(n.depth, n.content[:12]) for n in tree.nodes[1:]] == [
        (1, "6. Material "), (2, "6.2 Contract"), (2, "6.3 Long Lea"), (3, "In order to "), (2, "6.4 Contract"),
        (2, "7.1 Customer"), (1, "13. Price"), (2, "13.3.4 Maint"), (3, "Customer agr"), (2, "13.4 Prices "),
        (2, "2.5 million "), (2, "3.2 Method"), (3, "2.5 GHz proc")]


def test_continuation_joined_across_column_and_page():
    tree = build_tree(_doc([
        (T, "1 Intro", 1, 1),
        (X, "The paragraph breaks off at the end of the column and the", 1),
        (I, "Figure 1: a float between the two pieces", 2),
        (X, "sentence continues on the next page.", 2),
        (X, "A new paragraph starts with a capital letter and is not joined.", 2),
    ]), "d")
    texts = [n for n in tree.nodes if n.type == X]
    assert [t.content for t in texts] == [
        "The paragraph breaks off at the end of the column and the sentence continues on the next page.",
        "A new paragraph starts with a capital letter and is not joined.",
    ]
    assert texts[0].page_start == 1 and texts[0].page_end == 2 and len(texts[0].bboxes) == 2
    assert [n.type for n in tree.nodes] == [NodeType.ROOT, T, X, I, X]


def test_no_join_after_sentence_end_heading_or_equation():
    tree = build_tree(_doc([
        (X, "This paragraph ends with a full stop and is long enough.", 1),
        (X, "lower-case start but the previous one ended, so it stays apart.", 1),
        (X, "Text before a display equation that is written like", 1),
        (EQ, "x = y", 1),
        (X, "where x is a variable and the sentence continues after it.", 1),
        (X, "Text that does not end before a heading that is long enough", 1),
        (T, "2 Heading", 1, 1),
        (X, "lower-case text right after the heading, long enough too.", 1),
    ]), "d")
    assert sum(1 for n in tree.nodes if n.type == X) == 6


def test_hyphenated_continuation():
    tree = build_tree(_doc([(X, "The model is trained end-to-end with a retrie-", 1), (X, "ver and a generator.", 2)]), "d")
    assert tree.nodes[1].content == "The model is trained end-to-end with a retriever and a generator."


def test_fragment_merge_stays_in_section():
    tree = build_tree(_doc([
        (T, "1 A", 1, 1),
        (X, "Short bit.", 1),  # first in section -> merged into the next TEXT
        (X, "A long paragraph of the first section, more than forty characters.", 1),
        (X, "Tail.", 1),  # -> merged into the previous TEXT
        (T, "2 B", 1, 1),
        (X, "Alone.", 1),  # nothing to merge with in its section: kept
    ]), "d")
    texts = [(n.content, n.section_path) for n in tree.nodes if n.type == X]
    assert texts == [
        ("Short bit. A long paragraph of the first section, more than forty characters. Tail.", ["1 A"]),
        ("Alone.", ["2 B"]),
    ]
    off = build_tree(_doc([(X, "Tiny.", 1), (X, "Tiny too.", 1)]), "d", ParsingSettings(min_fragment_chars=0))
    assert sum(1 for n in off.nodes if n.type == X) == 2


def test_long_paragraph_split_at_sentences():
    sentences = [f"Sentence number {i} has a handful of words in it." for i in range(60)]
    text = " ".join(sentences)
    st = ParsingSettings(max_paragraph_chars=300)
    tree = build_tree(_doc([(T, "1 A", 1, 1), (X, text, 1)]), "d", st)
    pieces = [n.content for n in tree.nodes if n.type == X]
    assert len(pieces) > 1 and all(len(p) <= 300 for p in pieces)
    assert " ".join(pieces) == text
    assert all(p.endswith(".") for p in pieces)
    assert all(n.extra["split"][1] == len(pieces) for n in tree.nodes if n.type == X)
    tree.validate()


def test_sentence_helpers():
    assert split_sentences("One here. Two e.g. three. Fig. 2 shows it. Et al. said. Done!") == [
        "One here.", "Two e.g. three.", "Fig. 2 shows it.", "Et al. said.", "Done!"]
    assert split_long_text("x" * 50 + " " + "y" * 50, 60) == ["x" * 50, "y" * 50]
    assert split_long_text("short", 10) == ["short"]
    assert all(len(p) <= 40 for p in split_long_text("z" * 100, 40))


def test_empty_document_tree():
    tree = build_tree(ParsedDocument(path="/x/empty.pdf", title="", n_pages=1, elements=[], parser="t"), "e")
    tree.validate()
    assert len(tree) == 1 and tree.title == "empty" and tree.source == "empty.pdf"


def test_paper_fixture_tree(tmp_path):
    info = pf.make_paper_pdf(tmp_path / "paper.pdf")
    parsed = PyMuPDFParser().parse(info["path"])
    tree = build_tree(parsed, "paper")
    tree.validate()
    assert tree.count_by_type() == {"ROOT": 1, "TITLE": 7, "TEXT": info["n_text_paragraphs"], "IMAGE": 1, "TABLE": 1, "EQUATION": 1}
    assert tree.root.content == info["title"]
    by = {n.content: n for n in tree.nodes if n.type == T}
    assert by["2.1 Model Details"].parent == by["2 Method"].id
    assert by["2.1 Model Details"].section_path == ["2 Method", "2.1 Model Details"]
    eq = next(n for n in tree.nodes if n.type == EQ)
    assert eq.parent == by["2.1 Model Details"].id
    table = next(n for n in tree.nodes if n.type == TB)
    assert table.parent == by["3 Results"].id and table.extra["rows"] == info["table_rows"]
    joined = next(n for n in tree.nodes if n.content.startswith("A second paragraph"))
    assert "together with the reading order of the two columns" in joined.content
    assert len(joined.bboxes) == 2 and joined.bboxes[0][1] < 300 < joined.bboxes[1][1]


def test_corpus_trees_validate():
    pdfs = [SHARED / "corpus" / "pdf" / n for n in ("2005.11401_rag-knowledge-intensive-nlp.pdf", "bigtable-distributed-storage.pdf")]
    if not all(p.is_file() for p in pdfs):
        pytest.skip("corpus not available")
    for p in pdfs:
        tree = build_tree(PyMuPDFParser().parse(p), p.stem)
        tree.validate()
        c = tree.count_by_type()
        assert c["TITLE"] >= 10 and c["TEXT"] >= 50
        texts = [n for n in tree.nodes if n.type == X]
        assert max(len(n.content) for n in texts) <= ParsingSettings().max_paragraph_chars
        # every content node sits under a TITLE or ROOT, never under content
        assert all(tree.nodes[n.parent].type in (T, NodeType.ROOT) for n in tree.nodes[1:])


def test_title_falls_back_to_the_first_heading_then_the_file_stem():
    """A PDF without a title line or metadata title is named by its first heading on its
    first pages (not a numbered section heading), and only then by its file stem."""
    from docmaster_core.tree.build import build_tree as bt

    def parsed(els):
        return ParsedDocument(path="/x/scan_0042.pdf", title="", n_pages=3, elements=els, parser="t")

    els = [Element(type=NodeType.TITLE, text="1 Introduction", page=1, bbox=(0, 0, 9, 9), order=0, level=1),
           Element(type=NodeType.TITLE, text="Operating  Manual\nModel X", page=1, bbox=(0, 10, 9, 19), order=1, level=1),
           Element(type=NodeType.TEXT, text="Some body text here.", page=1, bbox=(0, 20, 9, 29), order=2)]
    assert bt(parsed(els), "d").title == "Operating Manual Model X"
    late = [Element(type=NodeType.TEXT, text="Body.", page=1, bbox=(0, 0, 9, 9), order=0),
            Element(type=NodeType.TITLE, text="Appendix", page=3, bbox=(0, 0, 9, 9), order=1, level=1)]
    assert bt(parsed(late), "d").title == "scan_0042"
    assert bt(ParsedDocument(path="/x/a.pdf", title="Given", n_pages=1, elements=els, parser="t"), "d").title == "Given"
