"""Candidate documents from the collection-wide indexes (issue 25, stage 1 of a filter at scale).

The filter's decision rule needs only the strongest documents: its robust statistics
are taken over the ``pool`` (44) best documents of each signal and everything far below
them is decided "no" (:mod:`docmaster_core.filtering.decider`). So a filter over a large
collection first asks two collection-wide indexes which documents can be among them,
and scores exactly only those (stage 2, :func:`docmaster_core.filtering.run.run_filter`):

* **dense**: the persisted FAISS index over every node vector
  (:mod:`docmaster_core.store.collection_index`; exact fp16 scan up to
  ``dense_exact_max_rows`` rows, IVF past it). For each query vector (the condition and
  each of its parts) it asks for ``pool_docs x nodes_per_doc`` nodes, four times more
  until those nodes cover ``pool_docs`` documents (or the whole collection was asked
  for); a document ranks by its best node's cosine.
* **lexical**: the persisted BM25 index over every node text
  (:mod:`docmaster_core.store.lexical_index`, bm25s). For each term list (the condition's
  terms and each lexical part's) every node with a term is scored (a sparse column sum);
  a document ranks by its best node's score.

Only body rows count (not the ROOT node, not reference lists or acknowledgements, as in
the evidence). The candidates are the union of the ``pool_docs`` best documents of every
ranking.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..model import NodeType
from .corpus import TYPE_CODES, CorpusView

__all__ = ["Candidates", "candidate_documents", "candidate_view", "dense_document_ranking", "lexical_document_ranking"]


@dataclass
class Candidates:
    """The candidate documents of one query.

    Attributes:
        doc_indices: int64 (C,) sorted indices into the view's documents.
        from_dense: Documents contributed by the dense rankings (before the union).
        from_lexical: Documents contributed by the lexical rankings.
        nodes_asked: Nodes asked of the FAISS index (largest k of any query).
        seconds: ``{"dense", "lexical"}`` wall time of each stage-1 search.
        index_kind: The FAISS index kind searched (``flat-fp16`` or ``ivf<n>-fp16``).
    """

    doc_indices: np.ndarray
    from_dense: int = 0
    from_lexical: int = 0
    nodes_asked: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    index_kind: str = ""

    def to_dict(self) -> dict:
        return {"candidates": int(self.doc_indices.size), "from_dense": self.from_dense,
                "from_lexical": self.from_lexical, "nodes_asked": self.nodes_asked, "index": self.index_kind,
                "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}


def _body_rows(view: CorpusView, doc_mask: np.ndarray | None) -> np.ndarray:
    ok = (view.type_code != TYPE_CODES[NodeType.ROOT]) & ~view.back_matter
    if doc_mask is not None:
        ok &= np.asarray(doc_mask, bool)[view.doc_of]
    return ok


def dense_document_ranking(view: CorpusView, q: np.ndarray, n_docs: int, *, nodes_per_doc: int = 16,
                           exact_max_rows: int | None = None, nprobe: int = 64,
                           doc_mask: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The ``n_docs`` documents whose best body node is closest to ``q`` (FAISS search).

    Args:
        view: The corpus view (over the collection store).
        q: float32 (d,) unit query vector.
        n_docs: Documents wanted.
        nodes_per_doc: First ask for ``n_docs x nodes_per_doc`` nodes (x4 until covered).
        exact_max_rows, nprobe: The FAISS index's settings
            (:func:`~docmaster_core.store.collection_index.collection_index`).
        doc_mask: Optional bool (D,) documents allowed.

    Returns:
        ``(doc_indices int64 (<= n_docs,) best first, nodes asked)``.
    """
    from ..store.collection_index import EXACT_MAX_ROWS, search

    R = view.emb.shape[0]
    if R == 0 or n_docs < 1:
        return np.zeros(0, np.int64), 0
    ok = _body_rows(view, doc_mask)
    k = min(R, max(n_docs * nodes_per_doc, 64))
    while True:
        if view.collection is not None:
            I, D = search(view.collection, q, k, exact_max_rows or EXACT_MAX_ROWS, nprobe)
        else:  # in-memory fallback view: exact
            from .semantic import global_top_k

            I, D = (x[None] for x in global_top_k(view, q, k))
        rows = I[0][I[0] >= 0]
        rows = rows[ok[rows]]
        docs = view.doc_of[rows]
        _, first = np.unique(docs, return_index=True)
        ranked = docs[np.sort(first)].astype(np.int64)  # best node first
        if ranked.size >= n_docs or k >= R:
            return ranked[:n_docs], k
        k = min(R, k * 4)


def lexical_document_ranking(view: CorpusView, node_scores: np.ndarray, n_docs: int,
                             doc_mask: np.ndarray | None = None) -> np.ndarray:
    """The ``n_docs`` documents whose best body node scores highest (score > 0 only).

    Args:
        node_scores: float32 (N,) BM25 score of every row
            (:meth:`~docmaster_core.store.lexical_index.LexicalIndex.node_scores`).

    Returns:
        int64 (<= n_docs,) document indices, best first.
    """
    ok = _body_rows(view, doc_mask) & (node_scores > 0)
    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return np.zeros(0, np.int64)
    best = np.zeros(len(view.docs), dtype=np.float32)
    np.maximum.at(best, view.doc_of[rows], node_scores[rows])
    hit = np.flatnonzero(best > 0)
    order = hit[np.lexsort((hit, -best[hit]))]
    return order[:n_docs].astype(np.int64)


