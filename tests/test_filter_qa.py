"""Filtering (SPEC F6) and question answering (SPEC F7) on the toy collection."""
from __future__ import annotations

import json
import threading

import pytest

from docmaster_core.config import RetrievalSettings
from docmaster_core.errors import LLMBudgetExceeded, RetrievalError
from docmaster_core.llm.base import UsageTracker
from docmaster_core.model import Answer, Citation, Decision
from docmaster_core.filtering.run import compare_runs, run_filter
from docmaster_core.qa.ask import ask, decompose_question, select_documents
from docmaster_core.retrieval.retriever import Retriever
from support.toy import APPLIANCE, CONDITIONS, IMAGENET, TOY_DOCS, build_toy_workspace



@pytest.fixture(scope="module")
def toy(tmp_path_factory, embedder):
    ws = build_toy_workspace(tmp_path_factory.mktemp("toyfilter"), embedder)
    return ws, Retriever(ws, embedder, RetrievalSettings())


def _name(ws, doc_id):
    return ws.document(doc_id).file_name


def _matches(ws, run, strategy="combined"):
    return {_name(ws, d) for d in run.matches(strategy)}


# ------------------------------------------------------------------------------ offline filter
def test_offline_filter_finds_the_right_documents(toy, embedder):
    ws, r = toy
    run = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r, save=False,
                     strategies=["tree", "semantic", "hyperedge", "combined", "flat"])
    assert run.backend == "offline-calibrated"
    assert _matches(ws, run) == {"cnn_imagenet.pdf"}
    # the bag-of-words paper cites ImageNet only in its references: not a match
    assert "text_classifier.pdf" not in _matches(ws, run)
    for d in run.documents:
        assert set(d.decisions) == {"tree", "semantic", "hyperedge", "combined", "flat"}
        for s, dec in d.decisions.items():
            given = {e.evidence_id for e in d.evidence[s]}
            assert dec.evidence_ids and set(dec.evidence_ids) <= given
            assert dec.tokens == 0 and dec.rationale
    assert run.tokens == {s: 0 for s in run.strategies}
    assert run.timings["embed_retrieve"] > 0
    # the rationale is written for a person: verdict, strength, sections of the passages, the cut explained
    for d in run.documents:
        for s, dec in d.decisions.items():
            why = dec.rationale
            if not d.evidence[s]:
                continue
            assert why.startswith(("Kept, rank ", "Not kept, rank ")), why
            assert ("support. Its " in why or "uncertain. Its " in why) and " closest passage" in why and "Closest passage, p. " in why and "(evidence " in why
            assert "robust z" not in why and "rule z" not in why
            assert "0 = typical for this collection" in why
            sections = {e.evidence_id: e.section_path for e in d.evidence[s]}
            named = [p[-1] for p in sections.values() if p]
            assert not named or any(f'"{n[:40]}' in why for n in named), why


@pytest.mark.parametrize("condition", CONDITIONS[1:])
def test_offline_filter_other_conditions(toy, embedder, condition):
    ws, r = toy
    expected = {
        APPLIANCE: "coffee_manual.pdf",
        CONDITIONS[2]: "rag_qa.pdf",
        CONDITIONS[3]: "annual_report.pdf",
        CONDITIONS[4]: "fact_check.pdf",
        CONDITIONS[5]: "rl_agent.pdf",
    }[condition]
    run = run_filter(ws, embedder, None, RetrievalSettings(), condition, retriever=r, save=False)
    assert expected in _matches(ws, run)
    assert len(_matches(ws, run)) <= 2


