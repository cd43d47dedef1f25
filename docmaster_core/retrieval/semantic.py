"""Semantic search over all nodes with the DocMaster node score (SPEC F6, strategy 2).

Score of node v for query q (DocMaster Sec. 2.4)::

    s(v, q) = w_type(v) * cos(e_v, e_q) * gamma ** depth(v)

with type weights (title 1.5, text 1.0, table 0.8 by default; image and equation
configurable; ROOT 0) and depth decay ``gamma`` in (0, 1]. The cosines come from one
FAISS ``IndexFlatIP`` over the unit-norm node embeddings of the whole workspace
(exact inner product = cosine), built once per workspace view and cached with it.
Evidence is then cut per document to its ``top_k`` best nodes.
"""
from __future__ import annotations

import numpy as np

from ..errors import RetrievalError
from ..model import NodeType
from .corpus import TYPE_CODES, CorpusView, type_weight_vector

__all__ = ["faiss_index", "global_top_k", "node_cosines", "semantic_scores", "top_k_per_doc", "semantic_search"]


def faiss_index(view: CorpusView):
    """The FAISS index over ``view.emb``, row ``r`` = id ``r``: the workspace's persisted
    collection index (:mod:`docmaster_core.store.collection_index`, fp16 scalar quantiser,
    memory-mapped, updated incrementally) when the view reads the collection store, else
    an ``IndexFlatIP`` built in memory. Cached on the view.

    Raises:
        RetrievalError: faiss is not installed.
    """

    def build():
        if view.collection is not None:
            from ..store.collection_index import collection_index

            return collection_index(view.collection)
        try:
            import faiss
        except ImportError as e:  # pragma: no cover - install problem
            raise RetrievalError("faiss-cpu is not installed (pip install -r requirements.txt)") from e
        idx = faiss.IndexFlatIP(view.emb.shape[1])
        if view.emb.shape[0]:
            idx.add(np.ascontiguousarray(view.emb, dtype=np.float32))
        return idx

    return view.aux("faiss_flat_ip", build)


def node_cosines(view: CorpusView, q: np.ndarray) -> np.ndarray:
    """Cosine of every node with each query (exact over the stored vectors, in blocks:
    every row's cosine is needed, so no top-k search is made).

    Args:
        view: The corpus view.
        q: float32 (d,) or (m, d) unit query vectors.

    Returns:
        float32 (N,) for one query, (m, N) for m queries, indexed by view row.
    """
    return view.cosines(q)


def global_top_k(view: CorpusView, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nodes of the whole collection most similar to ``q`` (one FAISS search).

    Args:
        q: float32 (d,) unit query vector.
        k: Nodes wanted (>= 1).

    Returns:
        ``(rows int64 (k',), cosines float32 (k',))`` best first, k' = min(k, N); a row
        maps to a document and node by ``view.doc_of`` / ``view.node_of``.

    Raises:
        RetrievalError: ``k`` < 1, or faiss is not installed.
    """
    if k < 1:
        raise RetrievalError(f"k must be >= 1, got {k}")
    n = view.emb.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    D, I = faiss_index(view).search(np.ascontiguousarray(np.atleast_2d(np.asarray(q, dtype=np.float32))), min(k, n))
    return I[0].astype(np.int64), D[0].astype(np.float32)


def semantic_scores(view: CorpusView, cos: np.ndarray, settings) -> np.ndarray:
    """s(v, q) = w_type(v) * cos(e_v, e_q) * gamma**depth(v) for every row (DocMaster Sec. 2.4).

    Args:
        cos: float32 (N,) cosines from :func:`node_cosines`.
        settings: :class:`~docmaster_core.config.RetrievalSettings` (type weights, gamma).

    Returns:
        float32 (N,) scores; ROOT rows get 0.
    """
    w = type_weight_vector(settings)[view.type_code]
    decay = np.power(np.float32(settings.gamma), view.depth.astype(np.float32))
    return (w * cos * decay).astype(np.float32)


def top_k_per_doc(view: CorpusView, scores: np.ndarray, k: int, valid: np.ndarray | None = None,
                  doc_mask: np.ndarray | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The ``k`` best rows of each document, vectorised.

    Args:
        scores: float32 (N,) row scores.
        k: Rows per document.
        valid: Optional bool (N,) rows allowed.
        doc_mask: Optional bool (D,) documents wanted.

    Returns:
        ``{doc_index: (node_ids int64 (<=k,), scores float32 (<=k,))}``, best first;
        documents with no valid row are absent.
    """
    ok = np.ones(scores.shape[0], dtype=bool) if valid is None else valid.copy()
    if doc_mask is not None:
        ok &= doc_mask[view.doc_of]
    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return {}
    # sort by (doc, -score) and keep the first k of each document
    order = np.lexsort((-scores[rows], view.doc_of[rows]))
    rows = rows[order]
    d = view.doc_of[rows]
    first = np.r_[0, np.flatnonzero(np.diff(d)) + 1]
    rank = np.arange(rows.size) - np.repeat(first, np.diff(np.r_[first, rows.size]))
    keep = rows[rank < k]
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    kd = view.doc_of[keep]
    bounds = np.r_[0, np.flatnonzero(np.diff(kd)) + 1, keep.size]
    for a, b in zip(bounds[:-1], bounds[1:]):
        r = keep[a:b]
        out[int(kd[a])] = (view.node_of[r].astype(np.int64), scores[r].astype(np.float32))
    return out


def semantic_search(view: CorpusView, q: np.ndarray, settings, *, top_k: int | None = None,
                    doc_mask: np.ndarray | None = None, cos: np.ndarray | None = None,
                    skip_back_matter: bool = True) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Strategy 2: per-document top-k nodes by s(v, q) (DocMaster Sec. 2.4).

    Args:
        view: The corpus view.
        q: float32 (d,) unit query vector.
        settings: RetrievalSettings (``top_k``, type weights, ``gamma``).
        top_k: Nodes per document (default ``settings.top_k``).
        doc_mask: Optional bool (D,) documents to search.
        cos: Precomputed float32 (N,) cosines (saves a search when several strategies run).
        skip_back_matter: Leave out reference lists and acknowledgements.

    Returns:
        ``{doc_index: (node_ids, scores)}`` best first (see :func:`top_k_per_doc`).
    """
    if cos is None:
        cos = node_cosines(view, q)
    s = semantic_scores(view, cos, settings)
    valid = view.type_code != TYPE_CODES[NodeType.ROOT]
    if skip_back_matter:
        valid &= ~view.back_matter
    return top_k_per_doc(view, s, top_k or settings.top_k, valid=valid, doc_mask=doc_mask)
