"""The rank-order review (issue 33): the stopping rule's arithmetic and guarantee on synthetic
rankings, the stored answers, and the LLM and the user as the oracle end to end.

The statistics run on synthetic rankings with known labels. The end-to-end cases use a
small offline workspace (hashing embedder) and the fake OpenAI-compatible server of
``tests/support/fake_openai_server.py`` with a request counter: the fake model says yes when
the passages mention rivers, and names the document it was asked about by its code
word, so the tests see exactly which documents cost a request.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import hypergeom

from docmaster_core import cli
from docmaster_core.config import get_settings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import RetrievalError
from docmaster_core.filtering.review import (
    MAX_BATCH,
    Feedback,
    ReviewTargets,
    min_remaining,
    planned_calls,
    remaining_upper_bound,
    replay,
    required_sample,
    run_review,
)
from docmaster_core.llm import make_llm
from docmaster_core.pipeline import DocMaster

try:
    from support.fake_openai_server import FakeOpenAIServer, documents_in, user_text
    from support.pdf_factory import make_simple_pdf
    from support.toy import ingest_offline
except ImportError:  # tests imported as a package
    from tests.support.fake_openai_server import FakeOpenAIServer, documents_in, user_text
    from tests.support.pdf_factory import make_simple_pdf
    from tests.support.toy import ingest_offline

KEY = "sk-review-0123456789abcdef"
CONDITION = "The report measures river water quality"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor"]
RIVER = set(WORDS[:5])  # the matching documents


# ----------------------------------------------------------------------------- arithmetic
def test_sample_size_is_the_smallest_that_rejects_exactly():
    """n is the first sample size whose all-no outcome has probability <= alpha under "K remain"."""
    for R, K, a in [(49, 2, 0.1), (49, 2, 0.05), (3900, 112, 0.05), (30, 1, 0.1), (12, 12, 0.01)]:
        n = required_sample(R, K, a)
        assert hypergeom.pmf(0, R, K, n) <= a
        assert n == 0 or hypergeom.pmf(0, R, K, n - 1) > a
    assert required_sample(5, 6, 0.1) == 0  # more matches than documents left: impossible, nothing to ask
    assert required_sample(5, 1, 0.1) == 5  # one match among 5 cannot be ruled out short of asking all
    # K = floor(F (1 - tau) / tau) + 1 (Callaghan and Mueller-Hansen 2020)
    assert [min_remaining(f, 0.9) for f in (0, 8, 9, 10, 18)] == [1, 1, 2, 2, 3]


def test_upper_bound_on_remaining_matches_is_exact():
    ub = remaining_upper_bound(100, 40, 0, 0.1)
    assert hypergeom.cdf(0, 100, ub, 40) > 0.1 >= hypergeom.cdf(0, 100, ub + 1, 40)
    assert remaining_upper_bound(100, 100, 3, 0.1) == 3  # everything read: the count is known


def test_the_cost_floor_matches_the_exact_test():
    """With a perfect ranking the floor is the matches, one batch and one exact sample; it falls with size."""
    t = ReviewTargets(recall=0.9, delta=0.1)
    shares = [planned_calls(n, m, t) / n for n, m in [(59, 10), (1000, 50), (100000, 1000)]]
    assert shares[0] > shares[1] > shares[2]
    n, m = 59, 10
    b = t.batch_size(n)
    assert planned_calls(n, m, t) == m + b + required_sample(n - m - b, min_remaining(m, 0.9), t.alpha(1))


def test_the_stopping_run_slides_over_small_batches_on_large_collections():
    """A test begins once the last L = N / 40 screened documents hold no match; on a large
    collection they are screened in batches of MAX_BATCH, so screening stops within one such
    batch of L documents after the last match instead of up to 2 L; small collections keep
    batches of L (the rule as before)."""
    t = ReviewTargets()
    assert [t.stop_run(n) for n in (59, 88, 800, 5000)] == [3, 3, 20, 125]
    assert [t.batch_size(n) for n in (59, 88, 800, 5000)] == [3, 3, 20, MAX_BATCH]
    assert ReviewTargets(batch=125).batch_size(5000) == ReviewTargets(batch=125).stop_run(5000) == 125
    n, m = 5000, 100
    k, a = min_remaining(m, 0.9), t.alpha(1)
    screened = 240  # 100 matches, then 125 without one, rounded up to whole batches of 20
    assert planned_calls(n, m, t) == screened + required_sample(n - screened, k, a)
    assert planned_calls(n, m, ReviewTargets(batch=125)) == 250 + required_sample(n - 250, k, a)
    # a match 130 documents after the others: aligned batches of 125 read two more batches
    y = np.zeros(n)
    y[:m] = 1.0
    y[230] = 1.0
    sliding = run_review(np.arange(n), t, lambda idx: y[idx], chunk=1)
    aligned = run_review(np.arange(n), ReviewTargets(batch=125), lambda idx: y[idx], chunk=1)
    assert sliding.certified and aligned.certified and len(sliding.matches) == len(aligned.matches) == m + 1
    assert sliding.answered < aligned.answered


def _ranking(rng, n: int, m: int, shift: float):
    y = np.zeros(n)
    y[rng.choice(n, m, replace=False)] = 1.0
    order = np.argsort(-(rng.normal(size=n) + shift * y), kind="stable")
    return order, y


@pytest.mark.parametrize("n,m,shift,tau", [(59, 10, 1.5, 0.9), (88, 4, 2.0, 0.9), (300, 30, 1.0, 0.8),
                                           (120, 25, 0.5, 0.95)])
def test_recall_target_holds_in_at_least_1_minus_delta_of_runs(n, m, shift, tau):
    """Seeded runs over random rankings, some poor: the recall of the 'match' answers is >= tau in
    >= 90 % of runs (delta 0.1), every document is asked at most once, and a certified run says so."""
    rng = np.random.default_rng(11)
    met, runs = 0, 150
    for seed in range(runs):
        order, y = _ranking(rng, n, m, shift)
        asked: list[int] = []

        def ask(idx, y=y, asked=asked):
            asked.extend(idx.tolist())
            return y[idx]

        st = run_review(order, ReviewTargets(recall=tau, delta=0.1, seed=seed), ask, chunk=1)
        assert len(asked) == len(set(asked)) == st.answered <= n
        assert st.certified and st.done
        met += y[st.matches].sum() / m >= tau
    assert met / runs >= 0.9


def test_the_rule_stops_early_on_a_large_collection_with_a_good_ranking():
    rng = np.random.default_rng(3)
    order, y = _ranking(rng, 4000, 200, 4.0)
    st = run_review(order, ReviewTargets(seed=1), lambda idx: y[idx], chunk=1)
    assert st.phase == "certified" and st.answered < 0.4 * 4000
    assert y[st.matches].sum() / 200 >= 0.9 and st.recall_bound is not None and st.recall_bound >= 0.9


def _clustered(n: int, m: int, deep: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` documents, ``m`` matches sharing a topic direction; ``deep`` of the matches are
    ranked at the bottom of the prior order (a ranking that misses a kind of match)."""
    d = 16
    topic = np.zeros(d, np.float32)
    topic[0] = 1.0
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = np.zeros(n)
    y[:m] = 1
    x[:m] += 3.0 * topic
    order = np.concatenate([np.arange(deep, m), rng.permutation(np.arange(m, n)), np.arange(deep)])
    return order, y, x


