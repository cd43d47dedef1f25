"""End-to-end ingest through the pipeline and the ``docmaster`` CLI on PDFs made here
(and on real corpus PDFs when ../shared is present)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from docmaster_core import cli
from docmaster_core.pipeline import DocMaster
from docmaster_core.store.workspace import Workspace

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "pdf"


def _simple_pdf(path: Path, title: str, sections: list[tuple[str, list[str]]]) -> Path:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    y = 72
    page.insert_text((72, y), title, fontsize=18, fontname="hebo")
    y += 40
    for head, paras in sections:
        if y > 650:
            page = doc.new_page()
            y = 72
        page.insert_text((72, y), head, fontsize=13, fontname="hebo")
        y += 22
        for para in paras:
            rect = pymupdf.Rect(72, y, 520, y + 120)
            page.insert_textbox(rect, para, fontsize=10, fontname="helv")
            y += 130
            if y > 650:
                page = doc.new_page()
                y = 72
    doc.save(path)
    doc.close()
    return path


LOREM = ("Retrieval-augmented generation conditions a text generator on passages retrieved from a large corpus. "
         "We evaluate the method on open-domain question answering benchmarks such as Natural Questions. "
         "The retriever is a dense bi-encoder trained with in-batch negatives and the generator is a sequence "
         "to sequence transformer.")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    _simple_pdf(d / "good_rag.pdf", "A Retrieval Paper", [
        ("1 Introduction", [LOREM, LOREM.replace("Retrieval", "Dense retrieval")]),
        ("2 Method", [LOREM.upper().lower()]),
        ("3 Experiments", ["We report exact match on Natural Questions and TriviaQA. " * 3]),
    ])
    _simple_pdf(d / "good_storage.pdf", "A Storage System", [
        ("1 Introduction", ["Bigtable-like systems store petabytes of structured data across thousands of servers. " * 3]),
        ("2 Design", ["Tablets are split by row range and served by tablet servers with a master. " * 3]),
    ])
    (d / "empty.pdf").write_bytes(b"")
    full = (d / "good_rag.pdf").read_bytes()
    (d / "truncated.pdf").write_bytes(full[: len(full) // 3])
    (d / "notes.pdf").write_text("this is plain text renamed to .pdf\n" * 20)
    import pymupdf

    doc = pymupdf.open(d / "good_storage.pdf")
    doc.save(d / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    doc.close()
    blank = pymupdf.open()
    pg = blank.new_page()
    pg.draw_rect(pymupdf.Rect(100, 100, 300, 300), color=(0, 0, 0), fill=(0.5, 0.5, 0.5))
    blank.save(d / "no_text.pdf")
    blank.close()
    return d


def test_cli_ingest_reports_bad_files_and_goes_on(inputs, tmp_path, capsys, embedder):
    ws = tmp_path / "ws"
    rc = cli.main(["ingest", str(inputs), "--workspace", str(ws), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert out["ingested"] == 2 and out["failed"] == 5
    by_name = {Path(r["file"]).name: r for r in out["results"]}
    for bad in ("empty.pdf", "truncated.pdf", "notes.pdf", "locked.pdf", "no_text.pdf"):
        r = by_name[bad]
        assert r["status"] == "failed"
        assert bad in r["reason"] and "\n" not in r["reason"] and len(r["reason"]) < 300
    assert "password" in by_name["locked.pdf"]["reason"].lower()
    assert by_name["good_rag.pdf"]["counts"]["TITLE"] >= 3
    assert by_name["good_rag.pdf"]["counts"]["TEXT"] >= 3

    rc = cli.main(["docs", "--workspace", str(ws), "--json"])
    docs = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(docs["documents"]) == 2 and len(docs["failures"]) == 5

    rc = cli.main(["tree", "good_rag.pdf", "--workspace", str(ws), "--json"])
    tree = json.loads(capsys.readouterr().out)
    assert rc == 0 and tree["type"] == "ROOT"
    titles = [c.get("title", "") for c in tree["children"]]
    assert any("Introduction" in t for t in titles), titles
    intro = next(c for c in tree["children"] if "Introduction" in c.get("title", ""))
    assert intro["children"] and all(k in intro["children"][0] for k in ("id", "type", "depth", "page", "children"))

    assert cli.main(["check", "--workspace", str(ws)]) == 0


def test_second_ingest_parses_nothing(inputs, tmp_path, embedder, monkeypatch):
    ws = tmp_path / "ws"
    dm = DocMaster(ws, embedder=embedder)
    first = dm.ingest([inputs / "good_rag.pdf", inputs / "good_storage.pdf"])
    assert [r.status for r in first] == ["ingested", "ingested"]
    tree_before = dm.ws.load_tree(first[0].doc_id)

    def boom(self, path):  # any parse on the second run is a failure of this test
        raise AssertionError(f"re-parsed {path}")

    monkeypatch.setattr(DocMaster, "_parse", boom)
    second = DocMaster(ws, embedder=embedder).ingest([inputs])
    statuses = {Path(r.file).name: r.status for r in second}
    assert statuses["good_rag.pdf"] == "skipped" and statuses["good_storage.pdf"] == "skipped"
    # reopening gives the same tree, with summaries, without parsing
    again = Workspace(ws, create=False).load_tree(first[0].doc_id)
    assert [n.content for n in again.nodes] == [n.content for n in tree_before.nodes]
    assert all(n.summary.strip() for n in again.nodes)


def test_nothing_ingested_is_an_error(inputs, tmp_path, capsys):
    rc = cli.main(["ingest", str(inputs / "empty.pdf"), str(inputs / "missing.pdf"), "--workspace", str(tmp_path / "w")])
    cap = capsys.readouterr()
    assert rc != 0
    assert "empty.pdf" in cap.out and "no such file" in cap.out
    assert "no document was ingested" in cap.err


def test_concurrent_writer_is_refused(inputs, tmp_path, capsys):
    """Another process writing the workspace (here: one that holds its lock) refuses the
    ingest with exit code 3 and names that process."""
    from support.locks import other_writer

    Workspace(tmp_path / "w").close()
    with other_writer(tmp_path / "w", "index") as p:
        rc = cli.main(["ingest", str(inputs / "good_rag.pdf"), "--workspace", str(tmp_path / "w")])
    assert rc == 3
    assert f"another process (process {p.pid}: index since" in capsys.readouterr().err


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared corpus not present")
def test_real_corpus_pdfs(tmp_path):
    """Two real corpus PDFs, one of them encrypted with an empty password (parsing and
    storage are under test here, so a cheap hashing embedder stands in for the model)."""
    from docmaster_core.embedding.embedders import HashingEmbedder

    names = ["2005.11401_rag-knowledge-intensive-nlp.pdf", "doc_ntsb-aviation-accident-report.pdf"]
    paths = [CORPUS / n for n in names if (CORPUS / n).exists()]
    if len(paths) < 2:
        pytest.skip("corpus files missing")
    src = tmp_path / "in"
    src.mkdir()
    for p in paths:
        shutil.copy(p, src / p.name)
    res = DocMaster(tmp_path / "ws", embedder=HashingEmbedder()).ingest([src])
    assert all(r.status == "ingested" for r in res), [r.reason for r in res]
    rag = next(r for r in res if r.file.endswith(names[0]))
    c = rag.counts
    assert rag.pages == 19
    assert c["TITLE"] >= 10 and c["TEXT"] >= 60 and c["TABLE"] >= 1


@pytest.mark.skipif(not (SHARED / "corpus" / "mineru").is_dir(), reason="../shared MinerU samples not present")
def test_mineru_content_list_given_directly(tmp_path):
    """A MinerU ``*_content_list.json`` given as input is imported (no PDF parsing)."""
    from docmaster_core.embedding.embedders import HashingEmbedder

    src = SHARED / "corpus" / "mineru" / "magicpdf-0.10.0-demo1" / "demo1_content_list.json"
    res = DocMaster(tmp_path / "ws", embedder=HashingEmbedder()).ingest([src])
    assert res[0].status == "ingested", res[0].reason
    rec = Workspace(tmp_path / "ws").document(res[0].doc_id)
    assert rec.parser == "mineru-import" and rec.n_pages == 13
    assert rec.counts["TABLE"] == 5 and rec.counts["IMAGE"] == 5 and rec.counts["TITLE"] >= 10
