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
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import DocMasterError
from ..model import DocumentTree
from .params import IndexParams
from .reuse import GroupCache, reusable_groups

__all__ = ["IndexStage", "COLLECTION_KEY"]

#: The ``doc_id`` under which the collection-level index is stored.
COLLECTION_KEY = "__collection__"
#: Boilerplate rules of the collection clustering (``boilerplate_reasons`` keyword arguments; ``roles``: front
#: and back matter out too; ``signature``: signature blocks out too), and their version in the stored
#: collection index's key.
COLLECTION_BOILERPLATE: dict = {"min_words": 8, "min_docs": 2, "min_repeats": 3, "roles": True, "signature": True}
COLLECTION_BOILERPLATE_VERSION = ("v3: short<8 words, repeated in 2+ documents or 3+ times, front matter, the "
                                  "reference list at any heading level or read as entries, signature blocks")


class IndexStage:
    """Index operations of the facade (a mixin: it uses ``settings``, ``ws``,
    ``embedder`` and ``llm``, and the state the facade declares in its ``__init__``:
    ``_index_lock`` (threading.Lock, taken after the workspace's write lock), ``_group_cache``
    (:class:`~docmaster_core.index.reuse.GroupCache`) and ``_pending_saves`` (list of
    threading.Thread)). Thread-safe: saves are serialised by the workspace's write lock (one
    holder thread at a time in a process) and then one lock per facade, always in that order."""

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
            self._save_index(doc_id, p, idx.to_json_dict(arrays=True))
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
        with self.ws.writing(what="index"):
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
        # the workspace's write lock first, then the facade's: the order every writer takes them in
        # (index_collection holds the write lock when it saves), so a background save never holds one
        # while it waits for the other
        with self.ws.writing(what="index save"), self._index_lock:
            self.ws.save_index(doc_id, params, data)

    def _save_in_background(self, doc_id: str, params: IndexParams, idx: Any) -> None:
        pending = self._pending_saves

        def _run() -> None:
            try:
                self._save_index(doc_id, params, idx.to_json_dict(arrays=True))
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

    # ------------------------------------------------------------------ 2-D layouts (cluster view)
    def _layout_queue(self):
        from .layout import LayoutQueue

        return LayoutQueue(self.ws.path)

    def _text_ids(self, doc_id: str) -> np.ndarray:
        """(m,) int64 ids of the document's TEXT nodes, ascending (one query; no tree built)."""
        rows = self.ws.node_columns(doc_id, ("node_id", "type"))
        return np.asarray([int(i) for i, t in rows if t == "TEXT"], dtype=np.int64)

    def _doc_layout_name(self, rec: Any) -> str:
        from .layout import layout_name

        return layout_name(f"doc_{rec.doc_id}", (float(rec.added_at or 0.0), str(rec.embedding_model),
                                                 int((rec.counts or {}).get("TEXT", 0))))

    def layout(self, doc_id: str, *, urgent: bool = True):
        """The 2-D layout of a document's TEXT nodes for the cluster view, without
        waiting: the stored UMAP layout when it is ready, else PCA with the status
        ``"computing"`` (the UMAP job is queued, ahead of background jobs when
        ``urgent``, and computed by the background worker; see
        :mod:`docmaster_core.index.layout`).

        Returns:
            :class:`~docmaster_core.index.layout.Layout2D` (coords float32 (n, 2) for the
            document's TEXT node ids, ascending).

        Raises:
            WorkspaceError: no such document or no vector file.
        """
        from .layout import Layout2D

        rec = self.ws.document(doc_id)
        ids = self._text_ids(rec.doc_id)
        X = np.asarray(self.ws.load_embeddings(rec.doc_id, mmap=True)[ids], dtype=np.float32)
        name = self._doc_layout_name(rec)
        coords, method, status = self._layout_queue().layout(name, X, enabled=self.settings.ui_umap, urgent=urgent)
        return Layout2D(coords, [rec.doc_id] * int(ids.size), ids, method, status, name)

    def collection_layout(self, doc_ids: Sequence[str] | None = None, *, urgent: bool = True):
        """The 2-D layout of the TEXT nodes of several documents (default all), rows in
        the order of ``doc_ids`` and, within a document, by node id (the order of
        :class:`~docmaster_core.index.builder.CollectionIndex`). Same rules as
        :meth:`layout`; the collection layout is stored under a name made of the
        documents' versions, so adding or removing a document makes a new one.

        Raises:
            WorkspaceError: an unknown document or a missing vector file.
        """
        from .layout import Layout2D, layout_name

        recs = [self.ws.document(d) for d in doc_ids] if doc_ids is not None else self.ws.documents()
        parts, X_parts, ids_parts, docs_col = [], [], [], []
        for rec in recs:
            ids = self._text_ids(rec.doc_id)
            X_parts.append(np.asarray(self.ws.load_embeddings(rec.doc_id, mmap=True)[ids], dtype=np.float32))
            ids_parts.append(ids)
            docs_col.extend([rec.doc_id] * int(ids.size))
            parts.append((rec.doc_id, float(rec.added_at or 0.0), str(rec.embedding_model), int(ids.size)))
        X = np.concatenate(X_parts) if X_parts else np.zeros((0, 384), dtype=np.float32)
        ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, dtype=np.int64)
        name = layout_name("collection", parts)
        coords, method, status = self._layout_queue().layout(name, X, enabled=self.settings.ui_umap, urgent=urgent)
        return Layout2D(coords, docs_col, ids, method, status, name)

    def ensure_layouts(self, doc_ids: Sequence[str] | None = None) -> int:
        """Queue the UMAP layouts of these documents (default all) that are not stored
        yet, behind any urgent job, and start the background worker; returns at once
        with the number of jobs queued (0 when ``settings.ui_umap`` is off). Called by
        the app after an ingest and when it opens a workspace, so the cluster view
        finds its layouts ready.

        Raises:
            OSError: the workspace is not writable.
        """
        from .layout import MIN_UMAP_POINTS

        if not self.settings.ui_umap:
            return 0
        q = self._layout_queue()
        recs = [self.ws.document(d) for d in doc_ids] if doc_ids is not None else self.ws.documents()
        n = 0
        for rec in recs:
            name = self._doc_layout_name(rec)
            if (int((rec.counts or {}).get("TEXT", 0)) < MIN_UMAP_POINTS or q.path(name).is_file()
                    or q.queued(name) or q.failure(name) is not None):
                continue
            ids = self._text_ids(rec.doc_id)
            X = np.asarray(self.ws.load_embeddings(rec.doc_id, mmap=True)[ids], dtype=np.float32)
            q.enqueue(name, X, urgent=False)
            n += 1
        return n

    def layout_status(self, name: str) -> str:
        """``"ready"``, ``"computing"``, ``"failed: <reason>"`` or ``"absent"`` for a
        stored layout name (:attr:`~docmaster_core.index.layout.Layout2D.name`);
        restarts the background worker when jobs wait and none runs."""
        q = self._layout_queue()
        if q.path(name).is_file():
            return "ready"
        if q.queued(name):
            q.start_worker()
            return "computing"
        why = q.failure(name)
        return "absent" if why is None else "failed: " + why

    def wait_for_layouts(self, timeout: float = 600.0) -> bool:
        """Wait until every queued layout is computed (tests, scripts); True when done in time."""
        return self._layout_queue().wait(timeout)

    # ------------------------------------------------------------------ collection
    def _collection_params(self, params: IndexParams, n_clusters: int | None, link_threshold: float,
                           center: str | float = "auto") -> dict[str, Any]:
        return {**params.as_dict(), "collection_K": n_clusters, "link_threshold": float(link_threshold),
                "docs": sorted(d.doc_id for d in self.ws.documents()),
                "boilerplate": COLLECTION_BOILERPLATE_VERSION, "center": center}

    def index_collection(self, *, force: bool = False, n_clusters: int | None = None, link_threshold: float = 0.5,
                         params: Mapping[str, Any] | None = None, center: str | float = "auto",
                         **overrides: Any) -> dict[str, Any]:
        """Build (or reuse) the collection-level index: PC-KMeans over all documents'
        TEXT nodes with the union of their anchor pairs, and hyper-edge links across
        documents. Builds the missing per-document indexes first. Returns its stats.

        Boilerplate passages (:data:`COLLECTION_BOILERPLATE`: short lines, text repeated
        across documents, front and back matter; :mod:`~docmaster_core.index.boilerplate`)
        are left out of the collection clustering; ``center`` is passed to
        :func:`~docmaster_core.index.builder.build_collection_index` (``"auto"``: topics
        inside the documents when they are alike).

        Raises:
            WorkspaceLockedError: another process is writing the workspace.
        """
        from .builder import CollectionIndex, build_collection_index

        p = self.index_params(params, **overrides)
        cparams = self._collection_params(p, n_clusters, link_threshold, center)
        if not force:
            stored = self.ws.load_index(COLLECTION_KEY, cparams)
            if stored is not None:
                return CollectionIndex.from_json_dict(stored).stats
        self.wait_for_saves()
        with self.ws.writing(what="collection index"):  # re-entrant: a caller may already hold the write lock
            trees, embs, idxs = [], {}, {}
            for d in self.ws.documents():
                idxs[d.doc_id] = self.build_index(d.doc_id, p)
                trees.append(self.ws.load_tree(d.doc_id))
                embs[d.doc_id] = np.asarray(self.ws.load_embeddings(d.doc_id, mmap=False))
            coll = build_collection_index(trees, embs, self.llm, self.embedder, p.settings(), doc_indexes=idxs,
                                          n_clusters=n_clusters, link_threshold=link_threshold,
                                          boilerplate=COLLECTION_BOILERPLATE, center=center)
            self._save_index(COLLECTION_KEY, cparams, coll.to_json_dict(arrays=True))
        return coll.stats

    def load_collection_index(self, *, n_clusters: int | None = None, link_threshold: float = 0.5,
                              params: Mapping[str, Any] | None = None, center: str | float = "auto",
                              **overrides: Any):
        """The stored :class:`~docmaster_core.index.builder.CollectionIndex` for these parameters, or None."""
        from .builder import CollectionIndex

        p = self.index_params(params, **overrides)
        d = self.ws.load_index(COLLECTION_KEY, self._collection_params(p, n_clusters, link_threshold, center))
        return None if d is None else CollectionIndex.from_json_dict(d)
