"""Filtering a collection by a natural-language condition (SPEC F6).

For every document the evidence of each strategy (tree traversal, semantic search,
hyper-edge matching, their combination, and optionally the flat baseline) is
retrieved and decided separately, so a run reports, per document, the decision of
each strategy and of the combined evidence, with rationale, cited evidence ids and the
tokens each strategy spent (the four booleans and token totals of the original
DocMaster demo's filter API).

Deciders:

* ``llm`` - ``llm.decide(condition, evidence)`` per document and strategy, run
  concurrently (``settings.llm.max_concurrency`` threads); responses are cached by the
  LLM layer (content hash) and, within a process, by this module; the per-run budget
  of the LLM layer is honoured (a document whose call was refused gets
  ``decision=None`` with the reason, never a guessed decision).
* ``calibrated`` - the offline rule of :mod:`docmaster_core.filtering.decider`: the
  evidence's dense (cosine) and keyword (BM25-weighted) scores, standardised over the
  collection with robust z-scores (0 calls, 0 tokens). The same rule decides every
  strategy's evidence, flat chunks included.
* ``auto`` (default) - ``calibrated`` when the LLM backend is offline, else ``llm``.

With the ``llm`` decider, ``review=ReviewTargets(...)`` asks the LLM about documents in
the order of the evidence-score ranking until a stopping test certifies the recall
target (:mod:`.review`, :mod:`~docmaster_core.filtering.llm_decisions`); documents it did not
reach are decided "no" (``decided_by = "not-checked"``). ``decide="combined-only"`` has
the LLM decide only the combined evidence (one call per document), the other
strategies keep their offline decisions.

Answers the user gave for the condition (the review on the Filter page, ``docmaster
review``; stored in the workspace, :mod:`docmaster_core.store.judgements`) outrank every
decider for the run's strategy: ``decided_by = "user"``. Each decision records how it
was made (``Decision.decided_by``).

At scale (more documents than ``candidates.min_docs``, :class:`~docmaster_core.config.CandidateSettings`)
a run has two stages: candidate documents from the collection-wide indexes (persisted
FAISS over the node vectors, persisted BM25 over the node texts;
:mod:`docmaster_core.retrieval.candidates`), then the exact evidence and decisions above
for the candidates only, over a view of just those documents
(:func:`~docmaster_core.retrieval.corpus.sub_view`; the lexical document frequencies stay
the whole collection's). Every other document is decided "no" with
``decided_by = "not-a-candidate"``; ``FilterRun.candidates`` says how many there were.
The rule's statistics are taken over the best ``pool`` documents of each signal, so the
decisions equal the exhaustive run's whenever the candidates hold those and the best
document (measured in docs/results/scale.md).

A run is saved in the workspace (``Workspace.save_run("filter", params, result)``)
with the condition, every parameter and all decisions, so two runs can be compared
(:func:`~docmaster_core.filtering.results.compare_runs`); its cut can be moved without
retrieving again (:func:`~docmaster_core.filtering.results.move_cut`).
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import LLMBudgetExceeded, LLMError, RetrievalError
from ..model import Decision, Evidence
from ..config import RetrievalSettings
from ..protocols import LLM, CandidateScorer, Embedder, RunStore
from .llm_decisions import decide_with_review, llm_strategies, user_decision
from .decider import DEFAULT_CALIBRATION
from .offline import Cut, calibrated_document_decisions, offline_decisions
from .review import Feedback
from .options import FilterOptions
from .results import compare_runs, move_cut
from ..retrieval.retriever import Retriever, check_top_k
from ..retrieval.candidates import Candidates, candidate_documents, candidate_view
from ..retrieval.keyword import COLLECTION_BM25
from ..retrieval.semantic import node_cosines
from .decider import LexicalStats
from .evidence import DocTerms, condition_parts, lexical_parts, search_query
from ..model import NodeType
from ..retrieval.corpus import TYPE_CODES
from collections import Counter
from ..text.terms import condition_terms

__all__ = [
    "collect_evidence",
    "calibrated_document_decisions",
    "offline_decisions",
    "Cut",
    "DocumentResult",
    "FilterRun",
    "run_filter",
    "compare_runs",
    "move_cut",
    "condition_query",
    "DEFAULT_STRATEGIES",
]

#: Strategies decided by default: the demo's four booleans.
DEFAULT_STRATEGIES = ("tree", "semantic", "hyperedge", "combined")

#: A saved run keeps its evidence texts whole up to this many characters in all (88 papers:
#: ~2.5 M), so a reopened Filter page shows what the run showed; a larger run (a two-stage run
#: at scale) keeps the first :data:`_EVIDENCE_TEXT_SHORTENED` characters of each text.
_EVIDENCE_CHARS_SAVED_WHOLE = 4_000_000
_EVIDENCE_TEXT_SHORTENED = 400


def _saved_text_chars(run: "FilterRun") -> int | None:
    """Characters of each evidence text a saved ``run`` keeps: None (whole) when all its
    evidence texts together hold at most :data:`_EVIDENCE_CHARS_SAVED_WHOLE` characters,
    else :data:`_EVIDENCE_TEXT_SHORTENED` (the saved result then says so in
    ``evidence_text_chars``)."""
    total = sum(len(e.text) for d in run.documents for es in d.evidence.values() for e in es)
    return None if total <= _EVIDENCE_CHARS_SAVED_WHOLE else _EVIDENCE_TEXT_SHORTENED


def condition_query(condition: str) -> str:
    """The text embedded for a condition: the condition itself, whitespace-normalised.

    Raises:
        RetrievalError: the condition is empty.
    """
    c = " ".join((condition or "").split())
    if not c:
        raise RetrievalError("the filter condition is empty")
    return c


@dataclass
class DocumentResult:
    """Per-document outcome of a filter run.

    Attributes:
        doc_id: Document id.
        file_name: Source file name.
        decisions: ``{strategy: Decision}``.
        evidence: ``{strategy: [Evidence]}`` as given to the decider.
    """

    doc_id: str
    file_name: str
    decisions: dict[str, Decision] = field(default_factory=dict)
    evidence: dict[str, list[Evidence]] = field(default_factory=dict)

    def decision(self, strategy: str = "combined") -> bool | None:
        """The boolean decision of one strategy (None when not made)."""
        d = self.decisions.get(strategy)
        return None if d is None else d.decision

    def to_dict(self, text_chars: int | None = None) -> dict[str, Any]:
        def ev(e: Evidence) -> dict[str, Any]:
            d = e.to_dict()
            if text_chars is not None and len(d["text"]) > text_chars:
                d["text"] = d["text"][:text_chars] + " ..."
            return d

        return {
            "doc_id": self.doc_id,
            "file": self.file_name,
            "decisions": {s: d.to_dict() for s, d in self.decisions.items()},
            "evidence": {s: [ev(e) for e in es] for s, es in self.evidence.items()},
        }


@dataclass
class FilterRun:
    """The result of :func:`run_filter`.

    Attributes:
        condition: The condition text.
        strategy: The strategy whose decision counts as "the" match.
        strategies: Strategies decided.
        params: Every parameter of the run (retrieval settings, top_k, decider, ...).
        documents: One :class:`DocumentResult` per document, workspace order.
        tokens: Tokens spent per strategy.
        timings: Seconds: ``embed_retrieve`` (query embedding, all strategies),
            ``decide`` (LLM or offline decider), ``total``.
        backend: LLM backend name, or ``"offline-calibrated"``.
        run_id: Id of the saved run (None when not saved).
        usage: LLM usage snapshot of the run (calls, tokens) when available.
        warnings: One line per document left out of the run (e.g. its vector file is
            missing; ``docmaster check --repair`` rebuilds it).
        cuts: ``{strategy: Cut}``: the suggested cut of each strategy's ranking by
            offline evidence score (the calibrated decider's decisions are exactly the
            documents at or above it).
        review: The report of a review with the LLM as the oracle (documents checked,
            matches, the stopping tests, the promise; :meth:`.review.ReviewState.to_dict`),
            else empty.
        user_answers: Documents decided by the user's stored answers.
        candidates: Two-stage run (at scale): ``{"candidates": C, "not_candidates": D - C,
            "from_dense", "from_lexical", "nodes_asked", "index", "seconds", "pool_docs"}``;
            empty when every document was scored exactly.
    """

    condition: str
    strategy: str
    strategies: list[str]
    params: dict[str, Any]
    documents: list[DocumentResult]
    tokens: dict[str, int]
    timings: dict[str, float]
    backend: str
    run_id: int | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    cuts: dict[str, Cut] = field(default_factory=dict)
    review: dict[str, Any] = field(default_factory=dict)
    user_answers: int = 0
    candidates: dict[str, Any] = field(default_factory=dict)

    def not_candidates(self) -> int:
        """Documents decided "no" without exact scoring (not candidates of a two-stage run)."""
        return int(self.candidates.get("not_candidates", 0))

    def matches(self, strategy: str | None = None) -> list[str]:
        """doc_ids decided True by ``strategy`` (default: the run's strategy)."""
        s = strategy or self.strategy
        return [d.doc_id for d in self.documents if d.decision(s) is True]

    def three_way(self, strategy: str | None = None) -> dict[str, int]:
        """Three-way counts of ``strategy`` (default: the run's): ``{"kept", "uncertain",
        "dropped", "undecided"}``; ``kept`` and ``dropped`` are the sure decisions, an
        uncertain document (:attr:`Decision.uncertain <docmaster_core.model.Decision.uncertain>`)
        is counted once, whichever side of the cut it fell on."""
        s = strategy or self.strategy
        out = {"kept": 0, "uncertain": 0, "dropped": 0, "undecided": 0}
        for d in self.documents:
            dec = d.decisions.get(s)
            if dec is None or dec.decision is None:
                out["undecided"] += dec is not None
            elif dec.uncertain:
                out["uncertain"] += 1
            else:
                out["kept" if dec.decision else "dropped"] += 1
        return out

    def undecided(self, strategy: str | None = None) -> list[str]:
        """doc_ids with no decision (error or budget) for ``strategy``."""
        s = strategy or self.strategy
        return [d.doc_id for d in self.documents if s in d.decisions and d.decision(s) is None]

    def to_dict(self, text_chars: int | None = None) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "condition": self.condition,
            "strategy": self.strategy,
            "strategies": list(self.strategies),
            "params": self.params,
            "backend": self.backend,
            "matches": self.matches(),
            "matches_by_strategy": {s: self.matches(s) for s in self.strategies},
            "three_way": {s: self.three_way(s) for s in self.strategies},
            "tokens": dict(self.tokens),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "usage": self.usage,
            "warnings": list(self.warnings),
            "cuts": {s: c.to_dict() for s, c in self.cuts.items()},
            **({"review": self.review} if self.review else {}),
            **({"user_answers": self.user_answers} if self.user_answers else {}),
            **({"candidates": self.candidates} if self.candidates else {}),
            **({"evidence_text_chars": text_chars} if text_chars is not None else {}),
            "documents": [d.to_dict(text_chars) for d in self.documents],
        }


