"""Crash safety of the ingest (issue 7), short version of ``scripts/crash_ingest.py``.

A real ``python -m docmaster_core ingest`` subprocess on generated PDFs (hashing
embedder via ``DOCMASTER_EMBEDDING__MODEL=hashing``, offline LLM) is killed with
SIGKILL right after a document was committed, twice; after each kill the workspace
opens and passes ``docmaster check``, every document a concurrent reader saw committed
is still there and identical to an uninterrupted reference run, and a rerun
completes the rest (documents and their semantic indexes).
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from docmaster_core import cli
from docmaster_core.store.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("crash_ingest", REPO / "scripts" / "crash_ingest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_kill_9_during_ingest_loses_nothing_and_rerun_completes(tmp_path):
    mod = _script()
    inputs = mod.generated_inputs(tmp_path / "gen", 3)
    rep = mod.run(2, seed=1, inputs=inputs, workdir=tmp_path / "work", trigger="docs", in_process=True)
    assert rep["kills"] == 2, rep
    assert rep["reference_documents"] == 3 and rep["reference_failed"] == 0
    for key in ("check_failures", "open_failures", "documents_lost", "half_documents", "signature_mismatches",
                "final_incomplete", "final_unindexed", "final_leftovers", "reader_errors"):
        assert rep[key] == 0, (key, rep)
    kills = [e for e in rep["events"] if "kill" in e]
    assert all(e["check_ok"] for e in kills), kills
    # every kill came after the reader had seen a newly committed document, so there was
    # something to lose; all of it survived (documents_lost == 0 above)
    assert all(e["seen_before_kill"] >= 1 for e in kills), kills
    assert rep["rounds_completed"] >= 1 and rep["ok"]


def test_interrupted_writes_are_leftovers_not_damage(tmp_path, capsys):
    """An orphan vector file (crash between vector write and commit) and a temporary
    file do not fail ``docmaster check``; they are listed, and the next ingest (which
    holds the write lock) removes them."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.pdf_factory import make_simple_pdf

    from docmaster_core.config import get_settings
    from docmaster_core.embedding.embedders import HashingEmbedder
    from docmaster_core.pipeline import DocMaster

    ws = Workspace(tmp_path / "ws")
    (ws.vectors_dir / "0123456789abcdef.npy").write_bytes(b"\x93NUMPY")
    (ws.vectors_dir / ".0123456789abcdef.4242.tmp.npy").write_bytes(b"")
    assert cli.main(["check", "--workspace", str(tmp_path / "ws"), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["ok"] and rep["problems"] == [] and len(rep["leftovers"]) == 2
    dm = DocMaster(ws, get_settings(llm={"backend": "offline"}), embedder=HashingEmbedder())
    (r,) = dm.ingest([make_simple_pdf(tmp_path / "s.pdf", "A page about leftovers and repairs. " * 5)],
                     build_index=False)
    assert r.status == "ingested"
    assert ws.leftovers() == [] and ws.check() == []


def test_stored_but_unindexed_document_is_indexed_on_rerun(tmp_path):
    """A kill between the store and the index step leaves a document without its
    semantic index; the rerun skips parsing it but completes the index."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.pdf_factory import make_paper_pdf

    from docmaster_core.config import get_settings
    from docmaster_core.embedding.embedders import HashingEmbedder
    from docmaster_core.pipeline import DocMaster

    p = make_paper_pdf(tmp_path / "paper.pdf")["path"]
    dm = DocMaster(tmp_path / "ws", get_settings(llm={"backend": "offline"}), embedder=HashingEmbedder())
    (r,) = dm.ingest([p], build_index=False)  # as if killed right after the commit
    assert dm.load_index(r.doc_id) is None
    (again,) = dm.ingest([p])
    assert again.status == "skipped" and "index was completed" in again.reason
    assert dm.load_index(r.doc_id) is not None
