"""The collection vector store of a workspace: every node vector in one memory-mapped file.

The per-document files ``vectors/<doc_id>.npy`` (float32) stay the source of truth:
:meth:`~docmaster_core.store.workspace.Workspace.add_document` writes them with its crash-safety
guarantees, ``check``/``repair`` look after them. This module keeps a *derived* copy
made for reading a large collection without loading it::

    collection/vectors.bin   float16 (R, d) node vectors, C order, no header; row r of
                             document i is node r - start_i
    collection/nodes.bin     per-row metadata, :data:`META_DTYPE` (R,) records
    collection/manifest.json format, dtype, d, R and one entry per document:
                             [doc_id, n_nodes, added_at, npy mtime_ns, start, rows, skip]
    collection/faiss.index   optional FAISS index over the same rows (see :mod:`.collection_index`)
    collection/.lock         flock held while the store is written

The store follows the workspace's document order (``added_at, doc_id``). When the
documents are the manifest's plus new ones at the end (ingest), the new rows are
*appended* (incremental); any other change (a document removed, a vector file
rewritten, another dtype or metadata version) rebuilds it from the ``.npy`` files.
Writes are crash-safe: the rows are appended and synced first, then the manifest is
replaced atomically; rows past the manifest's ``R`` are leftovers of an interrupted
write and are cut off by the next write. Readers map the files read-only and never
block; a reader whose store is stale brings it up to date under the lock.

``DOCMASTER_VECTORS_DTYPE`` (``float16``, the default, or ``float32``) chooses the
stored precision; docs/results/scale.md measures the filter's quality with both.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..errors import WorkspaceError

__all__ = ["META_DTYPE", "FORMAT", "Collection", "sync_collection", "clean_collection", "vectors_dtype",
           "collection_dir", "collection_lock", "write_json_atomic"]

#: Version of the store's layout and of the metadata rules; a store of another version is rebuilt.
FORMAT = 1
#: One row of ``nodes.bin``: node type code, back-matter flag, depth (ROOT = 0), first page (1-based).
META_DTYPE = np.dtype([("type", "i1"), ("back", "?"), ("depth", "<i2"), ("page", "<i4")])

#: ``meta_fn(ws, doc_id, n_nodes) -> META_DTYPE (n_nodes,)``: the metadata rows of one document.
MetaFn = Callable[[object, str, int], np.ndarray]


def vectors_dtype() -> np.dtype:
    """The stored vector precision: ``DOCMASTER_VECTORS_DTYPE`` (float16 default, or float32).

    Raises:
        WorkspaceError: the variable names another dtype.
    """
    name = os.environ.get("DOCMASTER_VECTORS_DTYPE", "float16").strip().lower()
    if name not in ("float16", "float32"):
        raise WorkspaceError(f"DOCMASTER_VECTORS_DTYPE must be float16 or float32, not {name!r}")
    return np.dtype(name)


def collection_dir(ws) -> Path:
    """The folder of the collection store inside workspace ``ws``."""
    return Path(ws.path) / "collection"


@dataclass
class Collection:
    """A read-only snapshot of the collection store.

    Attributes:
        doc_ids: Documents with rows, in store order (D,).
        starts: int64 (D+1,) row offsets; document ``i`` has rows ``starts[i]:starts[i+1]``.
        emb: float16 or float32 (R, d) memory-mapped node vectors (unit rows).
        meta: :data:`META_DTYPE` (R,) memory-mapped node metadata.
        skipped: ``{doc_id: reason}`` documents without rows (vector file missing or
            not matching the tree).
        path: The store's folder.
        generation: Changes whenever the store is rebuilt (appends keep it); the
            FAISS index of :mod:`.collection_index` is valid for one generation.
    """

    doc_ids: list[str]
    starts: np.ndarray
    emb: np.ndarray
    meta: np.ndarray
    skipped: dict[str, str] = field(default_factory=dict)
    path: Path = Path()
    generation: str = ""

    @property
    def rows(self) -> int:
        """Rows R of the store."""
        return int(self.starts[-1])


def _key(rec, mtime_ns: int) -> list:
    return [rec.doc_id, int(rec.n_nodes), float(rec.added_at), int(mtime_ns)]


def _mtime(ws, doc_id: str) -> int:
    try:
        return (Path(ws.vectors_dir) / f"{doc_id}.npy").stat().st_mtime_ns
    except OSError:
        return -1


def _read_manifest(d: Path) -> dict | None:
    try:
        m = json.loads((d / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("format") == FORMAT else None


def _current(ws, manifest: dict | None, dtype: np.dtype) -> tuple[list, int]:
    """``(keys of the workspace's documents, how many leading entries of the manifest
    still hold)``; -1 when the manifest cannot be extended (rebuild)."""
    keys = [_key(r, _mtime(ws, r.doc_id)) for r in ws.documents()]
    if manifest is None or manifest.get("dtype") != dtype.name:
        return keys, -1
    entries = manifest["docs"]
    if len(entries) > len(keys) or any(e[:4] != k for e, k in zip(entries, keys)):
        return keys, -1
    return keys, len(entries)


@contextlib.contextmanager
def collection_lock(d: Path) -> Iterator[None]:
    fd = os.open(d / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_json_atomic(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _open(d: Path, manifest: dict) -> Collection:
    docs = [e for e in manifest["docs"] if not e[6]]
    R, dim = int(manifest["rows"]), int(manifest["dim"])
    dt = np.dtype(manifest["dtype"])
    if R:
        emb = np.memmap(d / "vectors.bin", dtype=dt, mode="r", shape=(R, dim))
        meta = np.memmap(d / "nodes.bin", dtype=META_DTYPE, mode="r", shape=(R,))
    else:
        emb, meta = np.zeros((0, dim), dt), np.zeros(0, META_DTYPE)
    starts = np.array([e[4] for e in docs] + [R], dtype=np.int64)
    return Collection([e[0] for e in docs], starts, emb, meta, {e[0]: e[6] for e in manifest["docs"] if e[6]}, d,
                      str(manifest.get("generation", "")))


def sync_collection(ws, meta_fn: MetaFn, dim_default: int = 384) -> Collection:
    """The collection store of ``ws``, brought up to date first (appending new
    documents, or rebuilding it when documents were removed or rewritten).

    Args:
        ws: The :class:`~docmaster_core.store.workspace.Workspace`.
        meta_fn: Computes one document's metadata rows (see :data:`MetaFn`).
        dim_default: Vector dimension of an empty store.

    Returns:
        A :class:`Collection` snapshot (memory-mapped; cheap to open).

    Raises:
        OSError: the store cannot be written (e.g. a read-only workspace); callers may
            fall back to reading the ``.npy`` files.
        WorkspaceError: ``DOCMASTER_VECTORS_DTYPE`` is invalid.
    """
    dtype = vectors_dtype()
    d = collection_dir(ws)
    manifest = _read_manifest(d)
    keys, keep = _current(ws, manifest, dtype)
    if keep == len(keys) and manifest is not None:
        return _open(d, manifest)
    d.mkdir(exist_ok=True)
    with collection_lock(d):
        manifest = _read_manifest(d)  # another process may have done it meanwhile
        keys, keep = _current(ws, manifest, dtype)
        if keep == len(keys) and manifest is not None:
            return _open(d, manifest)
        if keep < 0:
            manifest = {"format": FORMAT, "dtype": dtype.name, "dim": 0, "rows": 0, "docs": []}
            keep = 0
        manifest = _append(ws, d, manifest, keys[keep:], meta_fn, dtype, dim_default)
        return _open(d, manifest)


def _append(ws, d: Path, manifest: dict, new: list, meta_fn: MetaFn, dtype: np.dtype, dim_default: int) -> dict:
    """Append the rows of the documents ``new`` (keys) and publish the new manifest."""
    R, dim = int(manifest["rows"]), int(manifest["dim"])
    entries = list(manifest["docs"])
    fix = "run 'docmaster check --repair' to rebuild it"
    modes = "r+b" if R else "w+b"
    with open(d / "vectors.bin", "a+b") as _f1, open(d / "nodes.bin", "a+b") as _f2:
        pass  # create when missing
    with open(d / "vectors.bin", modes) as fv, open(d / "nodes.bin", modes) as fm:
        # cut off the leftovers of an interrupted write (rows past the manifest)
        fv.truncate(R * max(dim, 1) * dtype.itemsize if dim else 0)
        fm.truncate(R * META_DTYPE.itemsize)
        fv.seek(0, os.SEEK_END)
        fm.seek(0, os.SEEK_END)
        for doc_id, n_nodes, added_at, mt in new:
            reason = ""
            try:
                e = ws.load_embeddings(doc_id, mmap=True)
            except WorkspaceError:
                e, reason = None, f"its vector file vectors/{doc_id}.npy is missing or unreadable"
            if e is not None and (e.ndim != 2 or e.shape[0] != n_nodes):
                reason = f"its vector file has {e.shape[0] if e.ndim else 0} rows for {n_nodes} nodes"
            elif e is not None and dim and e.shape[1] != dim:
                reason = f"its vectors have dimension {e.shape[1]}, not {dim}"
            if reason:
                name = _file_name(ws, doc_id)
                entries.append([doc_id, n_nodes, added_at, mt, R, 0, f"{name}: skipped, {reason} ({fix})"])
                continue
            if not dim:
                dim = int(e.shape[1])
            fv.write(np.ascontiguousarray(e, dtype=dtype).tobytes())
            fm.write(np.ascontiguousarray(meta_fn(ws, doc_id, n_nodes), dtype=META_DTYPE).tobytes())
            entries.append([doc_id, n_nodes, added_at, mt, R, n_nodes, ""])
            R += n_nodes
        fv.flush()
        fm.flush()
        os.fsync(fv.fileno())
        os.fsync(fm.fileno())
    out = {"format": FORMAT, "dtype": dtype.name, "dim": dim or dim_default, "rows": R, "docs": entries,
           "generation": manifest.get("generation") if manifest.get("rows") else os.urandom(8).hex()}
    write_json_atomic(d / "manifest.json", out)
    return out


def _file_name(ws, doc_id: str) -> str:
    try:
        return ws.document(doc_id).file_name
    except WorkspaceError:
        return doc_id


def clean_collection(ws) -> list[str]:
    """Remove leftovers of interrupted collection writes (temporary files) and a store
    whose manifest is unreadable (it is rebuilt from the ``.npy`` files on next use).

    Takes the store's lock, so a concurrent writer finishes first. Returns what was
    removed (paths relative to the workspace).
    """
    d = collection_dir(ws)
    if not d.is_dir():
        return []
    removed = []
    with collection_lock(d):
        for p in d.glob(".*.tmp"):
            p.unlink(missing_ok=True)
            removed.append(f"collection/{p.name}")
        if (d / "manifest.json").exists() and _read_manifest(d) is None:
            for name in ("manifest.json", "vectors.bin", "nodes.bin", "faiss.index", "faiss.json"):
                if (d / name).exists():
                    (d / name).unlink()
                    removed.append(f"collection/{name}")
    return removed