def test_feedback_pulls_deep_matches_forward_and_keeps_the_guarantee():
    """A stopping test's sample finds a match the ranking put last; relevance feedback on the
    documents' features moves the look-alikes forward, so the review asks fewer documents,
    every document at most once, and still reaches the recall target in >= 90 % of runs."""
    rng = np.random.default_rng(5)
    cost_plain, cost_fb, met = [], [], 0
    for seed in range(20):
        order, y, x = _clustered(2000, 100, 40, rng)
        t = ReviewTargets(recall=0.9, delta=0.1, seed=seed)
        plain = run_review(order, t, lambda idx: y[idx], chunk=1)
        asked: list[int] = []

        def ask(idx, asked=asked):
            asked.extend(idx.tolist())
            return y[idx]

        fb = run_review(order, t, ask, chunk=1, feedback=Feedback(x))
        assert len(asked) == len(set(asked)) == fb.answered
        cost_plain.append(plain.answered)
        cost_fb.append(fb.answered)
        met += y[fb.matches].sum() / 100 >= 0.9
    assert met >= 18
    assert np.mean(cost_fb) < 0.8 * np.mean(cost_plain), (np.mean(cost_fb), np.mean(cost_plain))


def test_feedback_learns_the_words_matches_share_across_topics():
    """Matches of several topics (embeddings that say nothing about the condition) that share
    words ("attention" in a vision, a speech and a translation paper): the evidence's term
    counts let the feedback find the deep ones sooner, and the guarantee holds."""
    from scipy import sparse

    rng = np.random.default_rng(11)
    n, m, deep, vocab = 1500, 80, 40, 400
    cost_emb, cost_terms, met = [], [], 0
    for seed in range(10):
        x = rng.normal(size=(n, 16)).astype(np.float32)  # topic embeddings, unrelated to y
        y = np.zeros(n)
        y[:m] = 1
        counts = rng.poisson(0.05, size=(n, vocab)).astype(np.float32)
        counts[:m, :3] += rng.poisson(2.0, size=(m, 3))  # the words every match shares
        order = np.concatenate([np.arange(deep, m), rng.permutation(np.arange(m, n)), np.arange(deep)])
        t = ReviewTargets(recall=0.9, delta=0.1, seed=seed)
        cost_emb.append(run_review(order, t, lambda idx: y[idx], chunk=1, feedback=Feedback(x)).answered)
        st = run_review(order, t, lambda idx: y[idx], chunk=1, feedback=Feedback(x, sparse.csr_matrix(counts)))
        cost_terms.append(st.answered)
        met += y[st.matches].sum() / m >= 0.9
    assert met >= 9
    assert np.mean(cost_terms) < 0.8 * np.mean(cost_emb), (np.mean(cost_terms), np.mean(cost_emb))


