"""Curating the collection (issue 24): ``DocMaster.remove`` and ``docmaster rm`` take
documents out of a workspace with their nodes, vectors, indexes and collection store,
``docmaster check`` passes afterwards, bad input changes nothing, saved filter runs that
name a removed document still compare, and ``docmaster ask`` says which documents it
answered from (``--all`` for every document).

The workspace is built here from the toy documents of ``test_retrieval`` with the real
embedder (the CLI opens it with the same default model) and the offline LLM.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from docmaster_core import cli
from docmaster_core.errors import WorkspaceError, WorkspaceLockedError
from docmaster_core.pipeline import DocMaster
from docmaster_core.retrieval.corpus import clear_corpus_cache
from docmaster_core.store.collection import collection_dir
from docmaster_core.store.workspace import Workspace
from support.toy import TOY_DOCS, build_toy_workspace

N = 8  # documents in the test workspace: enough for the offline filter's cut to keep the manual


def _rows(ws: Workspace, table: str, doc_id: str) -> int:
    con = sqlite3.connect(ws.db_path)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table} WHERE doc_id=?", (doc_id,)).fetchone()[0]
    finally:
        con.close()


def _manifest_docs(ws: Workspace) -> list[str]:
    m = json.loads((collection_dir(ws) / "manifest.json").read_text())
    return [e[0] for e in m["docs"]]


@pytest.fixture
def toy_dm(tmp_path, embedder):
    clear_corpus_cache()
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:N])
    dm = DocMaster(ws, embedder=embedder)
    yield dm
    ws.close()
    clear_corpus_cache()


def test_remove_takes_out_nodes_vectors_indexes_and_store(toy_dm, capsys):
    dm = toy_dm
    ws = dm.ws
    docs = {d.file_name: d for d in dm.documents()}
    gone = docs["rag_qa.pdf"]
    for d in docs.values():
        dm.build_index(d.doc_id)
    dm.wait_for_saves()
    dm.index_collection()
    dm.filter("The paper evaluates on question answering benchmarks.")  # a saved run naming every document
    assert dm.ask("Which benchmarks are used?", save=False).evidence  # the collection store exists and is read
    assert gone.doc_id in _manifest_docs(ws)
    assert _rows(ws, "indexes", dm.COLLECTION_KEY) == 1

    removed = dm.remove(["rag_qa.pdf", gone.doc_id])  # by file name and by id: removed once
    assert [r.doc_id for r in removed] == [gone.doc_id]
    assert gone.doc_id not in {d.doc_id for d in dm.documents()} and len(dm.documents()) == N - 1
    for table in ("nodes", "edges", "indexes"):
        assert _rows(ws, table, gone.doc_id) == 0, table
    assert _rows(ws, "indexes", dm.COLLECTION_KEY) == 0  # the collection index was built over it
    assert not (ws.vectors_dir / f"{gone.doc_id}.npy").exists()
    assert gone.doc_id not in _manifest_docs(ws) and len(_manifest_docs(ws)) == N - 1  # store rebuilt already
    assert ws.check() == []  # leftovers included
    assert cli.main(["check", "-w", str(ws.path)]) == 0
    assert f"ok: {N - 1} documents, 0 problems" in capsys.readouterr().out
    # retrieval follows: the removed document is never searched
    res = dm.ask("Which open-domain question answering benchmarks are used?", all_docs=True, save=False)
    assert gone.doc_id not in res.doc_ids and gone.doc_id not in {e.doc_id for e in res.evidence}
    assert res.doc_source == "all" and res.to_dict()["scope"] == f"all {N - 1} documents"
    # the other indexes are intact
    assert all(dm.load_index(d) is not None for d in {d.doc_id for d in dm.documents()})


def test_remove_unknown_or_ambiguous_changes_nothing(toy_dm):
    dm = toy_dm
    before = [d.doc_id for d in dm.documents()]
    with pytest.raises(WorkspaceError, match="no document 'nope.pdf'"):
        dm.remove(["cnn_imagenet.pdf", "nope.pdf"])
    with pytest.raises(WorkspaceError, match="no document to remove"):
        dm.remove([])
    assert [d.doc_id for d in dm.documents()] == before
    assert all((dm.ws.vectors_dir / f"{d}.npy").exists() for d in before)


def test_remove_waits_for_the_write_lock(toy_dm):
    from support.locks import other_writer

    dm = toy_dm
    with other_writer(dm.ws.path, "ingest"):  # another process is writing
        with pytest.raises(WorkspaceLockedError, match="ingest"):
            dm.remove("cnn_imagenet.pdf")
        assert cli.main(["rm", "cnn_imagenet.pdf", "-w", str(dm.ws.path)]) == 3
    assert len(dm.documents()) == N


def test_cli_rm_check_compare_and_ask_scope(toy_dm, capsys):
    dm = toy_dm
    w = str(dm.ws.path)
    docs = {d.file_name: d for d in dm.documents()}
    # two saved filter runs; the first keeps the RAG paper
    assert cli.main(["filter", "The paper evaluates on question answering benchmarks.", "-w", w, "--json"]) == 0
    run_a = json.loads(capsys.readouterr().out)
    assert cli.main(["filter", "Does the document give operating, cleaning or safety instructions for a household appliance?", "-w", w, "--json"]) == 0
    run_b = json.loads(capsys.readouterr().out)
    assert docs["rag_qa.pdf"].doc_id in run_a["matches"]
    kept_b = list(run_b["matches"])
    assert kept_b and docs["rag_qa.pdf"].doc_id not in kept_b

    # ask defaults to the last filter run and says so on stderr; --all searches every document
    q = "Which open-domain question answering benchmarks are used?"
    assert cli.main(["ask", q, "-w", w, "--no-save"]) == 0
    out, err = capsys.readouterr()
    n_b = len(kept_b)
    scope_b = f"the {n_b} of {N} documents kept by filter run {run_b['run_id']}"
    assert f"answering from: {scope_b}" in err.splitlines()[0]
    assert "not found" in out.splitlines()[-1]  # the manual does not say
    assert "closest passages (they do not answer the question):" in out
    assert "--all" in err and ("were not" in err or "was not" in err)
    assert cli.main(["ask", q, "-w", w, "--all", "--no-save"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == f"answering from: all {N} documents"
    assert "Natural Questions" in out and "rag_qa.pdf" in out
    with pytest.raises(SystemExit) as e:  # argparse: not both
        cli.main(["ask", q, "-w", w, "--all", "--docs", "rag_qa.pdf"])
    assert e.value.code == 2
    capsys.readouterr()

    # rm: unknown document, one line, nothing removed
    assert cli.main(["rm", "rag_qa.pdf", "missing.pdf", "-w", w]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("error: no document 'missing.pdf'")
    assert len(dm.documents()) == N
    # rm by file name and by doc id
    assert cli.main(["rm", "rag_qa.pdf", docs["spanner_db.pdf"].doc_id, "-w", w]) == 0
    out = capsys.readouterr().out
    assert f"removed  {docs['rag_qa.pdf'].doc_id}  rag_qa.pdf" in out and f"2 removed, {N - 2} documents left" in out
    assert cli.main(["check", "-w", w, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ok"] and rep["documents"] == N - 2 and not rep["leftovers"]
    assert cli.main(["docs", "-w", w]) == 0
    assert "rag_qa.pdf" not in capsys.readouterr().out

    # the saved runs still compare; removed documents are marked
    assert cli.main(["filter", "--compare", str(run_a["run_id"]), str(run_b["run_id"]), "-w", w]) == 0
    out = capsys.readouterr().out
    assert "rag_qa.pdf (removed from the workspace since)" in out
    assert cli.main(["filter", "--compare", str(run_a["run_id"]), str(run_b["run_id"]), "-w", w, "--json"]) == 0
    cmp = json.loads(capsys.readouterr().out)
    assert docs["rag_qa.pdf"].doc_id in cmp["removed"]
    # ask over the last filter run skips the removed documents
    assert cli.main(["ask", q, "-w", w, "--no-save", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["doc_source"] == "last-filter-run" and res["source_run"] == run_b["run_id"]
    assert docs["rag_qa.pdf"].doc_id not in res["doc_ids"] and res["n_workspace"] == N - 2


def test_ask_after_the_last_runs_documents_were_removed(toy_dm, capsys):
    dm = toy_dm
    w = str(dm.ws.path)
    run = dm.filter("Does the document give operating, cleaning or safety instructions for a household appliance?")
    kept = run.matches()
    assert kept
    dm.remove(kept)
    assert cli.main(["ask", "How do I clean it?", "-w", w]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matched no document that is in the workspace" in err and "--all" in err
    assert cli.main(["ask", "How do I clean it?", "-w", w, "--all", "--no-save"]) == 0
    assert capsys.readouterr().err.startswith(f"answering from: all {N - len(kept)} documents")


def test_scope_line_words():
    from docmaster_core.qa.ask import scope_line

    assert scope_line("all", 9, 9) == "all 9 documents"
    # "run 7 (of 9)" read as "run 7 of 9 runs" (a newcomer)
    assert scope_line("last-filter-run", 3, 9, 7) == "the 3 of 9 documents kept by filter run 7"
    assert scope_line("last-filter-run", 1, 9, 7) == "the 1 of 9 documents kept by filter run 7"
    assert scope_line("last-filter-run", 9, 9, 7) == "the 9 documents kept by filter run 7"
    assert scope_line("given", 2, 9) == "2 chosen documents (of 9)"
    assert scope_line("given", 9, 9) == "all 9 documents"
