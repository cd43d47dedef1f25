"""Per-document derived arrays on disk, beside the collection store (issue 25).

A filter at scale scores a few hundred candidate documents per condition; what it needs
of each (section roles and tree parents per node, the stored hyper-edges as arrays) was
read from SQLite rows and the stored index's JSON, ~30-50 ms a document. These arrays
are small and derived, so they are kept as one file per document and kind in
``collection/docinfo/<kind>/<doc_id>.safetensors`` with a *tag* saying what they were
computed from (the node count; the index parameters and the index's creation time): a
reader asks for the tag it expects and recomputes on a mismatch. Files are written
atomically (temporary file, then rename); a workspace that cannot be written simply does
not keep them. Files of removed documents are deleted when the lexical index is rebuilt
(:func:`prune`).

The format is safetensors (the tag in its metadata): a first filter of a condition at
20,000 documents reads ~2,000 of these files, and NumPy's ``.npz`` (a zip archive, each
array's header parsed as Python literals) took 0.11-0.55 ms a file against 0.01-0.05 ms
(issue 37). Files written before as ``.npz`` are still read, and rewritten in the new
format when their tag holds; arrays of a dtype safetensors lacks are kept as ``.npz``.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterable

import numpy as np

from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

__all__ = ["load_arrays", "save_arrays", "has_arrays", "prune", "forget", "docinfo_dir", "warm", "FILTER_KINDS"]


def docinfo_dir(ws_path: str | Path) -> Path:
    """``<workspace>/collection/docinfo``."""
    return Path(ws_path) / "collection" / "docinfo"


def _file(ws_path, kind: str, doc_id: str, ext: str = ".safetensors") -> Path:
    return docinfo_dir(ws_path) / kind / f"{doc_id}{ext}"


def has_arrays(ws_path, kind: str, doc_id: str) -> bool:
    """True when a file of ``(kind, doc_id)`` exists (its tag is not checked)."""
    return bool(ws_path) and (_file(ws_path, kind, doc_id).exists() or _file(ws_path, kind, doc_id, ".npz").exists())


def load_arrays(ws_path, kind: str, doc_id: str, tag: str) -> dict[str, np.ndarray] | None:
    """The arrays saved for ``(kind, doc_id)`` when their tag equals ``tag``, else None.

    Returns:
        ``{name: array}`` (no pickled objects are read).
    """
    if not ws_path:
        return None
    try:
        with safe_open(str(_file(ws_path, kind, doc_id)), "np") as f:
            if (f.metadata() or {}).get("tag") != tag:
                return None
            return {k: f.get_tensor(k) for k in f.keys()}
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, SafetensorError):  # damaged: recomputed by the caller
        return None
    old = _file(ws_path, kind, doc_id, ".npz")
    try:
        with np.load(old, allow_pickle=False) as z:
            if str(z["tag"]) != tag:
                return None
            got = {k: z[k] for k in z.files if k != "tag"}
    except (OSError, ValueError, KeyError):
        return None
    if _safetensors_dtypes(got):
        save_arrays(ws_path, kind, doc_id, tag, **got)  # rewritten as safetensors (the .npz goes)
    return got


#: The kinds a filter's exact stage reads for each candidate document (section roles,
#: tree parents, stored hyper-edges, passage lengths).
FILTER_KINDS = ("roles", "parents", "hyperedges", "chars")


def warm(ws_path, kinds: Iterable[str], doc_ids: Iterable[str]) -> threading.Thread | None:
    """Ask the kernel to read the files of ``(kind, doc_id)`` ahead, in a background thread
    (``posix_fadvise(POSIX_FADV_WILLNEED)`` on each existing file), so that the
    :func:`load_arrays` calls that follow find them in the page cache instead of waiting
    for each small file in turn (issue 37: ~2,200 files for 557 candidates, 0.5-1 s on a
    cold cache at 20,000 documents). A hint: nothing is read into the process.

    Args:
        ws_path: The workspace directory (falsy: nothing to do).
        kinds: Kinds (e.g. :data:`FILTER_KINDS`).
        doc_ids: Documents.

    Returns:
        The started daemon thread, or None (nothing to do, or no ``posix_fadvise``).
    """
    if not ws_path or not hasattr(os, "posix_fadvise"):
        return None
    paths = [str(_file(ws_path, k, d)) for d in doc_ids for k in kinds]
    if not paths:
        return None

    def advise() -> None:
        for p in paths:
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:  # missing (computed on first use) or an old .npz
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            except OSError:
                pass
            finally:
                os.close(fd)

    t = threading.Thread(target=advise, name="docmaster-warm-docinfo", daemon=True)
    t.start()
    return t


def _safetensors_dtypes(arrays: dict[str, np.ndarray]) -> bool:
    """True when every array is of a dtype safetensors stores (bool, integers, floats)."""
    return all(np.asarray(v).dtype.kind in "biuf" and np.asarray(v).dtype.itemsize <= 8 for v in arrays.values())


def save_arrays(ws_path, kind: str, doc_id: str, tag: str, **arrays: np.ndarray) -> bool:
    """Save ``arrays`` for ``(kind, doc_id)`` under ``tag``; False when the folder cannot
    be written (or the workspace has no collection store)."""
    if not ws_path or not (Path(ws_path) / "collection").is_dir():
        return False
    f = _file(ws_path, kind, doc_id)
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        if _safetensors_dtypes(arrays):
            tmp = f.with_name(f".{doc_id}.{os.getpid()}.tmp.safetensors")
            save_file({k: np.asarray(v, order="C") for k, v in arrays.items()}, str(tmp), metadata={"tag": tag})
            os.replace(tmp, f)
            _file(ws_path, kind, doc_id, ".npz").unlink(missing_ok=True)
            return True
        f.unlink(missing_ok=True)  # e.g. text arrays: .npz
        f = _file(ws_path, kind, doc_id, ".npz")
        tmp = f.with_name(f".{doc_id}.{os.getpid()}.tmp.npz")
        np.savez(tmp, tag=np.array(tag), **arrays)
        os.replace(tmp, f)
        return True
    except OSError:
        return False


def forget(ws_path, doc_id: str, kinds: Iterable[str]) -> None:
    """Delete the files of ``doc_id`` of the given kinds (derived from something that
    changed in place, e.g. the evidence lengths ``chars`` after new summaries)."""
    for kind in kinds:
        for ext in (".safetensors", ".npz"):
            try:
                _file(ws_path, kind, doc_id, ext).unlink()
            except OSError:
                pass


def prune(ws_path, keep: Iterable[str]) -> int:
    """Delete the files of documents not in ``keep``; returns how many were deleted."""
    keep = set(keep)
    n = 0
    d = docinfo_dir(ws_path)
    if not d.is_dir():
        return 0
    for kind in d.iterdir():
        if not kind.is_dir():
            continue
        for f in [*kind.glob("*.safetensors"), *kind.glob("*.npz")]:
            if f.stem not in keep:
                try:
                    f.unlink()
                    n += 1
                except OSError:
                    pass
    return n
