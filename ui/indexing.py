"""Semantic-index access for the hyper-edge graph and the semantic-cluster pages.

A PC-KMeans run for one (workspace, document, alpha, k, K, w, LLM backend) is built
once (reusing the document's stored hyper-edges, which do not depend on those
parameters), stored in the workspace per parameter set (in the background for a
slider change), and memoised here with ``st.cache_data``; going back to a previous
slider position is therefore instant. Source: DocMaster (arXiv 2607.08539) Sec. 2.3,
Eq. (1)-(2); PC-KMeans after Basu, Banerjee and Mooney (2004).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
import streamlit as st

from . import state

__all__ = [
    "index_params",
    "load_document_index",
    "build_document_index",
    "has_index",
    "stored_index_docs",
    "wait_for_saves",
    "cluster_run",
    "collection_run",
    "anchor_rows",
]


def index_params() -> dict[str, Any]:
    """The session's index hyperparameters ``{"alpha", "k", "K", "w"}``."""
    p = dict(state.default_index_params())
    p.update(state.get(state.INDEX_PARAMS) or {})
    return {"alpha": float(p["alpha"]), "k": int(p["k"]), "K": int(p["K"]), "w": float(p["w"])}


def load_document_index(dm: Any, doc_id: str, params: dict[str, Any]):
    """The stored :class:`~docmaster_core.index.builder.DocumentIndex` for ``params``,
    or None when it was not built yet (no LLM call, no build)."""
    return dm.load_index(doc_id, **params)


def has_index(dm: Any, doc_id: str, params: dict[str, Any]) -> bool:
    """True when an index of ``doc_id`` for ``params`` is stored (one small query; the
    index itself is not read)."""
    return doc_id in stored_index_docs(dm, params)


def stored_index_docs(dm: Any, params: dict[str, Any]) -> set[str]:
    """The doc ids with a stored index for ``params`` (alpha, k, K, w; the rest from the
    settings), from one query on the index table instead of parsing every index."""
    key = dm.ws.params_key(dm.index_params(**params))
    return {d for d, k, _ in dm.ws.index_versions() if k == key}


_SAVE_LOCK = threading.Lock()


