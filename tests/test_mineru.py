"""Tests of the MinerU importer and runner on the four real MinerU output versions."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from collections import Counter
from pathlib import Path

import pytest

from docmaster_core.config import ParsingSettings
from docmaster_core.errors import ConfigError, ParseError
from docmaster_core.model import NodeType
from docmaster_core.parsing import get_parser, parse_document
from docmaster_core.parsing.mineru import MinerUParser, find_middle_json, find_mineru_output, html_table_rows, import_mineru
from docmaster_core.tree.build import build_tree

try:
    from tests.support import pdf_factory as pf
except ImportError:  # run without the repository root on sys.path
    import support.pdf_factory as pf  # type: ignore[no-redef]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
MINERU = SHARED / "corpus" / "mineru"

SAMPLES = {
    "0.x": ("magicpdf-0.10.0-demo1", "demo1_content_list.json"),
    "0.x-ocr": ("magicpdf-0.10.6-research-report-ocr", "test_rearch_report_content_list.json"),
    "2.x": ("mineru-2.7.6-aaai26-paper", "AAAI-26 camera ready version 22735_content_list.json"),
    "3.x": ("mineru-3.4.4-api-naacl2024-149", "0c4428b6-5748-4034-8db5-f9d78cd0bb6b_content_list.json"),
}


def _sample(key: str) -> Path:
    d, f = SAMPLES[key]
    p = MINERU / d / f
    if not p.is_file():
        pytest.skip("MinerU samples not available")
    return p


def _expected_counts(path: Path, doc_title: bool) -> dict[NodeType, int]:
    """Counts derived from the raw JSON: non-empty text blocks (+ lists, code),
    headings (minus the document title), images + charts, tables, equations."""
    c: Counter = Counter()
    for b in json.loads(path.read_text(encoding="utf-8")):
        t = b["type"]
        if t == "text" and b.get("text", "").strip():
            c[NodeType.TITLE if b.get("text_level") else NodeType.TEXT] += 1
        elif t in ("list", "code"):
            c[NodeType.TEXT] += 1
        elif t in ("image", "chart"):
            c[NodeType.IMAGE] += 1
        elif t == "table":
            c[NodeType.TABLE] += 1
        elif t == "equation":
            c[NodeType.EQUATION] += 1
    if doc_title:
        c[NodeType.TITLE] -= 1
    return dict(c)


def _counts(parsed) -> dict[NodeType, int]:
    return dict(Counter(e.type for e in parsed.elements))


@pytest.mark.parametrize(
    "key,doc_title,n_pages,version",
    [("0.x", True, 13, "0.x"), ("0.x-ocr", False, 4, "0.x"), ("2.x", True, 9, "2.x"), ("3.x", True, 12, "3.x")],
)
def test_import_all_versions(key, doc_title, n_pages, version):
    cl = _sample(key)
    parsed = import_mineru(cl)
    assert parsed.parser == "mineru-import"
    assert parsed.metadata["mineru_version"] == version
    assert parsed.n_pages == n_pages
    assert _counts(parsed) == _expected_counts(cl, doc_title)
    assert bool(parsed.title) == doc_title
    assert [e.order for e in parsed.elements] == list(range(len(parsed.elements)))
    # boxes are PDF points inside the page (PDF found next to the output)
    assert parsed.metadata["bbox_units"] == "points"
    assert len(parsed.page_sizes) == n_pages
    boxed = [e for e in parsed.elements if e.bbox[2] > e.bbox[0]]
    assert len(boxed) >= 0.8 * len(parsed.elements)
    for e in boxed:
        w, h = parsed.page_sizes[e.page - 1]
        assert -2 <= e.bbox[0] < e.bbox[2] <= w + 2 and -2 <= e.bbox[1] < e.bbox[3] <= h + 2
    for e in parsed.elements:
        if e.type == NodeType.IMAGE and e.extra.get("image_path"):
            assert Path(e.extra["image_path"]).is_file()
    tree = build_tree(parsed, "m")
    tree.validate()


def test_3x_levels_title_and_drops():
    parsed = import_mineru(_sample("3.x"))
    assert parsed.title == "Metaphor Detection with Context Enhancement and Curriculum Learning"
    lv = {e.text: e.level for e in parsed.elements if e.type == NodeType.TITLE}
    assert lv["Abstract"] == 1 and lv["1 Introduction"] == 1 and lv["2.1 Metaphor Detection"] == 2
    assert lv["3.1.1 Transformer Encoder"] == 3 and lv["A.1 Hyperparameter Choices"] == 2 and lv["References"] == 1
    texts = " ".join(e.text for e in parsed.elements)
    assert "2726" not in [e.text for e in parsed.elements]  # page numbers dropped
    assert "Proceedings of the 2024 Conference" not in texts  # footer dropped
    code = [e for e in parsed.elements if e.extra.get("code")]
    assert len(code) == 1 and "Algorithm 1" in code[0].text
    refs = [e for e in parsed.elements if e.extra.get("list") and e.extra.get("sub_type") == "ref_text"]
    assert refs and "Curriculum learning" in refs[0].text
    # 0-1000 -> points: the title bbox [115, 89, 884, 110] on a 595 x 841 page
    t1 = next(e for e in parsed.elements if e.text == "1 Introduction")
    assert t1.bbox[0] == pytest.approx(115 * 595 / 1000, abs=1.5)


def test_2x_levels_from_font_size():
    parsed = import_mineru(_sample("2.x"))
    lv = {e.text: e.level for e in parsed.elements if e.type == NodeType.TITLE}
    assert lv["Introduction"] == 1 and lv["Related Work"] == 1 and lv["Method"] == 1
    assert lv["Medication Recommendation"] == 2 and lv["Ablation Study"] == 2
    tables = [e for e in parsed.elements if e.type == NodeType.TABLE]
    assert tables[0].extra["caption"].startswith("Table 1") and tables[0].extra["rows"][0][0] == "Attribute"
    assert not any(e.text.startswith("*Corresponding author") for e in parsed.elements)  # discarded


def test_0x_boxes_from_middle_json():
    cl = _sample("0.x")
    assert find_middle_json(cl).name == "demo1_middle.json"
    parsed = import_mineru(cl)
    intro = next(e for e in parsed.elements if e.text == "1. Introduction")
    assert intro.page == 2 and intro.level == 1
    assert intro.bbox == pytest.approx((47, 90, 112, 102), abs=1)
    lv = {e.text: e.level for e in parsed.elements if e.type == NodeType.TITLE}
    assert lv["2.1. Characterisation of flow regime"] == 2 and lv["References"] == 1
    eq = next(e for e in parsed.elements if e.type == NodeType.EQUATION)
    assert not eq.text.startswith("$$") and "=" in eq.text


def test_ocr_report_table_body():
    parsed = import_mineru(_sample("0.x-ocr"))
    tables = [e for e in parsed.elements if e.type == NodeType.TABLE]
    assert tables[0].extra["rows"][0] == ["沪深300对比", "1M", "2M", "3M"]
    assert "| 沪深300对比 | 1M | 2M | 3M |" in tables[0].text


def test_v2_matches_classic():
    cl = _sample("3.x")
    v2 = cl.with_name(cl.name.replace("_content_list.json", "_content_list_v2.json"))
    a, b = import_mineru(cl), import_mineru(v2)
    assert b.metadata["mineru_version"] == "v2"
    assert _counts(a) == _counts(b)
    assert [e.text for e in a.elements if e.type == NodeType.TITLE] == [e.text for e in b.elements if e.type == NodeType.TITLE]


def test_without_pdf_uses_middle_page_size_or_per_mille(tmp_path):
    src = _sample("2.x")
    cl = tmp_path / src.name
    shutil.copy(src, cl)
    p1 = import_mineru(cl)
    assert p1.metadata["bbox_units"] == "per-mille" and p1.page_sizes == []
    shutil.copy(src.with_name(src.name.replace("_content_list.json", "_middle.json")), tmp_path)
    p2 = import_mineru(cl)
    assert p2.metadata["bbox_units"] == "points" and p2.page_sizes[0] == (612.0, 792.0)
    # no PDF -> no font sizes, levels still from numbering/defaults and valid
    assert all(e.level is not None and e.level >= 1 for e in p2.elements if e.type == NodeType.TITLE)


def test_find_output_layouts(tmp_path):
    pdf = pf.make_simple_pdf(tmp_path / "a.pdf")
    pf.make_simple_pdf(tmp_path / "b.pdf")
    assert find_mineru_output(pdf) is None
    nested = tmp_path / "a" / "auto"
    nested.mkdir(parents=True)
    (nested / "a_content_list.json").write_text("[]", encoding="utf-8")
    assert find_mineru_output(pdf) == nested / "a_content_list.json"
    beside = tmp_path / "a_content_list.json"
    beside.write_text("[]", encoding="utf-8")
    assert find_mineru_output(pdf) == beside
    # cloud API layout: one PDF and one task-id-named content list in a folder
    solo = tmp_path / "solo"
    solo.mkdir()
    pdf2 = pf.make_simple_pdf(solo / "paper.pdf")
    (solo / "0c44-task_content_list.json").write_text("[]", encoding="utf-8")
    assert find_mineru_output(pdf2) == solo / "0c44-task_content_list.json"


def test_real_cloud_layout_found():
    cl = _sample("3.x")
    assert find_mineru_output(cl.parent / "paper.pdf") == cl
    parsed = parse_document(cl.parent / "paper.pdf")  # auto -> import
    assert parsed.parser == "mineru-import" and parsed.n_pages == 12


def test_bad_content_list(tmp_path):
    bad = tmp_path / "x_content_list.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ParseError, match="cannot read"):
        import_mineru(bad)
    bad.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ParseError, match="not a JSON list"):
        import_mineru(bad)
    with pytest.raises(ParseError, match="not found"):
        import_mineru(tmp_path / "missing_content_list.json")


def test_html_table_rows():
    rows = html_table_rows("<table><tr><th>a</th><th colspan=2>b</th></tr><tr><td>1</td><td>2</td><td>3 &amp; 4</td></tr></table>")
    assert rows == [["a", "b", ""], ["1", "2", "3 & 4"]]
    assert html_table_rows("") == []


def _fake_mineru(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "fake-mineru"
    exe.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


@pytest.mark.skipif(os.name != "posix", reason="needs an executable script")
def test_mineru_subprocess_runner(tmp_path):
    body = (
        "import sys, json, pathlib\n"
        "a = sys.argv; pdf = pathlib.Path(a[a.index('-p') + 1]); out = pathlib.Path(a[a.index('-o') + 1])\n"
        "d = out / pdf.stem / 'auto'; d.mkdir(parents=True)\n"
        "json.dump([{'type': 'text', 'text': '1 Introduction', 'text_level': 1, 'bbox': [100, 100, 400, 120], 'page_idx': 0},\n"
        "           {'type': 'text', 'text': 'Body text written by the fake MinerU.', 'bbox': [100, 130, 900, 200], 'page_idx': 0}],\n"
        "          open(d / (pdf.stem + '_content_list.json'), 'w'))\n"
    )
    exe = _fake_mineru(tmp_path, body)
    pdf = pf.make_simple_pdf(tmp_path / "in.pdf")
    st = ParsingSettings(mineru_command=str(exe))
    parser = get_parser("mineru", st)
    parsed = parser.parse(pdf)
    assert parsed.parser == "mineru" and parsed.path == str(pdf)
    assert [(e.type, e.text, e.level) for e in parsed.elements] == [
        (NodeType.TITLE, "1 Introduction", 1), (NodeType.TEXT, "Body text written by the fake MinerU.", None)]
    assert parsed.elements[0].bbox[0] == pytest.approx(61.2)  # 100/1000 * 612 pt
    # auto uses the installed command when there is no output beside the PDF
    assert get_parser("auto", st).parse(pdf).parser == "mineru"


@pytest.mark.skipif(os.name != "posix", reason="needs an executable script")
def test_mineru_subprocess_failure(tmp_path):
    exe = _fake_mineru(tmp_path, "import sys\nprint('model weights missing', file=sys.stderr)\nsys.exit(3)\n")
    pdf = pf.make_simple_pdf(tmp_path / "in.pdf")
    with pytest.raises(ParseError, match=r"MinerU failed \(exit 3\): model weights missing"):
        MinerUParser(ParsingSettings(mineru_command=str(exe))).parse(pdf)
    with pytest.raises(ConfigError):
        MinerUParser(ParsingSettings(mineru_command="definitely-not-installed-xyz")).parse(pdf)
