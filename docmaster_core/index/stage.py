"""The semantic-index half of the :class:`~docmaster_core.pipeline.DocMaster` facade:
build, reuse, store and load per-document and collection indexes (DocMaster Sec. 2.3,
Eq. (1)-(2); PC-KMeans after Basu, Banerjee and Mooney 2004).

One policy for the CLI and the app: a stored index for the same
:class:`~docmaster_core.index.params.IndexParams` is read back; a missing one is built
with the document's stored hyper-edges reused when they were made by the same LLM
backend and embedder (:mod:`docmaster_core.index.reuse`), and stored under the
workspace write lock, now or in a background thread (slider changes in the app).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import DocMasterError
from ..model import DocumentTree
from .params import IndexParams
from .reuse import GroupCache, reusable_groups

__all__ = ["IndexStage", "COLLECTION_KEY"]

#: The ``doc_id`` under which the collection-level index is stored.
COLLECTION_KEY = "__collection__"


class IndexStage:
    """Index operations of the facade (a mixin: it uses ``settings``, ``ws``,
    ``embedder`` and ``llm``, and the state the facade declares in its ``__init__``:
    ``_index_lock`` (threading.Lock), ``_group_cache``
    (:class:`~docmaster_core.index.reuse.GroupCache`) and ``_pending_saves`` (list of
    threading.Thread)). Thread-safe: saves are serialised by one lock per facade (the
    workspace write lock is per process, not per thread)."""

    _index_lock: threading.Lock
    _group_cache: GroupCache
    _pending_saves: list[threading.Thread]

    COLLECTION_KEY = COLLECTION_KEY

    # ------------------------------------------------------------------ parameters
    def index_params(self, params: Mapping[str, Any] | None = None, **overrides: Any) -> IndexParams:
        """The index parameters in force: ``settings.index``, then ``params`` (a mapping
        or :class:`IndexParams`), then non-None keyword ``overrides``; labelled with the
        current LLM backend.

        Raises:
            TypeError: an unknown parameter name.
            pydantic.ValidationError: a value out of range (e.g. alpha > 1).
        """
        merged = {k: v for k, v in dict(params or {}).items() if k != "llm"}
        merged.update({k: v for k, v in overrides.items() if v is not None})
        return IndexParams.from_settings(self.settings.index, self.llm.backend_name, **merged)

    # ------------------------------------------------------------------ one document
    def load_index(self, doc_id: str, params: Mapping[str, Any] | None = None, **overrides: Any):
        """The stored :class:`~docmaster_core.index.builder.DocumentIndex` for the
        parameters, or None when it was not built (no LLM call, no build)."""
        from .builder import DocumentIndex

        d = self.ws.load_index(doc_id, self.index_params(params, **overrides))
        return None if d is None else DocumentIndex.from_json_dict(d)

    def has_index(self, doc_id: str, params: Mapping[str, Any] | None = None) -> bool:
        """True when an index of ``doc_id`` for ``params`` is stored (the index itself is not read)."""
        return doc_id in self.indexed_documents(params)

    def indexed_documents(self, params: Mapping[str, Any] | None = None) -> set[str]:
        """The doc ids with a stored index for ``params`` (one query on the index table)."""
        key = self.index_params(params).key()
        return {d for d, k, _ in self.ws.index_versions() if k == key}

    def build_index(self, doc_id: str, params: Mapping[str, Any] | None = None, *, force: bool = False,
                    tree: DocumentTree | None = None, embeddings: np.ndarray | None = None,
                    background_save: bool = False):
        """The document's semantic index for ``params``: read back when stored, else
        built (hyper-edges reused when possible, see :mod:`docmaster_core.index.reuse`)
        and stored.

        Args:
            doc_id: The document.
            params: Index parameters (default ``settings.index``).
            force: Rebuild (and regroup) even when an index is stored.
            tree, embeddings: The document's tree and (|V|, 384) float32 node embeddings
                when the caller has them (ingest); else loaded from the workspace.
            background_save: Store in a daemon thread and return at once (a failure,
                e.g. another process holding the write lock, only means a rebuild next
                time). Call :meth:`wait_for_saves` before listing stored indexes.

        Returns:
            :class:`~docmaster_core.index.builder.DocumentIndex`.

        Raises:
            WorkspaceError: no such document.
            WorkspaceLockedError: another process is writing the workspace (foreground save).
            IndexBuildError: the LLM broke the labelling / grouping protocol.
        """
        from .builder import build_document_index

        p = self.index_params(params)
        if not force:
            stored = self.load_index(doc_id, p)
            if stored is not None:
                return stored
        groups = None if force else self._reusable_groups(doc_id)
        tree = tree or self.ws.load_tree(doc_id)
        emb = np.asarray(embeddings if embeddings is not None else self.ws.load_embeddings(doc_id, mmap=False))
        idx = build_document_index(tree, emb, self.llm, self.embedder, p.settings(), groups=groups)
        if background_save:
            self._save_in_background(doc_id, p, idx)
        else:
            self._save_index(doc_id, p, idx.to_json_dict())
        return idx

    def index_document(self, doc_id: str, *, tree: DocumentTree | None = None, embeddings: np.ndarray | None = None,
                       force: bool = False, params: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
        """:meth:`build_index` with parameters as keywords; returns the index stats dict."""
        p = self.index_params(params, **overrides)
        return self.build_index(doc_id, p, force=force, tree=tree, embeddings=embeddings).stats

    def index(self, *, force: bool = False, on_progress: Callable[[str, int, int], None] | None = None,
              params: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, dict[str, Any]]:
        """Build (or reuse) the semantic index of every document under the write lock;
        returns ``{doc_id: stats}``. ``on_progress(file_name, i, n)`` is called before each.

        Raises:
            WorkspaceLockedError: another process is writing the workspace.
        """
        p = self.index_params(params, **overrides)
        out = {}
        docs = self.ws.documents()
        with self.ws.writing():
            for i, d in enumerate(docs):
                if on_progress:
                    on_progress(d.file_name, i, len(docs))
                out[d.doc_id] = self.build_index(d.doc_id, p, force=force).stats
        return out

    # ------------------------------------------------------------------ storage
    def _reusable_groups(self, doc_id: str):
        cache = self._group_cache
        backend, emb_name = self.llm.backend_name, str(getattr(self.embedder, "name", ""))
        try:
            added = float(self.ws.document(doc_id).added_at)
        except (DocMasterError, TypeError, ValueError):
            added = 0.0
        return cache.get((str(self.ws.path), doc_id, added, backend, emb_name),
                         lambda: reusable_groups(self.ws.load_index(doc_id), backend, emb_name))

    def _save_index(self, doc_id: str, params: Mapping[str, Any], data: dict[str, Any]) -> None:
        with self._index_lock, self.ws.writing():
            self.ws.save_index(doc_id, params, data)

    def _save_in_background(self, doc_id: str, params: IndexParams, idx: Any) -> None:
        pending = self._pending_saves

        def _run() -> None:
            try:
                self._save_index(doc_id, params, idx.to_json_dict())
            except (DocMasterError, OSError):
                pass

        th = threading.Thread(target=_run, name=f"docmaster-save-index-{doc_id}", daemon=True)
        pending[:] = [t for t in pending if t.is_alive()] + [th]
        th.start()

    def wait_for_saves(self, timeout: float = 60.0) -> None:
        """Join this facade's background index saves (seconds per save at most)."""
        for th in list(self._pending_saves):
            if th is not threading.current_thread():
                th.join(timeout)

    # ------------------------------------------------------------------ collection
    def _collection_params(self, params: IndexParams, n_clusters: int | None, link_threshold: float) -> dict[str, Any]:
        return {**params.as_dict(), "collection_K": n_clusters, "link_threshold": float(link_threshold),
                "docs": sorted(d.doc_id for d in self.ws.documents())}

    def index_collection(self, *, force: bool = False, n_clusters: int | None = None, link_threshold: float = 0.5,
                         params: Mapping[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
        """Build (or reuse) the collection-level index: PC-KMeans over all documents'
        TEXT nodes with the union of their anchor pairs, and hyper-edge links across
        documents. Builds the missing per-document indexes first. Returns its stats.

        Raises:
            WorkspaceLockedError: another process is writing the workspace.
        """
        from .builder import CollectionIndex, build_collection_index

        p = self.index_params(params, **overrides)
        cparams = self._collection_params(p, n_clusters, link_threshold)
        if not force:
            stored = self.ws.load_index(COLLECTION_KEY, cparams)
            if stored is not None:
                return CollectionIndex.from_json_dict(stored).stats
        self.wait_for_saves()
        with self.ws.writing():  # re-entrant: a caller may already hold the write lock
            trees, embs, idxs = [], {}, {}
            for d in self.ws.documents():
                idxs[d.doc_id] = self.build_index(d.doc_id, p)
                trees.append(self.ws.load_tree(d.doc_id))
                embs[d.doc_id] = np.asarray(self.ws.load_embeddings(d.doc_id, mmap=False))
            coll = build_collection_index(trees, embs, self.llm, self.embedder, p.settings(), doc_indexes=idxs,
                                          n_clusters=n_clusters, link_threshold=link_threshold)
            self._save_index(COLLECTION_KEY, cparams, coll.to_json_dict())
        return coll.stats

    def load_collection_index(self, *, n_clusters: int | None = None, link_threshold: float = 0.5,
                              params: Mapping[str, Any] | None = None, **overrides: Any):
        """The stored :class:`~docmaster_core.index.builder.CollectionIndex` for these parameters, or None."""
        from .builder import CollectionIndex

        p = self.index_params(params, **overrides)
        d = self.ws.load_index(COLLECTION_KEY, self._collection_params(p, n_clusters, link_threshold))
        return None if d is None else CollectionIndex.from_json_dict(d)