@pytest.mark.slow
def test_planted_instruction_does_not_change_the_decision(tmp_path, embedder):
    """A document that tells the model to answer true is decided like one without it."""
    from docmaster_core.llm import make_llm
    from docmaster_core.config import LLMSettings

    def decisions(docs):
        ws = build_toy_workspace(tmp_path / f"w{len(list(tmp_path.iterdir()))}", embedder, docs)
        r = Retriever(ws, embedder, RetrievalSettings())
        llm = make_llm(LLMSettings(), cache_dir=None, embedder=embedder)
        out = {}
        for c in CONDITIONS:
            for decider in ("calibrated", "llm"):
                run = run_filter(ws, embedder, llm, RetrievalSettings(), c, retriever=r, decider=decider, save=False)
                d = next(x for x in run.documents if x.file_name == "gardening.pdf")
                out[(c, decider)] = {s: d.decision(s) for s in run.strategies}
        return out

    planted = decisions(TOY_DOCS)
    clean_docs = [t if t[0] != "gardening.pdf" else
                  (t[0], t[1], [(s, [p for p in ps if "IGNORE" not in p]) for s, ps in t[2]]) for t in TOY_DOCS]
    clean = decisions(clean_docs)
    assert planted == clean
    assert not any(v for dec in planted.values() for v in dec.values())


def test_filter_run_is_saved_and_runs_compare(toy, embedder):
    ws, r = toy
    a = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r, top_k=8)
    b = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r, top_k=2, strategy="semantic")
    runs = {x["run_id"]: x for x in ws.runs("filter")}
    assert a.run_id in runs and b.run_id in runs
    saved = runs[a.run_id]
    assert saved["params"]["condition"] == IMAGENET and saved["params"]["top_k"] == 8
    assert {d["doc_id"] for d in saved["result"]["documents"]} == {d.doc_id for d in a.documents}
    assert saved["result"]["matches"] == a.matches()
    cmp = compare_runs(runs[a.run_id], runs[b.run_id])
    assert cmp["params_changed"]["top_k"] == [8, 2]
    assert cmp["params_changed"]["strategy"] == ["combined", "semantic"]
    assert 0.0 <= cmp["agreement"] <= 1.0
    assert {x["doc_id"] for x in cmp["both"] + cmp["only_a"]} == set(a.matches())
    # the saved run keeps its evidence texts whole (a reopened Filter page shows them) ...
    assert [e.text for d in a.documents for es in d.evidence.values() for e in es] == \
        [e["text"] for d in saved["result"]["documents"] for es in d["evidence"].values() for e in es]
    assert ws.recent_runs("filter", 2)[0]["run_id"] == b.run_id and \
        [x["run_id"] for x in ws.recent_runs("filter", 2)] == sorted(runs, reverse=True)[:2]
    with pytest.raises(ValueError, match="limit"):
        ws.recent_runs("filter", 0)
    assert ws.run(a.run_id) == runs[a.run_id]  # one run by id, as runs() gives it
    assert ws.run(max(runs) + 1) is None


def test_a_very_large_saved_run_keeps_its_evidence_short(toy, embedder, monkeypatch):
    """Past a character budget (a run at scale), each saved evidence text keeps its first
    400 characters and the saved run says so; the returned run is whole either way."""
    import docmaster_core.filtering.run as run_mod

    ws, r = toy
    monkeypatch.setattr(run_mod, "_EVIDENCE_CHARS_SAVED_WHOLE", 100)
    a = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r, top_k=8)
    saved = ws.recent_runs("filter", 1)[0]["result"]
    assert saved["run_id"] is None or saved["run_id"] == a.run_id
    assert saved["evidence_text_chars"] == 400
    texts = [e["text"] for d in saved["documents"] for es in d["evidence"].values() for e in es]
    whole = [e.text for d in a.documents for es in d.evidence.values() for e in es]
    assert all(len(t) <= 404 for t in texts)
    assert any(t.endswith(" ...") for t in texts) == any(len(t) > 400 for t in whole)


def test_filter_rejects_bad_input(toy, embedder):
    ws, r = toy
    with pytest.raises(RetrievalError):
        run_filter(ws, embedder, None, RetrievalSettings(), "   ", retriever=r, save=False)
    with pytest.raises(RetrievalError):
        run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, strategy="bm25", retriever=r, save=False)
    with pytest.raises(RetrievalError):
        run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, decider="llm", retriever=r, save=False)


