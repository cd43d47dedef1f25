"""Hyper-edge matching retrieval (SPEC F6, strategy 3; DocMaster Sec. 2.4 (iii)).

"Searches hyper-edge summaries and retrieves all connected nodes for matching edges."
The summary embeddings of every document's hyper-edges (built by
:mod:`docmaster_core.index`) are stacked into one matrix and scored against the query
by cosine. Per document the best ``n_edges`` hyper-edges are taken, then the
must-link neighbours of the best one (hyper-edges of other sections whose nodes share
its PC-KMeans cluster, DocMaster Sec. 2.3), best first, until ``top_k`` nodes are
collected. Members in reference lists or acknowledgements are dropped (a hyper-edge
left empty is never chosen). Each member node is scored ``0.5 * (cos(edge summary, q) + cos(node, q))``.

Documents without a stored index get *fallback* hyper-edges: within each section,
consecutive TEXT nodes whose embeddings have cosine >= 0.5 with the running group
centroid are grouped, and the group centroid stands in for the summary embedding.
These are marked ``fallback`` in :class:`HyperEdgeView` so results can say so.
"""
from __future__ import annotations

from dataclasses import dataclass
import json
from typing import Callable

import numpy as np

from ..store.docinfo import load_arrays, save_arrays

from ..model import NodeType
from .corpus import TYPE_CODES, CorpusView

__all__ = ["HyperEdgeView", "build_hyperedge_view", "fallback_hyperedges", "hyperedge_search"]

_TEXT = TYPE_CODES[NodeType.TEXT]


@dataclass
class HyperEdgeView:
    """All hyper-edges of a corpus view, stacked.

    Attributes:
        emb: float32 (H, d) unit summary embeddings.
        doc_of: int32 (H,) document index of each hyper-edge.
        members: H lists of member node ids.
        summaries: H summary texts (empty for fallback hyper-edges).
        links: H lists of must-linked hyper-edge positions (same document).
        fallback: bool (D,) documents whose hyper-edges are fallback groups.
    """

    emb: np.ndarray
    doc_of: np.ndarray
    members: list[list[int]]
    summaries: list[str]
    links: list[list[int]]
    fallback: np.ndarray


def fallback_hyperedges(view: CorpusView, doc_index: int, threshold: float = 0.5) -> list[tuple[list[int], np.ndarray]]:
    """Fallback hyper-edges of one document: consecutive related TEXT nodes per section.

    Returns:
        ``[(node_ids, unit centroid float32 (d,))]``.
    """
    dv = view.docs[doc_index]
    out: list[tuple[list[int], np.ndarray]] = []
    for sec in dv.tree.nodes:
        if sec.type.is_content:
            continue
        kids = [c for c in sec.children if dv.tree.nodes[c].type == NodeType.TEXT and not view.back_matter[dv.start + c]]
        group: list[int] = []
        acc = None
        for c in kids:
            e = view.emb[dv.start + c]
            if group:
                cen = acc / max(np.linalg.norm(acc), 1e-12)
                if float(cen @ e) >= threshold:
                    group.append(c)
                    acc = acc + e
                    continue
                out.append((group, (acc / max(np.linalg.norm(acc), 1e-12)).astype(np.float32)))
            group, acc = [c], np.array(e, dtype=np.float32)
        if group:
            out.append((group, (acc / max(np.linalg.norm(acc), 1e-12)).astype(np.float32)))
    return out