def build_document_index(dm: Any, doc_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """Build (or reuse) and store the index for ``params`` under the workspace write lock.

    The paragraph grouping into hyper-edges does not depend on alpha, k, K or w, so
    when an index of the same document built with the same LLM backend and embedder
    is stored, its hyper-edges are reused (``build_document_index(..., groups=...)``):
    a slider change then costs one ``label_pairs`` call and one PC-KMeans fit instead
    of a ``group_paragraphs`` call per section. Otherwise ``dm.index_document`` builds
    everything.

    Returns:
        The index stats dict.

    Raises:
        WorkspaceLockedError: another process is writing the workspace.
        IndexBuildError: the LLM broke the labelling/grouping protocol.
    """
    wait_for_saves()
    if has_index(dm, doc_id, params):
        return dm.load_index(doc_id, **params).stats
    idx = _build_with_reused_groups(dm, doc_id, params)
    if idx is None:
        with _SAVE_LOCK, dm.ws.writing():
            return dm.index_document(doc_id, **params)
    _save(dm, doc_id, params, idx)
    return idx.stats


def _build_with_reused_groups(dm: Any, doc_id: str, params: dict[str, Any]):
    """The :class:`~docmaster_core.index.builder.DocumentIndex` for ``params`` built
    with the document's stored hyper-edges (not saved), or None when no reusable
    grouping is stored."""
    added_at = _added_at(dm, doc_id)
    try:
        groups = _reusable_groups_cached(dm, str(dm.ws.path), doc_id, added_at, dm.llm.backend_name,
                                         str(getattr(dm.embedder, "name", "")))
    except _NoGroups:
        return None
    from docmaster_core.config import IndexSettings
    from docmaster_core.index.builder import build_document_index as build

    full = dm.index_params(**params)
    isettings = IndexSettings(**{k: v for k, v in full.items() if k in IndexSettings.model_fields})
    from .widgets import load_tree_cached

    tree = load_tree_cached(str(dm.ws.path), doc_id, added_at)
    emb = np.asarray(dm.ws.load_embeddings(doc_id, mmap=True))
    return build(tree, emb, dm.llm, dm.embedder, isettings, groups=groups)


def _save(dm: Any, doc_id: str, params: dict[str, Any], idx: Any) -> None:
    """Store ``idx`` for ``params`` under the workspace write lock (serialised within
    this process by a module lock).

    Raises:
        WorkspaceLockedError: another process is writing the workspace.
    """
    full = dm.index_params(**params)
    with _SAVE_LOCK, dm.ws.writing():
        dm.ws.save_index(doc_id, full, idx.to_json_dict())


def _save_in_background(dm: Any, doc_id: str, params: dict[str, Any], idx: Any) -> None:
    """:func:`_save` in a daemon thread: a slider change shows its clustering without
    waiting ~0.5 s for the JSON serialisation of the index. A failure (another process
    holds the write lock) only means the parameter set is rebuilt next time."""
    from docmaster_core.errors import DocMasterError

    def _run() -> None:
        try:
            _save(dm, doc_id, params, idx)
        except (DocMasterError, OSError):
            pass

    th = threading.Thread(target=_run, name=f"docmaster-save-index-{doc_id}", daemon=True)
    with _PENDING_LOCK:
        _PENDING[:] = [t for t in _PENDING if t.is_alive()] + [th]
    th.start()


_PENDING: list[threading.Thread] = []
_PENDING_LOCK = threading.Lock()


def wait_for_saves(timeout: float = 60.0) -> None:
    """Wait until the background index saves of this process have finished (call
    before taking the workspace write lock or listing the stored indexes)."""
    with _PENDING_LOCK:
        pending = list(_PENDING)
    for th in pending:
        if th is not threading.current_thread():
            th.join(timeout)


def _added_at(dm: Any, doc_id: str) -> float:
    try:
        return float(dm.ws.document(doc_id).added_at)
    except Exception:  # noqa: BLE001 - only a cache key
        return 0.0


@st.cache_resource(max_entries=64, show_spinner=False)
def _reusable_groups_cached(_dm: Any, workspace: str, doc_id: str, added_at: float, backend: str, embedder: str):
    """:func:`_reusable_groups` memoised per workspace, document, LLM backend and
    embedder (the grouping does not depend on alpha, k, K, w). None is not cached."""
    groups = _reusable_groups(_dm, doc_id)
    if groups is None:
        raise _NoGroups
    return groups


class _NoGroups(Exception):
    """Raised inside the cached builder so that a missing grouping is not memoised."""


def _reusable_groups(dm: Any, doc_id: str):
    """The hyper-edges of the newest stored index of ``doc_id`` as a ``HyperEdgeSet``
    when it was built with the current LLM backend and embedder, else None."""
    from docmaster_core.index.builder import DocumentIndex
    from docmaster_core.index.hyperedges import HyperEdgeSet

    raw = dm.ws.load_index(doc_id)
    if raw is None:
        return None
    p = raw.get("params") or {}
    if p.get("llm_backend") != dm.llm.backend_name or p.get("embedder") != getattr(dm.embedder, "name", None):
        return None
    try:
        old = DocumentIndex.from_json_dict(raw)
    except (KeyError, ValueError):
        return None
    if old.hyperedge_embeddings.shape[0] != len(old.hyperedges):
        return None
    return HyperEdgeSet(hyperedges=old.hyperedges, embeddings=old.hyperedge_embeddings,
                        repaired=int(old.stats.get("grouping_repairs", 0)))


@st.cache_data(max_entries=256, show_spinner=False)
def cluster_run(_dm: Any, workspace: str, doc_id: str, added_at: float, alpha: float, k: int, K: int, w: float,
                backend: str):
    """A document's PC-KMeans run for these hyperparameters (built and stored when missing).

    The leading-underscore facade is not hashed; ``workspace``, ``doc_id``,
    ``added_at`` (re-ingest), the four hyperparameters and the LLM ``backend`` key
    the cache. A stored index is read back; a missing one is built with the stored
    hyper-edges reused and returned at once, its storage in the workspace running in
    the background (see :func:`_save_in_background`).

    Returns:
        :class:`~docmaster_core.index.builder.DocumentIndex` (a private copy).

    Raises:
        WorkspaceLockedError, IndexBuildError: as :func:`build_document_index`.
    """
    params = {"alpha": alpha, "k": k, "K": K, "w": w}
    if has_index(_dm, doc_id, params):
        idx = _dm.load_index(doc_id, **params)
        if idx is not None:
            return idx
    idx = _build_with_reused_groups(_dm, doc_id, params)
    if idx is not None:
        _save_in_background(_dm, doc_id, params, idx)
        return idx
    build_document_index(_dm, doc_id, params)
    return _dm.load_index(doc_id, **params)


@st.cache_data(max_entries=32, show_spinner=False)
def collection_run(_dm: Any, workspace: str, docs_key: tuple, alpha: float, k: int, K: int, w: float, backend: str):
    """Whole-collection clustering: every document's TEXT nodes re-clustered together
    with the union of the per-document must-link / cannot-link anchor pairs.

    The per-document indices are built first (see :func:`build_document_index`);
    then ``dm.index_collection`` builds and stores the collection level when the
    facade offers it (read back with ``dm.load_collection_index``), otherwise it is
    built here from the per-document indices (no extra LLM call).

    Args:
        docs_key: ``((doc_id, added_at), ...)`` of the documents, in order.

    Returns:
        ``{"doc_ids": list[str], "node_doc": (N,) int64, "node_ids": (N,) int64,
        "labels": (N,) int64, "stats": dict, "documents": {doc_id: DocumentIndex}}``.
    """
    from docmaster_core.config import IndexSettings
    from docmaster_core.index.builder import CollectionIndex, build_collection_index

    params = {"alpha": alpha, "k": k, "K": K, "w": w}
    doc_ids = [d for d, _ in docs_key]
    added = dict(docs_key)
    # per-document indices first (fast path: hyper-edge groupings reused)
    indexes = {d: cluster_run(_dm, workspace, d, added[d], alpha, k, K, w, backend) for d in doc_ids}
    coll = None
    wait_for_saves()
    if callable(getattr(_dm, "index_collection", None)) and callable(getattr(_dm, "load_collection_index", None)):
        with _dm.ws.writing():
            _dm.index_collection(**params)  # stored in the workspace; reuses the per-document indices
        got = _dm.load_collection_index(**params)
        if isinstance(got, CollectionIndex) and sorted(got.doc_ids) == sorted(doc_ids):
            coll = got
    if coll is None:
        trees = [_dm.ws.load_tree(d) for d in doc_ids]
        embs = {d: np.asarray(_dm.ws.load_embeddings(d, mmap=False)) for d in doc_ids}
        isettings = IndexSettings(**{**_dm.settings.index.model_dump(), **params})
        coll = build_collection_index(trees, embs, _dm.llm, _dm.embedder, isettings, doc_indexes=indexes)
    return {
        "doc_ids": list(coll.doc_ids),
        "node_doc": np.asarray(coll.node_doc, dtype=np.int64),
        "node_ids": np.asarray(coll.node_ids, dtype=np.int64),
        "labels": np.asarray(coll.labels, dtype=np.int64),
        "stats": dict(coll.stats),
        "documents": dict(coll.documents),
    }


def anchor_rows(idx: Any, tree: Any, width: int = 90) -> list[dict[str, Any]]:
    """The anchor pairs of a document index as table rows.

    Returns:
        ``[{"node a", "node b", "SEC", "label" ("must-link" | "cannot-link"),
        "same cluster", "text a", "text b"}]`` by decreasing SEC.
    """
    from .text import shorten

    lab = idx.label_of()
    rows = []
    for (a, b), s, m in zip(idx.anchor_pairs.tolist(), idx.anchor_scores.tolist(), idx.anchor_labels.tolist()):
        rows.append(
            {
                "node a": int(a),
                "node b": int(b),
                "SEC": round(float(s), 4),
                "label": "must-link" if m else "cannot-link",
                "same cluster": lab.get(int(a)) == lab.get(int(b)),
                "text a": shorten(tree.nodes[int(a)].content, width),
                "text b": shorten(tree.nodes[int(b)].content, width),
            }
        )
    return rows
