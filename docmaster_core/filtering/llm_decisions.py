"""The cascade inside a filter run: LLM decisions for the sample and the band only.

:func:`decide_with_cascade` is called by :func:`~docmaster_core.filtering.run.run_filter`
after the offline evidence scores of every strategy are known. For each strategy the LLM
decides (one strategy with ``decide="combined-only"``), it runs
:func:`~docmaster_core.filtering.cascade.run_cascade` over that strategy's ranking:
the LLM is asked about the importance sample, then about the band between the two
thresholds; every other document is decided by its score, and its
:class:`~docmaster_core.model.Decision` says so (``decided_by`` = ``"score-above"`` or
``"score-below"``, 0 tokens, the offline rationale with the threshold). LLM decisions
already made for the same evidence in this process are re-used whatever the targets
(a change of targets costs only the calls for documents never asked); across processes
the LLM response cache answers the same requests without a call.
"""
from __future__ import annotations

import concurrent.futures as cf
from typing import Callable, Sequence

import numpy as np

from ..model import Decision, Evidence
from ..protocols import LLM
from .cascade import CascadeTargets, run_cascade

__all__ = ["DECIDE_MODES", "decide_with_cascade", "llm_strategies"]

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


def decide_with_cascade(llm: LLM, condition: str, docs: list, offline: dict[str, list[Decision]], cuts: dict,
                        strategies: Sequence[str], targets: CascadeTargets, workers: int,
                        decide_fn: DecideFn, peek: PeekFn) -> dict[str, dict]:
    """Decide ``strategies`` of ``docs`` with the cascade; fills ``docs[i].decisions``.

    Args:
        llm: The LLM (its ``decide`` is called through ``decide_fn``).
        condition: The condition text.
        docs: The run's :class:`~docmaster_core.filtering.run.DocumentResult` list.
        offline: ``{strategy: [Decision per document]}`` with evidence scores and ranks.
        cuts: ``{strategy: Cut}`` of the run (the calibrated cut centres the proxy).
        strategies: Strategies the LLM decides.
        targets: The cascade's targets.
        workers: Parallel LLM calls.
        decide_fn: ``(llm, condition, evidence, doc_id) -> Decision`` (cached, never raises).
        peek: ``(backend, condition, evidence) -> Decision | None``: a decision already
            made for this evidence, without a call.

    Returns:
        ``{strategy: report}`` (:meth:`~docmaster_core.filtering.cascade.CascadeResult.report`
        plus ``"documents_by"``: per document, in run order, ``[doc_id, decided_by, sampled]``).
    """
    backend = llm.backend_name
    reports: dict[str, dict] = {}
    pool = cf.ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="docmaster-cascade")
    try:
        for s in strategies:
            got: dict[int, Decision] = {}
            known = np.full(len(docs), np.nan)
            for i, r in enumerate(docs):
                hit = peek(backend, condition, r.evidence[s]) if r.evidence[s] else None
                if hit is not None:
                    got[i] = hit
                    known[i] = _as_label(hit)

            def label(idx: np.ndarray, s=s, got=got) -> np.ndarray:
                futs = {int(i): pool.submit(decide_fn, llm, condition, docs[int(i)].evidence[s], docs[int(i)].doc_id)
                        for i in idx}
                for i, f in futs.items():
                    got[i] = f.result()
                return np.array([_as_label(got[int(i)]) for i in idx], dtype=np.float64)

            ev = np.array([d.evidence_score for d in offline[s]], dtype=np.float64)
            rk = np.array([d.rank for d in offline[s]], dtype=np.int64)
            res = run_cascade(ev, rk, float(cuts[s].threshold), targets, label, known=known)
            for i, r in enumerate(docs):
                od = offline[s][i]
                how = str(res.provenance[i])
                if how == "llm":
                    d = got[i]
                    d = Decision(d.decision, d.rationale, list(d.evidence_ids), d.score, d.tokens, d.backend, d.error)
                else:
                    side = "above the upper" if how == "score-above" else "below the lower"
                    thr = res.s_hi if how == "score-above" else res.s_lo
                    d = Decision(bool(res.decision[i]),
                                 f"Decided without a call: evidence score {od.evidence_score:.2f} (rank {od.rank}) is "
                                 f"{side} cascade threshold ({thr:.2f}). {od.rationale}",
                                 list(od.evidence_ids), od.score, 0, "cascade-score")
                d.evidence_score, d.rank, d.decided_by = od.evidence_score, od.rank, how
                r.decisions[s] = d
            rep = res.report()
            rep["documents_by"] = [[r.doc_id, str(res.provenance[i]), bool(res.sampled[i])] for i, r in enumerate(docs)]
            reports[s] = rep
    finally:
        pool.shutdown(wait=True)
    return reports
