"""Workspace upkeep (SPEC F9): stored semantic indexes and runs, and the integrity check
and repair. Mixins of :class:`docmaster_core.store.workspace.Workspace`, which supplies the SQLite
connection (``_con``, ``transaction``), ``documents``, ``load_embeddings``,
``vectors_dir`` and ``params_key``.
"""
from __future__ import annotations

import json
import time

import orjson
from typing import Any

from ..errors import WorkspaceError

__all__ = ["IndexRunStore", "IntegrityChecks"]


class IndexRunStore:
    """Per-document semantic indexes (keyed by their parameters) and saved runs
    (filter, ask, eval), as JSON rows; times are Unix seconds."""

    def save_index(self, doc_id: str, params: dict[str, Any], data: dict[str, Any]) -> None:
        """Persist a document's semantic index built with ``params`` (JSON, no pickle)."""
        with self.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO indexes(doc_id, params_key, params_json, data_json, created_at) VALUES(?,?,?,?,?)",
                (doc_id, self.params_key(params), json.dumps(dict(params), sort_keys=True), json.dumps(data), time.time()),
            )

    def load_index(self, doc_id: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """A stored index for ``params`` (or the newest one when ``params`` is None), else None."""
        con = self._con()
        if params is None:
            r = con.execute(
                "SELECT data_json FROM indexes WHERE doc_id=? ORDER BY created_at DESC LIMIT 1", (doc_id,)
            ).fetchone()
        else:
            r = con.execute(
                "SELECT data_json FROM indexes WHERE doc_id=? AND params_key=?", (doc_id, self.params_key(params))
            ).fetchone()
        # orjson: the same values as json.loads (correctly rounded floats), ~5x faster on
        # the float arrays a stored index holds (issue 25: the filter reads one per candidate)
        if r is None:
            return None
        try:
            return orjson.loads(r[0])
        except orjson.JSONDecodeError:  # NaN / Infinity, which json.dumps writes
            return json.loads(r[0])

    def index_versions(self) -> list[tuple[str, str, float]]:
        """Every stored semantic index as ``(doc_id, params_key, created_at)``, sorted.

        ``created_at`` is a Unix time in seconds. Used as a cache signature: the list
        changes whenever an index is built, rebuilt or removed.
        """
        rows = self._con().execute(
            "SELECT doc_id, params_key, created_at FROM indexes ORDER BY doc_id, params_key"
        ).fetchall()
        return [(str(d), str(k), float(t)) for d, k, t in rows]

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
        return [
            {
                "run_id": r["run_id"],
                "kind": r["kind"],
                "created_at": r["created_at"],
                "params": json.loads(r["params_json"]),
                "result": json.loads(r["result_json"]),
            }
            for r in rows
        ]

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