def test_feedback_weights_terms_by_tfidf_and_shares_the_norm():
    """Term counts become TF-IDF rows (terms in one document or in nearly all dropped); a
    document with terms splits its unit norm between embedding and terms, one without keeps
    its embedding at norm 1."""
    from scipy import sparse

    x = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 2], [1, 1, 0]], np.float32)
    counts = sparse.csr_matrix(np.array([[3, 1, 1, 0], [1, 0, 1, 0], [0, 0, 1, 5], [0, 0, 0, 0]], np.float32))
    fb = Feedback(x, counts)
    t = fb.term_counts.toarray()
    assert t.shape == (4, 2)  # terms 1 and 3 are in one document each; term 2 (3 of 4 <= 0.9 x 4) stays
    rows = np.hstack([fb.features, t])
    assert np.allclose(np.linalg.norm(rows[:3], axis=1), 1.0) and np.allclose(np.linalg.norm(fb.features[3]), 1.0)
    assert np.allclose(np.linalg.norm(fb.features[:3], axis=1), np.sqrt(0.5))
    # sublinear tf and smoothed idf: document 0 has 3 x term 0, document 1 once; both in 2 of 4 documents
    assert t[0, 0] > t[1, 0] > 0 and t[2, 0] == 0
    with pytest.raises(ValueError, match="3 rows for 4 documents"):
        Feedback(x, counts[:3])


def test_feedback_replays_the_same_and_waits_for_both_answers():
    rng = np.random.default_rng(2)
    order, y, x = _clustered(300, 30, 10, rng)
    t = ReviewTargets(seed=3)
    st = run_review(order, t, lambda idx: y[idx], chunk=1, feedback=Feedback(x))
    answers = {int(i): bool(y[i]) for i in st.consumed.tolist()}
    again = replay(order, answers, t, feedback=Feedback(x))  # a fresh model, the same answers
    assert again.done and again.consumed.tolist() == st.consumed.tolist() and again.phase == st.phase
    # only matches answered so far: nothing to learn from, the prior order decides the next batch
    b = t.batch_size(300)
    first = {int(i): True for i in order[:b].tolist()}
    assert replay(order, first, t, feedback=Feedback(x)).pending.tolist() == \
        replay(order, first, t).pending.tolist() == order[b:2 * b].tolist()
    with pytest.raises(ValueError, match="2-D"):
        Feedback(np.zeros(5))