def _doc_hyperedges(view: CorpusView, dv, load_index) -> tuple[np.ndarray, list, list, list, bool]:
    """One document's hyper-edges: ``(emb float32 (h, d), members, summaries, links, fallback)``
    with links as positions within the document's own list."""
    d = view.emb.shape[1]
    idx = load_index(dv.doc_id) if load_index is not None else None
    hes = list(getattr(idx, "hyperedges", None) or []) if idx is not None else []
    he_emb = getattr(idx, "hyperedge_embeddings", None) if idx is not None else None
    if hes and he_emb is not None and len(he_emb) == len(hes):
        he_emb = np.asarray(he_emb, dtype=np.float32).reshape(len(hes), d)
        # reference lists and acknowledgements are not evidence (see corpus.BACK_MATTER_RE)
        members = [[int(i) for i in h.node_ids if 0 <= int(i) < dv.n_nodes and not view.back_matter[dv.start + int(i)]]
                   for h in hes]
        summaries = [h.summary or "" for h in hes]
        links: list[list[int]] = [[] for _ in hes]
        lk = getattr(idx, "hyperedge_links", None)
        if lk is not None and len(lk):
            pos = {int(h.id): j for j, h in enumerate(hes)}
            for a, b in np.asarray(lk, dtype=np.int64).reshape(-1, 2):
                if int(a) in pos and int(b) in pos:
                    links[pos[int(a)]].append(pos[int(b)])
                    links[pos[int(b)]].append(pos[int(a)])
        return he_emb, members, summaries, links, False
    fb = fallback_hyperedges(view, dv.index)
    emb = np.vstack([e for _, e in fb]).astype(np.float32) if fb else np.zeros((0, d), np.float32)
    return emb, [ids for ids, _ in fb], [""] * len(fb), [[] for _ in fb], True


def _to_arrays(got) -> dict[str, np.ndarray]:
    e, m, su, lk, fb = got
    return {"emb": np.asarray(e, np.float32),
            "mem_off": np.r_[0, np.cumsum([len(x) for x in m])].astype(np.int64),
            "mem": np.asarray([i for x in m for i in x], dtype=np.int32),
            "link_off": np.r_[0, np.cumsum([len(x) for x in lk])].astype(np.int64),
            "link": np.asarray([i for x in lk for i in x], dtype=np.int32),
            "summaries": np.frombuffer(json.dumps(su).encode(), dtype=np.uint8),
            "fallback": np.array(bool(fb))}


def _from_arrays(a: dict[str, np.ndarray]):
    mo, lo = a["mem_off"].tolist(), a["link_off"].tolist()
    mem, link = a["mem"].tolist(), a["link"].tolist()
    m = [mem[mo[i]:mo[i + 1]] for i in range(len(mo) - 1)]
    lk = [link[lo[i]:lo[i + 1]] for i in range(len(lo) - 1)]
    return a["emb"], m, json.loads(a["summaries"].tobytes().decode()), lk, bool(a["fallback"])


