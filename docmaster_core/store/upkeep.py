"""Workspace upkeep (SPEC F9): stored semantic indexes and runs, and the integrity check
and repair. Mixins of :class:`docmaster_core.store.workspace.Workspace`, which supplies the SQLite
connection (``_con``, ``transaction``), ``documents``, ``load_embeddings``,
``vectors_dir`` and ``params_key``.
"""
from __future__ import annotations

import io
import json
import time
from typing import Any

import numpy as np
import orjson

from ..errors import WorkspaceError

__all__ = ["IndexRunStore", "IntegrityChecks", "split_arrays", "pack_arrays", "unpack_arrays"]

#: Keys of a stored index whose values are float matrices (written as JSON lists before issue 37).
_VECTOR_KEYS = ("centers", "hyperedge_embeddings")


def split_arrays(data: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """``data`` with every ``np.ndarray`` of a float dtype replaced by ``{"__array__": name}``,
    and ``{name: array}``. Names are ``a0``, ``a1``, ... in depth-first order."""
    arrays: dict[str, np.ndarray] = {}

    def walk(x):
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            name = f"a{len(arrays)}"
            arrays[name] = x
            return {"__array__": name}
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [walk(v) for v in x]
        if isinstance(x, np.ndarray):
            return x.tolist()
        return x

    return walk(data), arrays


def pack_arrays(arrays: dict[str, np.ndarray]) -> bytes | None:
    """The arrays as the bytes of an uncompressed ``.npz`` (None when there are none)."""
    if not arrays:
        return None
    buf = io.BytesIO()
    np.savez(buf, **{k: np.ascontiguousarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def unpack_arrays(blob: bytes | None) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_arrays` (no pickled objects are read)."""
    if not blob:
        return {}
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _decode_index(text: str, blob: bytes | None) -> dict[str, Any]:
    # orjson: the same values as json.loads (correctly rounded floats), ~5x faster
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN / Infinity, which json.dumps writes
        data = json.loads(text)
    if not blob:
        return data
    arrays = unpack_arrays(blob)

    def walk(x):
        if isinstance(x, dict):
            if len(x) == 1 and "__array__" in x:
                return arrays[x["__array__"]]
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(data)


def _arrays_from_lists(data: Any) -> Any | None:
    """``data`` (a decoded pre-issue-37 index, or a collection index holding such
    documents) with the float matrices under :data:`_VECTOR_KEYS` as float32 arrays;
    None when there is none to convert."""
    found = False

    def walk(x):
        nonlocal found
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if k in _VECTOR_KEYS and isinstance(v, list) and v:
                    out[k] = np.asarray(v, dtype=np.float32)
                    found = True
                else:
                    out[k] = walk(v)
            return out
        return x

    out = walk(data)
    return out if found else None


def _run_dict(r) -> dict[str, Any]:
    """A ``runs`` row as :meth:`IndexRunStore.runs` gives it: ``{run_id, kind, created_at, params, result}``."""
    return {"run_id": r["run_id"], "kind": r["kind"], "created_at": r["created_at"],
            "params": json.loads(r["params_json"]), "result": json.loads(r["result_json"])}


class IndexRunStore:
    """Per-document semantic indexes (keyed by their parameters) and saved runs
    (filter, ask, eval), as JSON rows; times are Unix seconds."""

    def save_index(self, doc_id: str, params: dict[str, Any], data: dict[str, Any]) -> None:
        """Persist a document's semantic index built with ``params``.

        Float arrays in ``data`` (``np.ndarray`` values at any depth, e.g. the (K', d)
        float32 centres and (h, d) float32 hyper-edge embeddings of a
        :class:`~docmaster_core.index.builder.DocumentIndex`) are stored in binary, in
        the row's ``arrays`` column (an uncompressed ``.npz``, no pickle), with their
        dtype kept (issue 37: as JSON text they were ~75 % of the database); the rest is
        JSON. :meth:`load_index` gives them back as arrays.
        """
        body, arrays = split_arrays(data)
        with self.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO indexes(doc_id, params_key, params_json, data_json, created_at, arrays) "
                "VALUES(?,?,?,?,?,?)",
                (doc_id, self.params_key(params), json.dumps(dict(params), sort_keys=True), json.dumps(body),
                 time.time(), pack_arrays(arrays) or b""),  # b"": none (NULL: written before issue 37)
            )

    def load_index(self, doc_id: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """A stored index for ``params`` (or the newest one when ``params`` is None), else None.

        Arrays stored in binary come back as ``np.ndarray`` (their stored dtype); indexes
        written before issue 37 hold them as JSON lists, which come back as lists.
        """
        con = self._con()
        if params is None:
            r = con.execute(
                "SELECT data_json, arrays FROM indexes WHERE doc_id=? ORDER BY created_at DESC LIMIT 1", (doc_id,)
            ).fetchone()
        else:
            r = con.execute(
                "SELECT data_json, arrays FROM indexes WHERE doc_id=? AND params_key=?", (doc_id, self.params_key(params))
            ).fetchone()
        if r is None:
            return None
        return _decode_index(r[0], r[1])

    def compact_indexes(self) -> int:
        """Rewrite stored indexes whose float arrays are JSON text (written before issue
        37) with the arrays in binary; returns how many rows were rewritten. Values are
        unchanged (float32 arrays round-trip exactly through JSON). Run by
        ``docmaster check --repair``; the file shrinks at the next ``VACUUM``."""
        rows = self._con().execute(
            "SELECT doc_id, params_key, data_json FROM indexes WHERE arrays IS NULL").fetchall()
        n = 0
        for doc_id, key, text in rows:
            data = _decode_index(text, None)
            lean = _arrays_from_lists(data)
            with self.transaction() as con:
                if lean is None:  # nothing to convert: marked as checked
                    con.execute("UPDATE indexes SET arrays=? WHERE doc_id=? AND params_key=?", (b"", doc_id, key))
                    continue
                body, arrays = split_arrays(lean)
                con.execute("UPDATE indexes SET data_json=?, arrays=? WHERE doc_id=? AND params_key=?",
                            (json.dumps(body), pack_arrays(arrays) or b"", doc_id, key))
            n += 1
        return n

    def index_versions(self) -> list[tuple[str, str, float]]:
        """Every stored semantic index as ``(doc_id, params_key, created_at)``, sorted.

        ``created_at`` is a Unix time in seconds. Used as a cache signature: the list
        changes whenever an index is built, rebuilt or removed. Remembered until the
        database changes (:meth:`~docmaster_core.store.workspace.Workspace.memo`).
        """
        def read():
            rows = self._con().execute(
                "SELECT doc_id, params_key, created_at FROM indexes ORDER BY doc_id, params_key"
            ).fetchall()
            return [(str(d), str(k), float(t)) for d, k, t in rows]

        return self.memo("index_versions", read)

    def save_run(self, kind: str, params: dict[str, Any], result: dict[str, Any]) -> int:
        """Store a run (filter, ask, eval) and return its run id."""
        with self.transaction() as con:
            cur = con.execute(
                "INSERT INTO runs(kind, created_at, params_json, result_json) VALUES(?,?,?,?)",
                (kind, time.time(), json.dumps(params, sort_keys=True, default=str), json.dumps(result, default=str)),
            )
            return int(cur.lastrowid)

    def runs(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Stored runs, newest first: ``[{run_id, kind, created_at, params, result}]``."""
        q = "SELECT * FROM runs" + (" WHERE kind=?" if kind else "") + " ORDER BY run_id DESC"
        rows = self._con().execute(q, (kind,) if kind else ()).fetchall()
        return [_run_dict(r) for r in rows]

    def recent_runs(self, kind: str, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` stored runs of ``kind``, newest first, in the shape of
        :meth:`runs` (only those rows are read and parsed).

        Raises:
            ValueError: ``limit`` < 1.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        rows = self._con().execute("SELECT * FROM runs WHERE kind=? ORDER BY run_id DESC LIMIT ?",
                                   (kind, int(limit))).fetchall()
        return [_run_dict(r) for r in rows]

    def run(self, run_id: int) -> dict[str, Any] | None:
        """One stored run by id, in the shape of :meth:`runs` (only that row is read and
        parsed: a workspace's runs hold every document's evidence, ~30 ms each to parse);
        None when there is no such run."""
        r = self._con().execute("SELECT * FROM runs WHERE run_id=?", (int(run_id),)).fetchone()
        return None if r is None else _run_dict(r)

    def last_run_params(self, kind: str) -> tuple[int, dict[str, Any]] | None:
        """``(run_id, params)`` of the newest run of ``kind`` (its result is not read), or None."""
        r = self._con().execute("SELECT run_id, params_json FROM runs WHERE kind=? ORDER BY run_id DESC LIMIT 1",
                                (kind,)).fetchone()
        return (int(r["run_id"]), json.loads(r["params_json"])) if r else None


class IntegrityChecks:
    """``check`` (what is damaged or left over) and ``repair`` (remove leftovers of
    interrupted writes)."""

    def check(self, leftovers: bool = True) -> list[str]:
        """Integrity check; returns a list of problems (empty when the workspace is sound).

        Checks SQLite's own integrity, that every document has its nodes (count matches
        ``n_nodes``, ids contiguous, ROOT first) and a vector file of matching shape, and
        reports orphan vector files.

        Args:
            leftovers: Also report leftovers of interrupted writes (temporary and orphan
                vector files, see :meth:`leftovers`). They are garbage, not damage: no
                stored document depends on them, and :meth:`repair` removes them.
        """
        problems: list[str] = []
        con = self._con()
        res = con.execute("PRAGMA integrity_check").fetchone()[0]
        if res != "ok":
            problems.append(f"sqlite integrity_check: {res}")
        docs = self.documents()
        known = set()
        for d in docs:
            known.add(d.doc_id)
            cnt, mn, mx = con.execute(
                "SELECT COUNT(*), MIN(node_id), MAX(node_id) FROM nodes WHERE doc_id=?", (d.doc_id,)
            ).fetchone()
            if cnt != d.n_nodes or mn != 0 or mx != d.n_nodes - 1:
                problems.append(f"{d.file_name}: {cnt} nodes stored, {d.n_nodes} expected")
            root = con.execute("SELECT type FROM nodes WHERE doc_id=? AND node_id=0", (d.doc_id,)).fetchone()
            if root is None or root[0] != "ROOT":
                problems.append(f"{d.file_name}: node 0 is not ROOT")
            try:
                arr = self.load_embeddings(d.doc_id)
                if arr.shape[0] != d.n_nodes:
                    problems.append(f"{d.file_name}: vector file has {arr.shape[0]} rows, {d.n_nodes} nodes")
            except WorkspaceError as e:
                problems.append(f"{d.file_name}: {e}")
        if leftovers:
            problems.extend(self._leftovers(known))
        return problems

    def _leftovers(self, known: set[str]) -> list[str]:
        out = []
        for p in sorted(self.vectors_dir.glob("*.npy")):
            if p.name.startswith("."):
                out.append(f"leftover temporary vector file {p.name}")
            elif p.stem not in known:
                out.append(f"orphan vector file {p.name}")
        return out

    def leftovers(self) -> list[str]:
        """Leftovers of interrupted writes: temporary vector files and vector files of
        documents that were never committed (a crash between the vector write and the
        database commit). Harmless; :meth:`repair` removes them."""
        return self._leftovers({d.doc_id for d in self.documents()})

    def repair(self) -> list[str]:
        """Remove leftovers of interrupted writes (temp and orphan vector files, temporary
        files and an unreadable manifest of the collection store); returns what was removed."""
        from .collection import clean_collection

        known = {d.doc_id for d in self.documents()}
        removed = clean_collection(self)
        for p in self.vectors_dir.glob("*.npy"):
            if p.name.startswith(".") or p.stem not in known:
                p.unlink(missing_ok=True)
                removed.append(p.name)
        return removed
