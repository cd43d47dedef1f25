"""Fixes from a newcomer's test report: --top-k validation, all-undecided filter runs,
fail-fast OpenAI configuration, read-only commands on non-workspaces, duplicate-content
messages, repeated sentences in offline answers, and missing vector files.

Workspaces are built here from PDFs generated with PyMuPDF, with the hashing embedder
(``DOCMASTER_EMBEDDING__MODEL=hashing`` for the CLI) and the offline LLM.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from docmaster_core import cli
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import ConfigError, LLMError, RetrievalError
from docmaster_core.model import Evidence
from docmaster_core.pipeline import DocMaster
from docmaster_core.retrieval.corpus import clear_corpus_cache
from support.net import closed_port

KETTLE = [
    ("1 Important Safety Instructions", [
        "Read all instructions before using the kettle. Always unplug the base from the wall socket before "
        "cleaning. Do not operate the kettle with a damaged cord or plug.",
    ]),
    ("2 Using the Kettle", [
        "Fill the kettle with fresh water up to the MAX mark. The blue light turns on while heating and the "
        "kettle switches off automatically when the water boils.",
    ]),
    ("3 Cleaning and Descaling", ["Descale the kettle every month in hard water areas."]),
    ("4 Warranty", ["The AquaBrew 300 is covered by a two-year warranty from the date of purchase."]),
]
NORTHWIND = [
    ("Third Quarter Results", [
        "Northwind Traders reported quarterly revenue of $412.5 million, up 9 percent from a year earlier. "
        "Net income was $37.9 million.",
    ]),
    ("Outlook", ["The company expects fourth quarter revenue between $420 million and $430 million."]),
]
PAPER = [
    ("1 Introduction", ["We study stochastic gradient ascent for sparse graph alignment on large networks."]),
    ("2 Method", ["The alignment objective is optimised with momentum and a decaying learning rate."]),
]


def _pdf(path: Path, title: str, sections) -> Path:
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), title, fontsize=18, fontname="hebo")
    y = 112
    for head, paras in sections:
        page.insert_text((72, y), head, fontsize=13, fontname="hebo")
        y += 22
        for para in paras:
            page.insert_textbox(pymupdf.Rect(72, y, 520, y + 70), para, fontsize=10, fontname="helv")
            y += 80
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def pdfs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("pdfs")
    _pdf(d / "kettle_manual.pdf", "AquaBrew 300 Kettle Manual", KETTLE)
    _pdf(d / "northwind_q3.pdf", "Northwind Traders Q3 Press Release", NORTHWIND)
    _pdf(d / "paper_sga.pdf", "Sparse Graph Alignment", PAPER)
    return d


@pytest.fixture(scope="module")
def base_ws(pdfs, tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("base") / "ws"
    res = DocMaster(ws, embedder=HashingEmbedder()).ingest([pdfs])
    assert [r.status for r in res] == ["ingested"] * 3
    return ws


@pytest.fixture
def ws(base_ws, tmp_path, monkeypatch) -> Path:
    """A private copy of the 3-document workspace; the CLI uses the hashing embedder."""
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    monkeypatch.delenv("DOCMASTER_LLM__BACKEND", raising=False)
    dst = tmp_path / "ws"
    shutil.copytree(base_ws, dst)
    clear_corpus_cache()
    return dst


def _dm(ws: Path) -> DocMaster:
    return DocMaster(ws, embedder=HashingEmbedder())


# ---------------------------------------------------------------------------- (a) --top-k
@pytest.mark.parametrize("argv", [
    ["filter", "safety", "--top-k", "-3"],
    ["filter", "safety", "--top-k", "0"],
    ["ask", "warranty?", "--docs", "kettle_manual.pdf", "--top-k", "-1"],
    ["ask", "warranty?", "--top-k", "0"],
    ["eval", "filter", "--cases", "x.tsv", "--top-k", "0"],
    ["eval", "retrieval", "--bench", "mmlongbench", "--k", "0"],
])
def test_cli_rejects_top_k_below_one(ws, capsys, argv):
    rc = cli.main(argv[:1] + ["-w", str(ws)] + argv[1:])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.splitlines() == [f"error: {'--k' if '--k' in argv else '--top-k'} must be >= 1"]


def test_core_entry_points_reject_top_k_below_one(ws):
    from docmaster_core.qa.ask import ask

    dm = _dm(ws)
    for bad in (0, -1):
        with pytest.raises(RetrievalError, match="top_k must be >= 1"):
            dm.retriever().rank("safety", ["combined"], top_k=bad)
        with pytest.raises(RetrievalError, match="top_k must be >= 1"):
            dm.filter("safety", top_k=bad, save=False)
        with pytest.raises(RetrievalError, match="top_k must be >= 1"):
            dm.ask("warranty?", docs=["kettle_manual.pdf"], top_k=bad, save=False)
        with pytest.raises(RetrievalError, match="top_k must be >= 1"):
            ask(dm.ws, dm.embedder, dm.llm, dm.settings.retrieval, "warranty?", top_k=bad, save=False)
    # None still means the default, and a valid k is honoured
    run = dm.filter("safety", top_k=2, save=False)
    assert run.params["top_k"] == 2
    assert all(len(d.evidence["semantic"]) <= 2 for d in run.documents)


# ---------------------------------------------------------------------------- (b) LLM errors
def test_filter_with_every_decision_undecided_exits_nonzero(ws, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-000000")
    monkeypatch.setenv("DOCMASTER_LLM__MAX_RETRIES", "0")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    rc = cli.main(["filter", "kettle", "-w", str(ws), "--llm", "openai", "--base-url", url, "--no-save"])
    out = capsys.readouterr()
    assert rc == 1
    errors = [ln for ln in out.err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1
    # a refused endpoint stops the run before any document (issue 15), naming the endpoint
    assert errors[0] == f"error: cannot reach the LLM endpoint {url}: Connection refused"
    # refused connections never reached a server: not counted as calls
    assert cli.main(["usage", "-w", str(ws), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["total"]["calls"] == 0


def test_refused_connection_is_not_a_call_nor_budget(monkeypatch):
    from docmaster_core.config import get_settings
    from docmaster_core.llm import OpenAILLM

    s = get_settings(llm={"backend": "openai", "base_url": f"http://127.0.0.1:{closed_port()}/v1",
                          "max_retries": 1, "max_calls": 1})
    llm = OpenAILLM(s.llm, backoff_base=0.01, backoff_max=0.02)
    with pytest.raises(LLMError, match="onnect"):
        llm.summarize("A passage about kettles.")
    assert llm.calls_sent == 0
    assert llm.usage.snapshot()["total"]["calls"] == 0


def test_openai_without_key_fails_before_loading_anything(ws, pdfs, capsys, monkeypatch):
    for var in ("OPENAI_API_KEY", "DOCMASTER_LLM__API_KEY", "DOCMASTER_LLM__BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)

    def no_embedder(*a, **k):
        raise AssertionError("the embedder must not be loaded")

    def no_parse(self, path):
        raise AssertionError("no file may be parsed")

    monkeypatch.setattr("docmaster_core.pipeline.get_embedder", no_embedder)
    monkeypatch.setattr(DocMaster, "_parse", no_parse)
    for argv in (["filter", "kettle"], ["ask", "warranty?", "--docs", "kettle_manual.pdf"]):
        rc = cli.main(argv[:1] + ["-w", str(ws), "--llm", "openai"] + argv[1:])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 1 and len(err) == 1 and "no API key" in err[0], (argv, err)
    new = pdfs.parent / "more"
    new.mkdir(exist_ok=True)
    _pdf(new / "a.pdf", "A", [("1 A", ["First new document text."])])
    _pdf(new / "b.pdf", "B", [("1 B", ["Second new document text."])])
    rc = cli.main(["ingest", str(new), "-w", str(ws), "--llm", "openai", "-q"])
    out = capsys.readouterr()
    assert rc == 1
    assert out.err.count("no API key") == 1 and "FAILED" not in out.err
    with pytest.raises(ConfigError):
        DocMaster(ws, get_openai_settings()).check_llm()


def get_openai_settings():
    from docmaster_core.config import get_settings

    return get_settings(llm={"backend": "openai"})


# ---------------------------------------------------------------------------- (c) read-only
@pytest.mark.parametrize("argv", [
    ["docs"], ["tree", "x.pdf"], ["usage"], ["check"], ["check", "--repair"], ["index"],
    ["filter", "safety"], ["ask", "warranty?"], ["eval", "filter", "--cases", "c.tsv"],
])
def test_read_only_commands_do_not_touch_a_non_workspace_folder(tmp_path, capsys, argv):
    folder = tmp_path / "not_a_workspace"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    rc = cli.main(argv[:1] + ["-w", str(folder)] + argv[1:])
    err = capsys.readouterr().err
    assert rc != 0
    assert "no workspace database" in err and "Traceback" not in err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


# ---------------------------------------------------------------------------- (d) duplicates
def test_duplicate_content_names_the_stored_document(ws, pdfs, tmp_path, capsys):
    copy = tmp_path / "kettle_copy.pdf"
    shutil.copy(pdfs / "kettle_manual.pdf", copy)
    rc = cli.main(["ingest", str(copy), "-w", str(ws)])
    out = capsys.readouterr().out
    assert rc == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("skipped"))
    assert "kettle_copy.pdf" in line and "(same content as kettle_manual.pdf, already in workspace)" in line
    # the same file again under its stored name keeps the short reason
    res = _dm(ws).ingest([pdfs / "kettle_manual.pdf"])
    assert res[0].status == "skipped" and res[0].reason == "already in workspace"


# ---------------------------------------------------------------------------- (e) answers
def _ev(eid, text, node_id, section, node_type="TEXT", doc_id="d1"):
    return Evidence(evidence_id=eid, doc_id=doc_id, node_id=node_id, strategy="combined", score=0.5, text=text,
                    page=1, section_path=[section] if section else [], node_type=node_type)


def test_offline_answer_quotes_each_sentence_once_without_heading():
    from docmaster_core.llm import OfflineLLM

    sec = "3 Cleaning and Descaling"
    ev = [
        _ev("E1", f"{sec}\nDescale the kettle every month in hard water areas.", 10, sec, "TITLE"),
        _ev("E2", "Descale the kettle every month in hard water areas.", 11, sec),
        _ev("E3", "descale the kettle every month in hard-water areas", 11, sec, doc_id="d2"),
        _ev("E4", f"{sec} Always unplug the kettle before you descale the kettle.", 12, sec),
    ]
    ans = OfflineLLM(HashingEmbedder()).answer("How often should I descale the kettle?", ev)
    text = ans.text
    assert text.lower().count("descale the kettle every month") == 1, text
    assert sec not in text, text
    assert "Always unplug the kettle before you descale the kettle." in text
    assert all(not c.quote.startswith(sec) for c in ans.citations)


def test_ask_evidence_has_no_repeated_passages_and_footer_counts_sources(ws, capsys):
    dm = _dm(ws)
    res = dm.ask("How often should I descale the kettle?",
                 docs=["kettle_manual.pdf", "northwind_q3.pdf", "paper_sga.pdf"], save=False)
    norm = [" ".join(e.text.lower().split()) for e in res.evidence]
    for i, a in enumerate(norm):
        for j, b in enumerate(norm):
            if i != j and res.evidence[i].doc_id == res.evidence[j].doc_id:
                body = a.split("\n")[-1]
                assert not (len(body) >= 20 and a != b and body in b and res.evidence[i].node_type == "TITLE"
                            and a.startswith(res.evidence[i].section_path[-1].lower())), (a, b)
    sentences = [s for s in res.answer.text.split("]") if s.strip()]
    keys = [s.split("[")[0].strip().lower() for s in sentences]
    assert len(keys) == len(set(keys)), res.answer.text
    assert res.evidence_doc_ids == list(dict.fromkeys(e.doc_id for e in res.evidence))
    rc = cli.main(["ask", "How often should I descale the kettle?", "-w", str(ws), "--docs", "kettle_manual.pdf",
                   "northwind_q3.pdf", "paper_sga.pdf", "--no-save"])
    out = capsys.readouterr().out
    assert rc == 0
    footer = out.strip().splitlines()[-1]
    n_from = len(res.evidence_doc_ids)
    assert f"from {n_from} document" in footer
    if n_from != 3:
        assert "of 3 searched" in footer


def test_dedupe_candidates_replaces_title_by_its_paragraph(ws):
    from docmaster_core.qa.candidates import dedupe_candidates

    view = _dm(ws).retriever().view
    dv = next(d for d in view.docs if d.file_name == "kettle_manual.pdf")
    title = next(n for n in dv.tree.nodes if n.type.value == "TITLE" and n.content.startswith("3 Cleaning"))
    para = next(n for n in dv.tree.nodes if n.parent == title.id and n.type.value == "TEXT")
    assert para.content.split()[0] in (title.summary or "")  # the section summary repeats the paragraph
    got = dedupe_candidates([(0.9, dv.index, title.id, "tree"), (0.8, dv.index, para.id, "semantic")], view, 5)
    assert [c[2] for c in got] == [para.id]
    got = dedupe_candidates([(0.9, dv.index, para.id, "semantic"), (0.8, dv.index, title.id, "tree")], view, 5)
    assert [c[2] for c in got] == [para.id]


# ---------------------------------------------------------------------------- (f) missing vectors
def test_missing_vector_file_skips_one_document_and_repair_rebuilds_it(ws, capsys):
    dm = _dm(ws)
    rec = dm.ws.document("northwind_q3.pdf")
    vec = ws / "vectors" / f"{rec.doc_id}.npy"
    original = np.load(vec)
    vec.unlink()
    clear_corpus_cache()

    run = _dm(ws).filter("revenue", save=False)
    assert sorted(d.file_name for d in run.documents) == ["kettle_manual.pdf", "paper_sga.pdf"]
    assert len(run.warnings) == 1 and "northwind_q3.pdf" in run.warnings[0] and "--repair" in run.warnings[0]
    res = _dm(ws).ask("What should I do before cleaning?", save=False)
    assert res.warnings and "northwind_q3.pdf" in res.warnings[0]
    assert {e.doc_id for e in res.evidence} <= {dm.ws.document("kettle_manual.pdf").doc_id,
                                                 dm.ws.document("paper_sga.pdf").doc_id}
    with pytest.raises(RetrievalError, match="northwind_q3.pdf"):
        _dm(ws).ask("revenue?", docs=["northwind_q3.pdf"], save=False)

    rc = cli.main(["filter", "revenue", "-w", str(ws), "--no-save"])
    captured = capsys.readouterr()
    assert rc == 0 and "warning: northwind_q3.pdf: skipped" in captured.err

    assert cli.main(["check", "-w", str(ws)]) == 1
    assert "--repair" in capsys.readouterr().out
    assert cli.main(["check", "-w", str(ws), "--repair"]) == 0
    out = capsys.readouterr().out
    assert "repaired: rebuilt" in out and "northwind_q3.pdf" in out and "ok: 3 documents" in out
    np.testing.assert_allclose(np.load(vec), original, atol=1e-6)
    clear_corpus_cache()
    run = _dm(ws).filter("revenue", save=False)
    assert len(run.documents) == 3 and run.warnings == []


def test_check_repair_rewrites_indexes_stored_as_json_text(ws, capsys):
    """Issue 37: stored indexes written before schema 2 (float arrays as JSON lists) are
    rewritten in binary by ``check --repair``, which says so; the filter is unchanged."""
    import sqlite3

    before = [d.decisions["combined"].evidence_score for d in _dm(ws).filter("revenue", save=False).documents]
    dm = _dm(ws)
    rows = [(d.doc_id, dm.ws.load_index(d.doc_id)) for d in dm.ws.documents()]
    assert all(isinstance(idx["hyperedge_embeddings"], np.ndarray) for _, idx in rows)
    con = sqlite3.connect(ws / "workspace.sqlite", isolation_level=None)
    for doc_id, idx in rows:  # as an older DocMaster wrote them
        old = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in idx.items()}
        con.execute("UPDATE indexes SET data_json=?, arrays=NULL WHERE doc_id=?", (json.dumps(old), doc_id))
    con.close()
    clear_corpus_cache()
    assert cli.main(["check", "-w", str(ws), "--repair"]) == 0
    assert "rewrote 3 stored indexes with their arrays in binary" in capsys.readouterr().out
    assert cli.main(["check", "-w", str(ws), "--repair"]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    clear_corpus_cache()
    after = [d.decisions["combined"].evidence_score for d in _dm(ws).filter("revenue", save=False).documents]
    assert after == before


def test_reingest_rebuilds_a_missing_vector_file(ws, pdfs):
    dm = _dm(ws)
    rec = dm.ws.document("kettle_manual.pdf")
    (ws / "vectors" / f"{rec.doc_id}.npy").unlink()
    res = dm.ingest([pdfs / "kettle_manual.pdf"])
    assert res[0].status == "skipped" and "vector file was rebuilt" in res[0].reason
    assert dm.ws.check() == []


def test_upload_helper_reports_missing_key_and_duplicates(ws, pdfs, tmp_path, monkeypatch):
    pytest.importorskip("streamlit")
    from ui.ingest import ingest_files

    for var in ("OPENAI_API_KEY", "DOCMASTER_LLM__API_KEY", "DOCMASTER_LLM__BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    copy = tmp_path / "kettle_copy.pdf"
    shutil.copy(pdfs / "kettle_manual.pdf", copy)
    res = ingest_files(DocMaster(ws, get_openai_settings(), embedder=HashingEmbedder()), [copy])
    assert [r["status"] for r in res] == ["failed"] and "no API key" in res[0]["reason"]
    res = ingest_files(_dm(ws), [copy])
    assert res[0]["status"] == "skipped"
    assert res[0]["reason"] == "same content as kettle_manual.pdf, already in workspace"