def test_replay_resumes_from_stored_answers_and_defers_skips():
    """The rule is a function of the answers: stopping half way and replaying asks for the same next
    document; a skipped document is passed over in screening and asked later."""
    rng = np.random.default_rng(5)
    order, y = _ranking(rng, 40, 6, 2.0)
    t = ReviewTargets(seed=2, batch=3)
    answers: dict[int, bool] = {}
    seen = []
    while True:
        st = replay(order, answers, t)
        if st.done:
            break
        d = int(st.pending[0])
        seen.append(d)
        answers[d] = bool(y[d])
        again = replay(order, dict(answers), t)
        assert again.phase == replay(order, answers, t).phase
    full = run_review(order, t, lambda idx: y[idx], chunk=1)
    assert set(seen) == set(np.flatnonzero(~np.isnan(np.where(np.isin(np.arange(40), seen), 1.0, np.nan))))
    assert st.phase == full.phase and sorted(st.matches.tolist()) == sorted(full.matches.tolist())
    first = int(order[0])
    st = replay(order, {}, t, deferred=[first])
    assert first not in st.pending.tolist() and st.phase == "screening"


def test_a_call_limit_stops_uncertified_and_says_so():
    rng = np.random.default_rng(9)
    order, y = _ranking(rng, 200, 20, 1.0)
    st = run_review(order, ReviewTargets(max_calls=30, seed=0), lambda idx: y[idx], chunk=1)
    assert st.phase == "budget" and not st.certified and st.answered <= 30
    assert st.promise().startswith("not certified (goal: at least 0.9 of the matches found): stopped at the call limit")


def test_bad_targets_are_refused():
    for bad in ({"recall": 0}, {"recall": 1.5}, {"delta": 1}, {"batch": 0}, {"max_calls": 0}, {"first_share": 1}):
        with pytest.raises(ValueError):
            ReviewTargets(**bad)
    with pytest.raises(ValueError):
        replay(np.array([0, 0, 1]), {}, ReviewTargets())


# ----------------------------------------------------------------------------- end to end
def _word(req) -> str | None:
    text = " ".join(inner for _, inner in documents_in(user_text(req)))
    found = [w for w in WORDS if re.search(rf"\bcode {w}\b", text)]
    return found[0] if len(found) == 1 else None


def responder(req):
    text = " ".join(inner for _, inner in documents_in(user_text(req)))
    ids = [a.get("id") for a, _ in documents_in(user_text(req))]
    return json.dumps({"decision": "river" in text.lower(), "rationale": "fake", "evidence_ids": ids[:1]})


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("review")
    src = d / "in"
    src.mkdir()
    for w in WORDS:
        if w in RIVER:
            text = (f"Report code {w}. We measure river water quality: river samples, water quality indices and "
                    f"river pollution. The river water quality survey ends here.")
        else:
            text = (f"Report code {w}. The compiler unrolls loops and allocates registers; benchmarks of the "
                    f"{w} compiler pass show faster code generation.")
        make_simple_pdf(src / f"{w}.pdf", text)
    return ingest_offline(src, d / "ws")


@pytest.fixture()
def server():
    with FakeOpenAIServer(responder) as s:
        yield s


def _dm(ws: Path, server=None, **llm) -> DocMaster:
    if server is None:
        st = get_settings(parsing={"parser": "pymupdf"})
        return DocMaster(ws, st, embedder=HashingEmbedder())
    opts = dict(backend="openai", base_url=server.base_url, api_key=KEY, timeout=5, max_retries=0, max_concurrency=4)
    opts.update(llm)
    st = get_settings(llm=opts, parsing={"parser": "pymupdf"})
    return DocMaster(ws, st, embedder=HashingEmbedder(), llm=make_llm(st.llm, cache_dir=None, seed=0))


