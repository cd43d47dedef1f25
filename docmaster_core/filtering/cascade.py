"""A filter cascade: the offline evidence score decides the sure documents, the LLM the rest.

An LLM filter asks the model once per document. Every filter run already ranks the
whole collection by the offline evidence score (:mod:`~docmaster_core.filtering.offline`), so most
documents can be decided without a call: the top of the ranking kept, the bottom
dropped, and only a band of uncertain documents sent to the model. The band is chosen
from a small sample of LLM decisions so that, with probability at least ``1 - delta``,

* the *recall* of the result is at least ``recall`` and
* its *precision* is at least ``precision``,

both measured against the decisions the LLM would have made on every document (the LLM
is the oracle; a wrong LLM stays wrong).

The method (what is implemented here):

1. **Importance sampling by score** (Kang et al. 2020, "Approximate Selection with
   Guarantees using Proxies", SUPG, VLDB 13(11), Sec. 5): every document gets a proxy
   probability ``p_i = sigmoid(s_i - c)`` from its evidence score ``s_i`` (made monotone
   in the run's rank) and the calibrated cut ``c``; ``n`` documents are drawn with
   replacement with probabilities ``q_i = (1 - mix) sqrt(p_i) / sum_j sqrt(p_j) + mix / N``
   (SUPG's square-root weights, defensively mixed with uniform sampling so every weight
   ``m_i = 1 / (N q_i)`` is at most ``1 / mix``). A document drawn twice costs one call.
2. **Two thresholds, as in LOTUS's filter cascades** (Patel et al. 2024, "Semantic
   Operators: A Declarative Model for Rich, AI-based Data Processing", Sec. on
   approximations, built on SUPG): documents at rank ``<= k_hi`` are kept without a call,
   those at rank ``> k_lo`` dropped without a call, and the band between goes to the LLM.
   Sampled documents keep their LLM decision wherever they rank.
3. **The tests** (Hansen-Hurwitz importance-sampling means, one-sided normal
   confidence bounds at level ``delta / 2`` each, as in SUPG; a union bound gives both
   targets with probability ``1 - delta``). With ``y`` the LLM's decision of a drawn
   document at 0-based rank position ``r`` and weight ``m``:

   * recall of "everything ranked before position k" is at least ``gamma`` iff
     ``E[m y ((1 - gamma) [r < k] - gamma [r >= k])] >= 0`` (a single mean, so no ratio
     bound is needed);
   * precision of the top ``k`` is at least ``pi`` iff ``N E[m y [r < k]] >= pi k``.

   Candidates are tested in a fixed order and the search stops at the first candidate
   that fails (recall: from ``k = N`` down; precision: up from the first k whose top-k
   set has enough expected draws for the test to pass at all, ``max(5, (z / (1 - pi))^2)``,
   a rule that reads no label). Fixed-sequence testing needs no Bonferroni correction
   over the candidates. BARGAIN (Zeighami, Shankar and Parameswaran 2025, "Cut Costs,
   Not Accuracy: LLM-Powered Data Processing with Guarantees") likewise avoids SUPG's
   union bound by testing thresholds in order; this module uses the plain
   fixed-sequence form with normal bounds, not BARGAIN's betting-based intervals.

A sampled document whose decision failed (budget, transport) counts as *positive* when
it ranks below a recall candidate and *negative* otherwise, the pessimistic choice for
both tests; documents in the band whose call fails stay undecided (``decision=None``),
never guessed.

Limits, stated plainly: the normal approximation is asymptotic (SUPG's guarantee). With
a few dozen documents and a handful of matches, a match ranked far down the list is
rarely sampled, and then the bound cannot see it: the stated probability is then an
approximation, and docs/results/cascade.md measures how often the targets are met on labelled
conditions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

__all__ = [
    "CascadeTargets",
    "CascadePlan",
    "CascadeResult",
    "rank_order",
    "sampling_probabilities",
    "plan_sample",
    "recall_cut",
    "precision_cut",
    "run_cascade",
    "PROVENANCE",
]

#: How a cascade decision was made.
PROVENANCE = ("llm", "score-above", "score-below")


@dataclass(frozen=True)
class CascadeTargets:
    """Targets and knobs of a cascade run.

    Attributes:
        recall: Recall target gamma in (0, 1] (of the LLM's decisions).
        precision: Precision target pi in [0, 1] (0 disables the upper threshold:
            nothing is kept without a call).
        delta: Failure probability in (0, 1): both targets hold with probability
            ``1 - delta`` (``delta / 2`` each).
        sample_budget: Draws of the importance sample (= the most LLM calls the sample
            costs); None: ``clip(ceil(2 sqrt(N)), 20, 1000)``, at most N.
        seed: Seed of the sample (the same seed draws the same sample, so a re-run is
            answered from the caches).
        mix: Share of uniform sampling in the proposal (defensive importance sampling).
        min_draws: The precision test starts at the smallest top-k set with at least
            ``max(min_draws, (z / (1 - precision))^2)`` expected draws (``n`` times its
            sampling mass; 5 is the usual n p >= 5 rule of the normal approximation);
            the rule reads the scores only, never a label.
            (The recall test always starts at k = N, as in SUPG: a start rule there
            would put the first test below the matches when the sampling mass is
            concentrated on a few top documents, and then nothing could be dropped.)

    Raises:
        ValueError: a target or knob out of range.
    """

    recall: float = 0.9
    precision: float = 0.9
    delta: float = 0.1
    sample_budget: int | None = None
    seed: int = 0
    mix: float = 0.1
    min_draws: float = 5.0

    def __post_init__(self) -> None:
        if not 0.0 < self.recall <= 1.0:
            raise ValueError(f"recall target must be in (0, 1], got {self.recall!r}")
        if not 0.0 <= self.precision <= 1.0:
            raise ValueError(f"precision target must be in [0, 1], got {self.precision!r}")
        if not 0.0 < self.delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}")
        if self.sample_budget is not None and self.sample_budget < 1:
            raise ValueError(f"sample budget must be >= 1, got {self.sample_budget!r}")
        if not 0.0 < self.mix <= 1.0:
            raise ValueError(f"mix must be in (0, 1], got {self.mix!r}")
        if self.min_draws < 0:
            raise ValueError(f"min_draws must be >= 0, got {self.min_draws!r}")

    def draws(self, n_docs: int) -> int:
        """Sample draws for a collection of ``n_docs`` documents."""
        if self.sample_budget is not None:
            return int(min(self.sample_budget, max(n_docs, 1)))
        return int(min(n_docs, max(20, min(1000, math.ceil(2.0 * math.sqrt(n_docs))))))

    def to_dict(self) -> dict[str, Any]:
        return {"recall": self.recall, "precision": self.precision, "delta": self.delta,
                "sample_budget": self.sample_budget, "seed": self.seed, "mix": self.mix, "min_draws": self.min_draws}


def rank_order(evidence_score: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The run's ranking and a score that is monotone in it.

    Args:
        evidence_score: float (N,) offline evidence scores (z units).
        rank: int (N,) 1-based ranks of the run (documents whose passages are too weakly
            similar rank last even when their score is higher).

    Returns:
        ``(order int64 (N,), s float64 (N,))``: ``order[r]`` is the document at 0-based
        position r; ``s[r]`` its score made non-increasing along the ranking (running
        minimum), so a threshold on ``s`` is a threshold on rank.
    """
    order = np.argsort(np.asarray(rank, dtype=np.int64), kind="stable")
    s = np.minimum.accumulate(np.asarray(evidence_score, dtype=np.float64)[order])
    return order, s


def sampling_probabilities(s: np.ndarray, center: float, mix: float) -> np.ndarray:
    """SUPG's importance proposal over rank positions.

    Args:
        s: float (N,) scores in rank order (:func:`rank_order`).
        center: Score where the proxy probability is 1/2 (the calibrated cut, z units).
        mix: Share of uniform sampling.

    Returns:
        float64 (N,) probabilities summing to 1: ``(1 - mix) sqrt(p) / sum sqrt(p) + mix / N``
        with ``p = sigmoid(s - center)``.
    """
    s = np.asarray(s, dtype=np.float64)
    n = s.size
    p = 1.0 / (1.0 + np.exp(-np.clip(s - center, -50.0, 50.0)))
    w = np.sqrt(p)
    w = w / w.sum() if w.sum() > 0 else np.full(n, 1.0 / n)
    return (1.0 - mix) * w + mix / n


@dataclass
class CascadePlan:
    """The importance sample of a cascade, before any label is known.

    Attributes:
        order: int64 (N,) document index at each 0-based rank position.
        s: float64 (N,) monotone scores in rank order.
        q: float64 (N,) sampling probability of each rank position.
        draws: int64 (n,) rank positions drawn (with replacement).
        sampled: int64 (m,) distinct rank positions drawn, ascending (m <= n).
    """

    order: np.ndarray
    s: np.ndarray
    q: np.ndarray
    draws: np.ndarray
    sampled: np.ndarray


def plan_sample(evidence_score: np.ndarray, rank: np.ndarray, center: float, targets: CascadeTargets) -> CascadePlan:
    """Rank, weigh and draw the sample (no labels needed; deterministic in ``targets.seed``).

    Args:
        evidence_score: float (N,) offline evidence scores.
        rank: int (N,) 1-based ranks.
        center: The calibrated cut (z units), where the proxy is 1/2.
        targets: The cascade's targets (``sample_budget``, ``seed``, ``mix``).

    Raises:
        ValueError: empty collection or mismatched shapes.
    """
    ev = np.asarray(evidence_score, dtype=np.float64)
    if ev.size == 0 or ev.shape != np.shape(rank):
        raise ValueError("the cascade needs one evidence score and one rank per document")
    order, s = rank_order(ev, rank)
    q = sampling_probabilities(s, center, targets.mix)
    rng = np.random.default_rng(targets.seed)
    draws = rng.choice(s.size, size=targets.draws(s.size), replace=True, p=q)
    return CascadePlan(order, s, q, draws.astype(np.int64), np.unique(draws).astype(np.int64))


def _z(alpha: float) -> float:
    return NormalDist().inv_cdf(1.0 - alpha)


def _lower_bounds(sum1: np.ndarray, sum2: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided normal lower confidence bounds of means from sums and sums of squares."""
    mean = sum1 / n
    var = np.maximum(sum2 / n - mean ** 2, 0.0) * (n / max(n - 1, 1))
    return mean - _z(alpha) * np.sqrt(var / n)


def recall_cut(plan: CascadePlan, y_low: np.ndarray, y_high: np.ndarray, gamma: float, alpha: float,
               min_draws: float = 0.0) -> tuple[int, np.ndarray]:
    """The smallest k such that "positions < k not dropped" has recall >= gamma (fixed-sequence test from k = N down).

    Only candidates whose dropped set ``[k, N)`` has at least ``min_draws`` expected
    draws are tested (the sequence starts at the largest such k; when that one fails,
    nothing is dropped).

    Args:
        plan: The sample.
        y_low: float (n,) label of each draw counted when it ranks below k (unknown = 1).
        y_high: float (n,) label of each draw counted when it ranks above k (unknown = 0).
        gamma: Recall target.
        alpha: Level of the test (delta / 2).
        min_draws: Expected draws the dropped set needs before it is tested.

    Returns:
        ``(k_lo, lower_bounds float64 (N + 1,))``: positions ``>= k_lo`` may be dropped;
        ``lower_bounds[k]`` is the bound of ``E[m y ((1 - gamma)[r < k] - gamma [r >= k])]``.
    """
    n_docs = plan.s.size
    n = plan.draws.size
    m = 1.0 / (n_docs * plan.q[plan.draws])
    hi = np.bincount(plan.draws, weights=m * y_high, minlength=n_docs)
    hi2 = np.bincount(plan.draws, weights=(m * y_high) ** 2, minlength=n_docs)
    lo = np.bincount(plan.draws, weights=m * y_low, minlength=n_docs)
    lo2 = np.bincount(plan.draws, weights=(m * y_low) ** 2, minlength=n_docs)
    a = np.concatenate([[0.0], np.cumsum(hi)])  # draws at positions < k
    a2 = np.concatenate([[0.0], np.cumsum(hi2)])
    b = lo.sum() - np.concatenate([[0.0], np.cumsum(lo)])  # draws at positions >= k
    b2 = lo2.sum() - np.concatenate([[0.0], np.cumsum(lo2)])
    lb = _lower_bounds((1 - gamma) * a - gamma * b, (1 - gamma) ** 2 * a2 + gamma ** 2 * b2, n, alpha)
    k_lo = n_docs
    tail = n * (1.0 - np.concatenate([[0.0], np.cumsum(plan.q)]))  # expected draws at positions >= k
    start = int(np.flatnonzero(tail[:n_docs] >= min_draws - 1e-9).max(initial=-1))
    for k in range(start, -1, -1):  # fixed sequence: stop at the first failure
        if lb[k] > 0.0:
            k_lo = k
        else:
            break
    return k_lo, lb


def precision_cut(plan: CascadePlan, y_high: np.ndarray, pi: float, alpha: float, min_draws: float = 5.0
                  ) -> tuple[int, np.ndarray]:
    """The largest k such that the top k have precision >= pi (fixed-sequence test upward).

    The test of k is ``N E[m y [r < k]] - pi k > 0``: the positives among the top k
    (a Hansen-Hurwitz estimate) against the ``pi k`` needed; ``k`` is known exactly,
    so only the positives are estimated. The sequence starts at the smallest k whose
    expected number of draws ``n Q(k)`` reaches ``max(min_draws, (z / (1 - pi))^2)``:
    below that the estimated count's relative error (about ``1 / sqrt(draws)``) cannot
    fit in the slack ``1 - pi`` and the test could not pass; the rule reads the scores
    only, never a label, so the procedure stays a fixed sequence. It then moves up one
    position at a time until a test fails. A small sample keeps nothing without a call.

    Args:
        plan: The sample.
        y_high: float (n,) label of each draw (unknown = 0).
        pi: Precision target (0 accepts nothing without a call).
        alpha: Level of the test (delta / 2).
        min_draws: Expected draws in the first candidate set.

    Returns:
        ``(k_hi, lower_bounds float64 (N + 1,))``: positions ``< k_hi`` may be kept;
        ``lower_bounds[k]`` bounds ``(N E[m y [r < k]] - pi k) / N`` (> 0: precision >= pi).
    """
    n_docs = plan.s.size
    n = plan.draws.size
    m = 1.0 / (n_docs * plan.q[plan.draws])
    x = m * y_high
    a = np.concatenate([[0.0], np.cumsum(np.bincount(plan.draws, weights=x, minlength=n_docs))])
    a2 = np.concatenate([[0.0], np.cumsum(np.bincount(plan.draws, weights=x ** 2, minlength=n_docs))])
    lb = _lower_bounds(a, a2, n, alpha) - pi * np.arange(n_docs + 1) / n_docs
    if pi <= 0.0:
        return 0, lb
    expected = n * np.cumsum(plan.q)  # expected draws among the top k, k = 1..N
    # the first candidate where the test can pass at all: a relative error of the estimated
    # count of about 1 / sqrt(draws) must fit in the slack 1 - pi (reads no label)
    need = max(min_draws, (_z(alpha) / (1.0 - pi)) ** 2) if pi < 1.0 else float("inf")
    start = int(np.searchsorted(expected, need)) + 1
    k_hi = 0
    for kk in range(min(start, n_docs), n_docs + 1):
        if lb[kk] > 0.0:
            k_hi = kk
        else:
            break
    return k_hi, lb


@dataclass
class CascadeResult:
    """Outcome of :func:`run_cascade` for one ranking.

    Attributes:
        decision: object (N,) per document (input order): True, False or None (undecided).
        provenance: object (N,) ``"llm"``, ``"score-above"`` or ``"score-below"``.
        sampled: bool (N,) documents in the importance sample.
        k_hi: Documents ranked ``<= k_hi`` are kept without a call (0: none).
        k_lo: Documents ranked ``> k_lo`` are dropped without a call (N: none).
        s_hi: Evidence score at the upper threshold (None when k_hi = 0).
        s_lo: Evidence score of the last document not dropped (None when k_lo = 0).
        draws: Sample draws.
        labelled: Documents decided by the LLM (sample and band, calls or cache hits).
        undecided: Documents the LLM was asked about but did not decide.
        recall_lb: Lower bound at the chosen cut of the recall test statistic (> 0 = met).
        precision_lb: Lower bound at the chosen cut of the precision test statistic (> 0 = met; 0 when k_hi = 0).
    """

    decision: np.ndarray
    provenance: np.ndarray
    sampled: np.ndarray
    k_hi: int
    k_lo: int
    s_hi: float | None
    s_lo: float | None
    draws: int
    labelled: int
    undecided: int
    recall_lb: float
    precision_lb: float
    targets: CascadeTargets = field(default_factory=CascadeTargets)

    def report(self) -> dict[str, Any]:
        """Calls made, calls saved, thresholds and the guarantee, JSON-ready."""
        n = int(self.decision.size)
        prov = {p: int((self.provenance == p).sum()) for p in PROVENANCE}
        t = self.targets
        return {
            "documents": n,
            "sample_draws": self.draws,
            "sampled": int(self.sampled.sum()),
            "llm_decisions": self.labelled,
            "undecided": self.undecided,
            "calls_saved": n - self.labelled - self.undecided,
            "by": prov,
            "upper": {"rank": self.k_hi, "evidence_score": None if self.s_hi is None else round(self.s_hi, 4)},
            "lower": {"rank": self.k_lo, "evidence_score": None if self.s_lo is None else round(self.s_lo, 4)},
            "targets": t.to_dict(),
            "guarantee": (f"recall >= {t.recall:g} and precision >= {t.precision:g} of the LLM's decisions with "
                          f"probability >= {1 - t.delta:g} (importance sampling, normal approximation)"),
            "recall_bound": round(float(self.recall_lb), 6),
            "precision_bound": round(float(self.precision_lb), 6),
        }


def run_cascade(evidence_score: np.ndarray, rank: np.ndarray, center: float, targets: CascadeTargets,
                label: Callable[[np.ndarray], np.ndarray], known: np.ndarray | None = None) -> CascadeResult:
    """Decide a collection with as few LLM decisions as the targets allow.

    Args:
        evidence_score: float (N,) offline evidence scores.
        rank: int (N,) 1-based ranks of the run.
        center: The calibrated cut (z units), center of the proxy.
        targets: The targets.
        label: Called twice (sample, then band) with int64 document indices; returns
            float (len,) LLM decisions: 1.0, 0.0, or NaN when no decision was made.
        known: Optional float (N,) decisions already made (1, 0, NaN = unknown), e.g.
            cached from an earlier run with other targets: a known document outside the
            band keeps its decision; it is not asked again.

    Returns:
        The :class:`CascadeResult`.

    Raises:
        ValueError: see :func:`plan_sample`.
    """
    plan = plan_sample(evidence_score, rank, center, targets)
    n_docs = plan.s.size
    lab = np.full(n_docs, np.nan)  # by rank position
    if known is not None:
        lab[:] = np.asarray(known, dtype=np.float64)[plan.order]
    need = plan.sampled[np.isnan(lab[plan.sampled])]
    if need.size:
        lab[need] = np.asarray(label(plan.order[need]), dtype=np.float64)
    asked = np.zeros(n_docs, dtype=bool)
    asked[plan.sampled] = True
    yd = lab[plan.draws]
    y_low = np.where(np.isnan(yd), 1.0, yd)
    y_high = np.where(np.isnan(yd), 0.0, yd)
    alpha = targets.delta / 2.0
    k_lo, rlb = recall_cut(plan, y_low, y_high, targets.recall, alpha)
    k_hi, plb = precision_cut(plan, y_high, targets.precision, alpha, targets.min_draws)
    k_hi = min(k_hi, k_lo)
    band = np.arange(k_hi, k_lo)
    band = band[~asked[band] & np.isnan(lab[band])]
    if band.size:
        lab[band] = np.asarray(label(plan.order[band]), dtype=np.float64)
        asked[band] = True
    pos = np.arange(n_docs)
    has = ~np.isnan(lab)
    use_llm = asked | has  # asked now, or known from before: the LLM's decision counts
    prov_pos = np.where(use_llm, "llm", np.where(pos < k_hi, "score-above", "score-below")).astype(object)
    dec_pos = np.empty(n_docs, dtype=object)
    dec_pos[:] = None
    dec_pos[has] = [bool(v) for v in lab[has] > 0.5]
    dec_pos[~use_llm & (pos < k_hi)] = True
    dec_pos[~use_llm & (pos >= k_lo)] = False
    decision = np.empty(n_docs, dtype=object)
    provenance = np.empty(n_docs, dtype=object)
    sampled = np.zeros(n_docs, dtype=bool)
    decision[plan.order] = dec_pos
    provenance[plan.order] = prov_pos
    sampled[plan.order[plan.sampled]] = True
    llm_mask = prov_pos == "llm"
    return CascadeResult(
        decision=decision, provenance=provenance, sampled=sampled, k_hi=int(k_hi), k_lo=int(k_lo),
        s_hi=float(plan.s[k_hi - 1]) if k_hi > 0 else None, s_lo=float(plan.s[k_lo - 1]) if k_lo > 0 else None,
        draws=int(plan.draws.size), labelled=int((llm_mask & has).sum()), undecided=int((llm_mask & ~has).sum()),
        recall_lb=float(rlb[k_lo]), precision_lb=float(plb[k_hi]) if k_hi > 0 else 0.0, targets=targets,
    )
