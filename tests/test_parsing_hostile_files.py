"""Hostile and broken inputs (issue 7): each gives a clear one-line error, nothing else is lost.

Every input is generated here (PyMuPDF or a tiny raw PDF writer), so the file runs
without ``../shared``. Parsing and storage are under test, so the cheap
:class:`~docmaster_core.embedding.embedders.HashingEmbedder` and the offline LLM stand in for the
real model. Memory bounds are measured in a child process (peak RSS, ``ru_maxrss``).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest

from docmaster_core import cli
from docmaster_core.config import ParsingSettings, get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import DocMasterError, EncryptedPDFError, ParseError, WorkspaceError
from docmaster_core.model import DocumentTree, Node, NodeType
from docmaster_core.parsing import parse_document
from docmaster_core.pipeline import DocMaster
from docmaster_core.store.workspace import Workspace, storable_text

try:
    from support.pdf_factory import make_encrypted_pdf, make_paper_pdf, make_simple_pdf, make_truncated_pdf
except ImportError:  # tests imported as a package
    from tests.pdf_factory import make_encrypted_pdf, make_paper_pdf, make_simple_pdf, make_truncated_pdf

REPO = Path(__file__).resolve().parents[1]
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


# ----------------------------------------------------------------------------- generators
def _pdf_string(b: bytes) -> bytes:
    return b"(" + b.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def write_raw_pdf(path: Path, page_streams: list[bytes], info_title: bytes | None = None) -> Path:
    """A minimal PDF written byte by byte: one Helvetica (WinAnsi) font, one content
    stream per page (US-Letter, 612 x 792 pt), a correct xref table. Thousands of pages
    take milliseconds. ``info_title`` is written raw into the Info dictionary (so it can
    hold bytes that are not UTF-8)."""
    n = len(page_streams)
    objs: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n)) + b"] /Count %d >>" % n,
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    }
    for i, st in enumerate(page_streams):
        objs[4 + 2 * i] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                           b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i))
        objs[5 + 2 * i] = b"<< /Length %d >>\nstream\n" % len(st) + st + b"\nendstream"
    info = None
    if info_title is not None:
        info = 4 + 2 * n
        objs[info] = b"<< /Title " + _pdf_string(info_title) + b" >>"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for k in sorted(objs):
        offsets[k] = out.tell()
        out.write(b"%d 0 obj\n" % k + objs[k] + b"\nendobj\n")
    xref, size = out.tell(), max(objs) + 1
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % size)
    for k in range(1, size):
        out.write(b"%010d 00000 n \n" % offsets[k])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R" % size + (b" /Info %d 0 R" % info if info else b"")
              + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    path.write_bytes(out.getvalue())
    return path


def make_thousands_of_pages(path: Path, n: int) -> Path:
    """``n`` pages, one distinct line each, in the middle of the page."""
    return write_raw_pdf(path, [b"BT /F1 11 Tf 72 400 Td (Page %d: a line of text about topic number %d "
                                b"in a long report.) Tj ET" % (i + 1, i) for i in range(n)])


def make_tiny_spans(path: Path, n: int = 100_000) -> Path:
    """One page with ``n`` one-character text spans (alternating 1.5/1.7 pt, 400 per row)."""
    ops = [b"BT"]
    for i in range(n):
        ops.append(b"/F1 %s Tf 1 0 0 1 %.1f %.1f Tm (%c) Tj"
                   % (b"1.5" if i % 2 else b"1.7", 4 + (i % 400) * 1.5, 780 - (i // 400) * 3.0, 97 + i % 26))
    ops.append(b"ET")
    return write_raw_pdf(path, [b"BT /F1 10 Tf 72 785 Td (A page of tiny spans.) Tj ET\n" + b"\n".join(ops)])


def make_huge_image(path: Path, side: int = 9_000) -> Path:
    """One page with a ``side`` x ``side`` RGB image (FlateDecode of zeros: 243 MB decoded
    for 9,000, about 0.25 MB in the file) and a caption."""
    import pymupdf

    co = zlib.compressobj(6)
    block = bytes(side * 3 * 100)
    data = b"".join([co.compress(block) for _ in range(side // 100)] + [co.flush()])
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((72, 72), "A page with one huge embedded raster image below its caption.", fontname="helv", fontsize=11)
    page.insert_text((72, 90), "Figure 1: A very large raster image.", fontname="helv", fontsize=9)
    xref = doc.get_new_xref()
    doc.update_object(xref, f"<< /Type /XObject /Subtype /Image /Width {side} /Height {side} /ColorSpace /DeviceRGB "
                            f"/BitsPerComponent 8 /Filter /FlateDecode /Length {len(data)} >>")
    doc.update_stream(xref, data, compress=False)
    doc.xref_set_key(xref, "Filter", "/FlateDecode")
    res = doc.xref_get_key(page.xref, "Resources")
    doc.xref_set_key(int(res[1].split()[0]), "XObject", f"<< /Im0 {xref} 0 R >>")
    cont = page.get_contents()[0]
    doc.update_stream(cont, doc.xref_stream(cont) + b"\nq 400 0 0 400 100 120 cm /Im0 Do Q\n")
    doc.save(str(path))
    doc.close()
    return path


def make_rtl_pdf(path: Path) -> Path:
    """Hebrew, Arabic and accented Latin text (DejaVu Sans embedded) plus WinAnsi text."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="dj", fontfile=str(DEJAVU))
    page.insert_text((72, 72), "1 Introduction", fontname="dj", fontsize=14)
    page.insert_text((72, 100), "שלום עולם. זהו מסמך בעברית עם טקסט מימין לשמאל.", fontname="dj", fontsize=10)
    page.insert_text((72, 120), "مرحبا بالعالم. هذه وثيقة باللغة العربية.", fontname="dj", fontsize=10)
    page.insert_text((72, 140), "Ünïcödé façade naïve café — “quotes” and ½ ¼ € ™ in a sentence.", fontname="dj", fontsize=10)
    page.insert_text((72, 160), "Latin-1 text in a base font: café naïve über straße.", fontname="helv", fontsize=10)
    doc.save(str(path))
    doc.close()
    return path