@pytest.fixture(autouse=True)
def _fresh_state(workspace):
    from docmaster_core.filtering import run as flt

    flt._DECISION_CACHE.clear()
    DocMaster(workspace, get_settings(), embedder=HashingEmbedder()).ws._con().execute("DELETE FROM judgements")
    yield
    flt._DECISION_CACHE.clear()


TARGETS = ReviewTargets(recall=0.9, delta=0.1, batch=3, seed=0)


def test_feedback_describes_each_document_by_its_evidence(workspace):
    """The review's relevance feedback describes a document by the mean embedding of its
    evidence for the condition (a flat chunk, node -1, and ids out of range are left out);
    a document without evidence keeps its whole-document mean; the facade's review takes the
    run's evidence."""
    from docmaster_core.filtering.results import run_evidence_nodes, run_ranking

    dm = _dm(workspace)
    run = dm.filter("The report measures river water quality.", strategies=("combined",), save=False).to_dict()
    ranking = run_ranking(run)
    ev = run_evidence_nodes(run)
    assert set(ev) == set(ranking) and all(ev[d] for d in ranking[:3])
    view = dm.retriever().view
    first, second = ranking[0], ranking[1]
    x = view.evidence_vectors([first, second], {first: ev[first] + [-1, 10 ** 6], second: []})
    dv = view.docs[view.doc(first).index]
    want = np.asarray(view.emb[[dv.start + i for i in sorted(set(ev[first]))]], dtype=np.float32).mean(0)
    assert np.allclose(x[0], want / np.linalg.norm(want), atol=1e-6)
    assert np.allclose(x[1], view.doc_vectors([second])[0])
    assert x.dtype == np.float32 and x.shape == (2, view.emb.shape[1])
    rv = dm.review(run["condition"], ranking, TARGETS, evidence=ev)
    assert rv.pending_ids()[0] == first  # no answers yet: the evidence ranking decides
    # the page asks again after every answer: the run's features are built once
    assert dm._review_feedback(ranking, ev) is dm._review_feedback(list(ranking), dict(ev))
    # the evidence's words: each evidence node counted once, stop words and 1-letter tokens out
    from docmaster_core.retrieval.keyword import evidence_term_counts
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from docmaster_core.text.terms import STOPWORDS, tokens

    counts = evidence_term_counts(view, [first, second], {first: ev[first] + ev[first][:1] + [10 ** 6], second: []})
    assert counts.shape[0] == 2 and counts[1].nnz == 0
    words = [w for i in sorted(set(ev[first])) for w in tokens(view.node(dv.index, i).content)]
    assert counts[0].sum() == sum(1 for w in words if len(w) > 1 and w not in STOPWORDS | ENGLISH_STOP_WORDS)
    assert 0 < counts[0].sum() < len(words)
    fb = Feedback.from_evidence(view, [first, second], {first: ev[first], second: []})
    assert np.allclose(fb.features[1], view.doc_vectors([second])[0])  # no evidence: embedding at norm 1


@pytest.mark.slow
def test_llm_review_asks_in_rank_order_once_per_document_and_finds_every_match(workspace, server):
    dm = _dm(workspace, server)
    run = dm.filter(CONDITION, review=TARGETS, save=True)
    decs = {Path(d.file_name).stem: d.decisions["combined"] for d in run.documents}
    asked = [_word(r) for r in server.requests]
    assert None not in asked and len(asked) == len(set(asked))  # one request per asked document
    by_llm = {w for w, d in decs.items() if d.decided_by == "llm"}
    assert set(asked) == by_llm
    unchecked = {w for w, d in decs.items() if d.decided_by == "not-checked"}
    assert unchecked == set(WORDS) - by_llm
    assert all(not decs[w].decision and decs[w].tokens == 0 and "Not checked" in decs[w].rationale for w in unchecked)
    assert {w for w, d in decs.items() if d.decision} == RIVER  # the LLM's yes set; the rivers rank first
    rep = run.review
    assert rep["certified"] and rep["llm_asked"] == len(by_llm) and "relative to the LLM's answers" in rep["promise"]
    assert all(d.decisions["tree"].decided_by == "offline" for d in run.documents)  # combined-only by default
    saved = dm.ws.runs("filter")[0]["result"]
    assert saved["review"]["checked"] == rep["checked"] and saved["params"]["review"]["recall"] == 0.9
    n = server.count
    again = dm.filter(CONDITION, review=TARGETS, save=False)  # a re-run is answered from the caches
    assert server.count == n and again.matches() == run.matches()


