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

__all__ = ["match_colors", "match_clusters"]


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
    out = _matched(prev, keys, labels, uniq)
    used = set(out.values())
    free = [c for c in range(n_colors) if c not in used]
    for lab in uniq:
        if lab not in out:
            out[lab] = free.pop(0) if free else len(out) % n_colors
    return out


def match_clusters(prev: dict[Hashable, int] | None, keys: Sequence[Hashable], labels: Sequence[int]) -> dict[int, int]:
    """A stable id per cluster label (the cluster's shown name ``C<id>`` and colour
    ``palette[id % len(palette)]``), matched to the previous drawing by member overlap.

    The new clusters and the previous ones are paired one-to-one so that the number of
    points keeping their id is the largest possible (Hungarian algorithm on the overlap
    counts, ``scipy.optimize.linear_sum_assignment``); a new cluster sharing no point
    with any previous one, or left without a partner, gets the smallest id that neither
    a matched cluster nor the previous drawing uses (a name never jumps to another
    group from one drawing to the next). So a point changes name and colour only when
    it leaves its group's matched successor: at most ``n - max matching`` points change,
    the fewest any one-to-one pairing allows.

    Args:
        prev: ``{point key: stable id}`` of the previous drawing; None or empty for the
            first drawing (ids follow the clusters' label order, 0, 1, ...).
        keys: One hashable key per point (node id, or ``(doc_id, node id)``).
        labels: Cluster label per point (same length as ``keys``).

    Returns:
        ``{label: stable id >= 0}``, distinct ids.
    """
    uniq = sorted({int(x) for x in labels})
    if not prev:
        return {c: i for i, c in enumerate(uniq)}
    prev_ids = sorted(set(prev.values()))
    out = _matched(prev, keys, labels, uniq)
    taken = set(out.values()) | set(prev_ids)
    nxt = 0
    for lab in uniq:
        if lab not in out:
            while nxt in taken:
                nxt += 1
            out[lab] = nxt
            taken.add(nxt)
    return out


def _matched(prev: dict[Hashable, int], keys: Sequence[Hashable], labels: Sequence[int],
             uniq: list[int]) -> dict[int, int]:
    """``{label: previous id}`` for the new clusters paired one-to-one with the previous
    ids so that the most points keep theirs (Hungarian algorithm on the member-overlap
    counts, ``scipy.optimize.linear_sum_assignment``); clusters sharing no point with
    their partner are left out."""
    prev_ids = sorted(set(prev.values()))
    ui = {c: i for i, c in enumerate(uniq)}
    pi = {c: j for j, c in enumerate(prev_ids)}
    overlap = np.zeros((len(uniq), len(prev_ids)), dtype=np.int64)
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
                out[uniq[i]] = prev_ids[j]
    return out