def _dm(ws: Path) -> DocMaster:
    s = get_settings(llm={"backend": "offline"}, parsing={"parser": "pymupdf"})
    return DocMaster(ws, s, embedder=HashingEmbedder())


def _one_line(reason: str, name: str) -> None:
    assert reason and "\n" not in reason and "\r" not in reason and len(reason) < 300, reason
    assert name in reason, (name, reason)


# ----------------------------------------------------------------------------- broken files
@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> dict[str, Path]:
    import pymupdf

    d = tmp_path_factory.mktemp("broken")
    out = {}
    out["zero.pdf"] = d / "zero.pdf"
    out["zero.pdf"].write_bytes(b"")
    out["truncated.pdf"] = make_truncated_pdf(d / "truncated.pdf", 0.6)
    out["text_renamed.pdf"] = d / "text_renamed.pdf"
    out["text_renamed.pdf"].write_text("plain text, not a PDF\n" * 40)
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 16, 16), False)
    pix.clear_with(90)
    out["png_renamed.pdf"] = d / "png_renamed.pdf"
    out["png_renamed.pdf"].write_bytes(pix.tobytes("png"))
    import zipfile

    with zipfile.ZipFile(d / "zip_renamed.pdf", "w") as z:
        z.writestr("word/document.xml", "<w:document/>")
    out["zip_renamed.pdf"] = d / "zip_renamed.pdf"
    out["header_then_garbage.pdf"] = d / "header_then_garbage.pdf"
    out["header_then_garbage.pdf"].write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    out["locked.pdf"] = make_encrypted_pdf(d / "locked.pdf")
    return out


