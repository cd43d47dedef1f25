"""Leave-one-condition-out evaluation of the offline cut (``docmaster eval filter``).

The offline decider ranks a collection by evidence score z and keeps the documents at
or above a cut (:func:`~docmaster_core.filtering.decider.cut_threshold`). Its two
parameters (``rel_rho``, ``rel_z_min``) must carry to conditions nobody tuned on. This
module measures that: for every labelled condition c, the parameters are chosen on all
*other* conditions (maximising their mean F1 over the evaluated strategies: one rule for
the whole decider), then applied to c. The macro-average of these held-out F1s is the
leave-one-condition-out (LOCO) F1. Per condition it also reports how far the cut with
the default parameters is from the best cut of the same ranking (an oracle chosen with
the labels).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..filtering.decider import DEFAULT_CALIBRATION, OfflineCalibration, cut_threshold

__all__ = ["RankedCondition", "DEFAULT_GRID", "apply_cut", "best_cut", "loco_f1"]

#: Parameter grid searched in each fold.
DEFAULT_GRID: dict[str, list[float]] = {
    "rel_rho": [round(x, 2) for x in np.arange(0.30, 0.701, 0.05)],
    "rel_z_min": [0.5, 1.0, 1.5, 2.0],
}


@dataclass
class RankedCondition:
    """One condition's offline ranking of the labelled documents, per strategy.

    Attributes:
        key: Condition id.
        y: bool (n,) labels of the labelled documents.
        z: ``{strategy: float64 (n_all,)}`` evidence scores of *every* document of the
            run (the cut depends on the best of them, labelled or not).
        eligible: ``{strategy: bool (n_all,)}`` documents passing the dense floor.
        rows: int64 (n,) positions of the labelled documents in the run.
    """

    key: str
    y: np.ndarray
    z: dict[str, np.ndarray]
    eligible: dict[str, np.ndarray]
    rows: np.ndarray


def apply_cut(rc: RankedCondition, strategy: str, calib: OfflineCalibration) -> np.ndarray:
    """bool (n,) decisions of the labelled documents under ``calib``'s cut."""
    z, ok = rc.z[strategy], rc.eligible[strategy]
    thr = cut_threshold(z, calib)
    return ((z >= thr) & ok)[rc.rows]


def _f1(y: np.ndarray, p: np.ndarray) -> float:
    tp = int((y & p).sum())
    fp = int((~y & p).sum())
    fn = int((y & ~p).sum())
    return 1.0 if tp + fp + fn == 0 else 2.0 * tp / (2 * tp + fp + fn)


def best_cut(rc: RankedCondition, strategy: str) -> tuple[int, float]:
    """The oracle cut of one ranking: ``(documents kept, F1)`` of the best top-N of the
    labelled documents by evidence score (ties broken pessimistically)."""
    y = rc.y
    if not y.any():
        return 0, 1.0
    s = rc.z[strategy][rc.rows]
    order = np.lexsort((y, -s))
    tp = np.cumsum(y[order])
    k = np.arange(1, y.size + 1)
    f = 2.0 * tp / (k + y.sum())
    i = int(np.argmax(f))
    return i + 1, float(f[i])


def loco_f1(conditions: Sequence[RankedCondition], strategies: Sequence[str],
            grid: dict[str, Sequence[float]] | None = None,
            base: OfflineCalibration = DEFAULT_CALIBRATION) -> dict[str, Any]:
    """Leave-one-condition-out F1 of the offline cut.

    Args:
        conditions: The ranked conditions.
        strategies: Strategies evaluated (one parameter choice per fold for all).
        grid: ``{OfflineCalibration field: values}`` (default :data:`DEFAULT_GRID`).
        base: Parameters not in the grid.

    Returns:
        ``{"macro": {strategy: LOCO macro-F1}, "per_condition": {key: {strategy: F1,
        "chosen": params}}, "chosen_counts": {params-as-text: folds},
        "cut_gap": {key: {strategy: {"kept", "best_kept", "f1", "best_f1"}}}}``; the
        cut gap compares ``base``'s cut with the oracle cut.

    Raises:
        ValueError: fewer than two conditions.
    """
    if len(conditions) < 2:
        raise ValueError("leave-one-condition-out needs at least two conditions")
    grid = grid or DEFAULT_GRID
    names = list(grid)
    points = [replace(base, **dict(zip(names, vals))) for vals in itertools.product(*(grid[n] for n in names))]
    # F[p, c, s]: F1 of grid point p on condition c for strategy s
    F = np.array([[[_f1(rc.y, apply_cut(rc, s, cal)) for s in strategies] for rc in conditions] for cal in points])
    per: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for ci, rc in enumerate(conditions):
        others = [j for j in range(len(conditions)) if j != ci]
        score = F[:, others, :].mean(axis=(1, 2))
        p = int(np.argmax(score))  # ties: the earlier grid point
        chosen = {n: getattr(points[p], n) for n in names}
        label = ", ".join(f"{n}={v:g}" for n, v in chosen.items())
        counts[label] = counts.get(label, 0) + 1
        per[rc.key] = {**{s: float(F[p, ci, si]) for si, s in enumerate(strategies)}, "chosen": chosen}
    gap = {}
    for rc in conditions:
        gap[rc.key] = {}
        for s in strategies:
            dec = apply_cut(rc, s, base)
            bk, bf = best_cut(rc, s)
            gap[rc.key][s] = {"kept": int(dec.sum()), "best_kept": bk, "f1": _f1(rc.y, dec), "best_f1": bf}
    macro = {s: float(np.mean([per[rc.key][s] for rc in conditions])) for s in strategies}
    return {"macro": macro, "per_condition": per, "chosen_counts": counts, "cut_gap": gap}
