"""Evaluation: filter P/R/F1, AP and leave-one-condition-out F1 of the cut, the
rule's calibration, benchmark evidence-page recall@k (:mod:`.harness`, :mod:`.loco`),
and answer quality (:mod:`.qa`)."""
from __future__ import annotations

__all__ = ["eval_filter", "eval_retrieval", "load_filter_cases"]


def __getattr__(name: str):  # lazy: keep `import docmaster_core.evaluation` light
    if name in __all__:
        from . import harness

        return getattr(harness, name)
    raise AttributeError(f"module 'docmaster_core.evaluation' has no attribute {name!r}")
