"""Tri-modal retrieval (SPEC F6): the search strategies and their fusion.

* :mod:`.corpus` - a cached, vectorised view of a workspace's trees and node vectors;
* :mod:`.tree_traversal` - strategy 1: best sections by title and content centroid,
  then content under them;
* :mod:`.semantic` - strategy 2: FAISS cosine with s(v,q) = w_type * cos * gamma^depth;
* :mod:`.hyperedge` - strategy 3: best hyper-edge summaries, then all their nodes;
* :mod:`.keyword` - BM25 over node text (a lexical strategy and baseline);
* :mod:`.references` - elements a question names ("Table 3", "Eq. (2)");
* :mod:`.combine` - reciprocal rank fusion of the three ("combined");
* :mod:`.flat` - the flat-chunk baseline (fixed-size overlapping chunks, plain cosine);
* :mod:`.retriever` - one entry point for all strategies.

Decisions live in :mod:`docmaster_core.filtering`, answers in :mod:`docmaster_core.qa`,
evaluation in :mod:`docmaster_core.evaluation`. The names ``run_filter``, ``ask``,
``eval_filter`` ... are still importable from here (deprecated; import them from their
packages). Submodules import faiss and the embedder lazily; importing this package is cheap.
"""
from __future__ import annotations

from .combine import STRATEGIES, STRUCTURED

__all__ = [
    "STRATEGIES",
    "STRUCTURED",
    "Retriever",
    "FilterRun",
    "DocumentResult",
    "run_filter",
    "compare_runs",
    "QAResult",
    "ask",
    "eval_filter",
    "eval_retrieval",
    "load_filter_cases",
]

_LAZY = {
    "Retriever": "docmaster_core.retrieval.retriever",
    # moved to their own stage packages; kept here for old import paths
    "FilterRun": "docmaster_core.filtering.run",
    "DocumentResult": "docmaster_core.filtering.run",
    "run_filter": "docmaster_core.filtering.run",
    "compare_runs": "docmaster_core.filtering.run",
    "QAResult": "docmaster_core.qa.ask",
    "ask": "docmaster_core.qa.ask",
    "eval_filter": "docmaster_core.evaluation.harness",
    "eval_retrieval": "docmaster_core.evaluation.harness",
    "load_filter_cases": "docmaster_core.evaluation.harness",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(mod), name)
