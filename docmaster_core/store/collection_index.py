"""One persisted FAISS index over a workspace's collection store (:mod:`.collection`).

``collection/faiss.index`` is a FAISS ``IndexScalarQuantizer`` (``QT_fp16``, inner
product: on unit vectors the cosine) whose id ``r`` is row ``r`` of the collection
store; ``collection/faiss.json`` records the store generation and the row count it
covers. It is read memory-mapped (``IO_FLAG_MMAP_IFC``), so opening it costs no
memory up front. When the store gained rows (new documents), the missing rows are
*added* to the index and it is written back atomically; when the store was rebuilt
(a document removed or rewritten) the index is rebuilt too.

Up to ``exact_max_rows`` rows (default :data:`EXACT_MAX_ROWS`) the index is exact (a flat
fp16 scan). Past it, an ``IndexIVFScalarQuantizer`` (fp16 codes, ``nlist`` ~ sqrt(R)
inverted lists, a coarse quantiser trained on a seeded sample of at most 64 x nlist rows)
is built instead and searched with ``nprobe`` lists: approximate, and sublinear per query.
``faiss.json`` records the kind; crossing the threshold rebuilds the index once.

It serves the global top-k search over all documents (:func:`search`), e.g. the dense
candidate documents of a filter at scale (:mod:`docmaster_core.retrieval.candidates`);
the per-document scores of the filter's exact stage compute every cosine of the
candidate documents from the store instead
(:meth:`~docmaster_core.retrieval.corpus.CorpusView.cosines`).
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np

from .collection import Collection, collection_lock, write_json_atomic
from .readahead import willneed
from ..errors import RetrievalError

__all__ = ["collection_index", "search", "willneed_lists", "CHUNK_ROWS", "EXACT_MAX_ROWS", "index_kind"]

#: Rows converted to float32 at a time when adding to the index.
CHUNK_ROWS = 65536
#: Rows up to which the index is exact (the ``candidates.dense_exact_max_rows`` setting's default).
EXACT_MAX_ROWS = 2_000_000


def index_kind(rows: int, exact_max_rows: int = EXACT_MAX_ROWS) -> str:
    """``"flat-fp16"`` up to ``exact_max_rows`` rows, else ``"ivf<nlist>-fp16"`` with
    nlist = sqrt(rows) rounded down to a power of two (at least 64)."""
    if rows <= exact_max_rows:
        return "flat-fp16"
    nlist = 1 << max(6, int(np.log2(max(rows, 1) ** 0.5)))
    return f"ivf{nlist}-fp16"


def _new_index(faiss, coll: Collection, kind: str):
    dim = int(coll.emb.shape[1])
    if kind == "flat-fp16":
        return faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    nlist = int(kind[3:].split("-")[0])
    quant = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(quant, dim, nlist, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    index.own_fields = True
    quant.this.disown()
    n_train = min(coll.rows, 64 * nlist)
    sample = np.sort(np.random.default_rng(0).choice(coll.rows, n_train, replace=False))
    index.train(np.ascontiguousarray(coll.emb[sample], dtype=np.float32))
    return index


#: Indexes read in this process: ``str(path) -> (key, index)``; ``key`` is the file's
#: (generation, rows, kind, size, mtime_ns, nprobe), so a rewritten index is read afresh.
#: A memory-mapped index costs ~0.16 s to open at 20,000 documents (2 searches a filter).
_OPEN: dict[str, tuple[tuple, object]] = {}
_OPEN_LOCK = threading.Lock()


def _open_key(path: Path, info: dict, nprobe: int) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (info.get("generation"), info.get("rows"), info.get("kind"), st.st_size, st.st_mtime_ns, int(nprobe))


def _read_cached(faiss, path: Path, nprobe: int, info: dict):
    """:func:`_read`, reusing this process's open index while the file is unchanged
    (FAISS CPU searches on one index may run from several threads)."""
    key = _open_key(path, info, nprobe)
    with _OPEN_LOCK:
        hit = _OPEN.get(str(path))
        if key is not None and hit is not None and hit[0] == key:
            return hit[1]
    index = _read(faiss, path, nprobe)
    if key is not None:
        with _OPEN_LOCK:
            _OPEN[str(path)] = (key, index)
    return index


def _read(faiss, path: Path, nprobe: int):
    try:
        index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC)
    except RuntimeError:  # a kind this faiss cannot memory-map
        index = faiss.read_index(str(path))
    _set_nprobe(faiss, index, nprobe)
    return index


def _set_nprobe(faiss, index, nprobe: int) -> None:
    try:
        faiss.extract_index_ivf(index).nprobe = int(nprobe)
    except RuntimeError:  # not an IVF index
        pass


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


def collection_index(coll: Collection, exact_max_rows: int = EXACT_MAX_ROWS, nprobe: int = 64):
    """The FAISS index over ``coll``'s rows, updated first when it is behind.

    Args:
        coll: A :class:`~docmaster_core.store.collection.Collection` snapshot.
        exact_max_rows: Rows up to which the index is exact (:func:`index_kind`).
        nprobe: Inverted lists searched per query by an IVF index.

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
    kind = index_kind(coll.rows, exact_max_rows)
    # an index grown past the threshold by appends stays IVF; one below it stays what it is until rebuilt
    ok_kind = info.get("kind", "flat-fp16") == kind or (info.get("kind", "flat-fp16") != "flat-fp16" and kind != "flat-fp16")
    if (info.get("generation") == coll.generation and info.get("rows") == coll.rows and path.exists() and ok_kind):
        return _read_cached(faiss, path, nprobe, info)
    with collection_lock(d):
        info = _info(d)
        old_kind = info.get("kind", "flat-fp16")
        ok_kind = old_kind == kind or (old_kind != "flat-fp16" and kind != "flat-fp16")
        same_gen = info.get("generation") == coll.generation and path.exists() and ok_kind
        if same_gen and info.get("rows") == coll.rows:
            return _read(faiss, path, nprobe)
        if same_gen and 0 <= int(info.get("rows", -1)) < coll.rows:
            index = faiss.read_index(str(path))  # in memory: an mmap-read index cannot grow
            if index.ntotal != info["rows"]:
                index = None
            else:
                kind = old_kind
        else:
            index = None
        if index is None:
            index = _new_index(faiss, coll, kind)
        _add_rows(index, coll, int(index.ntotal))
        _set_nprobe(faiss, index, nprobe)
        tmp = d / f".faiss.{os.getpid()}.tmp"
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        info = {"generation": coll.generation, "rows": coll.rows, "kind": kind}
        write_json_atomic(d / "faiss.json", info)
        key = _open_key(path, info, nprobe)
        if key is not None:  # the index just written is the one later calls would read
            with _OPEN_LOCK:
                _OPEN[str(path)] = (key, index)
        return index


