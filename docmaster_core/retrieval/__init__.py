"""Tri-modal retrieval, filtering, question answering and evaluation (SPEC F6, F7).

* :mod:`.corpus` - a cached, vectorised view of a workspace's trees and node vectors;
* :mod:`.tree_traversal` - strategy 1: best sections by title and content centroid,
  then content under them;
* :mod:`.semantic` - strategy 2: FAISS cosine with s(v,q) = w_type * cos * gamma^depth;
* :mod:`.hyperedge` - strategy 3: best hyper-edge summaries, then all their nodes;
* :mod:`.combine` - reciprocal rank fusion of the three ("combined");
* :mod:`.flat` - the flat-chunk baseline (fixed-size overlapping chunks, plain cosine);
* :mod:`.retriever` - one entry point for all strategies;
* :mod:`.decider` - the offline, collection-calibrated decision rule;
* :mod:`.filter` - per-document decisions of every strategy, saved as runs;
* :mod:`.qa` - cited answers, and deep mode (query decomposition, iterative retrieval);
* :mod:`.evaluation` - filter P/R/F1 and benchmark evidence-page recall@k.

Submodules import faiss and the embedder lazily; importing this package is cheap.
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
    "Retriever": ".retriever",
    "FilterRun": ".filter",
    "DocumentResult": ".filter",
    "run_filter": ".filter",
    "compare_runs": ".filter",
    "QAResult": ".qa",
    "ask": ".qa",
    "eval_filter": ".evaluation",
    "eval_retrieval": ".evaluation",
    "load_filter_cases": ".evaluation",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(mod, __name__), name)
