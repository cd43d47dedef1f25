"""Filtering a collection by a plain-language condition (SPEC F6): per-document
decisions of every strategy, saved as runs (:mod:`.run`); a run's one dict shape,
its cut moved and two runs compared (:mod:`.results`).

* :mod:`.evidence` - document-level evidence signals (dense, lexical, roles);
* :mod:`.decider` - the offline, collection-calibrated decision rule and its cut;
* :mod:`.offline` - offline decisions over a ranking;
* :mod:`.llm_decisions` - decisions by an LLM, on every document or in a review;
* :mod:`.review` - the rank-order review with a certified stopping rule (LLM or user as the oracle);
* :mod:`.options` - :class:`~.options.FilterOptions`, the options of one run;
* :mod:`.results` - :func:`~.results.move_cut`, :func:`~.results.compare_runs`.
"""
from __future__ import annotations

__all__ = ["FilterRun", "DocumentResult", "run_filter", "compare_runs", "move_cut"]


def __getattr__(name: str):  # lazy: keep `import docmaster_core.filtering` light
    if name in __all__:
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module 'docmaster_core.filtering' has no attribute {name!r}")
