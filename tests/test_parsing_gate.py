"""The layout-model gate of the default parser (issue 34, item 1): which pages go to the
model and why, what is taken from it, and that the gate off is the fast parser."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.model import NodeType
from docmaster_core.parsing import PyMuPDFParser, get_parser, layout_available
from docmaster_core.parsing.pdf import gate as G

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "pdf"
PROSE = "The model reads every page of the document and keeps the words in the order a reader would follow them."


def _make_pdf(path: Path, formula_page: bool = True) -> Path:
    """Page 1: prose with a display formula set in a math font (Symbol) at the left
    margin and its equation number "(3)" alone at the right margin, which the fast
    parser's equation rules miss; page 2: prose only."""
    import pymupdf

    doc = pymupdf.open()
    for kind in ("formula" if formula_page else "prose", "prose"):
        page = doc.new_page(width=612, height=792)
        y = 80
        for k in range(14):
            page.insert_text((72, y), PROSE, fontname="helv", fontsize=10)
            y += 13
            if kind == "formula" and k == 5:
                y += 12
                page.insert_text((72, y), "a = b + c", fontname="Symbol", fontsize=10)
                page.insert_text((520, y + 14), "(3)", fontname="helv", fontsize=10)
                y += 26
    doc.save(path)
    doc.close()
    return path


def _fake_layout(monkeypatch, boxes_by_page: dict[int, list[tuple]]):
    """Replace the model: ``run_layout`` returns the given (class, bbox) regions per
    0-based page and records the pages it was asked for."""
    from docmaster_core.parsing import layout_model

    asked: list[list[int]] = []

    def run_layout(doc, features="imf+rf", pages=None, threads=None):
        asked.append(list(pages or []))
        lpages = [SimpleNamespace(page_number=p + 1, boxes=[
            SimpleNamespace(x0=b[0], y0=b[1], x1=b[2], y1=b[3], boxclass=cls, table=None)
            for cls, b in boxes_by_page.get(p, [])]) for p in (pages or [])]
        return lpages, {}

    monkeypatch.setattr(layout_model, "run_layout", run_layout)
    monkeypatch.setattr(G, "layout_gate_available", lambda: True)
    return asked


def _pages_after_regions(path: Path):
    """The fast parser's pages right where the gate runs (after marks and regions)."""
    seen = {}

    def spy(ctx, doc, pages):
        seen["pages"], seen["body"] = pages, ctx.body_size
        return {"layout_pages": [], "layout_seconds": 0.0}

    orig = G.run_gate
    G.run_gate = spy
    try:
        PyMuPDFParser(gate=True).parse(path)
    finally:
        G.run_gate = orig
    return seen["pages"], seen["body"]


def test_gate_features_flag_the_missed_formula_page_and_not_prose(tmp_path):
    pages, body = _pages_after_regions(_make_pdf(tmp_path / "f.pdf"))
    sig = [l.text for l in G.formula_signals(pages[0], body)]
    assert "a = b + c" in sig and "(3)" in sig
    assert G.gate_reasons(pages[0], body) == ["formula"]
    assert G.formula_signals(pages[1], body) == [] and G.gate_reasons(pages[1], body) == []


def test_a_formula_the_fast_parser_already_made_an_equation_is_not_gated(tmp_path):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80
    for k in range(12):
        page.insert_text((72, y), PROSE, fontname="helv", fontsize=10)
        y += 13
        if k == 5:
            y += 10
            page.insert_text((250, y), "a = b + c", fontname="Symbol", fontsize=10)  # centred
            page.insert_text((520, y), "(3)", fontname="helv", fontsize=10)  # on its row
            y += 23
    doc.save(tmp_path / "ok.pdf")
    doc.close()
    parsed = get_parser("auto").parse(tmp_path / "ok.pdf")
    assert [e.text for e in parsed.elements if e.type == NodeType.EQUATION] == ["a = b + c (3)"]
    assert parsed.metadata["layout_pages"] == [] and parsed.metadata["layout_note"] == ""