EXPECT = {
    "zero.pdf": "empty file",
    "truncated.pdf": "truncated",
    "text_renamed.pdf": "not a PDF",
    "png_renamed.pdf": "not a PDF",
    "zip_renamed.pdf": "not a PDF",
    "header_then_garbage.pdf": "cannot open PDF",
    "locked.pdf": "encrypted with a password",
}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_broken_file_gives_one_line_parse_error(broken, name):
    with pytest.raises(ParseError) as info:
        parse_document(broken[name], parser="pymupdf")
    _one_line(str(info.value), name)
    assert EXPECT[name] in str(info.value)
    if name == "locked.pdf":
        assert isinstance(info.value, EncryptedPDFError)


def test_broken_files_in_one_batch_lose_nothing_else(broken, tmp_path):
    good = make_paper_pdf(tmp_path / "good.pdf")["path"]
    src = tmp_path / "in"
    src.mkdir()
    for p in [good, *broken.values()]:
        shutil.copy(p, src / p.name)
    dm = _dm(tmp_path / "ws")
    res = {Path(r.file).name: r for r in dm.ingest([src], build_index=False)}
    assert res["good.pdf"].status == "ingested" and res["good.pdf"].nodes > 10
    for name in EXPECT:
        assert res[name].status == "failed"
        _one_line(res[name].reason, name)
    assert [d.file_name for d in dm.ws.documents()] == ["good.pdf"]
    assert {f["file_name"] for f in dm.ws.failures()} == set(EXPECT)
    assert dm.ws.check() == []


@pytest.mark.parametrize("count", [b"-5", b"2147483648", b"0"])
def test_damaged_page_tree_is_a_parse_error(tmp_path, count):
    """A page count PyMuPDF rejects with a raw RuntimeError ("Invalid number of pages",
    found by the fuzzer) is reported as a ParseError."""
    p = make_thousands_of_pages(tmp_path / "pages.pdf", 3)
    p.write_bytes(p.read_bytes().replace(b"/Count 3", b"/Count " + count))
    with pytest.raises(ParseError) as info:
        parse_document(p, parser="pymupdf")
    _one_line(str(info.value), "pages.pdf")


def test_file_over_size_limit_is_refused(tmp_path):
    p = make_paper_pdf(tmp_path / "big.pdf")["path"]
    with pytest.raises(ParseError, match=r"big\.pdf: file is .* MiB, over the 0\.001 MiB limit"):
        parse_document(p, settings=ParsingSettings(max_file_mb=0.001), parser="pymupdf")


# ----------------------------------------------------------------------------- size and memory
_MEMORY_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from docmaster_core.config import ParsingSettings
    from docmaster_core.parsing import parse_document

    def rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # MiB on Linux

    out = {}
    small, many, huge = sys.argv[1:4]
    st = ParsingSettings(page_limit=3000, parser="pymupdf")
    parse_document(small, settings=st, parser="pymupdf")
    out["rss_small"] = rss()
    t0 = time.perf_counter()
    doc = parse_document(huge, settings=st, parser="pymupdf")
    out["huge_seconds"] = time.perf_counter() - t0
    out["huge_types"] = sorted({e.type.value for e in doc.elements})
    out["rss_huge"] = rss()
    t0 = time.perf_counter()
    doc = parse_document(many, settings=st, parser="pymupdf")
    out["many_seconds"] = time.perf_counter() - t0
    out["many_pages"] = doc.n_pages
    out["many_last_page"] = max(e.page for e in doc.elements)
    out["rss_many"] = rss()
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_thousands_of_pages_and_huge_image_in_bounded_memory(tmp_path):
    """A 2,100-page PDF and a page with a 9,000 x 9,000 image (243 MB decoded) are
    parsed page by page: peak RSS grows by well under the decoded image size."""
    small = make_thousands_of_pages(tmp_path / "small.pdf", 25)
    many = make_thousands_of_pages(tmp_path / "many.pdf", 2100)
    huge = make_huge_image(tmp_path / "huge.pdf")
    # the default page limit (2,000) refuses the long one with a one-line reason
    with pytest.raises(ParseError) as info:
        parse_document(many, parser="pymupdf")
    _one_line(str(info.value), "many.pdf")
    assert "2100 pages, over the page limit of 2000" in str(info.value)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(small), str(many), str(huge)],
                          capture_output=True, text=True, timeout=240, env=env, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = json.loads(proc.stdout.strip().splitlines()[-1])
    assert m["many_pages"] == 2100 and m["many_last_page"] == 2100
    assert "IMAGE" in m["huge_types"]
    assert m["rss_huge"] - m["rss_small"] < 150, m  # the 243 MB image is never decoded
    assert m["rss_many"] - m["rss_small"] < 200, m  # 84x the pages, bounded growth