@pytest.mark.slow
def test_user_answers_outrank_the_llm_and_every_later_run(workspace, server):
    dm = _dm(workspace, server)
    ids = {Path(d.file_name).stem: d.doc_id for d in dm.documents()}
    dm.answer(CONDITION, {ids["alpha"]: False, ids["golf"]: True})
    run = dm.filter(CONDITION, review=TARGETS, save=False)
    asked = {_word(r) for r in server.requests}
    assert "alpha" not in asked and "golf" not in asked  # the user's answers are never asked
    d = {Path(x.file_name).stem: x.decisions["combined"] for x in run.documents}
    assert d["alpha"].decided_by == d["golf"].decided_by == "user"
    assert d["golf"].decision is True and d["alpha"].decision is False
    assert run.review["user_answers"] == 2 and run.user_answers == 2
    off = _dm(workspace).filter(CONDITION, decider="calibrated", save=False)  # the offline rule too
    o = {Path(x.file_name).stem: x.decisions["combined"] for x in off.documents}
    assert o["golf"].decision is True and o["golf"].decided_by == "user" and o["golf"].rank is not None
    # evaluation never reads them
    ev = _dm(workspace).filter(CONDITION, decider="calibrated", save=False, answers=False)
    assert all(x.decisions["combined"].decided_by != "user" for x in ev.documents)


def test_answers_are_stored_changed_removed_and_exported(workspace, tmp_path):
    dm = _dm(workspace)
    ids = {Path(d.file_name).stem: d.doc_id for d in dm.documents()}
    dm.answer(CONDITION, {ids["alpha"]: True, ids["kilo"]: False})
    dm.answer(CONDITION, {ids["kilo"]: True})  # changed
    dm.answer(CONDITION, {ids["alpha"]: None})  # removed
    assert dm.answers(" The report  measures river water quality ") == {ids["kilo"]: (True, "user")}
    with pytest.raises(RetrievalError, match="no document"):
        dm.answer(CONDITION, {"nope": True, ids["lima"]: True})
    assert ids["lima"] not in dm.answers(CONDITION)  # nothing of a bad batch is stored
    tsv = dm.export_answers(CONDITION, "R1")
    assert tsv.splitlines() == ["file\tcondition\tlabel\tpage\tevidence", "kilo.pdf\tR1\t1\t\t"]


def test_review_needs_the_llm_decider_and_old_cascade_options_explain_themselves(workspace, server):
    dm = _dm(workspace, server)
    with pytest.raises(RetrievalError, match="needs the LLM decider"):
        dm.filter(CONDITION, decider="calibrated", review=TARGETS, save=False)
    with pytest.raises(RetrievalError, match="replaced by the rank-order review"):
        dm.filter(CONDITION, cascade=True, save=False)
    assert server.count == 0


