"""Re-index policy: rebuild a document's semantic index for new hyperparameters
without regrouping its paragraphs.

The hyper-edges (LLM-grouped paragraphs per section, DocMaster Sec. 2.3) depend on the
document, the LLM backend and the embedder, not on alpha, k, K or w. When an index of
the same document built by the same backend and embedder is stored, its hyper-edges
are reused, so a slider change (app) or ``docmaster index --alpha ...`` (CLI) costs one
``label_pairs`` call and one PC-KMeans fit instead of a ``group_paragraphs`` call per
section.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from .hyperedges import HyperEdgeSet

__all__ = ["GroupCache", "reusable_groups"]


def reusable_groups(stored: dict[str, Any] | None, backend: str, embedder: str) -> HyperEdgeSet | None:
    """The hyper-edges of a stored index (``Workspace.load_index`` JSON) as a
    :class:`HyperEdgeSet` when it was built by LLM ``backend`` and ``embedder``; None
    when nothing is stored, it was built otherwise, or it is malformed."""
    from .builder import DocumentIndex

    if stored is None:
        return None
    p = stored.get("params") or {}
    if p.get("llm_backend") != backend or p.get("embedder") != embedder:
        return None
    try:
        old = DocumentIndex.from_json_dict(stored)
    except (KeyError, ValueError, TypeError):
        return None
    if old.hyperedge_embeddings.shape[0] != len(old.hyperedges):
        return None
    return HyperEdgeSet(hyperedges=old.hyperedges, embeddings=old.hyperedge_embeddings,
                        repaired=int(old.stats.get("grouping_repairs", 0)))


class GroupCache:
    """A small thread-safe LRU of reusable hyper-edge sets, keyed by
    ``(doc_id, added_at, backend, embedder)`` (``added_at`` changes on re-ingest).
    Misses (None) are not cached, so a grouping stored later is found."""

    def __init__(self, max_entries: int = 64):
        self._max = int(max_entries)
        self._items: OrderedDict[tuple, HyperEdgeSet] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, load) -> HyperEdgeSet | None:
        """The cached set for ``key``, else ``load()`` (cached when not None)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        got = load()
        if got is not None:
            with self._lock:
                self._items[key] = got
                while len(self._items) > self._max:
                    self._items.popitem(last=False)
        return got
