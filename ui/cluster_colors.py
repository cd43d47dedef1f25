"""Cluster colours that stay with their group when the clustering is recomputed.

PC-KMeans numbers its clusters arbitrarily, so after a slider change cluster C2 may
hold what C0 held before. :func:`match_colors` gives each new cluster the colour of the
previous cluster it overlaps most (a maximum-overlap assignment, Hungarian algorithm via
``scipy.optimize.linear_sum_assignment``); clusters with no counterpart get colours no
matched cluster uses.
"""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

__all__ = ["match_colors"]


def match_colors(prev: dict[Hashable, int] | None, keys: Sequence[Hashable], labels: Sequence[int],
                 n_colors: int) -> dict[int, int]:
    """Colour index per cluster label, matched to the previous colouring by overlap.

    Args:
        prev: ``{node key: colour index}`` of the previous drawing (None or empty: the
            first drawing, clusters coloured in label order).
        keys: One hashable key per point (e.g. node id, or ``(doc_id, node id)``).
        labels: Cluster label per point (same length as ``keys``).
        n_colors: Size of the palette; colours are reused modulo it when there are more
            clusters than colours.

    Returns:
        ``{label: colour index in [0, n_colors)}``.
    """
    uniq = sorted({int(x) for x in labels})
    if not prev:
        return {c: i % n_colors for i, c in enumerate(uniq)}
    prev_colors = sorted(set(prev.values()))
    ui = {c: i for i, c in enumerate(uniq)}
    pi = {c: j for j, c in enumerate(prev_colors)}
    overlap = np.zeros((len(uniq), len(prev_colors)), dtype=np.int64)
    for k, lab in zip(keys, labels):
        pc = prev.get(k)
        if pc is not None:
            overlap[ui[int(lab)], pi[pc]] += 1
    out: dict[int, int] = {}
    if overlap.size:
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-overlap)
        for i, j in zip(rows, cols):
            if overlap[i, j] > 0:
                out[uniq[i]] = prev_colors[j]
    used = set(out.values())
    free = [c for c in range(n_colors) if c not in used]
    for lab in uniq:
        if lab not in out:
            out[lab] = free.pop(0) if free else len(out) % n_colors
    return out