# ---------------------------------------------------------------------------- decisions
_DECISION_CACHE: dict[str, Decision] = {}
_DECISION_LOCK = threading.Lock()
_DECISION_CACHE_MAX = 20000


def _decision_key(backend: str, condition: str, evidence: Sequence[Evidence]) -> str:
    payload = json.dumps([backend, condition, [[e.evidence_id, e.text] for e in evidence]], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def _cached_decision(backend: str, condition: str, evidence: Sequence[Evidence]) -> Decision | None:
    """A decision the LLM already made in this process for exactly this evidence (no call), or None."""
    with _DECISION_LOCK:
        hit = _DECISION_CACHE.get(_decision_key(backend, condition, evidence))
    if hit is None:
        return None
    return Decision(hit.decision, hit.rationale, list(hit.evidence_ids), hit.score, 0, hit.backend, hit.error, note=hit.note)


def _llm_decide(llm: LLM, condition: str, evidence: list[Evidence], doc_id: str) -> Decision:
    backend = llm.backend_name
    if not evidence:
        return Decision(False, "No evidence was retrieved for this document.", [], 0.0, 0, backend)
    key = _decision_key(backend, condition, evidence)
    with _DECISION_LOCK:
        hit = _DECISION_CACHE.get(key)
    if hit is not None:
        return Decision(hit.decision, hit.rationale, list(hit.evidence_ids), hit.score, 0, hit.backend, hit.error, note=hit.note)
    try:
        d = llm.decide(condition, evidence, doc_id=doc_id)
    except LLMBudgetExceeded as e:
        return Decision(None, "", [], 0.0, 0, backend, f"budget exhausted: {e}")
    except LLMError as e:
        return Decision(None, "", [], 0.0, 0, backend, str(e))
    given = {e.evidence_id for e in evidence}
    d.evidence_ids = [i for i in d.evidence_ids if i in given]
    if d.decision is not None and d.error is None:
        with _DECISION_LOCK:
            if len(_DECISION_CACHE) >= _DECISION_CACHE_MAX:
                _DECISION_CACHE.clear()
            _DECISION_CACHE[key] = d
    return d


def decision_notes(run: "FilterRun") -> list[str]:
    """Run-level warnings from the decisions' notes (:attr:`Decision.note
    <docmaster_core.model.Decision.note>`): how many decisions had their evidence
    trimmed to fit the model's context window, and how many were read from a reply that
    was not the asked-for JSON, each line with one example; ``[]`` when none."""
    trimmed: list[tuple[str, str, str]] = []
    loose: list[tuple[str, str, str]] = []
    for doc in run.documents:
        for strategy, d in doc.decisions.items():
            if not d.note:
                continue
            for part in d.note.split("; "):
                (trimmed if part.startswith("evidence trimmed") else loose).append((doc.doc_id, strategy, part))
    out = []
    if trimmed:
        doc_id, strategy, part = trimmed[0]
        out.append(f"{len(trimmed)} decision(s) got less evidence than retrieved, to fit the model's context "
                   f"(e.g. {doc_id} / {strategy}: {part})")
    if loose:
        doc_id, strategy, part = loose[0]
        out.append(f"{len(loose)} decision(s) were {part} "
                   f"(e.g. {doc_id} / {strategy}); the model's text is the rationale")
    return out


def collect_evidence(retr: Retriever, condition: str, strategies: Sequence[str], top_k: int, *,
                     doc_ids: Sequence[str] | None = None, view=None, budget: int | None = None
                     ) -> tuple[list[DocumentResult], dict[str, list[np.ndarray]]]:
    """Retrieve every strategy's evidence for every document (no decisions).

    ``combined`` is each strategy's best passages in turn within ``budget`` characters
    per document (default ``settings.evidence_chars``; 0: the top-k RRF list; see
    :func:`~docmaster_core.retrieval.combine.fuse_within_budget`), searched with
    :func:`~.evidence.search_query` (the condition without its question framing); the
    other strategies search with the condition as written. The cosines returned are with
    the condition as written for every strategy (the decision rule was calibrated so).

    Returns:
        ``(documents, cosines)``: one :class:`DocumentResult` per document with its
        ``evidence`` filled, and per strategy one float32 array per document holding the
        cosine of each evidence item with the condition (same order as the evidence).
    """
    view = view or retr.view
    if budget is None:
        budget = int(getattr(retr.settings, "evidence_chars", 0))
    others = [s for s in strategies if not (budget and s == "combined")]
    res = retr.rank(condition, others, doc_ids=doc_ids, top_k=top_k, view=view)
    if budget and "combined" in strategies:
        # the filter evidence searches without the question's framing (search_query)
        comb = retr.rank(search_query(condition), ["combined"], doc_ids=doc_ids, top_k=top_k, view=view, budget=budget)
        res.ranked["combined"] = comb.ranked["combined"]
        res.combined_strategies.update(comb.combined_strategies)
    dis = np.flatnonzero(view.doc_mask(doc_ids)).tolist()
    docs = [DocumentResult(view.docs[di].doc_id, view.docs[di].file_name) for di in dis]
    # the evidence nodes of every document read at once, not tree by tree (a lazily loaded view)
    view.prefetch((di, int(n)) for s, by_doc in res.ranked.items() if s != "flat"
                  for di, (ids, _) in by_doc.items() for n in ids)
    cos_by: dict[str, list[np.ndarray]] = {}
    fv = retr.flat(view) if "flat" in strategies else None
    node_cos, flat_cos = res.cos, res.flat_cos
    if not set(others) & {"tree", "semantic", "hyperedge", "combined"}:  # rank computed no node cosines
        node_cos = node_cosines(view, res.q)
    for s in strategies:
        cos_by[s] = []
        for r, di in zip(docs, dis):
            r.evidence[s] = retr.to_evidence(res, s, di, view)
            got = res.ranked.get(s, {}).get(di)
            if got is None:
                cos_by[s].append(np.zeros(0, np.float32))
            elif s == "flat":
                first = int(np.searchsorted(fv.doc_of, di))
                cos_by[s].append(flat_cos[first + got[0]])
            else:
                cos_by[s].append(node_cos[view.docs[di].start + got[0]])
    return docs, cos_by


def run_filter(
    ws: RunStore,
    embedder: Embedder,
    llm: LLM | None,
    settings: RetrievalSettings,
    condition: str,
    options: FilterOptions | None = None,
    *,
    retriever: Retriever | None = None,
    scorer: CandidateScorer | None = None,
    **overrides: Any,
) -> FilterRun:
    """Filter the documents of a workspace by ``condition`` (SPEC F6).

    Args:
        ws: The workspace.
        embedder: The node embedder.
        llm: The LLM facade (``decide``, ``backend_name``, ``is_offline``); may be None
            with ``decider="calibrated"``.
        settings: :class:`~docmaster_core.config.RetrievalSettings`.
        condition: Natural-language condition.
        options: The run's :class:`~docmaster_core.filtering.options.FilterOptions`
            (strategies, decider, review, top-k, ...; its ``index_params`` and
            ``retrieval`` are the facade's business: here the retriever and ``settings``
            are given). None: the defaults.
        retriever: The :class:`Retriever` searched, the one way the index is given
            (default: one over ``ws`` without hyper-edge indexes).
        scorer: Where the candidates' evidence is collected when the candidate stage
            runs (:class:`~docmaster_core.protocols.CandidateScorer`, e.g. the Ray
            scoring of :mod:`.ray_scoring`); None: this process. A run without the candidate stage is always scored here
            (``run.params["scored_on"]`` says where).
        **overrides: Fields of :class:`FilterOptions` replacing those of ``options``
            (``run_filter(..., top_k=5)``).

    Returns:
        The :class:`FilterRun`.

    Raises:
        RetrievalError: empty condition, unknown strategy/decider/document/decide
            mode, or no documents.
    """
    t_all = time.perf_counter()
    try:
        opts = FilterOptions.of(options, **overrides)
    except TypeError as e:
        raise RetrievalError(str(e)) from None
    strategy, top_k, doc_ids, decider = opts.strategy, opts.top_k, opts.doc_ids, opts.decider
    review, calibration, max_workers, save, extra_params = (opts.review, opts.calibration, opts.max_workers,
                                                            opts.save, opts.extra_params)
    decide = opts.resolved_decide()
    cond = condition_query(condition)
    strats = opts.strategy_list(DEFAULT_STRATEGIES)
    if decider == "auto":
        decider = "calibrated" if (llm is None or llm.is_offline) else "llm"
    if decider == "llm" and llm is None:
        raise RetrievalError("decider 'llm' needs an LLM")
    if review is not None and decider != "llm":
        raise RetrievalError("a review with the LLM as the oracle needs the LLM decider (an OpenAI-compatible "
                             "backend, --llm openai); to answer yourself, use `docmaster review` or the Filter page")
    try:
        llm_strats = llm_strategies(strats, decide)
    except ValueError as e:
        raise RetrievalError(str(e)) from None
    if review is not None and strategy not in llm_strats:
        raise RetrievalError(f"the review decides the run's strategy {strategy!r}; the LLM must decide it")
    calib = calibration or DEFAULT_CALIBRATION
    check_top_k(top_k)
    k = top_k if top_k is not None else settings.top_k
    retr = retriever or Retriever(ws, embedder, settings)
    index_key = retr.index_key
    view = retr.view
    if not view.docs:
        raise RetrievalError(f"workspace {ws.path} has no documents")

    t0 = time.perf_counter()
    run_view, run_doc_ids, cand = view, doc_ids, None
    cs = opts.candidates
    if cs is not None and int(view.doc_mask(doc_ids).sum()) > cs.min_docs:
        if calib.pool is not None and cs.pool_docs < calib.pool:
            raise RetrievalError(f"candidates.pool_docs ({cs.pool_docs}) must be at least the filter's statistics "
                                 f"pool ({calib.pool}): the candidates must hold the documents the cut is computed over")
        cand, run_view = _stage_one(retr, view, cond, cs, doc_ids, calib.related_weight)
        run_doc_ids = None
    t_candidates = time.perf_counter() - t0
    scored_on = "local"
    if scorer is not None and cand is not None:
        docs, cos_by = scorer.collect(retr, cond, strats, k, run_view)
        scored_on = scorer.where
    else:
        docs, cos_by = collect_evidence(retr, cond, strats, k, doc_ids=run_doc_ids, view=run_view)
    t_retrieve = time.perf_counter() - t0

    t0 = time.perf_counter()
    usage_before = None
    review_report: dict[str, Any] = {}
    stored = _stored_answers(ws, cond) if opts.answers else {}
    # the offline evidence scores rank every strategy's collection (and decide it, for the
    # calibrated decider): computed for every run, an LLM run shows its decisions beside them
    offline, cuts = offline_decisions(retr, run_view, cond, docs, cos_by, strats, calib, run_doc_ids,
                                      score_passages=k if int(getattr(settings, "evidence_chars", 0)) else None)
    if decider == "calibrated":
        backend = "offline-calibrated"
        for s in strats:
            for r, d in zip(docs, offline[s]):
                r.decisions[s] = d
    else:
        backend = llm.backend_name
        usage_before = _usage(llm)
        workers = max_workers or llm.max_concurrency
        review_strats = [strategy] if review is not None else []
        if review is not None:
            review_report = decide_with_review(llm, cond, docs, offline[strategy], strategy, review, workers,
                                               _llm_decide, _cached_decision, stored,
                                               feedback=Feedback.from_evidence(
                                                   run_view, [r.doc_id for r in docs],
                                                   {r.doc_id: [e.node_id for e in r.evidence[strategy]] for r in docs}))
        jobs = [(r, s) for r in docs for s in llm_strats if s not in review_strats]
        if jobs:
            with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="docmaster-decide") as pool:
                futs = {pool.submit(_llm_decide, llm, cond, r.evidence[s], r.doc_id): (r, s) for r, s in jobs}
                for fut in cf.as_completed(futs):
                    r, s = futs[fut]
                    r.decisions[s] = fut.result()
        for s in strats:
            for r, od in zip(docs, offline[s]):
                if s not in llm_strats:  # combined-only: the other strategies keep the offline rule
                    r.decisions[s] = od
                    od.decided_by = "offline"
                    continue
                r.decisions[s].evidence_score, r.decisions[s].rank = od.evidence_score, od.rank
                if r.decisions[s].decided_by is None:
                    r.decisions[s].decided_by = "llm"
    scored = {r.doc_id: od for r, od in zip(docs, offline[strategy])}
    t_decide = time.perf_counter() - t0
    cand_report: dict[str, Any] = {}
    if cand is not None:
        docs = _with_non_candidates(view, doc_ids, docs, strats, backend, cs.pool_docs)
        cand_report = {**cand.to_dict(), "not_candidates": len(docs) - int(cand.doc_indices.size),
                       "pool_docs": cs.pool_docs}
    users = 0
    for r in docs:  # the user's answers outrank every decider (issue 33)
        if r.doc_id in stored:
            users += 1
            if r.decisions[strategy].decided_by != "user":
                r.decisions[strategy] = user_decision(*stored[r.doc_id], scored.get(r.doc_id, r.decisions[strategy]))
    tokens = {s: int(sum(r.decisions[s].tokens for r in docs)) for s in strats}
    run = FilterRun(
        condition=cond,
        strategy=strategy,
        strategies=strats,
        params={
            "condition": cond,
            "strategy": strategy,
            "strategies": strats,
            "top_k": k,
            "decider": decider,
            "retrieval": settings.model_dump() if hasattr(settings, "model_dump") else dict(settings),
            "calibration": calib.to_dict(),
            "index": index_key if isinstance(index_key, (dict, str, int, float, type(None))) else str(index_key),
            "doc_ids": list(doc_ids) if doc_ids is not None else None,
            **({"decide": decide} if decide != "per-strategy" else {}),
            **({"review": review.to_dict()} if review is not None and decider == "llm" else {}),
            **({"answers": False} if not opts.answers else {}),
            **({"candidates": cs.model_dump()} if cand is not None else {}),
            **({"scored_on": scored_on} if scorer is not None else {}),
            **(extra_params or {}),
        },
        documents=docs,
        tokens=tokens,
        timings={"embed_retrieve": t_retrieve, "decide": t_decide,
                 **({"candidates": t_candidates} if cand is not None else {})},
        backend=backend,
        usage=_usage_delta(usage_before, _usage(llm)) if usage_before is not None else {},
        cuts=cuts,
        review=review_report,
        user_answers=users,
        candidates=cand_report,
    )
    run.timings["total"] = time.perf_counter() - t_all
    if save:
        run.run_id = ws.save_run("filter", run.params, run.to_dict(text_chars=_saved_text_chars(run)))
    return run


