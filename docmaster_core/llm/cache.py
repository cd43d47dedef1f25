"""Persistent LLM response cache and usage log (SQLite, WAL, thread-safe).

The cache lives in the workspace as ``llm_cache.sqlite`` in the given directory. A
response is keyed by the SHA-256 of the canonical JSON of (task, model, prompt
version, task input), so re-running any task with the same inputs costs zero calls
(SPEC F8, F9). Values are JSON (never pickle). The API key is never part of a key,
a value or a usage row.

Offline results are cached too, under the model name ``offline/<embedder name>`` and
an offline algorithm version, with the offline thresholds inside the task input: the
offline backend is deterministic, but the cache makes re-runs skip the embedder and
keeps results reproducible if the embedder package changes.

The usage table records one row per HTTP request of the OpenAI-compatible backend
(``cached = 0``) and one row per task answered from the cache (``cached = 1``,
zero calls and tokens). :func:`usage_report` aggregates it (``docmaster usage``).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from ..errors import WorkspaceError

__all__ = ["CACHE_FILENAME", "LLMCache", "make_key", "usage_report"]

CACHE_FILENAME = "llm_cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task TEXT NOT NULL,
    doc_id TEXT,
    model TEXT NOT NULL,
    calls INTEGER NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL,
    cached INTEGER NOT NULL,
    ts REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_task ON usage(task);
CREATE INDEX IF NOT EXISTS usage_doc ON usage(doc_id);
"""


def make_key(task: str, model: str, prompt_version: str, payload: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``(task, model, prompt_version, payload)``.

    Args:
        payload: JSON-serialisable task input (texts, limits, thresholds).
    """
    blob = json.dumps(
        {"task": task, "model": model, "version": prompt_version, "input": payload},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """The response cache and usage log of one workspace.

    One SQLite connection shared by all threads behind a lock; WAL journal so other
    processes (CLI and app) can read while one writes.

    Args:
        cache_dir: Directory that holds ``llm_cache.sqlite`` (created if missing).

    Raises:
        WorkspaceError: when the directory or the database cannot be opened.
    """

    def __init__(self, cache_dir: Path | str):
        self.path = Path(cache_dir) / CACHE_FILENAME
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30.0)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.commit()
        except (OSError, sqlite3.Error) as e:
            raise WorkspaceError(f"cannot open LLM cache {self.path}: {e}") from e

    # ------------------------------------------------------------------ responses
    def get(self, key: str) -> Any | None:
        """The cached JSON value for ``key``, or ``None``."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """Cached values for the keys that are present (key -> value)."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                q = "SELECT key, value FROM responses WHERE key IN (%s)" % ",".join("?" * len(chunk))
                for k, v in self._conn.execute(q, chunk):
                    out[k] = json.loads(v)
        return out

    def put(self, key: str, task: str, model: str, prompt_version: str, value: Any) -> None:
        """Store a JSON-serialisable value (replacing any previous one)."""
        self.put_many([(key, task, model, prompt_version, value)])

    def put_many(self, rows: Iterable[tuple[str, str, str, str, Any]]) -> None:
        """Store ``(key, task, model, prompt_version, value)`` rows in one transaction."""
        now = time.time()
        data = [(k, t, m, v, json.dumps(val, ensure_ascii=False), now) for k, t, m, v, val in rows]
        if not data:
            return
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO responses(key, task, model, prompt_version, value, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                data,
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    # ------------------------------------------------------------------ usage
    def log_usage(
        self,
        task: str,
        doc_id: str | None,
        model: str,
        *,
        calls: int,
        prompt_tokens: int,
        completion_tokens: int,
        cost: float | None,
        cached: bool,
    ) -> None:
        """Append one usage row (timestamp in seconds since the epoch)."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO usage(task, doc_id, model, calls, prompt_tokens, completion_tokens, cost, cached, ts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (task, doc_id, model, int(calls), int(prompt_tokens), int(completion_tokens), cost, int(cached), time.time()),
            )
            self._conn.commit()

    def usage_report(self) -> dict[str, Any]:
        """Usage aggregated over the whole log; see :func:`usage_report`."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT task, doc_id, model, calls, prompt_tokens, completion_tokens, cost, cached FROM usage"
            ).fetchall()
        return _aggregate(rows)

    def close(self) -> None:
        """Close the connection (further use raises ``sqlite3.ProgrammingError``)."""
        with self._lock:
            self._conn.close()


def _empty() -> dict[str, Any]:
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
        "cost": 0.0,
        "cost_unknown_calls": 0,
        "cached": 0,
    }


def _aggregate(rows: list[tuple]) -> dict[str, Any]:
    total = _empty()
    by_task: dict[str, dict[str, Any]] = {}
    by_doc: dict[str, dict[str, Any]] = {}
    by_model: dict[str, dict[str, Any]] = {}
    for task, doc_id, model, calls, pt, ct, cost, cached in rows:
        for agg in (
            total,
            by_task.setdefault(task, _empty()),
            by_doc.setdefault(doc_id or "-", _empty()),
            by_model.setdefault(model, _empty()),
        ):
            agg["calls"] += calls
            agg["prompt_tokens"] += pt
            agg["completion_tokens"] += ct
            agg["total_tokens"] += pt + ct
            if cost is None:
                agg["cost_unknown_calls"] += calls
            else:
                agg["cost"] = round(agg["cost"] + cost, 8)
            agg["cached"] += cached
    return {
        "total": total,
        "by_task": dict(sorted(by_task.items())),
        "by_document": dict(sorted(by_doc.items())),
        "by_model": dict(sorted(by_model.items())),
    }


def usage_report(cache_dir: Path | str) -> dict[str, Any]:
    """Aggregate the usage log of a workspace (used by ``docmaster usage``).

    Args:
        cache_dir: Directory holding ``llm_cache.sqlite``; a missing file gives zeros
            (and is not created).

    Returns:
        ``{"total": {...}, "by_task": {task: {...}}, "by_document": {doc_id: {...}},
        "by_model": {model: {...}}}``, each inner dict with ``calls``, ``prompt_tokens``,
        ``completion_tokens``, ``total_tokens``, ``cost`` (US dollars, calls of known
        price only), ``cost_unknown_calls`` and ``cached`` (tasks answered from cache).

    Raises:
        WorkspaceError: when the file exists but cannot be read.
    """
    path = Path(cache_dir) / CACHE_FILENAME
    if not path.exists():
        return _aggregate([])
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            rows = conn.execute(
                "SELECT task, doc_id, model, calls, prompt_tokens, completion_tokens, cost, cached FROM usage"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise WorkspaceError(f"cannot read LLM usage log {path}: {e}") from e
    return _aggregate(rows)