@pytest.mark.parametrize("n_docs", [2, 3, 5])
def test_small_collection_passes_the_clear_match(tmp_path, embedder, n_docs):
    """Below ``min_collection`` documents the prior rule decides: the ImageNet paper passes,
    the others do not (the old fixed ``d >= 0.55`` rule rejected such clear matches)."""
    ws = build_toy_workspace(tmp_path / "w", embedder, TOY_DOCS[:n_docs])
    run = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, save=False)
    by = {d.file_name: d for d in run.documents}
    assert "typical corpus statistics" in by["cnn_imagenet.pdf"].decisions["combined"].rationale
    for s in ("semantic", "hyperedge", "combined"):
        assert by["cnn_imagenet.pdf"].decision(s) is True, s
    for s in ("tree", "semantic", "hyperedge", "combined"):
        assert [f for f, d in by.items() if f != "cnn_imagenet.pdf" and d.decision(s)] == [], s
        # the prior z-score ranks the match first even where it stays under the threshold
        conf = {f: d.decisions[s].score for f, d in by.items()}
        assert max(conf, key=conf.get) == "cnn_imagenet.pdf", s
    run2 = run_filter(ws, embedder, None, RetrievalSettings(), APPLIANCE, save=False)
    appliance = [d.file_name for d in run2.documents if d.decision("combined")]
    assert "cnn_imagenet.pdf" not in appliance


# ------------------------------------------------------------------------------ LLM decider
class FakeLLM:
    """A chat model stand-in: says yes when 'ImageNet' is in the evidence, cites one given
    id and one invented id, spends 10 tokens per passage, and refuses calls past a budget."""

    is_offline = False
    max_concurrency = 4

    def __init__(self, name: str, budget: int | None = None):
        self.usage = UsageTracker()
        self.backend_name = name
        self.budget = budget
        self.calls = 0
        self.threads = set()
        self._lock = threading.Lock()

    def decide(self, condition, evidence, *, doc_id=None):
        with self._lock:
            self.calls += 1
            self.threads.add(threading.get_ident())
            if self.budget is not None and self.calls > self.budget:
                raise LLMBudgetExceeded(f"max_calls={self.budget} reached")
        hit = any("ImageNet" in e.text for e in evidence)
        return Decision(hit, "fake rationale", [evidence[0].evidence_id, "X99"], 1.0, 10 * len(evidence), self.backend_name)

    def answer(self, question, evidence, *, doc_id=None):
        e = evidence[0]
        return Answer("The top-1 error is 37.5%.", [
            Citation(e.evidence_id, "wrong-doc", 999, 99, ["made up"], "not in the passage"),
            Citation("E999", "x", 1, 1, [], "invented passage"),
        ], 7, self.backend_name)


def test_llm_decider_tokens_citations_and_cache(toy, embedder):
    ws, r = toy
    llm = FakeLLM("fake-cache")
    run = run_filter(ws, embedder, llm, RetrievalSettings(), IMAGENET, retriever=r, save=False, max_workers=4)
    n_docs = len(run.documents)
    assert llm.calls == 4 * n_docs  # tree, semantic, hyperedge, combined for every document
    assert run.backend == "fake-cache"
    for s in run.strategies:
        assert run.tokens[s] == sum(10 * len(d.evidence[s]) for d in run.documents)
    for d in run.documents:
        for s, dec in d.decisions.items():
            assert "X99" not in dec.evidence_ids  # only ids that were given survive
    assert "cnn_imagenet.pdf" in _matches(ws, run)
    calls = llm.calls
    again = run_filter(ws, embedder, llm, RetrievalSettings(), IMAGENET, retriever=r, save=False)
    assert llm.calls == calls  # every decision came from the cache
    assert again.tokens == {s: 0 for s in again.strategies}
    assert again.matches() == run.matches()