def _stored_answers(ws, condition: str) -> dict[str, tuple[bool, str]]:
    """The user's stored answers for ``condition`` (``{doc_id: (label, source)}``); empty for a
    store that keeps none."""
    get = getattr(ws, "judgements", None)
    return dict(get(condition)) if get is not None else {}


def _stage_one(retr: Retriever, view, cond: str, cs, doc_ids: Sequence[str] | None,
               related_weight: float) -> tuple[Candidates, Any]:
    """Stage 1: the candidate documents of ``cond`` and a view over just them.

    The condition and each of its parts (:func:`.evidence.condition_parts`) are searched
    in the dense index, the condition's terms and each lexical part's in the BM25 index.
    The view's lexical statistics are the whole collection's (from the BM25 index's
    document frequencies), so idf weights equal the exhaustive run's; its documents'
    role-weighted term counts (:func:`.evidence.doc_terms`) are read for the condition's
    terms from the index's stored token counts instead of tokenising every tree again.
    """
    from ..store.lexical_index import lexical_index

    texts = [cond] + [p for p in condition_parts(cond) if p != cond]
    q = np.atleast_2d(np.asarray(retr.embedder.encode(texts), dtype=np.float32))
    terms = [condition_terms(cond)] + [t for t in lexical_parts(cond) if t != condition_terms(cond)]
    lex = lexical_index(retr.ws, view.collection) if view.collection is not None else None
    mask = view.doc_mask(doc_ids)
    cand = candidate_documents(view, lex, q, terms, cs, doc_mask=mask)
    sub = candidate_view(view, cand.doc_indices, retr.ws, lex)
    if lex is not None:
        stats = LexicalStats(lex.n_docs, lex.df)
    else:  # the in-memory fallback view: the statistics of every tree
        from .decider import lexical_stats

        stats = lexical_stats(view)
    sub.aux("lexical_stats", lambda: stats)
    if lex is not None:
        rows = sub.aux(COLLECTION_BM25, lambda: None)[1]
        want = list(dict.fromkeys(t for ts in lexical_parts(cond) for t in ts))
        sub.aux(("doc_terms", float(related_weight)),
                lambda: _candidate_doc_terms(sub, rows, lex, want, related_weight))
    return cand, sub


