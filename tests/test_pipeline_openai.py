"""Ingest + index through the OpenAI-compatible path against a local fake server
(real HTTP, real ``openai`` client): summaries for every node, anchor labelling costs at
most k calls per document (usage report), and a second run costs zero requests (cache)."""
from __future__ import annotations

import json
import re

import pytest

from docmaster_core.config import get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.llm.cache import usage_report
from docmaster_core.tree.summaries import summarize_tree
from docmaster_core.pipeline import DocMaster
from support.fake_openai_server import FakeOpenAIServer, Reply, documents_in, user_text
from support.pdf_factory import make_paper_pdf

KEY = "sk-test-PIPELINE-abcdef0123456789"


def _respond(req) -> Reply:
    system = " ".join(str(m.get("content", "")) for m in req.messages if m.get("role") == "system")
    text = user_text(req)
    docs = documents_in(text)
    if "label pairs of paragraphs" in system:
        n = len(re.findall(r'<pair index="\d+">', text))
        return Reply(json.dumps({"labels": [{"pair": i, "must_link": i % 2 == 0} for i in range(n)]}))
    if "group the paragraphs" in system:
        n = len(docs)
        summary = " ".join(["grouped paragraphs about the method and its evaluation"] * 5)
        return Reply(json.dumps({"groups": [{"members": list(range(n)), "summary": summary}]}))
    first = docs[0][1].split() if docs else ["section"]
    return Reply(json.dumps({"summary": "Summary: " + " ".join(first[:12])}))


@pytest.fixture()
def server():
    with FakeOpenAIServer(responder=_respond) as s:
        yield s


def _dm(ws, server, k=6):
    settings = get_settings(
        llm={"backend": "openai", "base_url": server.base_url, "api_key": KEY, "model": "gpt-4o-mini",
             "timeout": 5.0, "max_retries": 1},
        index={"k": k, "K": 3},
    )
    return DocMaster(ws, settings, embedder=HashingEmbedder())


def test_openai_path_ingest_index_usage_and_cache(tmp_path, server):
    pdf = tmp_path / "paper.pdf"
    make_paper_pdf(pdf)
    dm = _dm(tmp_path / "ws", server, k=6)
    res = dm.ingest([pdf])
    assert res[0].status == "ingested", res[0].reason
    doc_id = res[0].doc_id
    tree = dm.ws.load_tree(doc_id)
    assert all(n.summary.strip() for n in tree.nodes)
    # section summaries came from the model (our fake marks them), built from children
    assert any(n.summary.startswith("Summary:") for n in tree.nodes if n.type.value == "TITLE")

    first_count = server.count
    assert first_count > 0
    rep = usage_report(dm.ws.path)
    label = rep["by_task"].get("label_pairs", {})
    assert 1 <= label.get("calls", 0) <= 6  # <= k calls for k anchor pairs
    assert doc_id in rep["by_document"]
    assert rep["total"]["prompt_tokens"] > 0
    idx = dm.load_index(doc_id)
    assert idx is not None and idx.stats["must"] + idx.stats["cannot"] == idx.stats["anchor_pairs"] <= 6
    assert idx.stats["must"] >= 1 and idx.stats["cannot"] >= 1  # labels came from the model's answer

    # a second index build and a second summary run: zero requests (response cache)
    dm2 = _dm(tmp_path / "ws", server, k=6)
    dm2.index_document(doc_id, force=True)
    summarize_tree(dm2.ws.load_tree(doc_id), dm2.llm)
    assert server.count == first_count

    # the API key is never stored in the workspace
    for f in dm.ws.path.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