def test_gated_pages_are_recorded_and_the_model_formula_region_becomes_one_equation(tmp_path, monkeypatch):
    path = _make_pdf(tmp_path / "f.pdf")
    pages, _ = _pages_after_regions(path)
    ls = [l for l in pages[0].lines if l.text in ("a = b + c", "(3)")]
    box = (min(l.x0 for l in ls) - 2, min(l.y0 for l in ls) - 2, max(l.x1 for l in ls) + 2, max(l.y1 for l in ls) + 2)
    asked = _fake_layout(monkeypatch, {0: [("formula", box)]})
    parsed = get_parser("auto").parse(path)
    assert asked == [[0]]  # one model call, only the gated page
    assert parsed.metadata["layout_pages"] == [{"page": 1, "reasons": ["formula"], "taken": {"formula": 1, "table": 0}}]
    assert parsed.metadata["layout_note"] == ("1 of 2 pages re-read with the layout model, which reads formulas and "
                                              "tables more exactly (1 for a formula)")
    eqs = [e for e in parsed.elements if e.type == NodeType.EQUATION]
    assert [(e.page, e.text) for e in eqs] == [(1, "a = b + c (3)")]
    # the prose around it stays the fast parser's
    assert all(e.text.startswith("The model reads") for e in parsed.elements if e.type == NodeType.TEXT)


def test_a_caption_only_table_gates_the_page_and_an_empty_model_table_changes_nothing(tmp_path, monkeypatch):
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    y = 80
    for _ in range(6):
        page.insert_text((72, y), PROSE, fontname="helv", fontsize=10)
        y += 13
    page.insert_text((72, y + 10), "Table 1: Results on the three sets.", fontname="helv", fontsize=9)
    doc.save(tmp_path / "t.pdf")
    doc.close()
    path = tmp_path / "t.pdf"
    pages, body = _pages_after_regions(path)
    assert G.gate_reasons(pages[0], body) == ["table"]  # the fast parser read a caption and no table
    cap = next(it for it in pages[0].items if it.get("type") == NodeType.TABLE)
    tb = (72.0, cap["bbox"][3] + 4, 400.0, cap["bbox"][3] + 60)
    _fake_layout(monkeypatch, {0: [("table", tb)]})
    # the model's table has no grid and no lines: nothing to take, the caption-only table stays
    parsed = get_parser("auto").parse(path)
    assert parsed.metadata["layout_pages"][0]["reasons"] == ["table"]
    assert parsed.metadata["layout_pages"][0]["taken"]["table"] == 0
    assert any(e.type == NodeType.TABLE and e.text.startswith("Table 1") for e in parsed.elements)


def test_gate_off_and_parser_fast_are_the_fast_parser(tmp_path, monkeypatch):
    path = _make_pdf(tmp_path / "f.pdf")
    asked = _fake_layout(monkeypatch, {0: [("formula", (0, 0, 612, 792))]})
    fast = get_parser("fast").parse(path)
    off = get_parser("auto", ParsingSettings(layout_gate=False)).parse(path)
    assert asked == []
    key = lambda d: [(e.type, e.text, e.page, e.bbox, e.level) for e in d.elements]  # noqa: E731
    assert key(off) == key(fast)
    assert "layout_pages" not in fast.metadata and "layout_pages" not in off.metadata


def test_gate_says_once_when_the_layout_model_is_missing(monkeypatch, caplog):
    from docmaster_core.parsing import layout_model

    monkeypatch.setattr(layout_model, "layout_available", lambda: False)
    monkeypatch.setattr(G, "_WARNED", False)
    with caplog.at_level("WARNING"):
        assert G.layout_gate_available() is False
        assert G.layout_gate_available() is False
    assert sum("layout gate off" in r.message for r in caplog.records) == 1


@pytest.mark.skipif(not layout_available(), reason="pymupdf4llm / pymupdf.layout not installed")
def test_the_real_model_runs_only_on_the_gated_page(tmp_path):
    parsed = get_parser("auto").parse(_make_pdf(tmp_path / "f.pdf"))
    assert [r["page"] for r in parsed.metadata["layout_pages"]] == [1]
    assert parsed.metadata["seconds"]["layout"] > 0


def test_transformer_paper_with_the_gated_default_parser():
    path = CORPUS / "1706.03762v7_attention-is-all-you-need.pdf"
    if not path.is_file():
        pytest.skip("the Transformer paper is not in ../shared/corpus/pdf")
    parsed = get_parser("auto").parse(path)
    titles = [(e.level, e.text) for e in parsed.elements if e.type == NodeType.TITLE and e.text[:1].isdigit()]
    assert len(titles) == 22 and (3, "3.2.1 Scaled Dot-Product Attention") in titles
    eqs = [e.text for e in parsed.elements if e.type == NodeType.EQUATION]
    assert any(t.startswith("FFN(x) = max(0, xW1 + b1)W2 + b2") for t in eqs)
    assert any(t.startswith("MultiHead(Q, K, V ) = Concat(") for t in eqs)
    assert isinstance(parsed.metadata["layout_pages"], list)
