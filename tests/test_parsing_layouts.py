"""Issue 13: what a reader sees on generated PDFs with layout faults (columns,
multi-line table cells, uncaptioned statements, display equations, slides) and on
the Transformer paper when ../shared is present."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.model import Element, Evidence, NodeType, ParsedDocument
from docmaster_core.parsing import PyMuPDFParser
from docmaster_core.tree.build import build_tree, page_of_text

try:
    from tests.support import layout_factory as lf
except ImportError:  # pragma: no cover - run from inside tests/
    import support.layout_factory as lf  # type: ignore[no-redef]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "pdf"


def _parse(path, **kw):
    return PyMuPDFParser(ParsingSettings(parser="pymupdf", **kw)).parse(path)


# ------------------------------------------------------------------ slides / page-true


def test_slide_lines_stay_on_their_pages(tmp_path):
    info = lf.make_slides_pdf(tmp_path / "deck.pdf")
    parsed = _parse(tmp_path / "deck.pdf")
    tree = build_tree(parsed, "deck")
    content = [n for n in tree.nodes[1:] if n.type == NodeType.TEXT]
    assert [n.content for n in content] == info["lines"]
    assert [(n.page_start, n.page_end) for n in content] == [(k, k) for k in range(1, 6)]
    assert all(len(n.bboxes) == 1 and n.bboxes[0][0] == n.page_start for n in content)


def test_many_short_pages_do_not_claim_every_page():
    # 3,000 one-line pages (what a raised page limit allows): each node keeps its page
    els = [Element(NodeType.TEXT, f"Line {k} here", k, (72, 72, 200, 84), order=k - 1) for k in range(1, 3001)]
    tree = build_tree(ParsedDocument("big.pdf", "Big", 3000, els, "pymupdf"), "big")
    spans = [(n.page_start, n.page_end) for n in tree.nodes[1:]]
    assert len(spans) == 3000
    assert all(a == b for a, b in spans)


def test_paragraph_across_page_break_keeps_one_box_per_page_and_quote_page():
    first = "The experiment ran for three weeks on the cluster and the results were collected every night by"
    second = "the scheduler, which stored them in the archive for later analysis by the team."
    els = [Element(NodeType.TEXT, first, 1, (72, 700, 540, 760), order=0),
           Element(NodeType.TEXT, second, 2, (72, 72, 540, 100), order=1)]
    tree = build_tree(ParsedDocument("p.pdf", "P", 2, els, "pymupdf"), "p")
    (node,) = [n for n in tree.nodes if n.type == NodeType.TEXT]
    assert (node.page_start, node.page_end) == (1, 2)
    assert [b[0] for b in node.bboxes] == [1, 2]
    assert page_of_text(node, "stored them in the archive") == 2
    assert page_of_text(node, "ran for three weeks") == 1
    ev = Evidence("E1", "p", node.id, "tree", 1.0, node.content, 1, page_chars=node.extra["page_chars"])
    assert ev.page_of("stored them in the archive") == 2
    assert ev.page_of("three weeks") == 1


def test_split_pieces_keep_only_their_pages():
    a = " ".join(f"Sentence {k} on the first page ends here." for k in range(30))
    b = " ".join(f"sentence {k} on the second page ends here." for k in range(30))
    els = [Element(NodeType.TEXT, a[:-1] + " and", 1, (72, 72, 540, 760), order=0),
           Element(NodeType.TEXT, b, 2, (72, 72, 540, 760), order=1)]
    tree = build_tree(ParsedDocument("p.pdf", "P", 2, els, "pymupdf"), "p", ParsingSettings(max_paragraph_chars=400))
    pieces = [n for n in tree.nodes if n.type == NodeType.TEXT]
    assert len(pieces) >= 4
    for n in pieces:
        on2 = "second page" in n.content
        on1 = "first page" in n.content
        assert (n.page_start, n.page_end) == (1 if on1 else 2, 2 if on2 else 1)


# ------------------------------------------------------------------ columns


def _reading_text(parsed) -> str:
    return " ".join(e.text for e in parsed.elements)


def _assert_column_order(parsed, tags, below=None):
    text = _reading_text(parsed)
    # every column is read whole before the next one starts
    pos = []
    for t in tags:
        idx = [m.start() for m in re.finditer(rf"\b{t}\d+x\d+", text)]
        assert idx, t
        pos.append((min(idx), max(idx)))
    for (a0, a1), (b0, b1) in zip(pos[:-1], pos[1:]):
        assert a1 < b0, (tags, pos)
    # lines inside a column in order
    for t in tags:
        rows = [int(m.group(1)) for m in re.finditer(rf"\b{t}(\d+)x0\b", text)]
        assert rows == sorted(rows) and len(rows) >= 9
    if below:
        assert text.index(below[0].split()[0]) > pos[-1][1]
    # each column is its own paragraph: no TEXT element mixes two columns
    for e in parsed.elements:
        assert sum(1 for t in tags if re.search(rf"\b{t}\d+x\d+", e.text)) <= 1, e.text[:120]


@pytest.mark.parametrize("gutter", [10.0, 24.0])
def test_three_columns_read_in_order(tmp_path, gutter):
    info = lf.make_columns_pdf(tmp_path / "c3.pdf", n_cols=3, gutter=gutter, below_single=True)
    parsed = _parse(tmp_path / "c3.pdf")
    _assert_column_order(parsed, info["tags"], info["below"])
    assert parsed.metadata["multi_column_pages"] == 1


def test_two_columns_above_one_below(tmp_path):
    # the full-width part dominates the page: the gutter is found on the narrow lines
    info = lf.make_columns_pdf(tmp_path / "mix.pdf", n_cols=2, gutter=14.0, lines_per_col=10,
                               below_single=True, below_lines=24)
    parsed = _parse(tmp_path / "mix.pdf")
    _assert_column_order(parsed, info["tags"], info["below"])


def test_single_column_page_has_no_gutter(tmp_path):
    info = lf.make_columns_pdf(tmp_path / "c1.pdf", n_cols=1, gutter=0.0, below_single=True)
    parsed = _parse(tmp_path / "c1.pdf")
    assert parsed.metadata["multi_column_pages"] == 0
    _assert_column_order(parsed, info["tags"], info["below"])


def test_layout_stage_alone_finds_three_columns(tmp_path):
    import pymupdf

    from docmaster_core.parsing.pdf.common import PageInfo
    from docmaster_core.parsing.pdf.layout import page_layout
    from docmaster_core.parsing.pdf.spans import extract_page_lines

    lf.make_columns_pdf(tmp_path / "c3.pdf", n_cols=3, gutter=10.0, header=False)
    with pymupdf.open(tmp_path / "c3.pdf") as doc:
        lines, _ = extract_page_lines(doc[0], 0)
        p = PageInfo(doc[0].rect.width, doc[0].rect.height)
    page_layout(p, lines)
    assert len(p.gutters) == 2
    assert {l.col for l in p.lines} == {0, 1, 2}
    assert all(l.text.startswith(("alpha", "end of alpha")) for l in p.lines if l.col == 0)


# ------------------------------------------------------------------ equations


def test_two_line_display_equation_is_one_node(tmp_path):
    info = lf.make_equation_pdf(tmp_path / "eq.pdf")
    parsed = _parse(tmp_path / "eq.pdf")
    eqs = [e for e in parsed.elements if e.type == NodeType.EQUATION]
    assert len(eqs) == 2
    first, second = eqs
    l1, l2 = info["eq_lines"][0]
    assert first.text.startswith(l1.split()[0]) and first.text.endswith("(1)")
    assert l1.split()[2] in first.text and "KL(q_j" in first.text
    assert second.text.endswith("(2)") and second.text.startswith("E =")
    texts = [e.text for e in parsed.elements if e.type == NodeType.TEXT]
    assert not any("softmax" in t or "KL(" in t for t in texts)
    assert any(t.endswith(info["before"]) for t in texts)
    # reading order: paragraph, equation, paragraph
    kinds = [e.type for e in parsed.elements]
    i = kinds.index(NodeType.EQUATION)
    assert kinds[i - 1] == NodeType.TEXT and kinds[i + 1] == NodeType.TEXT


# ------------------------------------------------------------------ tables


def test_borderless_table_keeps_multiline_cells_together(tmp_path):
    info = lf.make_multiline_cell_table_pdf(tmp_path / "t.pdf")
    parsed = _parse(tmp_path / "t.pdf")
    (tab,) = [e for e in parsed.elements if e.type == NodeType.TABLE]
    rows = tab.extra["rows"]
    assert rows[0] == info["header"]
    assert rows[1:] == info["rows"]
    # nothing of the table leaks into the text around it
    texts = " ".join(e.text for e in parsed.elements if e.type == NodeType.TEXT)
    assert "GB" not in texts and "replicas" not in texts


def test_uncaptioned_statement_is_a_table_with_its_title(tmp_path):
    info = lf.make_statement_pdf(tmp_path / "s.pdf")
    parsed = _parse(tmp_path / "s.pdf")
    tabs = [e for e in parsed.elements if e.type == NodeType.TABLE]
    assert len(tabs) == 1
    tab = tabs[0]
    rows = tab.extra["rows"]
    assert tab.text.startswith(info["title"])
    assert rows[0] == ["(in millions)"] + info["years"]
    body = {r[0]: r[1:] for r in rows[1:]}
    for label, a, b, _ in info["rows"]:
        assert body[label] == [a, b], label
    # bold row labels are not headings, numbers stay with their own row
    assert not [e for e in parsed.elements if e.type == NodeType.TITLE]
    texts = [e.text for e in parsed.elements if e.type == NodeType.TEXT]
    assert len(texts) == 2 and not any(ch.isdigit() for t in texts for ch in t)
    tree = build_tree(parsed, "s")
    (node,) = [n for n in tree.nodes if n.type == NodeType.TABLE]
    assert "| Operating income | 202 | 135 |" in node.content


def test_statement_with_other_labels_and_tables_off(tmp_path):
    rows = [("Total net sales", "514,0", "469,8", True), ("Operating expenses:", "", "", False),
            ("Fulfillment", "84,299", "75,111", False), ("Technology and content", "73,213", "56,052", False),
            ("Total operating expenses", "501,735", "444,943", True), ("Operating income", "12,248", "24,879", True)]
    lf.make_statement_pdf(tmp_path / "s2.pdf", title="Consolidated Statements of Operations", rows=rows)
    parsed = _parse(tmp_path / "s2.pdf")
    (tab,) = [e for e in parsed.elements if e.type == NodeType.TABLE]
    body = {r[0]: r[1:] for r in tab.extra["rows"][1:]}
    assert body["Operating expenses:"] == ["", ""]
    assert body["Fulfillment"] == ["84,299", "75,111"]
    assert body["Operating income"] == ["12,248", "24,879"]
    off = _parse(tmp_path / "s2.pdf", tables=False)
    assert not [e for e in off.elements if e.type == NodeType.TABLE]


def test_numeric_row_shape():
    from docmaster_core.parsing.pdf.tables import is_numeric_row_text

    assert is_numeric_row_text("Revenue 1,234 1,100")
    assert is_numeric_row_text("Research and development (88) (80)")
    assert is_numeric_row_text("Margin 12.5% —")
    assert not is_numeric_row_text("We trained for 12 epochs.")
    assert not is_numeric_row_text("Revenue grew by 12")


# ------------------------------------------------------------------ ligatures, exponents


def test_private_use_ligatures_are_mapped_by_evidence():
    from docmaster_core.parsing.pdf.spans import PUA_SHIFT, ligature_map

    a, b = chr(PUA_SHIFT[0xE000]), chr(PUA_SHIFT[0xE001])
    words = [f"{a}rst", f"signi{a}cant", f"ef{a}cient", f"{b}ow", f"{b}oating", f"{a}eld"]
    table = ligature_map(words)
    assert [w.translate(table) for w in words] == ["first", "significant", "efficient", "flow", "floating", "field"]
    # evidence wins over code point order: here U+E000 is "ff" and U+E001 "fi"
    words = [f"e{a}ect", f"di{a}erent", f"{b}nd", f"de{b}ne"]
    table = ligature_map(words)
    assert [w.translate(table) for w in words] == ["effect", "different", "find", "define"]


def test_math_private_use_between_digits_is_a_decimal_point():
    from docmaster_core.parsing.pdf.spans import pua_text

    assert pua_text("1\ue0040", "ABCDEF+CMMI10") == "1.0"
    assert pua_text("x\ue004\ue004\ue004", "CMMI10") == "x..."
    assert pua_text("\ue000rst", "NimbusRomNo9L-Regu").startswith(chr(0xF0000))


@pytest.mark.skipif(not (CORPUS / "1706.03762v7_attention-is-all-you-need.pdf").is_file(),
                    reason="../shared corpus (Transformer paper) not present")
def test_transformer_paper_tables_and_ligatures():
    parsed = _parse(CORPUS / "1706.03762v7_attention-is-all-you-need.pdf")
    text = " ".join(e.text for e in parsed.elements)
    assert not re.search("[\U000F0000-\U000F18FF]", text)  # every text-font glyph decided
    assert "first" in text and "significantly" in text and "flow" in text
    assert not re.search("[\ue000-\uf8ff](?:rst|gures|cient|ow)", text)
    tabs = {e.text.split(":")[0]: e for e in parsed.elements if e.type == NodeType.TABLE}
    t1 = tabs["Table 1"]
    assert t1.extra["method"] != "caption-only"
    r1 = {r[0]: r[1:] for r in t1.extra["rows"]}
    assert "Self-Attention" in r1 and "Recurrent" in r1 and "Convolutional" in r1
    assert any("O(n^2 · d)" in c for c in r1["Self-Attention"])
    assert "3.5 Positional Encoding" not in t1.text
    t2 = tabs["Table 2"]
    head = t2.extra["rows"][0]
    assert head[0] == "Model" and not any(re.fullmatch(r"col\d+", c) for c in head)
    r2 = {r[0]: r[1:] for r in t2.extra["rows"]}
    assert r2["Transformer (base model)"][:2] == ["27.3", "38.1"]
    assert r2["Transformer (big)"][:2] == ["28.4", "41.8"]
    assert "1.0 · 10^20" in t2.text and "3.3 · 10^18" in t2.text
    # the table body lies beside its caption, inside the element's box
    assert t2.bbox[3] - t2.bbox[1] > 100


# ------------------------------------------------------------------ page limit setting


def test_page_limit_option_and_environment(monkeypatch, tmp_path):
    from docmaster_core import cli
    from docmaster_core.config import get_settings
    from docmaster_core.errors import ParseError

    args = cli.build_parser().parse_args(["ingest", "x.pdf", "--workspace", str(tmp_path / "w"), "--page-limit", "3"])
    st = cli.common.settings_from_args(args)
    assert st.parsing.page_limit == 3
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["ingest", "x.pdf", "--workspace", "w", "--page-limit", "0"])
    monkeypatch.setenv("DOCMASTER_PARSING__PAGE_LIMIT", "4")
    assert get_settings().parsing.page_limit == 4
    lf.make_slides_pdf(tmp_path / "deck.pdf")
    with pytest.raises(ParseError, match="5 pages, over the page limit of 4"):
        PyMuPDFParser(get_settings().parsing).parse(tmp_path / "deck.pdf")


# ------------------------------------------------------------------ stages alone


def _page_record(path):
    import pymupdf

    from docmaster_core.parsing.pdf.common import PageInfo
    from docmaster_core.parsing.pdf.layout import page_layout
    from docmaster_core.parsing.pdf.spans import extract_page_lines

    with pymupdf.open(path) as doc:
        lines, _ = extract_page_lines(doc[0], 0)
        p = PageInfo(doc[0].rect.width, doc[0].rect.height)
    page_layout(p, lines)
    return p


def test_marks_stage_alone_groups_display_equation(tmp_path):
    from docmaster_core.parsing.pdf.marks import mark_equations

    lf.make_equation_pdf(tmp_path / "eq.pdf")
    p = _page_record(tmp_path / "eq.pdf")
    mark_equations(p, 10.0)
    groups: dict[int, list[str]] = {}
    for l in p.lines:
        if l.role == "equation":
            groups.setdefault(l.group, []).append(l.text)
    assert len(groups) == 2
    first = max(groups.values(), key=len)  # the two-line display with its number
    assert any("softmax" in t for t in first) and any("KL(" in t for t in first) and "(1)" in first


def test_a_centred_display_relation_is_an_equation_not_the_next_paragraphs_start(tmp_path):
    """A displayed relation in the body font ("a < b < c", Raft's timing requirement) is an
    EQUATION of its own; before, it was the first words of the paragraph after it
    ("broadcastTime < electionTimeout < MTBF In this inequality ..."). A centred prompt
    template with "<...>" stays text."""
    made = lf.make_relation_pdf(tmp_path / "rel.pdf")
    doc = PyMuPDFParser().parse(tmp_path / "rel.pdf")
    eqs = [e.text for e in doc.elements if e.type == NodeType.EQUATION]
    texts = [e.text for e in doc.elements if e.type == NodeType.TEXT]
    assert eqs == [made["relation"]], eqs
    assert any(t.startswith(made["after"]) for t in texts), texts
    assert any(made["template"] in t for t in texts), texts


def test_redaction_marks_signature_blanks_and_citations_are_no_equations(tmp_path):
    """Centred placeholders are made of the math characters "*", "[", "]", "_": a
    newcomer's contracts had "[*****]", "$[***]", "[LOGO]" and "By: ____ By:" as EQUATION
    nodes (22 in the 59 public contracts, none a formula). They stay text; a centred
    definition beside them is still an equation."""
    from docmaster_core.parsing.pdf.marks import only_placeholders

    made = lf.make_redacted_pdf(tmp_path / "redacted.pdf")
    doc = PyMuPDFParser().parse(tmp_path / "redacted.pdf")
    eqs = [e.text for e in doc.elements if e.type == NodeType.EQUATION]
    assert eqs == [made["equation"]], eqs
    text = " ".join(e.text for e in doc.elements if e.type != NodeType.EQUATION)
    for mark in made["placeholders"]:
        assert mark.rstrip(".") in text, mark
    assert all(only_placeholders(t) for t in made["placeholders"])
    assert not any(only_placeholders(t) for t in ("x = [a, b]", "[0, 1]^d", made["equation"]))


def test_tables_stage_alone_joins_wrapped_cells():
    from docmaster_core.parsing.pdf.tables import join_wrapped_cells

    rows = [["System", "Latency"], ["Baseline store with", "12.1 ms"], ["write-ahead log", ""],
            ["Cached store with", "4.3 ms"], ["Read replicas", ""], ["Operating expenses:", ""], ["Fulfillment", "84"]]
    centres = [0, 16, 27, 46, 57, 76, 90]
    out = join_wrapped_cells(rows, centres, 9.0)
    assert out == [["System", "Latency"], ["Baseline store with write-ahead log", "12.1 ms"],
                   ["Cached store with Read replicas", "4.3 ms"], ["Operating expenses:", ""], ["Fulfillment", "84"]]


# ------------------------------------------------------------------ tables captioned below them


def _captions_below_pdf(path: Path) -> dict[str, list[str]]:
    """A page with three small tables in a column, each captioned *below* it ("Table N. ..."),
    as ResNet's page 6: the caption of table 1 has table 2's rows right under it. Returns
    ``{caption label: first cells of that table's rows}``."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 72.0
    page.insert_text((72, y), "We compare the models below on the validation set; lower error is better.", fontsize=10)
    y += 30
    tables = {"Table 1": ["alpha-net", "beta-net", "gamma-net", "delta-net"],
              "Table 2": ["plain-18", "plain-34", "res-18", "res-34", "res-50"],
              "Table 3": ["ensemble-a", "ensemble-b"]}
    for i, (label, names) in enumerate(tables.items()):
        page.insert_text((90, y), "model", fontsize=9)
        page.insert_text((250, y), "top-1 err.", fontsize=9)
        page.insert_text((340, y), "top-5 err.", fontsize=9)
        y += 13
        for k, name in enumerate(names):
            page.insert_text((90, y), name, fontsize=9)
            page.insert_text((250, y), f"{20 + i + k / 10:.2f}", fontsize=9)
            page.insert_text((340, y), f"{5 + i + k / 10:.2f}", fontsize=9)
            y += 13
        y += 4
        page.insert_text((72, y), f"{label}. Error rates (%) on the validation set, setting {i + 1}.", fontsize=9)
        y += 26
    page.insert_text((72, y + 10), "The deeper residual models are better in every setting we tried here.",
                     fontsize=10)
    doc.save(str(path))
    return {label: names for label, names in tables.items()}


def test_a_caption_below_its_table_keeps_its_own_rows(tmp_path):
    """Three tables captioned below them: "Table 1" has table 2's rows right under it too, and
    took them when they held more text (a newcomer's answer quoted Table 4's numbers as Table
    3's). The page's convention, read from the caption whose table can only be above it (the
    last one), decides: every caption takes the rows above it."""
    want = _captions_below_pdf(tmp_path / "t.pdf")
    parsed = _parse(tmp_path / "t.pdf")
    tabs = {e.extra["caption"].split(".")[0]: e for e in parsed.elements if e.type == NodeType.TABLE}
    assert set(tabs) == set(want)
    for label, names in want.items():
        firsts = [r[0] for r in tabs[label].extra["rows"]]
        assert [f for f in firsts if f in {n for ns in want.values() for n in ns}] == names, (label, firsts)


@pytest.mark.skipif(not (CORPUS / "1512.03385_resnet.pdf").is_file(), reason="../shared corpus (ResNet) not present")
def test_resnet_tables_3_to_5_keep_their_own_rows():
    parsed = _parse(CORPUS / "1512.03385_resnet.pdf")
    tabs = {e.extra["caption"].split(".")[0]: e for e in parsed.elements if e.type == NodeType.TABLE
            and e.extra.get("caption")}
    cells = {k: " ".join(" ".join(r) for r in tabs[k].extra["rows"]) for k in ("Table 3", "Table 4", "Table 5")}
    # ResNet-152's top-5 error is 5.71 in Table 3 (10-crop) and 4.49 in Table 4 (single model)
    assert "ResNet-152 21.43 5.71" in cells["Table 3"] and "plain-34" in cells["Table 3"]
    assert "ResNet-152 19.38 4.49" in cells["Table 4"] and "ResNet-152 21.43" not in cells["Table 4"]
    assert "3.57" in cells["Table 5"] and "plain-34" not in cells["Table 5"]
    # a caption's word broken at a line end is joined as the body text's are ("Mid-" / "dle" was "Mid- dle")
    captions = " ".join(e.extra.get("caption") or "" for e in parsed.elements if e.type in (NodeType.IMAGE,
                                                                                            NodeType.TABLE))
    assert "Middle: a plain network" in captions and "Mid- dle" not in captions and "ResNet- 34" not in captions


@pytest.mark.skipif(not list(CORPUS.glob("2202.00535*.pdf")), reason="../shared corpus (2202.00535) not present")
def test_a_caption_whose_side_holds_one_line_takes_no_other_tables_rows():
    """2202.00535 p. 4 captions its tables below them; "Table 1" sits under paraphrase examples set as
    prose lines, of which one line looked like a table: it took that line (or, before the page's
    convention, Table 2's parameter counts below it). One line is no table: the caption stays without
    rows, the layout model reads its table, and Table 2 keeps its own rows."""
    from docmaster_core.parsing import parse_document

    parsed = parse_document(next(CORPUS.glob("2202.00535*.pdf")))  # the default parser
    tabs = {e.extra["caption"].split(":")[0]: e for e in parsed.elements if e.type == NodeType.TABLE
            and e.page == 4 and e.extra.get("caption")}
    cells = {k: " ".join(" ".join(r) for r in t.extra["rows"]) for k, t in tabs.items()}
    assert "Fine Tuning" in cells["Table 2"] and "Fine Tuning" not in cells["Table 1"]
    if parsed.metadata.get("layout_pages") is not None and any(p["page"] == 4 for p in parsed.metadata["layout_pages"]):
        assert "NC-RAPT" in cells["Table 1"]  # the model's rows (when the layout model is installed)


@pytest.mark.skipif(not (CORPUS / "1810.04805_bert.pdf").is_file(), reason="../shared corpus (BERT) not present")
def test_a_full_width_captions_broken_last_word_goes_on_in_the_column_below():
    """BERT's Figure 2 caption spans both columns and breaks "the segmenta-" at its line end; its last line
    ("tion embeddings and the position embeddings.") sits in the left column and was read as a paragraph of
    its own. It is the caption's, and a bound suffix ("tion") joins the broken word whole."""
    from docmaster_core.parsing.base import join_lines

    parsed = _parse(CORPUS / "1810.04805_bert.pdf")
    fig = [e for e in parsed.elements if e.type == NodeType.IMAGE and "BERT input representation" in e.text]
    assert fig and fig[0].text.rstrip().endswith("the segmentation embeddings and the position embeddings."), fig
    assert not [e for e in parsed.elements if e.text.startswith("tion embeddings")]
    assert join_lines(["the align-", "ment of the two"]) == "the alignment of the two"
    assert join_lines(["a self-", "supervised model"]) == "a self-supervised model"  # no suffix: the hyphen stays


@pytest.mark.skipif(not list(CORPUS.glob("2501.10120*.pdf")) or not list(CORPUS.glob("doc_disney*.pdf")),
                    reason="../shared corpus (PaSa, the Disney release) not present")
def test_a_figures_big_words_are_not_the_title_and_a_title_in_capitals_keeps_its_second_line():
    """Newcomer 16: PaSa was titled "Paper Search" (19.9 pt words of its teaser figure, below the 14.3 pt title
    line at the top) and Disney's earnings release "THE WALT DISNEY COMPANY REPORTS" (its second line's box
    overlaps the first one's by a fraction of a point)."""
    pasa = _parse(next(CORPUS.glob("2501.10120*.pdf")))
    assert pasa.title == "PaSa: An LLM Agent for Comprehensive Academic Paper Search"
    disney = _parse(next(CORPUS.glob("doc_disney*.pdf")))
    assert disney.title == "THE WALT DISNEY COMPANY REPORTS FIRST QUARTER EARNINGS FOR FISCAL 2025"
