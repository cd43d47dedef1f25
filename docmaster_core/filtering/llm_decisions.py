"""LLM decisions inside a filter run: every document, or a rank-order review with the LLM as the oracle.

:func:`decide_with_review` is called by :func:`~docmaster_core.filtering.run.run_filter`
after the offline evidence scores are known: it runs
:func:`~docmaster_core.filtering.review.run_review` over the ranking of the run's
strategy, asking the LLM about documents in rank order and in the stopping tests'
samples until the recall target is certified (:mod:`.review`). Answers the user stored
for the condition are used as they are and never asked; LLM decisions already made for
the same evidence in this process are re-used without a call, and across processes the
LLM response cache answers the same requests. A document the review did not reach is
decided "no" and says so (``decided_by = "not-checked"``).
"""
from __future__ import annotations

import concurrent.futures as cf
from typing import Callable, Mapping, Sequence

import numpy as np

from ..model import Decision, Evidence
from ..protocols import LLM
from .review import Feedback, ReviewTargets, run_review

__all__ = ["DECIDE_MODES", "decide_with_review", "llm_strategies", "user_decision"]

#: ``per-strategy``: the LLM decides every strategy's evidence; ``combined-only``: only
#: the combined evidence (one call per document), the other strategies keep their
#: offline decisions.
DECIDE_MODES = ("per-strategy", "combined-only")

DecideFn = Callable[[LLM, str, list[Evidence], str], Decision]
PeekFn = Callable[[str, str, Sequence[Evidence]], Decision | None]


def llm_strategies(strategies: Sequence[str], decide: str) -> list[str]:
    """The strategies the LLM decides.

    Raises:
        ValueError: unknown mode, or ``combined-only`` without the combined strategy.
    """
    if decide not in DECIDE_MODES:
        raise ValueError(f"unknown decide mode {decide!r}; choose {' or '.join(DECIDE_MODES)}")
    if decide == "combined-only":
        if "combined" not in strategies:
            raise ValueError("decide 'combined-only' needs the combined strategy")
        return ["combined"]
    return list(strategies)


def _as_label(d: Decision) -> float:
    return float("nan") if d.decision is None else (1.0 if d.decision else 0.0)


def user_decision(label: bool, source: str, od: Decision) -> Decision:
    """The decision of a stored answer (``decided_by = "user"``), with the offline
    decision's evidence, score and rank kept beside it."""
    where = "in a labels file" if source == "labels" else "in the review"
    d = Decision(bool(label), f"Your answer {where}: {'match' if label else 'no match'}.",
                 list(od.evidence_ids), od.score, 0, "user")
    d.evidence_score, d.rank, d.decided_by = od.evidence_score, od.rank, "user"
    return d


def decide_with_review(llm: LLM, condition: str, docs: list, offline: Sequence[Decision], strategy: str,
                       targets: ReviewTargets, workers: int, decide_fn: DecideFn, peek: PeekFn,
                       stored: Mapping[str, tuple[bool, str]], feedback: Feedback | None = None) -> dict:
    """Decide ``strategy`` of ``docs`` by a rank-order review with the LLM as the oracle;
    fills ``docs[i].decisions[strategy]``.

    Args:
        llm: The LLM (its ``decide`` is called through ``decide_fn``).
        condition: The condition text.
        docs: The run's :class:`~docmaster_core.filtering.run.DocumentResult` list.
        offline: The offline decisions of ``strategy``, one per document (evidence
            scores and 1-based ranks: the review's order).
        strategy: The strategy decided.
        targets: The review's targets.
        workers: Parallel LLM calls (also the chunk a stopping test's sample is asked in).
        decide_fn: ``(llm, condition, evidence, doc_id) -> Decision`` (cached, never raises).
        peek: ``(backend, condition, evidence) -> Decision | None``: a decision already
            made for this evidence, without a call.
        stored: ``{doc_id: (label, source)}``: the user's answers for the condition.
        feedback: Document features, one row per document of ``docs``: screening
            re-ranked by the answers (:class:`~docmaster_core.filtering.review.Feedback`);
            None: rank order.

    Returns:
        The review's report (:meth:`~docmaster_core.filtering.review.ReviewState.to_dict`)
        plus ``"llm_asked"`` (documents the LLM decided in this run, cache hits included)
        and ``"user_answers"`` (stored answers used).
    """
    backend = llm.backend_name
    n = len(docs)
    order = np.argsort(np.array([d.rank for d in offline], dtype=np.int64), kind="stable")
    known = np.full(n, np.nan)
    got: dict[int, Decision] = {}
    users = 0
    for i, r in enumerate(docs):
        if r.doc_id in stored:
            known[i] = 1.0 if stored[r.doc_id][0] else 0.0
            users += 1
        elif r.evidence[strategy]:
            hit = peek(backend, condition, r.evidence[strategy])
            if hit is not None:
                got[i] = hit
                known[i] = _as_label(hit)
    pool = cf.ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="docmaster-review")

    def ask(idx: np.ndarray) -> np.ndarray:
        futs = {int(i): pool.submit(decide_fn, llm, condition, docs[int(i)].evidence[strategy], docs[int(i)].doc_id)
                for i in idx}
        for i, f in futs.items():
            got[i] = f.result()
        return np.array([_as_label(got[int(i)]) for i in idx], dtype=np.float64)

    try:
        st = run_review(order, targets, ask, known=known, chunk=max(1, workers),
                        feedback=feedback)
    finally:
        pool.shutdown(wait=True)
    for i, r in enumerate(docs):
        od = offline[i]
        if r.doc_id in stored:
            r.decisions[strategy] = user_decision(*stored[r.doc_id], od)
            continue
        if i in got:
            d = got[i]
            d = Decision(d.decision, d.rationale, list(d.evidence_ids), d.score, d.tokens, d.backend, d.error, note=d.note)
            d.decided_by = "llm"
        else:
            d = Decision(False, f"Not checked: the review ({st.phase}) stopped before this document "
                                f"(evidence rank {od.rank}). {od.rationale}",
                         list(od.evidence_ids), od.score, 0, "review", decided_by="not-checked")
        d.evidence_score, d.rank = od.evidence_score, od.rank
        r.decisions[strategy] = d
    rep = st.to_dict()
    rep["promise"] = st.promise("the LLM's")
    rep["llm_asked"] = len(got)
    rep["user_answers"] = users
    return rep
