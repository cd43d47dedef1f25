"""The ``docmaster filter`` options of the LLM cascade (issue 14): arguments, options, report line.

See :mod:`docmaster_core.filtering.cascade` for the method.
"""
from __future__ import annotations

import argparse

__all__ = ["add_cascade_arguments", "cascade_options", "cascade_line"]


def add_cascade_arguments(sp: argparse.ArgumentParser) -> None:
    """Add ``--cascade``, the targets, ``--sample-budget``, ``--cascade-seed`` and ``--decide`` to ``filter``."""
    sp.add_argument("--cascade", action="store_true",
                    help="LLM decider: ask the LLM only about a sample and the uncertain band of the evidence-score "
                         "ranking, decide the rest by score (recall/precision targets)")
    sp.add_argument("--recall-target", dest="recall_target", type=float, default=0.9, help="cascade recall target")
    sp.add_argument("--precision-target", dest="precision_target", type=float, default=0.9,
                    help="cascade precision target")
    sp.add_argument("--delta", type=float, default=0.1, help="cascade failure probability (targets hold w.p. 1 - delta)")
    sp.add_argument("--sample-budget", dest="sample_budget", type=int,
                    help="cascade sample draws (default clip(2 sqrt(N), 20, 1000))")
    sp.add_argument("--cascade-seed", dest="cascade_seed", type=int, default=0, help="seed of the cascade sample")
    sp.add_argument("--decide", choices=["per-strategy", "combined-only"],
                    help="LLM decider: one call per strategy (default without --cascade) or one per document on the "
                         "combined evidence (default with --cascade)")


def cascade_options(args: argparse.Namespace) -> dict:
    """``dm.filter`` options of ``--cascade`` and ``--decide``.

    Raises:
        RetrievalError: ``--cascade`` with the calibrated decider, or a target out of range.
    """
    from ..filtering.options import cascade_options as options

    return options(cascade=bool(args.cascade), decide=args.decide, decider=args.decider,
                   recall=args.recall_target, precision=args.precision_target, delta=args.delta,
                   sample_budget=args.sample_budget, seed=args.cascade_seed)


def cascade_line(strategy: str, rep: dict) -> str:
    """One line per cascaded strategy: calls, calls saved, thresholds, guarantee."""
    lo, hi, n = rep["lower"]["rank"], rep["upper"]["rank"], rep["documents"]
    kept = f"ranks 1-{hi}" if hi else "none"
    dropped = f"ranks {lo + 1}-{n}" if lo < n else "none"
    return (f"cascade {strategy}: LLM decided {rep['llm_decisions']} of {n} documents "
            f"(sample {rep['sampled']}, {rep['calls_saved']} decided by score, {rep['undecided']} undecided); "
            f"kept without a call: {kept}; dropped without a call: {dropped}; {rep['guarantee']}")