def test_llm_budget_is_honoured_without_guessing(toy, embedder):
    ws, r = toy
    llm = FakeLLM("fake-budget", budget=5)
    run = run_filter(ws, embedder, llm, RetrievalSettings(), IMAGENET, retriever=r, save=False,
                     strategies=["combined"], max_workers=2)
    decided = [d for d in run.documents if d.decision("combined") is not None]
    undecided = [d for d in run.documents if d.decision("combined") is None]
    assert len(decided) == 5 and len(undecided) == len(run.documents) - 5
    for d in undecided:
        assert "budget" in d.decisions["combined"].error
    assert set(run.undecided()) == {d.doc_id for d in undecided}


# ------------------------------------------------------------------------------ QA
def test_ask_defaults_to_last_filter_matches_and_cites_given_passages(toy, embedder):
    from docmaster_core.config import LLMSettings
    from docmaster_core.llm import make_llm

    ws, r = toy
    run = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r)
    llm = make_llm(LLMSettings(), cache_dir=None, embedder=embedder)
    res = ask(ws, embedder, llm, RetrievalSettings(), "What top-1 error does the model reach on ImageNet?", retriever=r)
    assert res.doc_source == "last-filter-run" and res.doc_ids == run.matches()
    assert "37.5" in res.answer.text
    given = {e.evidence_id: e for e in res.evidence}
    assert res.answer.citations
    for c in res.answer.citations:
        e = given[c.evidence_id]
        assert (c.doc_id, c.node_id, c.page, c.section_path) == (e.doc_id, e.node_id, e.page, e.section_path)
        assert c.quote in " ".join(e.text.split())
        assert c.file == "cnn_imagenet.pdf"
    saved = ws.runs("ask")[0]
    assert saved["run_id"] == res.run_id and saved["result"]["answer"]["text"] == res.answer.text


def test_ask_drops_citations_of_passages_not_given(toy, embedder):
    ws, r = toy
    docs = ["cnn_imagenet.pdf", "rag_qa.pdf"]
    res = ask(ws, embedder, FakeLLM("fake-qa"), RetrievalSettings(), "ImageNet top-1 error", docs=docs, retriever=r,
              save=False)
    assert res.doc_source == "given"
    assert res.dropped_citations == ["E999"]
    (c,) = res.answer.citations
    e = next(x for x in res.evidence if x.evidence_id == c.evidence_id)
    assert c.doc_id == e.doc_id and c.node_id == e.node_id and c.page == e.page
    assert c.quote in " ".join(e.text.split())  # the invented quote was replaced by the passage's own words


def test_select_documents_rules(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "w", embedder, TOY_DOCS[:2])
    ids, src = select_documents(ws)
    assert src == "all" and len(ids) == 2
    ws.save_run("filter", {"condition": "c"}, {"condition": "c", "matches": []})
    with pytest.raises(RetrievalError, match="matched no document"):
        select_documents(ws)
    with pytest.raises(RetrievalError):
        select_documents(ws, ["missing.pdf"])


def test_decompose_question():
    subs = decompose_question("Compare the retriever of the RAG model and the graph-based retrieval in terms of ranking?")
    assert subs[1:] == ["the retriever of the RAG model ranking", "the graph-based retrieval ranking"]
    subs = decompose_question("What datasets are used; how is the retriever trained?")
    assert subs[1:] == ["What datasets are used", "how is the retriever trained"]
    assert decompose_question("What is the top-1 error?") == ["What is the top-1 error?"]
    subs = decompose_question("Compare how RAG and RETRO use retrieved passages in the generator")
    assert subs[1:] == ["how RAG use retrieved passages in the generator", "RETRO use retrieved passages in the generator"]


