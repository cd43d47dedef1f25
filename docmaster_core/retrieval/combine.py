"""Combining the evidence of the three strategies (SPEC F6, "combined evidence").

Per document the node lists of tree traversal, semantic search and hyper-edge
matching (plus node-level BM25, :mod:`.keyword`, when enabled) are fused by
reciprocal rank fusion (Cormack, Clarke and Buettcher 2009)::

    rrf(v) = sum over strategies s that returned v of 1 / (c + rank_s(v)),  c = 60

which needs no common score scale. A node found by several strategies appears once,
its ``strategy`` naming all of them (e.g. ``"semantic+tree"``), ranked by ``rrf``.

By default (``RetrievalSettings.combine_unit = "page"``) the fusion is done on pages
(:func:`rrf_fuse_pages`): the lists vote for pages, and nodes are returned page by page.

The *filter evidence* of ``combined`` (what a decider reads, ``RetrievalSettings.evidence_chars``
> 0) is assembled differently, by :func:`fuse_within_budget`: the lists take turns within a
character budget per document, so every strategy's best passages are in it (issue 32).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["STRATEGIES", "STRUCTURED", "EVIDENCE_ROTATION", "EVIDENCE_SHARES", "HYBRID_LISTS", "combsum", "rrf_fuse", "rrf_fuse_pages", "fuse_within_budget"]

#: Every strategy name accepted by the retrieval API (``keyword`` is the BM25 component
#: fused into ``combined``, usable alone for comparison).
STRATEGIES = ("tree", "semantic", "hyperedge", "combined", "flat", "keyword")
#: The structure-aware strategies fused into ``combined``.
STRUCTURED = ("tree", "semantic", "hyperedge")
#: The lists whose passages take turns in the combined filter evidence
#: (:func:`fuse_within_budget`), in turn order.
EVIDENCE_ROTATION = ("semantic", "keyword", "tree", "hybrid", "hyperedge")
#: Passages per round of each list in the rotation (default 1): hyper-edge matching finds
#: the gold clause least often (0.45 of the contract matches, against 0.66-0.69 for the
#: others), so it gives its best passage in round 1 and then one every third round.
EVIDENCE_SHARES = {"hyperedge": 1.0 / 3.0}
#: The lists whose min-max scores are summed into the ``hybrid`` list (:func:`combsum`).
HYBRID_LISTS = ("semantic", "keyword")


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


def combsum(lists: dict[str, tuple[np.ndarray, np.ndarray]], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """CombSUM of min-max normalised scores (Fox and Shaw 1994): one hybrid list from several.

    Each named list's scores are scaled to [0, 1] within the list (its best passage 1, its
    last 0; a list of one passage or equal scores gives 1 to each); a node's hybrid score is
    the sum over the lists that hold it. Unlike the round-robin turns, it rewards a passage
    that is good, not best, in every list (a clause ranked 16th, 16th and 17th by semantic
    search, BM25 and the tree comes first here).

    Args:
        lists: ``{name: (node_ids int64 (n,), scores float (n,))}``, best first.
        names: The lists to combine (names missing from ``lists`` are ignored).

    Returns:
        ``(node_ids int64 (m,), scores float32 (m,))``, best first (ties: lower node id).
    """
    acc: dict[int, float] = {}
    for name in names:
        if name not in lists:
            continue
        ids, sc = lists[name]
        sc = np.asarray(sc, dtype=np.float64)
        if sc.size == 0:
            continue
        span = float(sc.max() - sc.min())
        z = (sc - sc.min()) / span if span > 0 else np.ones_like(sc)
        for nid, v in zip(np.asarray(ids).tolist(), z.tolist()):
            acc[int(nid)] = acc.get(int(nid), 0.0) + v
    order = sorted(acc, key=lambda n: (-acc[n], n))
    return np.asarray(order, dtype=np.int64), np.asarray([acc[n] for n in order], dtype=np.float32)


def fuse_within_budget(lists: dict[str, tuple[np.ndarray, np.ndarray]], chars: dict[int, int], budget: int,
                       order: Sequence[str] = EVIDENCE_ROTATION, first: str | None = None, *,
                       shares: dict[str, float] | None = None,
                       shingles: Callable[[int], set] | None = None, max_overlap: float = 1.0
                       ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """A document's combined *filter evidence*: each strategy's best passages in turn,
    within a character budget (issue 32).

    Reciprocal rank fusion rewards passages that several lists agree on, and so can drop
    the one passage a single strategy ranks first (measured on the contracts of
    ``../shared/eval/filter_clauses_cuad.tsv``: the gold clause was in RRF's evidence for
    0.64 of the matches, in each single strategy's for 0.71). Here the lists take turns
    (round-robin interleaving, the classic baseline of collection fusion): in round 1
    every list gives its best passage, then each list gives ``shares[list]`` passages per
    round (default 1; a list with share 1/3 gives one every third round), a passage
    already taken is skipped, so the combined evidence holds every strategy's best
    passage before anyone's second best. Passages are taken while their characters fit
    ``budget`` (a passage that does not fit is skipped, a shorter one after it may still
    fit); the first passage is always taken. A passage whose word shingles are at least
    ``max_overlap`` inside the evidence already taken (a section summary that repeats
    its paragraphs) is skipped too.

    Args:
        lists: ``{strategy: (node_ids int64 (n_s,), scores float32 (n_s,))}``, best first.
        chars: ``{node_id: characters of its evidence text}`` for every listed node.
        budget: Characters of evidence per document (>= 1).
        order: The rotation: strategies in the order they take their turn (lists not
            named in it follow, in ``lists`` order).
        first: Name of a list taken whole before the rotation (``"reference"``: the
            elements a question names explicitly), within the budget.
        shares: ``{strategy: passages per round}`` in (0, 1] (default 1 each).
        shingles: ``node_id -> word 4-gram set`` (:func:`~docmaster_core.text.words.shingles`
            of its evidence text) for the redundancy check, called only for passages that
            fit the budget; ``None``: no check.
        max_overlap: Share of a passage's shingles already in the evidence at which it is
            skipped (1.0: only exact repeats).

    Returns:
        ``(node_ids int64 (m,), score float32 (m,), strategies)`` in the order taken; the
        score of a passage is ``1 / round`` (round 1 = every list's first passage), and
        ``strategies[i]`` the ``+``-joined sorted names of the lists holding node i.
    """
    who: dict[int, set[str]] = {}
    for name, (ids, _) in lists.items():
        for nid in np.asarray(ids).tolist():
            who.setdefault(int(nid), set()).add(name)
    names = [s for s in order if s in lists] + [s for s in lists if s not in order and s != first]
    seqs = {s: [int(n) for n in np.asarray(lists[s][0]).tolist()] for s in names}
    share = {s: min(1.0, max(1e-6, float((shares or {}).get(s, 1.0)))) for s in names}
    taken: list[int] = []
    turn_of: dict[int, int] = {}
    seen: set[int] = set()
    held: set = set()
    used = 0

    def take(nid: int, turn: int) -> bool:
        nonlocal used
        if nid in seen:
            return False
        c = int(chars.get(nid, 0))
        if taken and used + c > budget:
            return False
        seen.add(nid)
        sh = shingles(nid) if shingles is not None else set()
        if sh and taken and len(sh & held) >= max_overlap * len(sh):
            return False
        taken.append(nid)
        turn_of[nid] = turn
        used += c
        held.update(sh)
        return True

    if first and first in lists:
        for nid in np.asarray(lists[first][0]).tolist():
            take(int(nid), 1)
    pos = {s: 0 for s in names}
    credit = {s: 1.0 - share[s] for s in names}  # every list's best passage in round 1
    rnd = 0
    while used < budget and any(pos[s] < len(seqs[s]) for s in names):
        rnd += 1
        for s in names:
            credit[s] += share[s]
            while credit[s] >= 1.0 - 1e-9 and pos[s] < len(seqs[s]):
                nid = seqs[s][pos[s]]
                pos[s] += 1
                if take(nid, rnd):
                    credit[s] -= 1.0
    return (np.asarray(taken, dtype=np.int64), np.asarray([1.0 / turn_of[n] for n in taken], dtype=np.float32),
            ["+".join(sorted(who[n])) for n in taken])