def build_hyperedge_view(view: CorpusView, load_index: Callable[[str], object | None] | None,
                         cache_key: object = None, disk_tag: Callable[[str], str] | None = None) -> HyperEdgeView:
    """Stack the hyper-edges of every document of ``view``.

    Args:
        load_index: ``doc_id -> DocumentIndex | None`` (e.g. ``DocMaster.load_index``);
            None means no stored index anywhere (fallback hyper-edges for all).
        cache_key: When given, each document's hyper-edges are kept in the view's
            per-document cache (:attr:`CorpusView.doc_cache`, bounded in bytes) under this
            key (the index parameters and version), so later runs over the same documents
            (e.g. the candidate views of a filter at scale) do not read the stored
            indexes again.
        disk_tag: ``doc_id -> tag`` naming the index a document's hyper-edges come from
            (parameters and creation time): with it, a document's hyper-edges are also
            read from / written to ``collection/docinfo/hyperedges`` (:mod:`~docmaster_core.store.docinfo`)
            instead of parsing the stored index again in a later run or process.
    """
    d = view.emb.shape[1]
    embs: list[np.ndarray] = []
    doc_of: list[np.ndarray] = []
    members: list[list[int]] = []
    summaries: list[str] = []
    links: list[list[int]] = []
    fallback = np.zeros(len(view.docs), dtype=bool)
    cache = view.doc_cache if cache_key is not None else None
    for dv in view.docs:
        key = ("hyperedges", cache_key, dv.doc_id, dv.n_nodes)
        got = cache.get(key) if cache is not None else None
        if got is None:
            tag = disk_tag(dv.doc_id) if disk_tag is not None else None
            arr = load_arrays(view.ws_path, "hyperedges", dv.doc_id, tag) if tag is not None else None
            if arr is not None:
                got = _from_arrays(arr)
            else:
                got = _doc_hyperedges(view, dv, load_index)
                if tag is not None:
                    save_arrays(view.ws_path, "hyperedges", dv.doc_id, tag, **_to_arrays(got))
            if cache is not None:
                e, m, su, lk, _ = got
                cache.put(key, got, e.nbytes + 36 * sum(len(x) for x in m) + sum(len(x) for x in su)
                          + 28 * sum(len(x) for x in lk) + 250 * len(m) + 200)
        e, m, su, lk, fb = got
        base = len(members)
        fallback[dv.index] = fb
        embs.append(e)
        doc_of.append(np.full(len(m), dv.index, dtype=np.int32))
        members.extend(m)
        summaries.extend(su)
        links.extend([[base + x for x in l] for l in lk])
    emb = np.vstack(embs).astype(np.float32) if embs else np.zeros((0, d), np.float32)
    dof = np.concatenate(doc_of) if doc_of else np.zeros(0, np.int32)
    return HyperEdgeView(emb, dof.astype(np.int32), members, summaries, links, fallback)


def hyperedge_search(view: CorpusView, hv: HyperEdgeView, q: np.ndarray, settings, *, top_k: int | None = None,
                     doc_mask: np.ndarray | None = None, cos: np.ndarray | None = None,
                     n_edges: int = 2) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Strategy 3: nodes of the best-matching hyper-edges per document (DocMaster Sec. 2.4 (iii)).

    Args:
        view: The corpus view.
        hv: Stacked hyper-edges (:func:`build_hyperedge_view`).
        q: float32 (d,) unit query.
        settings: RetrievalSettings (``top_k``).
        top_k: Nodes per document (default ``settings.top_k``).
        doc_mask: Optional bool (D,) documents to search.
        cos: Optional precomputed float32 (N,) node cosines.
        n_edges: Hyper-edges taken per document before must-link expansion.

    Returns:
        ``{doc_index: (node_ids int64, scores float32)}`` best first.
    """
    from .semantic import node_cosines

    k = top_k or settings.top_k
    if hv.emb.shape[0] == 0:
        return {}
    if cos is None:
        cos = node_cosines(view, q)
    hs = hv.emb @ np.asarray(q, dtype=np.float32)
    order = np.lexsort((-hs, hv.doc_of))
    dof = hv.doc_of[order]
    bounds = np.r_[0, np.flatnonzero(np.diff(dof)) + 1, order.size]
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for a, b in zip(bounds[:-1], bounds[1:]):
        di = int(dof[a])
        if doc_mask is not None and not doc_mask[di]:
            continue
        start = view.docs[di].start
        chosen = [int(x) for x in order[a:b] if hv.members[int(x)]][:n_edges]
        nb = sorted({x for x in hv.links[chosen[0]] if x not in chosen}, key=lambda x: -hs[x]) if chosen else []
        seen: dict[int, float] = {}
        for rank, e in enumerate(chosen + nb):
            if rank >= len(chosen) and len(seen) >= k:
                break
            for nid in hv.members[e]:
                s = 0.5 * (float(hs[e]) + float(cos[start + nid]))
                if s > seen.get(nid, -np.inf):
                    seen[nid] = s
        if not seen:
            continue
        ids = np.fromiter(seen.keys(), dtype=np.int64, count=len(seen))
        sc = np.fromiter(seen.values(), dtype=np.float32, count=len(seen))
        best = np.argsort(-sc, kind="stable")[:k]
        out[di] = (ids[best], sc[best])
    return out