@pytest.mark.slow
def test_page_with_100000_tiny_spans(tmp_path):
    p = make_tiny_spans(tmp_path / "spans.pdf")
    doc = parse_document(p, parser="pymupdf")
    chars = sum(len(e.text.replace(" ", "")) for e in doc.elements)
    assert chars >= 100_000
    assert doc.metadata["seconds"]["total"] < 60


# ----------------------------------------------------------------------------- repaired, encodings
def test_malformed_xref_is_repaired_and_parsed(tmp_path):
    import re

    import pymupdf

    good = make_paper_pdf(tmp_path / "good.pdf")["path"]
    data = good.read_bytes()
    m = list(re.finditer(rb"startxref\s+(\d+)", data))[-1]
    bad = data[: m.start(1)] + b"9" * len(m.group(1)) + data[m.end(1):]
    # and garble every offset of the xref table
    bad = re.sub(rb"\n\d{10} 00000 n", lambda mm: b"\n" + b"0000000001" + b" 00000 n", bad)
    (tmp_path / "badxref.pdf").write_bytes(bad)
    with pymupdf.open(tmp_path / "badxref.pdf") as d:
        assert d.is_repaired
    a = parse_document(good, parser="pymupdf")
    b = parse_document(tmp_path / "badxref.pdf", parser="pymupdf")
    assert [e.text for e in b.elements] == [e.text for e in a.elements]


@pytest.mark.skipif(not DEJAVU.exists(), reason="DejaVu Sans font not installed")
def test_rtl_and_non_ascii_text_roundtrip(tmp_path):
    p = make_rtl_pdf(tmp_path / "rtl.pdf")
    dm = _dm(tmp_path / "ws")
    (r,) = dm.ingest([p], build_index=False)
    assert r.status == "ingested", r.reason
    tree = Workspace(tmp_path / "ws", create=False).load_tree(r.doc_id)
    text = " ".join(n.content for n in tree.nodes)
    for ch in "שלוםעברית":  # Hebrew letters survive (glyph order follows the page)
        assert ch in text
    for ch in "مرحبا":
        assert ch in text
    for word in ("Ünïcödé", "façade", "½", "€", "café", "straße"):
        assert word in text


