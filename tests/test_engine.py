"""One engine (issue 15): the facade's index parameters and re-index policy, the
settings tree, LLM faults that fail fast, structured outputs with their JSON-mode
fallback, and an ingest that says when its LLM steps failed.

The OpenAI path talks HTTP to ``tests/support/fake_openai_server.py``; the refused endpoint is
a port on 127.0.0.1 that was just bound and closed, so nothing listens there.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from docmaster_core import cli
from docmaster_core.config import FilterSettings, IndexSettings, get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import LLMUnreachable
from docmaster_core.index.params import IndexParams
from docmaster_core.llm import make_llm
from docmaster_core.llm.offline import OfflineLLM
from docmaster_core.pipeline import DocMaster
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION, calibration_from_settings
from docmaster_core.store.workspace import Workspace
from support.net import closed_port

try:
    from support.fake_openai_server import FakeOpenAIServer, Reply
    from support.pdf_factory import make_paper_pdf, make_simple_pdf
except ImportError:  # tests imported as a package
    from tests.fake_openai_server import FakeOpenAIServer, Reply
    from tests.pdf_factory import make_paper_pdf, make_simple_pdf


@pytest.fixture(scope="module")
def small_ws(tmp_path_factory) -> Path:
    """Two documents ingested offline with the hashing embedder (no semantic index)."""
    d = tmp_path_factory.mktemp("engine")
    make_simple_pdf(d / "rivers.pdf", "A report on rivers and bridges. " * 15)
    make_simple_pdf(d / "storage.pdf", "Tablets of a distributed storage system are split by size. " * 12)
    dm = DocMaster(d / "ws", get_settings(llm={"backend": "offline"}, parsing={"parser": "pymupdf"}),
                   embedder=HashingEmbedder())
    assert all(r.status == "ingested" for r in dm.ingest([d / "rivers.pdf", d / "storage.pdf"], build_index=False))
    dm.ws.close()
    return d / "ws"


# ------------------------------------------------------------------ LLM faults fail fast
def test_refused_endpoint_fails_in_seconds_with_one_line(small_ws, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    for argv in (["filter", "covers rivers"], ["ask", "What is split?"], ["ingest", str(tmp_path / "new.pdf")]):
        if argv[0] == "ingest":
            make_simple_pdf(tmp_path / "new.pdf", "A new document about lakes. " * 10)
        t0 = time.perf_counter()
        rc = cli.main([*argv, "--workspace", str(small_ws), "--llm", "openai", "--base-url", url])
        took = time.perf_counter() - t0
        cap = capsys.readouterr()
        assert rc != 0 and took < 5.0, (argv[0], rc, took)
        lines = [ln for ln in cap.err.splitlines() if ln.strip()]
        assert lines == [f"error: cannot reach the LLM endpoint {url}: Connection refused"], (argv[0], cap.err)
        assert "Traceback" not in cap.err and "retrying" not in cap.err
    # the failed ingest touched nothing: no document, no recorded failure, no run
    ws = Workspace(small_ws)
    assert [d.file_name for d in ws.documents()] == ["rivers.pdf", "storage.pdf"]
    assert ws.failures() == [] and ws.runs() == []


def test_unreachable_endpoint_is_not_retried_and_stays_unreachable(monkeypatch):
    st = get_settings(llm={"backend": "openai", "base_url": f"http://127.0.0.1:{closed_port()}/v1",
                           "api_key": "sk-test-0123456789", "max_retries": 4})
    llm = make_llm(st.llm, cache_dir=None, backoff_base=1.0, backoff_max=5.0, seed=0)
    sleeps = []
    monkeypatch.setattr("docmaster_core.llm.transport.time.sleep", sleeps.append)
    with pytest.raises(LLMUnreachable, match="cannot reach the LLM endpoint"):
        llm.summarize("A passage about rivers. " * 40)
    with pytest.raises(LLMUnreachable):  # remembered: no second connection attempt
        llm.check_reachable()
    assert sleeps == []  # no backoff: not retried
    assert llm.calls_sent == 0  # a refused connection is not a call


def test_dns_failure_names_the_host():
    st = get_settings(llm={"backend": "openai", "base_url": "http://docmaster-no-such-host.invalid/v1"})
    llm = make_llm(st.llm, cache_dir=None)
    t0 = time.perf_counter()
    with pytest.raises(LLMUnreachable, match=r"docmaster-no-such-host\.invalid"):
        llm.check_reachable()
    assert time.perf_counter() - t0 < 5.0


# ------------------------------------------------------------------ structured outputs
def _summary_reply(req) -> Reply:
    return Reply(content=json.dumps({"summary": "Rivers and bridges."}))


def test_structured_outputs_with_the_task_schema():
    with FakeOpenAIServer(_summary_reply) as srv:
        llm = make_llm(get_settings(llm={"backend": "openai", "base_url": srv.base_url}).llm, cache_dir=None)
        assert llm.summarize("A passage about rivers and bridges. " * 20) == "Rivers and bridges."
        fmt = srv.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["summary"]["type"] == "string"


def test_server_without_structured_outputs_gets_json_mode_with_schema_in_prompt():
    def responder(req):
        if req.body["response_format"]["type"] == "json_schema":
            return Reply(status=400, body={"error": {"message": "response_format json_schema is not supported",
                                                     "type": "invalid_request_error"}})
        return _summary_reply(req)

    with FakeOpenAIServer(responder) as srv:
        llm = make_llm(get_settings(llm={"backend": "openai", "base_url": srv.base_url}).llm, cache_dir=None)
        assert llm.summarize("A passage about rivers and bridges. " * 20) == "Rivers and bridges."
        assert llm.summarize("Another passage, on lakes and dams. " * 20) == "Rivers and bridges."
        kinds = [r.body["response_format"]["type"] for r in srv.requests]
        prompt = " ".join(m["content"] for m in srv.requests[-1].body["messages"])
    assert kinds == ["json_schema", "json_object", "json_object"]  # rejected once, then JSON mode
    assert '"summary"' in prompt  # the schema travels in the prompt
    # JSON mode carries the schema too (llama-cpp-python enforces it as a grammar)
    assert srv.requests[1].body["response_format"]["schema"]["properties"]["summary"]["type"] == "string"


def test_llama_cpp_style_500_on_json_schema_is_not_retried_and_a_rejected_schema_key_gives_plain_json_mode():
    """llama-cpp-python 0.3 answers ``"type": "json_schema"`` with HTTP 500 and its validation error (seen on
    the real server, issue 38): that is a rejected format, not a server fault to retry. A server that also
    rejects the ``schema`` key of JSON mode gets plain JSON mode."""
    llama_500 = ("1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                 "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}")

    def responder(req):
        fmt = req.body["response_format"]
        if fmt["type"] == "json_schema":
            return Reply(status=500, body={"error": {"message": llama_500, "type": "internal_server_error"}})
        if "schema" in fmt:
            return Reply(status=400, body={"error": {"message": "unknown field response_format.schema"}})
        return _summary_reply(req)

    with FakeOpenAIServer(responder) as srv:
        llm = make_llm(get_settings(llm={"backend": "openai", "base_url": srv.base_url, "max_retries": 3}).llm,
                       cache_dir=None)
        assert llm.summarize("A passage about rivers and bridges. " * 20) == "Rivers and bridges."
        assert llm.summarize("Another passage, on lakes and dams. " * 20) == "Rivers and bridges."
        fmts = [r.body["response_format"] for r in srv.requests]
    assert [(f["type"], "schema" in f) for f in fmts] == [
        ("json_schema", False), ("json_object", True), ("json_object", False), ("json_object", False)]


# ------------------------------------------------------------------ ingest says what failed
def test_ingest_whose_llm_fails_exits_4_and_says_how_to_redo(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    monkeypatch.setenv("DOCMASTER_LLM__MAX_RETRIES", "0")
    make_simple_pdf(tmp_path / "doc.pdf", "A document about rivers. " * 30 + "Another sentence about bridges. " * 30)
    with FakeOpenAIServer(lambda req: Reply(status=500)) as srv:
        rc = cli.main(["ingest", str(tmp_path / "doc.pdf"), "-w", str(tmp_path / "ws"), "--llm", "openai",
                       "--base-url", srv.base_url, "--quiet"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 4
    assert out[-1].startswith("incomplete: the LLM failed for 1 document(s): 1 have fallback summaries, 1 no semantic index")
    assert f"docmaster index -w {tmp_path / 'ws'} --summaries" in out[-1]
    # the document is stored; redoing the LLM steps (offline here) completes it
    rc = cli.main(["index", "-w", str(tmp_path / "ws"), "--summaries"])
    out = capsys.readouterr().out
    assert rc == 0 and "summarised 1 document(s) again; 0 still have fallback summaries" in out


# ------------------------------------------------------------------ index parameters and re-index policy
def test_index_params_one_typed_key():
    s = IndexSettings()
    p = IndexParams.from_settings(s, "offline", alpha=1)
    assert p.alpha == 1.0 and isinstance(p.alpha, float)
    assert p.key() == IndexParams.from_settings(s, "offline", alpha=1.0).key() == Workspace.params_key(dict(p))
    assert p.key() != p.replace(K=3).key() and p.key() != p.replace(llm="gpt-4o-mini").key()
    assert {**p} == {**s.model_dump(), "alpha": 1.0, "llm": "offline"}
    with pytest.raises(TypeError, match="unknown index parameter"):
        IndexParams.from_settings(s, "offline", beta=2)
    with pytest.raises(ValueError):
        IndexParams.from_settings(s, "offline", alpha=1.5)


def test_cli_reindex_reuses_hyperedge_groups(tmp_path, embedder, monkeypatch, capsys):
    """``docmaster index --alpha ...`` follows the app's policy: a stored index of the same
    backend and embedder lends its hyper-edges, so no paragraph is regrouped."""
    make_paper_pdf(tmp_path / "paper.pdf")
    dm = DocMaster(tmp_path / "ws", get_settings(parsing={"parser": "pymupdf"}), embedder=embedder)
    (r,) = dm.ingest([tmp_path / "paper.pdf"])
    assert r.status == "ingested" and dm.load_index(r.doc_id) is not None
    calls = []
    real = OfflineLLM.group_paragraphs

    def counting(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(OfflineLLM, "group_paragraphs", counting)
    monkeypatch.setattr("docmaster_core.cli.commands.open_docmaster", lambda args, create=False: dm)
    assert cli.main(["index", "-w", str(tmp_path / "ws"), "--alpha", "0.3", "--K", "3"]) == 0
    capsys.readouterr()
    new = dm.load_index(r.doc_id, {"alpha": 0.3, "K": 3})
    old = dm.load_index(r.doc_id)
    assert new is not None and calls == []
    assert [h.node_ids for h in new.hyperedges] == [h.node_ids for h in old.hyperedges]
    # --force regroups
    assert cli.main(["index", "-w", str(tmp_path / "ws"), "--alpha", "0.3", "--K", "3", "--force"]) == 0
    assert calls


# ------------------------------------------------------------------ one settings tree
def test_filter_settings_are_the_calibrated_rule(monkeypatch):
    assert calibration_from_settings(FilterSettings()) == DEFAULT_CALIBRATION
    monkeypatch.setenv("DOCMASTER_FILTER__REL_RHO", "0.5")
    monkeypatch.setenv("DOCMASTER_UI_UMAP", "off")
    monkeypatch.setenv("DOCMASTER_WORKSPACE_ROOT", "/srv/docs")
    s = get_settings()
    assert calibration_from_settings(s.filter).rel_rho == 0.5
    assert s.ui_umap is False and s.workspace_root == "/srv/docs"
