"""Filter evidence that holds what decides (issue 32): every strategy's best passages in
turn within a character budget, the gold-passage measure, and absolute relevance (a
condition nothing meets keeps nothing), on collections the tests build (real
all-MiniLM-L6-v2 embeddings)."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import RetrievalSettings
from docmaster_core.evaluation.evidence import coverage, load_gold_passages, normalised, shingles
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION, on_topic
from docmaster_core.filtering.run import run_filter
from docmaster_core.filtering.evidence import search_query
from docmaster_core.retrieval.combine import combsum, fuse_within_budget
from docmaster_core.text.words import shingles as word_shingles
from support.toy import TOY_DOCS, build_toy_workspace

_FILLER = ("The parties shall cooperate in good faith and keep each other reasonably informed of the progress of "
           "the work, and each party shall bear its own costs unless this Agreement says otherwise. ")
DECIDING = ("Either party may terminate this Agreement for convenience, without cause, upon thirty days prior "
            "written notice to the other party.")
# the deciding sentence sits in the middle of a long clause, among other clauses of a contract
CONTRACT = ("supply_agreement.pdf", "Supply Agreement", [
    (None, ["This Supply Agreement is made between Acme Components Inc. and Borealis Motors Ltd."]),
    ("1. Definitions", ["Products means the brake assemblies listed in Schedule A. Territory means Canada."]),
    ("2. Supply", ["Supplier shall manufacture and deliver the Products in the quantities ordered by Buyer.",
                   "Each purchase order is binding once accepted in writing by Supplier."]),
    ("3. Prices", ["Prices are stated in Schedule B and are fixed for the first contract year."]),
    ("4. Term and Termination", [_FILLER * 3 + DECIDING + " " + _FILLER * 3]),
    ("5. Warranty", ["Supplier warrants that the Products are free from defects for twelve months after delivery."]),
    ("6. Governing Law", ["This Agreement is governed by the laws of the Province of Ontario."]),
])


def test_each_strategy_takes_its_turn_within_the_budget():
    lists = {"semantic": (np.array([1, 2, 3]), np.ones(3, np.float32)),
             "keyword": (np.array([4, 1, 5]), np.ones(3, np.float32))}
    chars = {1: 100, 2: 100, 3: 100, 4: 100, 5: 100}
    ids, score, who = fuse_within_budget(lists, chars, 350)
    assert ids.tolist() == [1, 4, 2]  # rank 1 of each list, then rank 2 (1 is taken already); 3 would pass 350
    assert sum(chars[i] for i in ids.tolist()) <= 350
    assert who[0] == "keyword+semantic" and score[0] == 1.0 and score[2] == 0.5
    # a passage larger than the budget is still taken when it is the first
    ids, _, _ = fuse_within_budget({"semantic": (np.array([9]), np.ones(1))}, {9: 5000}, 100)
    assert ids.tolist() == [9]


def test_a_list_with_a_smaller_share_gives_its_best_passage_first_then_fewer():
    lists = {"semantic": (np.array([1, 2, 3, 4]), np.ones(4, np.float32)),
             "hyperedge": (np.array([11, 12, 13, 14]), np.ones(4, np.float32))}
    chars = {n: 10 for n in (1, 2, 3, 4, 11, 12, 13, 14)}
    ids, score, _ = fuse_within_budget(lists, chars, 60, ["semantic", "hyperedge"], shares={"hyperedge": 1 / 3})
    # round 1: both best passages; rounds 2-3: semantic only; round 4: hyperedge's second
    assert ids.tolist() == [1, 11, 2, 3, 4, 12]
    assert score.tolist() == pytest.approx([1, 1, 1 / 2, 1 / 3, 1 / 4, 1 / 4])


def test_a_passage_that_repeats_the_evidence_is_skipped():
    para = "Either party may terminate this Agreement upon thirty days prior written notice to the other party."
    summary = "Termination. " + para  # a section summary that repeats its paragraph
    lists = {"semantic": (np.array([5, 6, 7]), np.ones(3, np.float32))}
    texts = {5: para, 6: summary, 7: "This Agreement is governed by the laws of Ontario."}
    chars = {n: len(t) for n, t in texts.items()}
    ids, _, _ = fuse_within_budget(lists, chars, 10_000, shingles=lambda n: word_shingles(texts[n]), max_overlap=0.6)
    assert ids.tolist() == [5, 7]
    ids, _, _ = fuse_within_budget(lists, chars, 10_000)  # no shingles given: no check
    assert ids.tolist() == [5, 6, 7]


def test_combsum_puts_a_passage_good_in_both_lists_first():
    lists = {"semantic": (np.array([1, 2, 3]), np.array([0.9, 0.6, 0.5])),
             "keyword": (np.array([4, 3, 2]), np.array([12.0, 6.0, 5.0]))}
    ids, sc = combsum(lists, ["semantic", "keyword"])
    # 3: 0 + 1/7; 2: 0.25 + 0; 1: 1 + 0; 4: 0 + 1 -> tie of 1 and 4 broken by node id
    assert ids.tolist()[:2] == [1, 4]
    lists = {"semantic": (np.array([1, 3, 2]), np.array([0.9, 0.8, 0.5])),
             "keyword": (np.array([4, 3, 2]), np.array([12.0, 11.0, 5.0]))}
    ids, _ = combsum(lists, ["semantic", "keyword"])
    assert ids.tolist()[0] == 3  # second in both lists (0.75 + 0.86) beats first in one (1)
    assert combsum({}, ["semantic"])[0].size == 0


def test_search_query_drops_the_question_framing():
    assert search_query("Can a party terminate the agreement for convenience?") == \
        "terminate the agreement for convenience"
    assert search_query("Does the contract restrict a party from competing?") == "restrict a party from competing"
    assert search_query("Does the paper report results on ImageNet?") == "report results on ImageNet"
    assert search_query("retrieval-augmented generation") == "retrieval-augmented generation"


def test_gold_passage_coverage_ignores_layout():
    ev = "Either party may terminate this Agree-\nment for convenience, without cause, upon thirty days"
    g = "either party may terminate this agreement for convenience without cause upon thirty days prior notice"
    sh = shingles(ev.replace("-\n", ""))
    assert 0.6 < coverage(g, sh, normalised(ev)) < 1.0
    assert coverage("Ontario", set(), "laws of the province of ontario") == 1.0
    assert coverage("Quebec", set(), "laws of the province of ontario") == 0.0


def test_load_gold_passages_reads_clauses_and_case_evidence(tmp_path):
    p = tmp_path / "clauses.tsv"
    p.write_text("file\tcondition\tclause\na.pdf\tV1\tFirst  clause.\na.pdf\tV1\tSecond clause.\n")
    q = tmp_path / "cases.tsv"
    q.write_text("file\tcondition\tlabel\tpage\tevidence\na.pdf\tP1\t1\t2\tKey sentence.\nb.pdf\tP1\t0\t\t\n")
    assert load_gold_passages(p) == {("a.pdf", "V1"): ["First clause.", "Second clause."]}
    assert load_gold_passages(q) == {("a.pdf", "P1"): ["Key sentence."]}


@pytest.fixture(scope="module")
def ws_contract(tmp_path_factory, embedder):
    return build_toy_workspace(tmp_path_factory.mktemp("evbudget"), embedder, TOY_DOCS + [CONTRACT])


def _by_file(run):
    return {d.file_name: d for d in run.documents}


def test_deciding_sentence_inside_a_long_clause_is_in_the_evidence(ws_contract, embedder):
    budget = 2000
    settings = RetrievalSettings(evidence_chars=budget)
    run = run_filter(ws_contract, embedder, None, settings, "Can a party terminate the agreement for convenience "
                     "by giving notice?", decider="calibrated", save=False)
    ev = _by_file(run)["supply_agreement.pdf"].evidence["combined"]
    assert any(DECIDING in e.text for e in ev)
    for d in run.documents:  # the budget holds for every document (the first passage alone may exceed it)
        texts = [len(e.text) for e in d.evidence["combined"]]
        assert sum(texts) <= max(budget, texts[0] if texts else 0)
    # each strategy's best passage (headings aside: their section path heads every passage) is in the combined evidence
    comb = {e.node_id for e in ev}
    for s in ("tree", "semantic"):
        best = next(e for e in _by_file(run)["supply_agreement.pdf"].evidence[s] if e.node_type != "TITLE")
        assert best.node_id in comb
    assert _by_file(run)["supply_agreement.pdf"].decision("combined") is True


def test_a_condition_nothing_meets_keeps_nothing(ws_contract, embedder):
    run = run_filter(ws_contract, embedder, None, RetrievalSettings(), "Does the document give a recipe for "
                     "baking sourdough bread with rye flour?", decider="calibrated", save=False)
    assert run.matches("combined") == []
    assert run.cuts["combined"].none_meets is True
    assert run.three_way("combined")["kept"] == 0
    top = min(run.documents, key=lambda d: d.decisions["combined"].rank)
    assert "No document of this collection meets the condition" in top.decisions["combined"].rationale
    assert "strong support" not in top.decisions["combined"].rationale
    # no cut a document could have passed is quoted beside "nothing is kept" (a newcomer read it as a contradiction)
    assert "kept from a score" not in top.decisions["combined"].rationale
    assert "no document of this collection is about the condition" in top.decisions["combined"].rationale
    # a condition the collection does meet is unaffected
    run = run_filter(ws_contract, embedder, None, RetrievalSettings(), "Does the paper report results on ImageNet?",
                     decider="calibrated", save=False)
    assert run.cuts["combined"].none_meets is False
    assert "cnn_imagenet.pdf" in {d.file_name for d in run.documents if d.decision("combined")}


def test_a_name_no_document_uses_keeps_nothing_and_the_document_that_names_it_stays(ws_contract, embedder):
    """"Governed by the laws of Japan" over documents that never name Japan keeps nothing and says
    why (a newcomer's run kept 6 of 15 contracts for it, "strong support" for a further-assurance
    clause); the same condition with the place the contract does name keeps the contract."""
    run = run_filter(ws_contract, embedder, None, RetrievalSettings(), "The agreement is governed by the laws of "
                     "Japan.", decider="calibrated", save=False)
    assert run.matches("combined") == [] and run.cuts["combined"].none_meets is True
    top = min(run.documents, key=lambda d: d.decisions["combined"].rank)
    assert 'none mentions "japan"' in top.decisions["combined"].rationale
    run = run_filter(ws_contract, embedder, None, RetrievalSettings(), "The agreement is governed by the laws of "
                     "Ontario.", decider="calibrated", save=False)
    assert "supply_agreement.pdf" in {d.file_name for d in run.documents if d.decision("combined")}
    others = [d for d in run.documents if d.file_name != "supply_agreement.pdf"]
    assert not any(d.decision("combined") for d in others)


def test_the_names_a_condition_requires():
    """Capitalised words are required names, but not the first word, abbreviations, words most
    documents hold, or names given as examples or alternatives."""
    from collections import Counter

    from docmaster_core.filtering.decider import LexicalStats
    from docmaster_core.filtering.evidence import condition_names

    stats = LexicalStats(10, Counter({"agreement": 9, "imagenet": 3, "delaware": 4}))
    assert condition_names("The agreement is governed by the laws of Japan.", stats) == ["japan"]
    assert condition_names("Is the Agreement governed by Delaware law?", stats) == ["delaware"]
    # a word for a kind of place is no name: a contract says "the PRC Law", not "People's Republic"
    assert condition_names("It is governed by the laws of the People's Republic of China.", stats) == ["china"]
    assert condition_names("Does the paper report results on the ImageNet dataset?", stats) == ["imagenet"]
    assert condition_names("Does the paper use BERT or Transformer layers?", stats) == []
    assert condition_names("Does the paper study board games (chess, Go)?", stats) == []
    assert condition_names("Is a model of GPT-3 scale used, for example PaLM?", stats) == []


def test_on_topic_needs_meaning_or_distinctive_words():
    got = on_topic(np.array([0.62, 0.31, 0.31, 0.0]), np.array([0.0, 0.75, 0.25, 0.0]), DEFAULT_CALIBRATION)
    assert got.tolist() == [True, True, False, False]


def test_distinctive_share_weighs_the_rare_words(ws_contract, embedder):
    from docmaster_core.filtering.decider import lexical_stats
    from docmaster_core.filtering.evidence import distinctive_share, distinctive_terms
    from docmaster_core.retrieval.retriever import Retriever

    view = Retriever(ws_contract, embedder, RetrievalSettings()).view
    stats = lexical_stats(view)
    cond = "supplier deliver products aircraft engines"  # the contract holds the first three, nobody the last two
    assert distinctive_terms(cond, stats) == ["supplier", "deliver", "products", "aircraft", "engines"]
    share = distinctive_share(view, cond, stats)
    i = next(j for j, d in enumerate(view.docs) if d.file_name == "supply_agreement.pdf")
    # 3 of 5 words, but the two missing words are the rarest: they weigh more than the words present
    w = {t: stats.idf(t) for t in distinctive_terms(cond, stats)}
    assert share[i] == pytest.approx((w["supplier"] + w["deliver"] + w["products"]) / sum(w.values()))
    assert w["aircraft"] > w["supplier"] and share[i] < 3 / 5
    assert share[[j for j in range(len(view.docs)) if j != i]].max() < share[i]


def test_passage_texts_read_once_are_reused_by_the_next_filter(ws_contract, embedder, monkeypatch):
    from docmaster_core.retrieval import corpus

    settings = RetrievalSettings(evidence_chars=2000)
    cond = "Which law governs the supply agreement?"
    first = run_filter(ws_contract, embedder, None, settings, cond, decider="calibrated", save=False)
    view = corpus.load_corpus(ws_contract)
    cached = [k for k in view.doc_cache._d if k[0] == "passage_texts"]
    assert cached  # the combined evidence kept the texts it read, per document
    read: list[tuple[str, list[int]]] = []
    loader = view.node_loader
    monkeypatch.setattr(view, "node_loader", lambda d, ids: read.append((d, ids)) or loader(d, ids))
    monkeypatch.setattr(view, "_nodes", {})
    second = run_filter(ws_contract, embedder, None, settings, cond, decider="calibrated", save=False)
    for a, b in zip(first.documents, second.documents):
        assert [e.text for e in a.evidence["combined"]] == [e.text for e in b.evidence["combined"]]
        assert a.decisions["combined"].decision == b.decisions["combined"].decision
    if view.node_loader is not None and read:
        # what the second run still reads is the Evidence of every strategy, never to measure overlap
        assert all(len(ids) <= 64 for _, ids in read)