def _candidate_doc_terms(sub, rows: np.ndarray, lex, terms: list[str], related_weight: float) -> DocTerms:
    """:class:`.evidence.DocTerms` of the sub-view's documents for ``terms`` only (what
    :func:`.evidence.document_signals` reads): per document, the sum over its body nodes of
    the role weight times the stored token count (the same sums as counting token by token:
    the weights are 1 and ``related_weight``). ``rows``: int64 (N,) the sub-view's rows in
    the collection store."""
    from ..tree.roles import ROLE_CODE, view_roles

    tf = lex.term_counts(rows, terms)  # (rows of sub, T), in sub-view row order
    roles = view_roles(sub)
    skip = (roles == ROLE_CODE["back"]) | (sub.type_code == TYPE_CODES[NodeType.ROOT])
    w = np.where(roles == ROLE_CODE["related"], related_weight, 1.0)
    w[skip] = 0.0
    per_doc = np.zeros((len(sub.docs), len(terms)))
    np.add.at(per_doc, sub.doc_of, tf * w[:, None])
    counts = [Counter({t: float(v) for t, v in zip(terms, row) if v > 0}) for row in per_doc]
    return DocTerms(counts, related_weight)


def _with_non_candidates(view, doc_ids: Sequence[str] | None, docs: list[DocumentResult], strats: Sequence[str],
                         backend: str, pool: int) -> list[DocumentResult]:
    """The run's documents in view order: the scored candidates, and every other
    document of the run decided "no" (``decided_by = "not-a-candidate"``, no evidence).

    The non-candidates of one strategy share one :class:`Decision` (they are all the
    same, and nothing changes a decision after this point; a user's answer replaces
    it): at 20,000 documents one object per document and strategy cost ~0.4 s a run."""
    by_id = {r.doc_id: r for r in docs}
    out = []
    why = (f"Not a candidate: none of its passages ranked its document among the {pool} best of the collection "
           "indexes (dense and BM25) for this condition or its parts, so it was decided no without exact scoring.")
    shared = {s: Decision(False, why, [], 0.0, 0, backend, decided_by="not-a-candidate") for s in strats}
    for di in np.flatnonzero(view.doc_mask(doc_ids)).tolist():
        dv = view.docs[di]
        r = by_id.get(dv.doc_id)
        if r is None:
            r = DocumentResult(dv.doc_id, dv.file_name)
            r.decisions = dict(shared)
            r.evidence = {s: [] for s in strats}
        out.append(r)
    return out


def _usage(llm: LLM) -> dict[str, Any]:
    """The LLM's usage totals so far (calls, tokens, cost)."""
    return llm.usage.snapshot()["total"]


def _usage_delta(a: dict | None, b: dict | None) -> dict[str, Any]:
    if not a or not b:
        return {}
    return {k: (b.get(k, 0) - a.get(k, 0)) if isinstance(b.get(k), (int, float)) else b.get(k) for k in b}