def test_non_utf8_metadata_and_file_name(tmp_path, capsys, monkeypatch):
    """A Latin-1 Info title and a file name whose bytes are not UTF-8 (Linux allows
    both): the document is stored, its name shown with U+FFFD, JSON output stays valid."""
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    src = tmp_path / "in"
    src.mkdir()
    body = [b"BT /F1 14 Tf 72 720 Td (1 Introduction) Tj ET\n"
            b"BT /F1 10 Tf 72 690 Td (Caf\xe9 cr\xe8me and na\xefve r\xe9sum\xe9 text in WinAnsi encoding.) Tj ET"]
    raw = write_raw_pdf(tmp_path / "x.pdf", body, info_title=b"Caf\xe9 \xff\xfe\x00 title")
    bad_name = os.fsencode(src) + b"/caf\xe9-latin1.pdf"
    with open(bad_name, "wb") as f:
        f.write(raw.read_bytes())
    ws = tmp_path / "ws"
    rc = cli.main(["ingest", str(src), "--workspace", str(ws), "--json", "--no-index"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ingested"] == 1, out
    (rec,) = Workspace(ws, create=False).documents()
    assert rec.file_name == "caf\ufffd-latin1.pdf"
    tree = Workspace(ws, create=False).load_tree(rec.doc_id)
    assert any("Café crème" in n.content for n in tree.nodes)
    assert cli.main(["docs", "--workspace", str(ws), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["documents"][0]["file_name"] == "caf\ufffd-latin1.pdf"


def test_lone_surrogates_in_text_are_storable(tmp_path):
    """Text with lone UTF-16 surrogates (a bad ToUnicode map) must not lose the document."""
    assert storable_text("ok ✓") == "ok ✓"
    assert storable_text("caf\udce9") == "caf\ufffd"
    assert "\ud800" not in storable_text("a\ud800b")
    nodes = [Node(0, NodeType.ROOT, 0, None, [1], "", 1, 1, [], []),
             Node(1, NodeType.TEXT, 1, 0, [], "half a pair \ud83d here", 1, 1, [(1, 0.0, 0.0, 1.0, 1.0)], [])]
    tree = DocumentTree("00000000000000aa", "t\udcff", nodes, 1, "s\udcff.pdf")
    ws = Workspace(tmp_path)
    ws.add_document(tree, np.zeros((2, 8), np.float32), sha256="c" * 64, source_path="s.pdf", parser="x")
    back = ws.load_tree("00000000000000aa")
    assert back.nodes[1].content == "half a pair ? here" and ws.check() == []
    from docmaster_core.parsing.base import clean_text

    assert clean_text("a\ud800b\udfffc") == "abc"


# ----------------------------------------------------------------------------- file names
HOSTILE_NAMES = [
    "a;rm -rf ~;$(touch PWNED)`id`|&>x.pdf",
    "..pdf",
    "-rf.pdf",
    "résumé 文档 🚀.pdf",
    "new\nline\ttab.pdf",
    "quote'\"back\\slash %s %n.pdf",
    "x" * 200 + ".pdf",
]


def test_hostile_file_names_are_data_not_paths(tmp_path, capsys, monkeypatch):
    base = make_simple_pdf(tmp_path / "base.pdf",
                           "A short document about file names. It has one paragraph of plain text for the test.")
    src = tmp_path / "in"
    src.mkdir()
    for i, name in enumerate(HOSTILE_NAMES):
        # distinct bytes per file (a trailing comment), so every one is a new document
        (src / name).write_bytes(base.read_bytes() + b"\n%% copy %d\n" % i)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    ws = tmp_path / "ws"
    rc = cli.main(["ingest", str(src), "--workspace", str(ws), "--json", "--no-index"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["ingested"] == len(HOSTILE_NAMES) and out["failed"] == 0, out
    w = Workspace(ws, create=False)
    docs = w.documents()
    assert sorted(d.file_name for d in docs) == sorted(HOSTILE_NAMES)  # stored as data, verbatim
    # on disk: only <doc_id>.npy vector files, nothing named after the inputs, nothing executed
    assert sorted(p.name for p in w.vectors_dir.iterdir()) == sorted(f"{d.doc_id}.npy" for d in docs)
    assert not list(tmp_path.rglob("PWNED")) and not (Path.home() / "PWNED").exists()
    assert w.check() == []
    # text output: one line per document (names with newlines are flattened)
    assert cli.main(["docs", "--workspace", str(ws)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(HOSTILE_NAMES) + 1
    # lookups by the unusual names work
    assert cli.main(["tree", "résumé 文档 🚀.pdf", "--workspace", str(ws), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["file"] == "résumé 文档 🚀.pdf"
    assert w.document("..pdf").file_name == "..pdf"


def test_uploaded_names_never_escape_the_upload_folder(tmp_path):
    pytest.importorskip("streamlit")
    from ui.ingest import sanitize_filename, save_uploads

    names = ["../../etc/passwd.pdf", "/abs/path/x.pdf", "C:\\Windows\\evil.pdf", "a/b/../c.pdf", "..", ".hidden.pdf",
             "-rf .pdf", "$(reboot).pdf", "résumé.pdf", "nul\x00byte.pdf", "..\\..\\x.pdf", ""]
    for n in names:
        s = sanitize_filename(n)
        assert s and "/" not in s and "\\" not in s and not s.startswith((".", "-")) and "\x00" not in s, (n, s)
    up = tmp_path / "uploads"
    saved = save_uploads(up, [(n, b"%PDF-1.4 " + n.encode("utf-8", "replace")) for n in names])
    root = up.resolve()
    assert all(p.resolve().parent == root for p in saved)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["uploads"]  # nothing written outside


# ----------------------------------------------------------------------------- duplicates
def test_same_file_twice_and_same_name_different_content(tmp_path, capsys):
    a = make_simple_pdf(tmp_path / "a.pdf", "Report about rivers. The rivers are long and the water is cold in spring.")
    b = make_simple_pdf(tmp_path / "b.pdf", "Report about mountains. The mountains are high and the snow stays all year.")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    shutil.copy(a, tmp_path / "one" / "report.pdf")
    shutil.copy(b, tmp_path / "two" / "report.pdf")
    shutil.copy(a, tmp_path / "one" / "copy of report.pdf")  # same bytes, other name, same batch
    dm = _dm(tmp_path / "ws")
    res = dm.ingest([tmp_path / "one", tmp_path / "two"], build_index=False)
    st = sorted((Path(r.file).parent.name, Path(r.file).name, r.status) for r in res)
    assert st == [("one", "copy of report.pdf", "ingested"), ("one", "report.pdf", "skipped"),
                  ("two", "report.pdf", "ingested")]
    skipped = next(r for r in res if r.status == "skipped")
    assert "same content as copy of report.pdf" in skipped.reason
    assert dm.ws.failures() == []
    # uploaded again: nothing parsed, nothing added
    again = dm.ingest([tmp_path / "one" / "report.pdf"], build_index=False)
    assert [r.status for r in again] == ["skipped"] and len(dm.ws.documents()) == 2
    # same name, different content: both kept, a name lookup is ambiguous, a doc_id is not
    dm2 = _dm(tmp_path / "ws2")
    r2 = dm2.ingest([tmp_path / "one" / "report.pdf", tmp_path / "two" / "report.pdf"], build_index=False)
    assert [r.status for r in r2] == ["ingested", "ingested"] and r2[0].doc_id != r2[1].doc_id
    with pytest.raises(WorkspaceError, match="matches several documents"):
        dm2.ws.document("report.pdf")
    assert dm2.ws.document(r2[1].doc_id).doc_id == r2[1].doc_id
    assert cli.main(["tree", "report.pdf", "--workspace", str(tmp_path / "ws2")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "matches several documents" in err and err.count("\n") == 1


# ----------------------------------------------------------------------------- fuzz (short)
@pytest.mark.slow
def test_fuzz_short_seeded_run_reports_every_failure(tmp_path):
    """15 seeded corruptions of generated PDFs (``scripts/fuzz_parser.py``), parsed in a
    child process watched with a timeout: no crash, no hang, every failure a
    DocMasterError subclass with a one-line message naming the file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_parser", REPO / "scripts" / "fuzz_parser.py")
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    out = tmp_path / "report.json"
    rc = fuzz.main(["--cases", "15", "--seed", "7", "--generated", "--batch", "15", "--case-timeout", "60",
                    "--workdir", str(tmp_path / "work"), "--out", str(out), "--json"])
    rep = json.loads(out.read_text())
    assert rc == 0, rep
    assert rep["cases"] == 15
    assert rep["raw_errors"] == 0 and rep["crashes"] == 0 and rep["hangs"] == 0, rep
    assert rep["ok"] + rep["reported"] == 15
    assert set(rep["by_outcome"]) <= {"ok"} | {c for c in rep["by_outcome"] if c.endswith("Error")}
    assert rep["unclear_messages"] == 0
    assert issubclass(ParseError, DocMasterError)
