"""A bounded cache of query vectors, shared by the embedders (torch and ONNX Runtime)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import numpy as np

__all__ = ["QueryCache", "QUERY_CACHE_BATCH", "QUERY_CACHE_SIZE"]

#: Calls with at most this many texts are query-sized and go through the query cache.
QUERY_CACHE_BATCH = 8
#: Texts the query cache of one embedder keeps (~1.5 KB each at 384 dimensions).
QUERY_CACHE_SIZE = 512


class QueryCache:
    """A bounded LRU cache of query vectors, one per embedder instance.

    The Filter page runs configurations A and B on the same condition one after the
    other, and a filter encodes its condition once per strategy ranking and once with its
    parts; a chat question is often asked again. Calls of at most
    :data:`QUERY_CACHE_BATCH` texts are looked up here text by text (the missing ones
    encoded in one batch); longer calls (an ingest's nodes) go straight to the model.
    Thread-safe (the app encodes from several threads).

    Args:
        size: Texts kept (:data:`QUERY_CACHE_SIZE`; least recently used dropped first).
    """

    def __init__(self, size: int = QUERY_CACHE_SIZE):
        self.size = int(size)
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()  # text -> float32 (d,)
        self._lock = threading.Lock()

    def encode(self, texts: list[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """float32 (n, d) rows for ``texts`` (already cut to the model's ``max_chars``):
        cached rows, and ``compute(missing texts)`` for the rest; a new array each call."""
        if len(texts) > QUERY_CACHE_BATCH:
            return compute(texts)
        with self._lock:
            found = {t: self._vecs[t] for t in texts if t in self._vecs}
            for t in found:
                self._vecs.move_to_end(t)
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            new = np.asarray(compute(todo), dtype=np.float32)
            with self._lock:
                for t, v in zip(todo, new):
                    found[t] = self._vecs[t] = v
                while len(self._vecs) > self.size:
                    self._vecs.popitem(last=False)
        return np.stack([found[t] for t in texts])  # a copy: callers may change it
