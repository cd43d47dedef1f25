"""Combining the evidence of the three strategies (SPEC F6, "combined evidence").

Per document the node lists of tree traversal, semantic search and hyper-edge
matching (plus node-level BM25, :mod:`.keyword`, when enabled) are fused by
reciprocal rank fusion (Cormack, Clarke and Buettcher 2009)::

    rrf(v) = sum over strategies s that returned v of 1 / (c + rank_s(v)),  c = 60

which needs no common score scale. A node found by several strategies appears once,
its ``strategy`` naming all of them (e.g. ``"semantic+tree"``), ranked by ``rrf``.

By default (``RetrievalSettings.combine_unit = "page"``) the fusion is done on pages
(:func:`rrf_fuse_pages`): the lists vote for pages, and nodes are returned page by page.
"""
from __future__ import annotations

import numpy as np

__all__ = ["STRATEGIES", "STRUCTURED", "rrf_fuse", "rrf_fuse_pages"]

#: Every strategy name accepted by the retrieval API (``keyword`` is the BM25 component
#: fused into ``combined``, usable alone for comparison).
STRATEGIES = ("tree", "semantic", "hyperedge", "combined", "flat", "keyword")
#: The structure-aware strategies fused into ``combined``.
STRUCTURED = ("tree", "semantic", "hyperedge")


def rrf_fuse(lists: dict[str, tuple[np.ndarray, np.ndarray]], k: int, c: float = 60.0,
             first: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Fuse ranked node lists of one document by reciprocal rank fusion.

    Args:
        lists: ``{strategy: (node_ids int64 (n_s,), scores float32 (n_s,))}``, each best first.
        k: Items kept.
        c: RRF constant (60 in Cormack et al. 2009).
        first: Name of a list whose items go ahead of all others, in its own order
            (e.g. ``"reference"``: elements the query names explicitly).

    Returns:
        ``(node_ids int64 (<=k,), rrf float32 (<=k,), strategies)`` best first, where
        ``strategies[i]`` is the ``+``-joined sorted names of the lists holding node i.
        Ties are broken by the number of lists, then by node id.
    """
    acc: dict[int, float] = {}
    who: dict[int, set[str]] = {}
    for name, (ids, _) in lists.items():
        for r, nid in enumerate(np.asarray(ids).tolist()):
            acc[nid] = acc.get(nid, 0.0) + 1.0 / (c + r + 1)
            who.setdefault(nid, set()).add(name)
    if not acc:
        return np.zeros(0, np.int64), np.zeros(0, np.float32), []
    lead = [int(n) for n in np.asarray(lists[first][0]).tolist()] if first and first in lists else []
    bonus = {n: len(lead) - i for i, n in enumerate(dict.fromkeys(lead))}
    order = sorted(acc, key=lambda n: (-bonus.get(n, 0), -acc[n], -len(who[n]), n))[:k]
    return (np.asarray(order, dtype=np.int64), np.asarray([acc[n] for n in order], dtype=np.float32),
            ["+".join(sorted(who[n])) for n in order])


def rrf_fuse_pages(lists: dict[str, tuple[np.ndarray, np.ndarray]], page_of: np.ndarray, k: int, c: float = 5.0,
                   first: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Page-level reciprocal rank fusion of ranked node lists of one document.

    Each list is read as a ranking of *pages* (a page ranks where its first node of
    that list ranks, counting distinct pages), the pages are fused by RRF::

        rrf(p) = sum over lists s that reach page p of 1 / (c + rank_s(p))

    and the nodes are returned page by page, best page first; within a page by their
    node-level RRF (as :func:`rrf_fuse`). Evidence is judged by page (page-level
    recall@k, citations), and several strategies pointing at different nodes of the
    same page (e.g. the heading and the table lines of a financial statement) then
    reinforce each other instead of competing.

    Args:
        lists: ``{strategy: (node_ids int64 (n_s,), scores float32 (n_s,))}``, best first.
        page_of: int (n_nodes,) 1-based page of each node id of the document.
        k: Nodes kept.
        c: RRF constant; 5 by default (chosen on FinanceBench page recall@5, checked
            on MMLongBench-Doc; pages are few, so a small constant keeps the head of
            each list decisive).
        first: Name of a list whose nodes go ahead of all others, in its own order.

    Returns:
        ``(node_ids int64 (<=k,), score float32 (<=k,), strategies)`` best first; the
        score of a node is its page's RRF; ``strategies`` as in :func:`rrf_fuse`.
    """
    node_acc: dict[int, float] = {}
    who: dict[int, set[str]] = {}
    page_acc: dict[int, float] = {}
    for name, (ids, _) in lists.items():
        seen: dict[int, int] = {}
        for r, nid in enumerate(np.asarray(ids).tolist()):
            node_acc[nid] = node_acc.get(nid, 0.0) + 1.0 / (c + r + 1)
            who.setdefault(nid, set()).add(name)
            p = int(page_of[nid])
            if p not in seen:
                seen[p] = len(seen)
                page_acc[p] = page_acc.get(p, 0.0) + 1.0 / (c + seen[p] + 1)
    if not node_acc:
        return np.zeros(0, np.int64), np.zeros(0, np.float32), []
    lead = [int(n) for n in np.asarray(lists[first][0]).tolist()] if first and first in lists else []
    bonus = {n: len(lead) - i for i, n in enumerate(dict.fromkeys(lead))}
    order = sorted(node_acc, key=lambda n: (-bonus.get(n, 0), -page_acc[int(page_of[n])], int(page_of[n]),
                                            -node_acc[n], -len(who[n]), n))[:k]
    return (np.asarray(order, dtype=np.int64),
            np.asarray([page_acc[int(page_of[n])] for n in order], dtype=np.float32),
            ["+".join(sorted(who[n])) for n in order])
