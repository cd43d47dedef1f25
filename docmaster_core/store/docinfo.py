"""Per-document derived arrays on disk, beside the collection store (issue 25).

A filter at scale scores a few hundred candidate documents per condition; what it needs
of each (section roles and tree parents per node, the stored hyper-edges as arrays) was
read from SQLite rows and the stored index's JSON, ~30-50 ms a document. These arrays
are small and derived, so they are kept as one ``.npz`` per document and kind in
``collection/docinfo/<kind>/<doc_id>.npz`` with a *tag* saying what they were computed
from (the node count; the index parameters and the index's creation time): a reader
asks for the tag it expects and recomputes on a mismatch. Files are written atomically
(temporary file, then rename); a workspace that cannot be written simply does not keep
them. Files of removed documents are deleted when the lexical index is rebuilt
(:func:`prune`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np

__all__ = ["load_arrays", "save_arrays", "prune", "forget", "docinfo_dir"]


def docinfo_dir(ws_path: str | Path) -> Path:
    """``<workspace>/collection/docinfo``."""
    return Path(ws_path) / "collection" / "docinfo"


def _file(ws_path, kind: str, doc_id: str) -> Path:
    return docinfo_dir(ws_path) / kind / f"{doc_id}.npz"


def load_arrays(ws_path, kind: str, doc_id: str, tag: str) -> dict[str, np.ndarray] | None:
    """The arrays saved for ``(kind, doc_id)`` when their tag equals ``tag``, else None.

    Returns:
        ``{name: array}`` (no pickled objects are read).
    """
    if not ws_path:
        return None
    try:
        with np.load(_file(ws_path, kind, doc_id), allow_pickle=False) as z:
            if str(z["tag"]) != tag:
                return None
            return {k: z[k] for k in z.files if k != "tag"}
    except (OSError, ValueError, KeyError):
        return None


def save_arrays(ws_path, kind: str, doc_id: str, tag: str, **arrays: np.ndarray) -> bool:
    """Save ``arrays`` for ``(kind, doc_id)`` under ``tag``; False when the folder cannot
    be written (or the workspace has no collection store)."""
    if not ws_path or not (Path(ws_path) / "collection").is_dir():
        return False
    f = _file(ws_path, kind, doc_id)
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
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
        try:
            _file(ws_path, kind, doc_id).unlink()
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
        for f in kind.glob("*.npz"):
            if f.stem not in keep:
                try:
                    f.unlink()
                    n += 1
                except OSError:
                    pass
    return n