def willneed_lists(index, q: np.ndarray) -> int:
    """Advise ``MADV_WILLNEED`` for the inverted lists an IVF ``index`` will scan for ``q``
    (its quantizer's ``nprobe`` nearest lists, as the search itself computes them), so
    that their codes and ids are read at once rather than a page fault at a time
    (:mod:`.readahead`; ~1.9 s -> 0.45 s for two queries on a cold page cache at 20,000
    documents). A hint only: results are unchanged; a flat index is left alone.

    Args:
        index: A FAISS index (e.g. from :func:`collection_index`).
        q: float32 (m, d) C-contiguous query vectors.

    Returns:
        Inverted lists advised (0 for a flat index).
    """
    faiss = _faiss()
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:  # not an IVF index: a flat scan reads the file in order
        return 0
    _, lists = ivf.quantizer.search(np.ascontiguousarray(q, dtype=np.float32), int(ivf.nprobe))
    inv = ivf.invlists
    code_size = int(inv.code_size)
    n_done = 0
    for lst in np.unique(lists[lists >= 0]).tolist():
        n = int(inv.list_size(lst))
        if n == 0:
            continue
        codes, ids = inv.get_codes(lst), inv.get_ids(lst)
        try:
            willneed(int(codes), n * code_size)
            willneed(int(ids), n * np.dtype(np.int64).itemsize)
        finally:
            inv.release_codes(lst, codes)
            inv.release_ids(lst, ids)
        n_done += 1
    return n_done


def search(coll: Collection, q: np.ndarray, k: int, exact_max_rows: int = EXACT_MAX_ROWS,
           nprobe: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows of the whole collection closest to each query.

    Args:
        coll: The collection snapshot.
        q: float32 (d,) or (m, d) unit query vectors.
        k: Rows wanted (>= 1; fewer come back when the collection is smaller).
        exact_max_rows, nprobe: See :func:`collection_index`.

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
    index = collection_index(coll, exact_max_rows, nprobe)
    willneed_lists(index, q2)
    D, I = index.search(q2, kk)
    return I.astype(np.int64), D.astype(np.float32)