def test_deep_ask_collects_evidence_from_several_documents(toy, embedder):
    from docmaster_core.config import LLMSettings
    from docmaster_core.llm import make_llm

    ws, r = toy
    llm = make_llm(LLMSettings(), cache_dir=None, embedder=embedder)
    q = "Compare the dense passage retriever of the generation model with ranking by PageRank on a knowledge graph"
    res = ask(ws, embedder, llm, RetrievalSettings(top_k=3), q, docs=[d.doc_id for d in ws.documents()],
              deep=True, retriever=r, save=False)
    files = {_name(ws, e.doc_id) for e in res.evidence}
    assert {"rag_qa.pdf", "kg_retrieval.pdf"} <= files
    assert len(res.sub_queries) == 3 and res.rounds >= 1
    assert len(res.evidence) <= 6
    assert [e.evidence_id for e in res.evidence] == [f"E{i + 1}" for i in range(len(res.evidence))]


# ------------------------------------------------------------------------------ CLI
def test_cli_filter_ask_and_compare(toy, capsys):
    from docmaster_core.cli import main

    ws, _ = toy
    w = str(ws.path)
    assert main(["filter", IMAGENET, "--workspace", w, "--json", "--with-flat"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["strategies"] == ["tree", "semantic", "hyperedge", "combined", "flat"]
    docs = {d["file"]: d for d in out["documents"]}
    assert docs["cnn_imagenet.pdf"]["decisions"]["combined"]["decision"] is True
    assert set(out["tokens"]) == set(out["strategies"])
    assert main(["filter", IMAGENET, "--workspace", w, "--top-k", "3"]) == 0
    text = capsys.readouterr().out
    assert "cnn_imagenet.pdf" in text and "tokens:" in text and "saved as run" in text
    ids = [r["run_id"] for r in ws.runs("filter")[:2]]
    assert main(["filter", "--compare", str(ids[1]), str(ids[0]), "--workspace", w]) == 0
    assert "top_k: 8 -> 3" in capsys.readouterr().out
    assert main(["ask", "What top-1 error is reached on ImageNet?", "--workspace", w, "--json"]) == 0
    ans = json.loads(capsys.readouterr().out)
    assert ans["doc_source"] == "last-filter-run" and ans["answer"]["citations"]
    assert main(["filter", "--workspace", w]) == 2


def test_moving_the_cut_of_a_saved_run(toy, embedder):
    """The engine moves a run's cut (the app's cut slider): an offline run's decisions
    follow rank <= N, its matches and three-way counts follow, nothing is retrieved, and
    the run itself is unchanged; comparing the moved run with the saved one lists the
    documents the move added."""
    from docmaster_core.filtering.results import move_cut

    ws, r = toy
    run = run_filter(ws, embedder, None, RetrievalSettings(), IMAGENET, retriever=r, top_k=8)
    saved = next(x for x in ws.runs("filter") if x["run_id"] == run.run_id)["result"]
    n = len(saved["documents"])
    kept = saved["cuts"]["combined"]["kept"]
    assert saved["matches"] == run.matches()
    moved = move_cut(saved, kept + 2)
    ranks = {d["doc_id"]: d["decisions"]["combined"]["rank"] for d in saved["documents"]}
    assert sorted(moved["matches"]) == sorted(i for i, rk in ranks.items() if rk <= kept + 2)
    assert moved["cuts"]["combined"]["moved_to"] == kept + 2 and moved["cuts"]["combined"]["suggested"] == kept
    assert sum(moved["three_way"]["combined"].values()) == n
    assert saved["matches"] == run.matches() and "moved_to" not in saved["cuts"]["combined"]
    assert move_cut(saved, None)["matches"] == saved["matches"]
    assert move_cut(saved, 10_000)["cuts"]["combined"]["moved_to"] == n  # clamped
    cmp = compare_runs(saved, moved, documents=True)
    assert len(cmp["only_b"]) == min(2, n - kept) and not cmp["only_a"]
    assert [row["doc_id"] for row in cmp["documents"]] == [d["doc_id"] for d in saved["documents"]]
    assert sum(row["differs"] for row in cmp["documents"]) == len(cmp["only_b"])


def test_a_title_with_small_words_named_up_front_leaves_only_the_need(toy):
    """"In the Simple Text Classification with Bag of Words paper, how many ...?": the title's
    small words ("with", "of") and the fronted phrase that only names the paper go with the
    name, so the need is the question itself (a newcomer's "In the Attention Is All You Need
    paper, how many attention heads ...?" kept "In Is All You paper" and missed "h = 8")."""
    from docmaster_core.qa.names import route_by_names

    ws, retr = toy
    r = route_by_names("In the Simple Text Classification with Bag of Words paper, how many features are used?",
                       retr.view)
    assert r is not None and [_name(ws, d) for d in r.doc_ids] == ["text_classifier.pdf"]
    assert r.need == "how many features are used?", r.need
    r = route_by_names("In the Ultralight Bosonic Dark Matter and the CMB paper, what mass is assumed?", retr.view)
    assert r is not None and [_name(ws, d) for d in r.doc_ids] == ["dark_matter.pdf"]
    assert r.need == "what mass is assumed?", r.need  # "and the" between two words of the title go too


def test_a_title_whose_small_words_run_together_is_dropped_whole(tmp_path, embedder):
    """"Attention *Is All You* Need": three small words in a row inside the title are part of
    the name, not of the need."""
    from docmaster_core.qa.names import route_by_names
    from support.toy import TOY_DOCS

    docs = [("attention.pdf", "Attention Is All You Need", [
        ("3.2 Multi-Head Attention", ["In this work we employ h = 8 parallel attention layers, or heads."])])]
    ws = build_toy_workspace(tmp_path, embedder, docs + list(TOY_DOCS[:4]))
    retr = Retriever(ws, embedder, RetrievalSettings())
    r = route_by_names("In the Attention Is All You Need paper, how many attention heads does the model use?",
                       retr.view)
    assert r is not None and [_name(ws, d) for d in r.doc_ids] == ["attention.pdf"]
    assert r.need == "how many attention heads does the model use?", r.need


def test_warm_up_builds_what_the_first_filter_reads(tmp_path, embedder, monkeypatch):
    """The app's warm-up (``DocMaster.warm_up``, started while the user types a condition)
    builds the BM25 index, the per-document term counts and the section index once; the
    filter that follows reuses them instead of building them inside the user's first click
    (issue 36)."""
    import docmaster_core.filtering.evidence as evidence
    import docmaster_core.retrieval.keyword as keyword
    import docmaster_core.retrieval.tree_traversal as tree_traversal
    from docmaster_core.pipeline import DocMaster

    built = {"bm25": 0, "terms": 0, "sections": 0}

    class CountedIndex(keyword.KeywordIndex):
        def __init__(self, *a, **k):
            built["bm25"] += 1
            super().__init__(*a, **k)

    class CountedTerms(evidence.DocTerms):
        def __init__(self, *a, **k):
            built["terms"] += 1
            super().__init__(*a, **k)

    class CountedSections(tree_traversal.SectionIndex):
        def __init__(self, *a, **k):
            built["sections"] += 1
            super().__init__(*a, **k)

    monkeypatch.setattr(keyword, "KeywordIndex", CountedIndex)
    monkeypatch.setattr(tree_traversal, "SectionIndex", CountedSections)
    monkeypatch.setattr(evidence, "DocTerms", CountedTerms)
    build_toy_workspace(tmp_path / "ws", embedder)
    dm = DocMaster(tmp_path / "ws", embedder=embedder)
    dm.warm_up()
    assert built == {"bm25": 1, "terms": 1, "sections": 1}
    run = dm.filter(IMAGENET)
    assert built == {"bm25": 1, "terms": 1, "sections": 1}
    assert len(run.documents) == len(dm.documents())
