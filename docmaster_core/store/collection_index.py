"""One persisted FAISS index over a workspace's collection store (:mod:`.collection`).

``collection/faiss.index`` is a FAISS ``IndexScalarQuantizer`` (``QT_fp16``, inner
product: on unit vectors the cosine) whose id ``r`` is row ``r`` of the collection
store; ``collection/faiss.json`` records the store generation and the row count it
covers. It is read memory-mapped (``IO_FLAG_MMAP_IFC``), so opening it costs no
memory up front. When the store gained rows (new documents), the missing rows are
*added* to the index and it is written back atomically; when the store was rebuilt
(a document removed or rewritten) the index is rebuilt too.

It serves the global top-k search over all documents (:func:`search`); the per-document
scores of the filter use every cosine and compute them exactly from the store instead
(:meth:`~docmaster_core.retrieval.corpus.CorpusView.cosines`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .collection import Collection, collection_lock, write_json_atomic
from ..errors import RetrievalError

__all__ = ["collection_index", "search", "CHUNK_ROWS"]

#: Rows converted to float32 at a time when adding to the index.
CHUNK_ROWS = 65536


def _faiss():
    try:
        import faiss
    except ImportError as e:  # pragma: no cover - install problem
        raise RetrievalError("faiss-cpu is not installed (pip install -r requirements.txt)") from e
    return faiss


def _info(d: Path) -> dict:
    try:
        return json.loads((d / "faiss.json").read_text())
    except (OSError, ValueError):
        return {}


def _add_rows(index, coll: Collection, start: int) -> None:
    for a in range(start, coll.rows, CHUNK_ROWS):
        b = min(a + CHUNK_ROWS, coll.rows)
        index.add(np.ascontiguousarray(coll.emb[a:b], dtype=np.float32))


def collection_index(coll: Collection):
    """The FAISS index over ``coll``'s rows, updated first when it is behind.

    Args:
        coll: A :class:`~docmaster_core.store.collection.Collection` snapshot.

    Returns:
        A FAISS index with ``ntotal == coll.rows`` (memory-mapped when read from disk).

    Raises:
        RetrievalError: faiss is not installed.
        OSError: the index cannot be written (read-only workspace).
    """
    faiss = _faiss()
    d = coll.path
    path = d / "faiss.index"
    info = _info(d)
    if info.get("generation") == coll.generation and info.get("rows") == coll.rows and path.exists():
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
    with collection_lock(d):
        info = _info(d)
        same_gen = info.get("generation") == coll.generation and path.exists()
        if same_gen and info.get("rows") == coll.rows:
            return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
        if same_gen and 0 <= int(info.get("rows", -1)) < coll.rows:
            index = faiss.read_index(str(path))  # in memory: an mmap-read index cannot grow
            if index.ntotal != info["rows"]:
                index = None
        else:
            index = None
        if index is None:
            index = faiss.IndexScalarQuantizer(int(coll.emb.shape[1]), faiss.ScalarQuantizer.QT_fp16,
                                               faiss.METRIC_INNER_PRODUCT)
        _add_rows(index, coll, int(index.ntotal))
        tmp = d / f".faiss.{os.getpid()}.tmp"
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        write_json_atomic(d / "faiss.json", {"generation": coll.generation, "rows": coll.rows})
        return index


def search(coll: Collection, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of the whole collection closest to each query.

    Args:
        coll: The collection snapshot.
        q: float32 (d,) or (m, d) unit query vectors.
        k: Rows wanted (>= 1; fewer come back when the collection is smaller).

    Returns:
        ``(rows int64 (m, k'), cosines float32 (m, k'))``, best first, k' = min(k, R).

    Raises:
        RetrievalError: ``k`` < 1 or faiss is missing.
    """
    if k < 1:
        raise RetrievalError(f"k must be >= 1, got {k}")
    q2 = np.ascontiguousarray(np.atleast_2d(np.asarray(q, dtype=np.float32)))
    kk = min(int(k), coll.rows)
    if kk == 0:
        return np.zeros((q2.shape[0], 0), np.int64), np.zeros((q2.shape[0], 0), np.float32)
    D, I = collection_index(coll).search(q2, kk)
    return I.astype(np.int64), D.astype(np.float32)