def test_cli_filter_review_and_old_cascade_flags(workspace, server, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_LLM__API_KEY", KEY)
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    base = ["filter", CONDITION, "--workspace", str(workspace), "--llm", "openai", "--base-url", server.base_url,
            "--no-save"]
    rc = cli.main(base + ["--cascade", "--recall-target", "0.9"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "--cascade is now --review" in out.err
    line = [ln for ln in out.out.splitlines() if ln.startswith("review: the LLM checked")]
    assert line and "relative to the LLM's answers" in line[0]
    # 5 matches of 22: ruling out a sixth takes nearly every document (the floor of a small collection)
    assert f"checked {server.count} of {len(WORDS)} documents" in line[0]
    rc = cli.main(base + ["--review", "--sample-budget", "8"])
    assert rc != 0 and "--max-calls" in capsys.readouterr().err


def test_cli_review_from_a_labels_file_exports_cases_eval_filter_reads(workspace, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    labels = tmp_path / "labels.tsv"
    labels.write_text("file\tcondition\tlabel\n" + "".join(f"{w}.pdf\tR1\t{int(w in RIVER)}\n" for w in WORDS))
    out_tsv = tmp_path / "answers.tsv"
    rc = cli.main(["review", CONDITION, "--workspace", str(workspace), "--labels", str(labels),
                   "--condition-id", "R1", "--export", str(out_tsv), "--json"])
    res = capsys.readouterr()
    assert rc == 0, res.err
    got = json.loads(res.out)
    assert got["certified"] and len(got["matches"]) == len(RIVER)
    rows = out_tsv.read_text().splitlines()
    assert rows[0] == "file\tcondition\tlabel\tpage\tevidence" and len(rows) - 1 == got["checked"]
    conds = tmp_path / "answers_conditions.tsv"
    rc = cli.main(["eval", "filter", "--workspace", str(workspace), "--cases", str(out_tsv),
                   "--conditions", str(conds), "--decider", "calibrated"])
    assert rc == 0, capsys.readouterr().err


def test_cli_review_asks_in_the_terminal(workspace, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    dm = _dm(workspace)
    names = {d.doc_id: Path(d.file_name).stem for d in dm.documents()}
    prompts = []

    def fake_input(prompt):
        out = capsys.readouterr().out
        prompts.append(out)
        shown = [w for w in WORDS if f"\n{w}.pdf" in out]
        return "m" if shown and shown[-1] in RIVER else "n"

    monkeypatch.setattr("builtins.input", fake_input)
    rc = cli.main(["review", CONDITION, "--workspace", str(workspace)])
    assert rc == 0
    stored = dm.answers(CONDITION)
    assert len(stored) == len(prompts) and {names[d] for d, (v, _) in stored.items() if v} == RIVER
    assert "relative to your answers" in capsys.readouterr().out


# ----------------------------------------------------------------------------- the oracle
def _oracle_module():
    path = Path(__file__).resolve().parents[1] / "scripts" / "oracle_llm.py"
    spec = importlib.util.spec_from_file_location("oracle_llm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_label_oracle_identifies_documents_and_flips_a_fraction(workspace, tmp_path):
    O = _oracle_module()
    rows = [(CONDITION, f"{w}.pdf", int(w in RIVER)) for w in WORDS]
    O.write_labels(rows, tmp_path / "labels.tsv")
    server = O.serve(workspace, tmp_path / "labels.tsv")
    try:
        dm = _dm(workspace, server)
        run = dm.filter(CONDITION, decide="combined-only", save=False)
        assert server.count == len(WORDS)
        assert {Path(d.file_name).stem for d in run.documents if d.decision("combined")} == RIVER
    finally:
        server.stop()
    labels = {(O.normalize(f"c{i}"), f"f{j}"): 0 for i in range(40) for j in range(50)}
    noisy = O.Oracle(labels, flip=0.1, seed=4)
    share = np.mean([noisy.answer(c, f) for c, f in labels])
    assert 0.07 < share < 0.13
    assert [noisy.answer(c, f) for c, f in labels] == [noisy.answer(c, f) for c, f in labels]


def test_cli_review_takes_only_whole_answers_and_changes_one_with_set(workspace, monkeypatch, capsys):
    monkeypatch.setenv("DOCMASTER_EMBEDDING__MODEL", "hashing")
    dm = _dm(workspace)
    replies = iter(["maybe", "m", "q"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(replies))
    assert cli.main(["review", CONDITION, "--workspace", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "answer m (match), n (no match), s (skip) or q (quit)" in out  # "maybe" is no answer
    stored = dm.answers(CONDITION)
    assert list(stored.values()) == [(True, "user")]  # only the "m"
    (doc,) = stored
    name = next(d.file_name for d in dm.documents() if d.doc_id == doc)
    assert cli.main(["review", CONDITION, "--workspace", str(workspace), "--set", f"{name}=no"]) == 0
    assert dm.answers(CONDITION) == {doc: (False, "user")}
    assert cli.main(["review", CONDITION, "--workspace", str(workspace), "--set", f"{name}=remove"]) == 0
    assert dm.answers(CONDITION) == {}
    assert cli.main(["review", CONDITION, "--workspace", str(workspace), "--set", f"{name}=perhaps"]) == 2
