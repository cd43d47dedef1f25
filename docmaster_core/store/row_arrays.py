"""Per-row arrays aligned with the collection store (issue 37).

A filter at scale reads, for each candidate document, its section roles, tree parents and
evidence lengths. Kept per document (:mod:`.docinfo`, one ``.npz`` each) that is one small
file read per document and kind, ~1 ms each: at 20,000 documents the ~500 candidates of a
condition new to the process spent ~1.5 s in these reads alone. Here each kind is one
``.npy`` file over all store rows, read memory-mapped, so a candidate view takes its rows
with one fancy index:

* ``roles``: int8 (R,) role code of each node (:data:`~docmaster_core.tree.roles.ROLES`;
  back matter ``back``);
* ``parents``: int32 (R,) parent node id within its document (-1 for ROOT);
* ``chars``: int32 (R,) characters of the node's evidence text
  (:func:`~docmaster_core.retrieval.corpus.evidence_chars`).

``collection/rows/info.json`` names the store documents they were written for
(:meth:`~.collection.Collection.docs_key`); after documents are added or removed they are
ignored until :meth:`DocMaster.collection_indexes` writes them again (readers fall back
to the per-document files). New summaries drop ``chars`` (:func:`drop`). Files are
written to a temporary name and moved into place.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import numpy as np

from .collection import Collection, write_json_atomic

__all__ = ["KINDS", "STORE_ROWS", "row_array", "view_row_array", "write_row_arrays", "drop", "rows_dir"]

#: The kinds kept, with their dtypes.
KINDS = {"roles": np.int8, "parents": np.int32, "chars": np.int32}


def rows_dir(ws_path) -> Path:
    """``<workspace>/collection/rows``."""
    return Path(ws_path) / "collection" / "rows"


def row_array(coll: Collection, kind: str) -> np.ndarray | None:
    """The memory-mapped array of ``kind`` over every store row, or None when it is
    missing or was written for other store documents.

    Returns:
        ``KINDS[kind]`` (R,) array (read-only memory map).
    """
    d = coll.path / "rows"
    try:
        info = json.loads((d / "info.json").read_text())
    except (OSError, ValueError):
        return None
    if info.get("docs") != coll.docs_key() or kind not in info.get("kinds", []):
        return None
    try:
        arr = np.load(d / f"{kind}.npy", mmap_mode="r")
    except (OSError, ValueError):
        return None
    return arr if arr.shape == (coll.rows,) and arr.dtype == KINDS[kind] else None


def write_row_arrays(coll: Collection, per_doc: Callable[[str, int], np.ndarray]) -> list[str]:
    """Write every kind of :data:`KINDS` for the store's documents.

    Args:
        coll: The collection store.
        per_doc: ``(kind, document index in coll) -> array (n_rows of that document,)``.

    Returns:
        The kinds written (none when the folder cannot be written).
    """
    d = coll.path / "rows"
    try:
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomic(d / "info.json", {"docs": "", "kinds": []})  # invalid while writing
        for kind, dt in KINDS.items():
            out = np.empty(coll.rows, dtype=dt)
            for i in range(len(coll.doc_ids)):
                a, b = int(coll.starts[i]), int(coll.starts[i + 1])
                out[a:b] = np.asarray(per_doc(kind, i), dtype=dt)
            tmp = d / f".{kind}.{os.getpid()}.tmp.npy"
            np.save(tmp, out)
            os.replace(tmp, d / f"{kind}.npy")
        write_json_atomic(d / "info.json", {"docs": coll.docs_key(), "kinds": list(KINDS)})
    except OSError:
        return []
    return list(KINDS)


def drop(ws_path, kind: str) -> None:
    """Forget ``kind`` (its per-document source changed in place, e.g. new summaries)."""
    d = rows_dir(ws_path)
    try:
        info = json.loads((d / "info.json").read_text())
    except (OSError, ValueError):
        return
    if kind in info.get("kinds", []):
        info["kinds"] = [k for k in info["kinds"] if k != kind]
        write_json_atomic(d / "info.json", info)


#: :meth:`CorpusView.aux` key of a candidate view's place in the store:
#: ``(Collection, int64 (N,) store row of each view row)`` (set by
#: :func:`~docmaster_core.retrieval.candidates.candidate_view`).
STORE_ROWS = "store_rows"


def view_row_array(view, kind: str) -> np.ndarray | None:
    """``kind`` for every row of a :class:`~docmaster_core.retrieval.corpus.CorpusView`
    (the workspace's view, or a candidate view carrying :data:`STORE_ROWS`), cached on
    the view; None when the store has no valid array of that kind (callers then read the
    per-document files).

    Returns:
        ``KINDS[kind]`` (N,) array aligned with the view's rows.
    """
    def build():
        coll = getattr(view, "collection", None)
        if coll is not None:
            rows = None
            if coll.rows != view.emb.shape[0]:
                return None
        else:
            got = view.aux(STORE_ROWS, lambda: None)
            if got is None:
                return None
            coll, rows = got
        arr = row_array(coll, kind)
        if arr is None:
            return None
        return arr if rows is None else np.asarray(arr[rows])

    return view.aux(("row_array", kind), build)
