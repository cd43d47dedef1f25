"""The API key never leaves the client (issue 7): not in logs, workspace files,
exceptions or CLI output.

An OpenAI-path run (``docmaster ingest``, ``filter``, ``ask``, ``usage``, ``check`` through
:func:`docmaster_core.cli.commands.main`, key from ``DOCMASTER_LLM__API_KEY``) against the fake
server, which answers some requests with errors that echo the key (as real endpoints
do for a wrong key) and one summary whose text contains the key. Logging is captured
at DEBUG for every logger (``openai``, ``httpx`` included). Afterwards the bytes of
every file of the workspace (SQLite databases, WAL files, vector files) are searched.
"""
from __future__ import annotations

import json
import logging
import re
import traceback

import pytest

from docmaster_core import cli
from docmaster_core.config import LLMSettings, get_settings
from docmaster_core.errors import LLMError
from docmaster_core.llm import make_llm, prompts

try:
    from support.fake_openai_server import FakeOpenAIServer, Reply, documents_in, user_text
    from support.pdf_factory import make_paper_pdf, make_simple_pdf
except ImportError:  # tests imported as a package
    from tests.fake_openai_server import FakeOpenAIServer, Reply, documents_in, user_text
    from tests.pdf_factory import make_paper_pdf, make_simple_pdf

KEY = "sk-proj-SECRETkey0123456789abcdefXYZ"


def _task(req) -> str:
    system = req.messages[0]["content"]
    return next((n for n, s in prompts.SPECS.items() if s.system == system), "?")


class Responder:
    """Valid answers, except: every 4th request an error echoing the key, and the
    first summary contains the key."""

    def __init__(self):
        self.n = 0
        self.echoed = False

    def __call__(self, req):
        self.n += 1
        text = user_text(req)
        docs = documents_in(text)
        ids = [a["id"] for a, _ in docs]
        if self.n % 4 == 0:
            status = 401 if self.n % 8 == 0 else 500
            return Reply(status=status, body={"error": {"message": f"Incorrect API key provided: {KEY}", "type": "x"}})
        task = _task(req)
        if task in ("summarize", "summarize_section"):
            words = " ".join(" ".join(i for _, i in docs).split()[:20]) or "summary"
            if not self.echoed:
                self.echoed = True
                words += f" (debug: key {KEY})"
            return json.dumps({"summary": words})
        if task == "label_pairs":
            return json.dumps({"labels": [{"pair": i, "must_link": i % 2 == 0}
                                          for i in range(len(re.findall(r"<pair index=", text)))]})
        if task == "group_paragraphs":
            return json.dumps({"groups": [{"members": list(range(len(docs))), "summary": "All paragraphs together."}]})
        if task == "decide":
            return json.dumps({"decision": True, "rationale": "ok", "evidence_ids": ids[:1]})
        if task == "answer":
            return json.dumps({"answer": f"Answer [{ids[0]}].", "citations": [{"evidence_id": ids[0]}]})
        return Reply(content="Streamed answer [E1].")


def test_api_key_never_leaks(tmp_path, monkeypatch, capsys, caplog):
    src = tmp_path / "in"
    src.mkdir()
    make_paper_pdf(src / "paper.pdf")
    make_simple_pdf(src / "note.pdf", "A short note about rivers and bridges. " * 8)
    ws = tmp_path / "ws"
    caplog.set_level(logging.DEBUG)  # root: openai, httpx, httpcore and docmaster loggers
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("DOCMASTER_LLM__API_KEY", KEY)
    monkeypatch.setenv("DOCMASTER_LLM__MAX_RETRIES", "0")
    monkeypatch.setenv("DOCMASTER_LLM__TIMEOUT", "5")
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    outputs = []
    with FakeOpenAIServer(Responder()) as srv:
        llm_args = ["--llm", "openai", "--base-url", srv.base_url]
        for argv in (["ingest", str(src), "--json"], ["ingest", str(src)], ["docs"], ["filter", "rivers and bridges", "-v"],
                     ["filter", "rivers", "--json"], ["ask", "What is it about?", "--docs", "note.pdf"],
                     ["ask", "What is the method?", "--docs", "paper.pdf", "--json"], ["usage", "--json"], ["check"]):
            extra = llm_args if argv[0] in ("ingest", "filter", "ask") else []
            rc = cli.main([argv[0], *argv[1:], "--workspace", str(ws), *extra])
            cap = capsys.readouterr()
            outputs.append((argv[0], rc, cap.out + cap.err))
        # the key was really used
        assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in srv.requests)
        n_requests = srv.count
        # exceptions raised by the LLM layer: message, repr and printed traceback
        llm = make_llm(get_settings(llm={"backend": "openai", "base_url": srv.base_url}).llm, cache_dir=None)
        srv.enqueue(Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {KEY}", "type": "x"}}))
        with pytest.raises(LLMError) as info:
            llm.summarize("some passage to summarise")
    assert n_requests > 10
    # 4 = stored, but some LLM steps failed (the responder answers some requests with HTTP 500)
    assert outputs[0][1] in (0, 4) and all(rc in (0, 1, 4) for _, rc, _ in outputs)
    for cmd, _, text in outputs:
        assert KEY not in text, cmd
        assert "Traceback" not in text, cmd
    assert KEY not in caplog.text
    assert any("HTTP 500" in r.getMessage() or "HTTP 401" in r.getMessage() for r in caplog.records)  # errors were logged
    err = info.value
    assert KEY not in str(err) and KEY not in repr(err) and "401" in str(err)
    assert KEY not in "".join(traceback.format_exception(err))
    assert KEY not in repr(llm) and KEY not in repr(get_settings()) and KEY not in get_settings().model_dump_json()
    # every byte of the workspace
    files = [p for p in ws.rglob("*") if p.is_file()]
    assert any(p.name.startswith("workspace.sqlite") for p in files) and any(p.suffix == ".npy" for p in files)
    for p in files:
        data = p.read_bytes()
        assert KEY.encode() not in data and KEY.encode("utf-16-le") not in data, p
    # the echoed summary was scrubbed, not stored
    from docmaster_core.store.workspace import Workspace

    w = Workspace(ws, create=False)
    summaries = [n.summary for d in w.documents() for n in w.load_tree(d.doc_id).nodes]
    assert any("(debug: key ***)" in s for s in summaries)


def test_key_from_openai_api_key_env_is_not_shown(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    s = LLMSettings(backend="openai")
    assert s.resolved_api_key() == KEY
    llm = make_llm(s, cache_dir=None)
    assert KEY not in repr(llm) and KEY not in repr(s) and KEY not in str(s.model_dump())