def candidate_documents(view: CorpusView, lexical, queries: np.ndarray, term_lists: Sequence[Sequence[str]],
                        settings, doc_mask: np.ndarray | None = None) -> Candidates:
    """Stage 1 of a filter at scale: the union of every index's best documents.

    Args:
        view: The corpus view of the whole collection.
        lexical: The :class:`~docmaster_core.store.lexical_index.LexicalIndex` of the
            view's collection store (None: dense rankings only).
        queries: float32 (m, d) unit query vectors (the condition, its parts).
        term_lists: Term lists (the condition's, each lexical part's).
        settings: :class:`~docmaster_core.config.CandidateSettings` (``pool_docs``,
            ``nodes_per_doc``, ``dense_exact_max_rows``, ``nprobe``).
        doc_mask: Optional bool (D,) documents of the run.

    Returns:
        The :class:`Candidates` (within ``doc_mask``).
    """
    from ..store.collection_index import EXACT_MAX_ROWS, collection_index, index_kind, willneed_lists

    pool = int(settings.pool_docs)
    t0 = time.perf_counter()
    dense: set[int] = set()
    asked = 0
    qs = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
    if view.collection is not None and view.emb.shape[0] and qs.shape[0] > 1:  # every query's lists read at once
        willneed_lists(collection_index(view.collection, settings.dense_exact_max_rows or EXACT_MAX_ROWS,
                                        settings.nprobe), qs)
    for q in qs:
        got, k = dense_document_ranking(view, q, pool, nodes_per_doc=settings.nodes_per_doc,
                                        exact_max_rows=settings.dense_exact_max_rows, nprobe=settings.nprobe,
                                        doc_mask=doc_mask)
        dense.update(got.tolist())
        asked = max(asked, k)
    t1 = time.perf_counter()
    lex: set[int] = set()
    if lexical is not None:
        for terms in term_lists:
            if terms:
                lex.update(lexical_document_ranking(view, lexical.node_scores(terms), pool, doc_mask).tolist())
    t2 = time.perf_counter()
    idx = np.array(sorted(dense | lex), dtype=np.int64)
    kind = index_kind(view.emb.shape[0], settings.dense_exact_max_rows) if view.collection is not None else "in-memory"
    return Candidates(idx, len(dense), len(lex), asked, {"dense": t1 - t0, "lexical": t2 - t1}, kind)


def candidate_view(view, doc_indices, ws, lex=None):
    """The view stage two scores: ``view``'s documents ``doc_indices`` (a
    :func:`~docmaster_core.retrieval.corpus.sub_view`), whose BM25 scores come from the
    workspace's persisted collection index (:data:`~docmaster_core.retrieval.keyword.COLLECTION_BM25`:
    the whole collection's statistics, so that the scores of a document do not depend on
    which other documents are candidates, or on the shard that scores it).

    Args:
        view: The workspace's view (rows = collection store rows).
        doc_indices: Document indices in ``view``.
        ws: The workspace (for the lexical index).
        lex: The loaded :class:`~docmaster_core.store.lexical_index.LexicalIndex` (None:
            loaded here; a view without a collection store keeps per-view BM25).

    Returns:
        The sub-view (:class:`~docmaster_core.retrieval.corpus.CorpusView`), documents in
        ``view`` order. For a view over a collection store, the documents' stored nodes and
        per-document files are first read in the background
        (:meth:`~docmaster_core.store.workspace.Workspace.warm_nodes`,
        :func:`~docmaster_core.store.docinfo.warm`), so that the later reads of their
        passages and arrays find them in the page cache.
    """
    from ..store import docinfo
    from ..store.lexical_index import lexical_index
    from .corpus import sub_view
    from .keyword import COLLECTION_BM25

    idx = np.unique(np.asarray(list(doc_indices), dtype=np.int64))
    if ws is not None and view.collection is not None and idx.size and hasattr(ws, "warm_nodes"):
        ids = [view.docs[i].doc_id for i in idx.tolist()]
        docinfo.warm(view.ws_path, docinfo.FILTER_KINDS, ids)  # their per-document arrays
        ws.warm_nodes(ids)  # their passages, read later by the evidence
    sub = sub_view(view, idx)
    if lex is None and view.collection is not None:
        lex = lexical_index(ws, view.collection)
    if lex is not None:
        rows = np.concatenate([np.arange(view.offsets[i], view.offsets[i + 1]) for i in idx.tolist()]) \
            if idx.size else np.zeros(0, np.int64)  # the sub-view's rows in the store
        sub.aux(COLLECTION_BM25, lambda: (lex, rows))
    return sub
