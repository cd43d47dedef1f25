"""The options of one filter run, as one typed value (SPEC F6).

:class:`FilterOptions` is what the facade (:meth:`DocMaster.filter
<docmaster_core.pipeline.DocMaster.filter>`), the command line and the app pass for a
run: the strategies, the decider, the review targets, top-k and the retrieval
overrides. The index the run searches is given one way, as the retriever the facade
builds for ``index_params`` and ``retrieval``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence

from ..config import CandidateSettings, RetrievalSettings
from ..errors import RetrievalError
from ..retrieval.combine import STRATEGIES
from ..retrieval.retriever import check_top_k
from .decider import OfflineCalibration
from .review import ReviewTargets

__all__ = ["FilterOptions", "DECIDERS", "DECIDE_MODES", "review_options", "RENAMED"]

#: Deciders: ``auto`` (the LLM when one is configured, else the calibrated rule), ``llm``, ``calibrated``.
DECIDERS = ("auto", "llm", "calibrated")
#: How an LLM decides: every strategy, or once per document on the combined evidence.
DECIDE_MODES = ("per-strategy", "combined-only")


@dataclass(frozen=True)
class FilterOptions:
    """Everything a filter run takes besides the condition and the workspace.

    Attributes:
        strategy: The strategy whose decision counts as "the" match.
        strategies: Strategies decided (None: tree, semantic, hyperedge, combined);
            ``strategy`` is added when missing.
        top_k: Evidence nodes per document and strategy (None: the retrieval setting).
        doc_ids: Documents filtered (None: all of the workspace).
        decider: One of :data:`DECIDERS`.
        decide: One of :data:`DECIDE_MODES`, or None: ``combined-only`` with a review,
            else ``per-strategy``.
        review: Targets of the rank-order review with the LLM as the oracle
            (:class:`~docmaster_core.filtering.review.ReviewTargets`), or None (the LLM
            decides every document).
        answers: Use the answers stored for this condition (the user's review answers
            outrank every decider: ``decided_by = "user"``); evaluation runs turn it off.
        calibration: The offline rule's parameters (None: the settings' ``filter`` section
            through the facade, the calibrated defaults otherwise).
        index_params: Index parameters of the hyper-edges searched (alpha, k, K, w; None:
            the settings' ``index`` section). Used by the facade to choose the retriever.
        retrieval: Retrieval settings (top-k, gamma, type weights; None: the settings'
            ``retrieval`` section). Used by the facade to choose the retriever.
        candidates: Two-stage filtering at scale (:class:`~docmaster_core.config.CandidateSettings`:
            a run over more than ``min_docs`` documents scores exactly only the candidate
            documents of the collection indexes); None: every document is scored (the
            facade passes the settings' ``candidates`` section).
        max_workers: Concurrent LLM decisions (None: the LLM's ``max_concurrency``).
        save: Save the run in the workspace.
        extra_params: Extra entries for the saved run's parameters.
    """

    strategy: str = "combined"
    strategies: tuple[str, ...] | None = None
    top_k: int | None = None
    doc_ids: tuple[str, ...] | None = None
    decider: str = "auto"
    decide: str | None = None
    review: ReviewTargets | None = None
    answers: bool = True
    calibration: OfflineCalibration | None = None
    index_params: Mapping[str, Any] | None = None
    retrieval: RetrievalSettings | None = None
    candidates: CandidateSettings | None = None
    max_workers: int | None = None
    save: bool = True
    extra_params: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("strategies", "doc_ids"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, tuple):
                if isinstance(v, str):
                    raise RetrievalError(f"{name} must be a list of names, got the string {v!r}")
                object.__setattr__(self, name, tuple(v))
        bad = [s for s in (self.strategy, *(self.strategies or ())) if s not in STRATEGIES]
        if bad:
            raise RetrievalError(f"unknown strategy {bad[0]!r}; choose from {', '.join(STRATEGIES)}")
        if self.decider not in DECIDERS:
            raise RetrievalError(f"unknown decider {self.decider!r}; choose auto, llm or calibrated")
        if self.decide is not None and self.decide not in DECIDE_MODES:
            raise RetrievalError(f"unknown decide mode {self.decide!r}; choose {' or '.join(DECIDE_MODES)}")
        check_top_k(self.top_k)

    @classmethod
    def of(cls, options: FilterOptions | None = None, **overrides: Any) -> FilterOptions:
        """``options`` (default: the defaults) with ``overrides`` replacing its fields.

        Raises:
            TypeError: an override that is not a field (a typo is not dropped silently).
            RetrievalError: an invalid value (see the class docstring).
        """
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - names)
        for old in unknown:
            if old in RENAMED:
                raise TypeError(RENAMED[old])
        if unknown:
            raise TypeError(f"unknown filter option {unknown[0]!r}; options are {', '.join(sorted(names))}")
        return replace(options or cls(), **overrides)

    def resolved_decide(self) -> str:
        """The decide mode of the run: ``decide``, else ``combined-only`` with a review, else ``per-strategy``."""
        if self.decide is not None:
            return self.decide
        return "combined-only" if self.review is not None else "per-strategy"

    def strategy_list(self, default: Sequence[str]) -> list[str]:
        """The strategies decided: ``strategies`` (else ``default``) with ``strategy`` added when missing."""
        strats = list(self.strategies) if self.strategies else list(default)
        if self.strategy not in strats:
            strats.append(self.strategy)
        return strats


#: Options of the importance-sampling cascade that the rank-order review replaced (issue 33),
#: with what to use instead.
RENAMED = {
    "cascade": "the filter cascade was replaced by the rank-order review: pass review=ReviewTargets(recall=..., "
               "delta=...) (command line: --review)",
    "precision": "the cascade became the review (--review), which has no precision target: it keeps only the "
                 "documents the oracle answered 'match' (precision 1 relative to the oracle); limit its cost with "
                 "--max-calls",
    "sample_budget": "the cascade became the review (--review), which sizes its own samples exactly; limit its "
                     "cost with --max-calls",
}


def review_options(*, review: bool = False, decide: str | None = None, decider: str = "auto",
                   recall: float = 0.9, delta: float = 0.1, max_calls: int | None = None, seed: int = 0
                   ) -> dict[str, Any]:
    """The :class:`FilterOptions` fields of the LLM review and the decide mode, built one
    way for the command line (``--review``, ``--recall-target`` ...) and the app's form.

    Args:
        review: Ask the LLM in rank order until the recall target is certified (issue 33).
        decide: One of :data:`DECIDE_MODES`, or None (the run's default).
        decider: The run's decider; the review needs an LLM one.
        recall, delta: The review's targets (see
            :class:`~docmaster_core.filtering.review.ReviewTargets`).
        max_calls: Most LLM answers (None: as many as certifying takes).
        seed: Seed of the stopping tests' samples.

    Returns:
        ``{"decide": str}`` and/or ``{"review": ReviewTargets}`` (only the ones given).

    Raises:
        RetrievalError: the review with the calibrated decider, or a target out of range.
    """
    out: dict[str, Any] = {}
    if decide:
        out["decide"] = decide
    if review:
        if decider == "calibrated":
            raise RetrievalError("--review with an LLM needs an LLM decider (--llm openai); to answer yourself, "
                                 "use `docmaster review` or the Filter page's Review")
        try:
            out["review"] = ReviewTargets(recall=float(recall), delta=float(delta), max_calls=max_calls,
                                          seed=int(seed))
        except ValueError as e:
            raise RetrievalError(str(e)) from None
    return out
