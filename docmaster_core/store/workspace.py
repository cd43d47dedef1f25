"""The workspace on disk (SPEC F9): an SQLite database plus vector files.

Layout of a workspace directory::

    workspace.sqlite      documents, nodes, edges, failures, indexes, runs, judgements, meta
    vectors/<doc_id>.npy  float32 (|V|, 384) node embeddings, row i = node id i
    collection/           derived: all node vectors in one memory-mapped float16 file,
                          per-row metadata and a FAISS index (docmaster_core.store.collection)
    llm_cache.sqlite      LLM response cache and usage log (docmaster_core.llm.cache)
    .write.lock           advisory lock held by the one writer (ingest, index)

Consistency: a document exists in the workspace exactly when its ``documents`` row
is committed; that row, its nodes and its tree edges are written in one SQLite
transaction, after its vector file has been written atomically (temp file +
``os.replace``). A crash at any point leaves either the whole document or nothing
(an orphan vector file at worst, which :meth:`Workspace.check` reports and
:meth:`Workspace.repair` removes). Readers never block: the database runs in WAL mode.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import orjson

from ..errors import WorkspaceError, WorkspaceLockedError
from ..model import DocumentTree, Node, NodeType
from .judgements import JudgementStore
from .upkeep import IndexRunStore, IntegrityChecks

__all__ = ["Workspace", "DocumentRecord", "SCHEMA_VERSION", "file_sha256", "params_key", "storable_text"]


class _PathLock:
    """The write lock of one workspace folder inside this process: writers of the process
    take turns, re-entrant for a thread (through any :class:`Workspace` object of the folder);
    while one holds it the lock file is ``flock``-ed (``fd``) against other processes. The
    holder's ``what`` and ``since`` (Unix seconds) name it to a writer that waits too long."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.owner: int | None = None
        self.depth = 0
        self.fd: int | None = None
        self.what = ""
        self.since = 0.0

    def enter(self, take_file: Callable[[], int], what: str = "writing", timeout: float | None = None,
              path: str = "") -> int:
        """Wait for this process's other writers (at most ``timeout`` seconds; None: no limit),
        then hold the lock (``take_file`` flocks the lock file for the first holder; its error
        leaves nothing held).

        Raises:
            WorkspaceLockedError: another writer of this process held the lock for ``timeout``
                seconds; the message says what it is doing and since when.
        """
        me = threading.get_ident()
        end = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            while self.owner is not None and self.owner != me:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    raise WorkspaceLockedError(
                        f"workspace {path} is being written by this app ({self.what} since "
                        f"{time.strftime('%H:%M:%S', time.localtime(self.since))}) for more than {timeout:.0f} s; "
                        "try again when it ends")
                self.cond.wait(left)
            if self.depth == 0:
                self.fd = take_file()
                self.what, self.since = what, time.time()
            self.owner = me
            self.depth += 1
            return self.fd

    def leave(self) -> None:
        """Give back one level of this thread's hold (no-op for a thread that holds nothing)."""
        with self.cond:
            if self.depth == 0 or self.owner != threading.get_ident():
                return
            self.depth -= 1
            if self.depth == 0:
                if self.fd is not None:
                    with contextlib.suppress(OSError):
                        fcntl.flock(self.fd, fcntl.LOCK_UN)
                        os.close(self.fd)
                self.fd = None
                self.owner = None
                self.cond.notify_all()


#: Seconds a writer waits for another writer of the same process (an index save, an ingest) before it
#: is told what holds the workspace, instead of waiting without end.
IN_PROCESS_WAIT_S = 300.0

_PATH_LOCKS: dict[str, _PathLock] = {}
_PATH_LOCKS_GUARD = threading.Lock()


def _path_lock(path: Path) -> _PathLock:
    with _PATH_LOCKS_GUARD:
        return _PATH_LOCKS.setdefault(str(path), _PathLock())

#: 2 (issue 37): ``indexes.arrays``, the stored indexes' float arrays in binary.
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    file_name TEXT NOT NULL,
    source_path TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    n_pages INTEGER NOT NULL,
    parser TEXT NOT NULL,
    n_nodes INTEGER NOT NULL,
    counts_json TEXT NOT NULL,
    page_sizes_json TEXT NOT NULL DEFAULT '[]',
    embedding_model TEXT NOT NULL,
    timings_json TEXT NOT NULL DEFAULT '{}',
    added_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    node_id INTEGER NOT NULL,
    type TEXT NOT NULL,
    depth INTEGER NOT NULL,
    parent INTEGER,
    level INTEGER,
    ord INTEGER NOT NULL,
    page_start INTEGER NOT NULL,
    page_end INTEGER NOT NULL,
    bboxes_json TEXT NOT NULL,
    section_path_json TEXT NOT NULL,
    content TEXT NOT NULL,
    summary TEXT NOT NULL DEFAULT '',
    extra_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (doc_id, node_id)
);
CREATE TABLE IF NOT EXISTS edges (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT 'tree'
);
CREATE INDEX IF NOT EXISTS edges_doc ON edges(doc_id, kind);
CREATE TABLE IF NOT EXISTS failures (
    sha256 TEXT PRIMARY KEY,
    file_name TEXT NOT NULL,
    reason TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS indexes (
    doc_id TEXT NOT NULL,
    params_key TEXT NOT NULL,
    params_json TEXT NOT NULL,
    data_json TEXT NOT NULL,
    created_at REAL NOT NULL,
    arrays BLOB,
    PRIMARY KEY (doc_id, params_key)
);
CREATE INDEX IF NOT EXISTS indexes_versions ON indexes(doc_id, params_key, created_at);
CREATE TABLE IF NOT EXISTS judgements (
    condition TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    label INTEGER NOT NULL,
    source TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL,
    PRIMARY KEY (condition, doc_id, source)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created_at REAL NOT NULL,
    params_json TEXT NOT NULL,
    result_json TEXT NOT NULL
);
"""


def storable_text(text: str) -> str:
    """``text`` made storable as UTF-8 (SQLite TEXT, JSON output).

    A file name read from a non-UTF-8 file system name carries lone surrogates
    (Python's ``surrogateescape``); PDF text can carry them too (a ToUnicode map to half
    a surrogate pair). SQLite refuses them with ``UnicodeEncodeError``, which would lose
    a whole document, so undecodable bytes become U+FFFD (other lone surrogates ``?``).
    Valid text is returned unchanged.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "replace").decode("utf-8")


def params_key(params: Mapping[str, Any]) -> str:
    """Stable key of index parameters (a dict or an
    :class:`~docmaster_core.index.params.IndexParams`): sha256 of the sorted JSON,
    16 hex characters. The one key of a stored semantic index."""
    return hashlib.sha256(json.dumps(dict(params), sort_keys=True).encode()).hexdigest()[:16]


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file's bytes (streamed in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


@dataclass
class DocumentRecord:
    """One row of the ``documents`` table."""

    doc_id: str
    sha256: str
    file_name: str
    source_path: str
    title: str
    n_pages: int
    parser: str
    n_nodes: int
    counts: dict[str, int]
    page_sizes: list[tuple[float, float]] = field(default_factory=list)
    embedding_model: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    added_at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "file_name": self.file_name,
            "title": self.title,
            "pages": self.n_pages,
            "parser": self.parser,
            "nodes": self.n_nodes,
            "counts": self.counts,
            "sha256": self.sha256,
            "embedding_model": self.embedding_model,
            "timings": self.timings,
            "added_at": self.added_at,
        }


def _row_to_record(r: sqlite3.Row) -> DocumentRecord:
    return DocumentRecord(
        doc_id=r["doc_id"],
        sha256=r["sha256"],
        file_name=r["file_name"],
        source_path=r["source_path"],
        title=r["title"],
        n_pages=r["n_pages"],
        parser=r["parser"],
        n_nodes=r["n_nodes"],
        counts=json.loads(r["counts_json"]),
        page_sizes=[tuple(x) for x in json.loads(r["page_sizes_json"])],
        embedding_model=r["embedding_model"],
        timings=json.loads(r["timings_json"]),
        added_at=r["added_at"],
    )


def fast_json_loads(text: str | bytes):
    """``json.loads`` through orjson (the same values, ~5x faster on float arrays); texts
    orjson refuses (``NaN`` / ``Infinity``, which ``json.dumps`` writes) go through the
    standard library."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _row_to_node(r: sqlite3.Row) -> Node:
    """A :class:`Node` from a ``nodes`` row (``children`` left empty)."""
    return Node(
        id=r["node_id"],
        type=NodeType(r["type"]),
        depth=r["depth"],
        parent=r["parent"],
        children=[],
        content=r["content"],
        page_start=r["page_start"],
        page_end=r["page_end"],
        bboxes=[tuple(b) for b in fast_json_loads(r["bboxes_json"])],
        section_path=fast_json_loads(r["section_path_json"]),
        order=r["ord"],
        level=r["level"],
        summary=r["summary"],
        extra=fast_json_loads(r["extra_json"]),
    )


def _migrate(con: sqlite3.Connection) -> None:
    """Bring an older workspace database to :data:`SCHEMA_VERSION` in place (inside the
    caller's transaction). 1 -> 2 adds ``indexes.arrays``; rows written before keep their
    arrays as JSON text, readable as they are (``docmaster check --repair`` rewrites them)."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(indexes)")}
    if "arrays" not in cols:
        con.execute("ALTER TABLE indexes ADD COLUMN arrays BLOB")
    con.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))


class Workspace(IndexRunStore, IntegrityChecks, JudgementStore):
    """A DocMaster workspace directory.

    Args:
        path: Workspace directory; created when ``create`` is true.
        create: Create the directory and database if missing (default True). With
            ``create=False`` nothing is written into a folder that holds no workspace
            database.

    Raises:
        WorkspaceError: the path is not a directory, the database is corrupt, or its
            schema version is newer than this code understands.
    """

    def __init__(self, path: str | os.PathLike, create: bool = True):
        self.path = Path(path).expanduser().resolve()
        if self.path.exists() and not self.path.is_dir():
            raise WorkspaceError(f"workspace path is not a directory: {self.path}")
        if not self.path.exists():
            if not create:
                raise WorkspaceError(f"no workspace at {self.path}")
            self.path.mkdir(parents=True)
        self.vectors_dir = self.path / "vectors"
        self.db_path = self.path / "workspace.sqlite"
        if not create and not self.db_path.exists():
            # checked before anything is created: opening a folder that is not a
            # workspace (read-only commands) must leave it untouched
            raise WorkspaceError(f"no workspace database in {self.path}")
        self.vectors_dir.mkdir(exist_ok=True)
        self._local = threading.local()  # this thread's connection and its depth of write-lock holds
        try:
            con = self._con()
            with con:
                con.executescript(_SCHEMA)
                row = con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if row is None:
                    con.execute("INSERT INTO meta(key, value) VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
                elif int(row[0]) > SCHEMA_VERSION:
                    raise WorkspaceError(
                        f"workspace schema version {row[0]} is newer than this DocMaster ({SCHEMA_VERSION})"
                    )
                elif int(row[0]) < SCHEMA_VERSION:
                    _migrate(con)
        except sqlite3.DatabaseError as e:
            raise WorkspaceError(f"workspace database {self.db_path} is unreadable: {e}") from e

    # ------------------------------------------------------------------ connections
    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.db_path, timeout=30.0, isolation_level=None, check_same_thread=False)
            con.row_factory = sqlite3.Row
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA foreign_keys=ON")
            self._local.con = con
        return con

    def memo(self, name: str, compute):
        """``compute()``, remembered per thread until the database changes.

        A cache signature read on every filter (the documents' or the indexes' versions:
        ~0.05 s each at 20,000 documents) is recomputed only when the database may have
        changed: SQLite's ``PRAGMA data_version`` moves when another connection (thread or
        process) commits, and this thread's ``total_changes`` when it writes itself.
        Returns a shallow copy of a list result, so callers may change it.
        """
        con = self._con()
        state = (con.execute("PRAGMA data_version").fetchone()[0], con.total_changes)
        memo = getattr(self._local, "memo", None)
        if memo is None:
            memo = self._local.memo = {}
        hit = memo.get(name)
        if hit is None or hit[0] != state:
            hit = memo[name] = (state, compute())
        return list(hit[1]) if isinstance(hit[1], list) else hit[1]

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """An IMMEDIATE transaction: commits on success, rolls back on any exception."""
        con = self._con()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        else:
            con.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection and release the write lock if held."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None
        while getattr(self._local, "lock_depth", 0) > 0:
            self.release_write_lock()

    # ------------------------------------------------------------------ write lock
    def acquire_write_lock(self, wait: bool = False, what: str = "writing") -> None:
        """Take the workspace's single-writer lock (re-entrant for the calling thread).

        Between processes it is an advisory ``flock`` on ``.write.lock``, which then holds
        the writer's process id, what it is doing and since when. Inside one process every
        :class:`Workspace` on the same folder shares one lock, held by one thread at a time: a
        second writer there (another thread, another open workspace object) *waits* for the
        first instead of failing, so the process never reports itself as "another process"
        (issue 36), at most :data:`IN_PROCESS_WAIT_S` seconds unless ``wait``.

        Args:
            wait: Wait for another writer (another process's, or this process's) without limit
                instead of failing.
            what: What the writer does ("ingest", "index", "remove"), written in the lock file
                and shown to a writer that finds the workspace locked.

        Raises:
            WorkspaceLockedError: another process is writing and ``wait`` is false, or another
                writer of this process has held the lock for :data:`IN_PROCESS_WAIT_S`
                seconds; the message names it and what it is doing.
        """
        pl = _path_lock(self.path)
        pl.enter(lambda: self._flock(wait, what), what, None if wait else IN_PROCESS_WAIT_S, str(self.path))
        self._local.lock_depth = getattr(self._local, "lock_depth", 0) + 1

    def _flock(self, wait: bool, what: str) -> int:
        fd = os.open(self.path / ".write.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = ""
            with contextlib.suppress(OSError):
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
            os.close(fd)
            pid, _, rest = holder.partition(" ")
            who = f" (process {pid}: {rest})" if pid.isdigit() and rest else (f" (process {pid})" if pid else "")
            raise WorkspaceLockedError(
                f"workspace {self.path} is being written by another process{who}; try again when it ends"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {what} since {time.strftime('%H:%M:%S')}".encode(), 0)
        return fd

    def release_write_lock(self) -> None:
        """Give back one hold of the write lock taken by this thread through this object
        (no-op when it holds none)."""
        depth = getattr(self._local, "lock_depth", 0)
        if depth <= 0:
            return
        self._local.lock_depth = depth - 1
        _path_lock(self.path).leave()

    @contextlib.contextmanager
    def writing(self, wait: bool = False, what: str = "writing") -> Iterator["Workspace"]:
        """Context manager holding the write lock (re-entrant for the calling thread)."""
        self.acquire_write_lock(wait=wait, what=what)
        try:
            yield self
        finally:
            self.release_write_lock()

    # ------------------------------------------------------------------ documents
    def has_sha(self, sha256: str) -> str | None:
        """The doc_id of an ingested document with this content hash, else None."""
        row = self._con().execute("SELECT doc_id FROM documents WHERE sha256=?", (sha256,)).fetchone()
        return None if row is None else row[0]

    def documents(self) -> list[DocumentRecord]:
        """All ingested documents, in the order they were added."""
        rows = self._con().execute("SELECT * FROM documents ORDER BY added_at, doc_id").fetchall()
        return [_row_to_record(r) for r in rows]

    def document_versions(self) -> list[tuple[str, int, float]]:
        """``(doc_id, n_nodes, added_at)`` of every document, in :meth:`documents` order
        (``added_at`` in Unix seconds): what a cache of derived data checks, without
        decoding whole records (issue 37)."""
        def read():
            rows = self._con().execute("SELECT doc_id, n_nodes, added_at FROM documents ORDER BY added_at, doc_id")
            return [(str(d), int(n), float(t)) for d, n, t in rows]

        return self.memo("document_versions", read)

    def document(self, ref: str) -> DocumentRecord:
        """A document by doc_id, doc_id prefix, file name or path.

        Raises:
            WorkspaceError: no such document, or the reference is ambiguous.
        """
        con = self._con()
        ref = storable_text(str(ref))
        r = con.execute("SELECT * FROM documents WHERE doc_id=?", (ref,)).fetchone()
        if r is not None:
            return _row_to_record(r)
        name = Path(ref).name
        rows = con.execute(
            "SELECT * FROM documents WHERE file_name=? OR source_path=? OR doc_id LIKE ?",
            (name, ref, ref.replace("%", "") + "%" if len(ref) >= 6 else "\x00"),
        ).fetchall()
        if not rows:
            raise WorkspaceError(f"no document {ref!r} in workspace {self.path}")
        if len(rows) > 1:
            ids = ", ".join(r["doc_id"] for r in rows)
            raise WorkspaceError(f"{ref!r} matches several documents ({ids}); give a doc_id")
        return _row_to_record(rows[0])

    def add_document(
        self,
        tree: DocumentTree,
        embeddings: np.ndarray,
        *,
        sha256: str,
        source_path: str,
        parser: str,
        page_sizes: list[tuple[float, float]] | None = None,
        embedding_model: str = "",
        timings: dict[str, float] | None = None,
    ) -> DocumentRecord:
        """Store one document atomically: vector file first, then one DB transaction.

        Args:
            tree: The document tree (``tree.doc_id`` is the key).
            embeddings: float32 array (|V|, d), row i = node i.

        Raises:
            ValueError: embeddings do not match the tree.
            WorkspaceError: a different document already has this doc_id.
        """
        if embeddings.shape[0] != len(tree.nodes):
            raise ValueError(f"embeddings have {embeddings.shape[0]} rows for {len(tree.nodes)} nodes")
        self._write_vectors(tree.doc_id, embeddings)
        rec = DocumentRecord(
            doc_id=tree.doc_id,
            sha256=sha256,
            file_name=storable_text(tree.source or Path(source_path).name),
            source_path=storable_text(str(source_path)),
            title=storable_text(tree.title or ""),
            n_pages=tree.n_pages,
            parser=parser,
            n_nodes=len(tree.nodes),
            counts=tree.count_by_type(),
            page_sizes=list(page_sizes or []),
            embedding_model=embedding_model,
            timings=dict(timings or {}),
            added_at=time.time(),
        )
        with self.transaction() as con:
            con.execute(
                "INSERT INTO documents(doc_id, sha256, file_name, source_path, title, n_pages, parser, n_nodes,"
                " counts_json, page_sizes_json, embedding_model, timings_json, added_at)"
                " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    rec.doc_id, rec.sha256, rec.file_name, rec.source_path, rec.title, rec.n_pages, rec.parser,
                    rec.n_nodes, json.dumps(rec.counts), json.dumps(rec.page_sizes), rec.embedding_model,
                    json.dumps(rec.timings), rec.added_at,
                ),
            )
            con.executemany(
                "INSERT INTO nodes(doc_id, node_id, type, depth, parent, level, ord, page_start, page_end,"
                " bboxes_json, section_path_json, content, summary, extra_json) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        tree.doc_id, n.id, n.type.value, n.depth, n.parent, n.level, n.order, n.page_start,
                        n.page_end, json.dumps([list(b) for b in n.bboxes]), json.dumps(n.section_path),
                        storable_text(n.content or ""), storable_text(n.summary or ""), json.dumps(n.extra, default=str),
                    )
                    for n in tree.nodes
                ],
            )
            con.executemany(
                "INSERT INTO edges(doc_id, src, dst, kind) VALUES(?,?,?,'tree')",
                [(tree.doc_id, n.parent, n.id) for n in tree.nodes if n.parent is not None],
            )
            con.execute("DELETE FROM failures WHERE sha256=?", (sha256,))
        return rec

    def update_timings(self, doc_id: str, timings: dict[str, float]) -> None:
        """Replace a document's recorded stage timings (seconds per stage)."""
        with self.transaction() as con:
            con.execute("UPDATE documents SET timings_json=? WHERE doc_id=?", (json.dumps(timings), doc_id))

    def remove_document(self, doc_id: str) -> None:
        """Delete a document, its nodes, edges, indexes and vector file."""
        self.remove_documents([doc_id])

    def remove_documents(self, doc_ids: list[str]) -> None:
        """Delete documents with their nodes, edges, semantic indexes and vector files.

        The rows go in one transaction (all documents or none); stored collection-level
        indexes built over any of them go too (they are derived and rebuilt on demand).
        The vector files are deleted after the commit: a crash in between leaves orphan
        vector files at worst, which :meth:`check` reports as leftovers and
        :meth:`repair` removes. Saved runs are history and are kept as they are. The
        caller holds the write lock (:meth:`writing`).
        """
        ids = list(dict.fromkeys(str(d) for d in doc_ids))
        if not ids:
            return
        gone = set(ids)
        with self.transaction() as con:
            for doc_id in ids:
                con.execute("DELETE FROM edges WHERE doc_id=?", (doc_id,))
                con.execute("DELETE FROM nodes WHERE doc_id=?", (doc_id,))
                con.execute("DELETE FROM indexes WHERE doc_id=?", (doc_id,))
                con.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
            # collection-level indexes (stored under a key that is no doc_id) name their documents
            for key, pk, params in con.execute(
                    "SELECT doc_id, params_key, params_json FROM indexes WHERE doc_id NOT IN "
                    "(SELECT doc_id FROM documents)").fetchall():
                try:
                    docs = set(json.loads(params).get("docs") or [])
                except (ValueError, AttributeError):
                    docs = set()
                if docs & gone:
                    con.execute("DELETE FROM indexes WHERE doc_id=? AND params_key=?", (key, pk))
        for doc_id in ids:
            with contextlib.suppress(FileNotFoundError):
                (self.vectors_dir / f"{doc_id}.npy").unlink()

    def record_failure(self, sha256: str, file_name: str, reason: str) -> None:
        """Remember that a file failed (shown by ``docs``; retried on the next ingest)."""
        with self.transaction() as con:
            con.execute(
                "INSERT OR REPLACE INTO failures(sha256, file_name, reason, at) VALUES(?,?,?,?)",
                (sha256, storable_text(file_name), storable_text(reason), time.time()),
            )

    def failures(self) -> list[dict[str, Any]]:
        """Files that failed to ingest: ``[{sha256, file_name, reason, at}]``."""
        return [dict(r) for r in self._con().execute("SELECT * FROM failures ORDER BY at").fetchall()]

    # ------------------------------------------------------------------ preferences
    def load_preference(self, name: str) -> Any | None:
        """A saved preference (JSON value, e.g. the app's filter configurations), or None.

        Preferences live in the ``meta`` table under ``"pref:" + name``; they are not part
        of any document, index or run.
        """
        r = self._con().execute("SELECT value FROM meta WHERE key=?", (f"pref:{name}",)).fetchone()
        if r is None:
            return None
        try:
            return json.loads(r[0])
        except json.JSONDecodeError:
            return None

    def save_preference(self, name: str, value: Any) -> None:
        """Save a preference (any JSON value) under ``name``, replacing the previous one.

        Raises:
            TypeError: the value is not JSON-serialisable.
            sqlite3.OperationalError: the database cannot be written (read-only folder).
        """
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
                        (f"pref:{name}", json.dumps(value, sort_keys=True)))

    # ------------------------------------------------------------------ trees and vectors
    def load_tree(self, doc_id: str) -> DocumentTree:
        """The stored document tree (no parsing).

        Raises:
            WorkspaceError: no such document.
        """
        rec = self.document(doc_id)
        rows = self._con().execute("SELECT * FROM nodes WHERE doc_id=? ORDER BY node_id", (rec.doc_id,)).fetchall()
        nodes = [_row_to_node(r) for r in rows]
        for n in nodes:
            if n.parent is not None:
                nodes[n.parent].children.append(n.id)
        return DocumentTree(doc_id=rec.doc_id, title=rec.title, nodes=nodes, n_pages=rec.n_pages, source=rec.file_name)

    def load_nodes(self, doc_id: str, node_ids: list[int]) -> dict[int, Node]:
        """Some nodes of a stored document, without building its tree (``children`` empty).

        Returns:
            ``{node_id: Node}`` for the ids that exist (unknown ids are absent).
        """
        ids = sorted({int(i) for i in node_ids})
        out: dict[int, Node] = {}
        con = self._con()
        for a in range(0, len(ids), 500):  # SQLite's bound-parameter limit
            part = ids[a:a + 500]
            q = f"SELECT * FROM nodes WHERE doc_id=? AND node_id IN ({','.join('?' * len(part))})"
            for r in con.execute(q, (doc_id, *part)).fetchall():
                out[int(r["node_id"])] = _row_to_node(r)
        return out

    def warm_nodes(self, doc_ids: Sequence[str]) -> threading.Thread | None:
        """Read the stored nodes of ``doc_ids`` once in a background thread, so that the
        page cache holds them when :meth:`load_nodes` asks for some of their rows.

        A filter at scale reads a few dozen rows of each of hundreds of candidate
        documents, a few rows a query, as its evidence fusion asks for them: on a cold
        page cache each query waited for its pages (issue 37: ~2 s for 557 candidates at
        20,000 documents). One scan of each document's rows (in table order, so the
        kernel reads ahead) on a connection of its own overlaps that I/O with the work
        done before the fusion. Nothing is returned or cached here; results are unchanged.

        Args:
            doc_ids: Documents to read (unknown ids are skipped).

        Returns:
            The started daemon thread (callers may ``join`` it), or None for no documents.
        """
        ids = list(dict.fromkeys(str(d) for d in doc_ids))
        if not ids:
            return None
        db = self.db_path

        def scan() -> None:
            try:
                con = sqlite3.connect(Path(db).resolve().as_uri() + "?mode=ro", uri=True, timeout=30.0)
            except sqlite3.Error:
                return
            try:
                for d in ids:
                    con.execute("SELECT sum(length(content) + length(extra_json) + length(bboxes_json)) "
                                "FROM nodes WHERE doc_id=?", (d,)).fetchone()
            except sqlite3.Error:  # a hint only: the readers read what is left
                pass
            finally:
                con.close()

        t = threading.Thread(target=scan, name="docmaster-warm-nodes", daemon=True)
        t.start()
        return t

    _NODE_COLUMNS = frozenset({"node_id", "type", "depth", "parent", "level", "ord", "page_start", "page_end",
                               "bboxes_json", "section_path_json", "content", "summary", "extra_json"})

    def node_columns(self, doc_id: str, columns: tuple[str, ...]) -> list[tuple]:
        """Some columns of a document's stored nodes, one tuple per node in node id order
        (no tree is built; for bulk readers such as the collection store).

        Raises:
            ValueError: an unknown column name.
        """
        bad = [c for c in columns if c not in self._NODE_COLUMNS]
        if bad or not columns:
            raise ValueError(f"unknown node column {bad[0] if bad else None!r}")
        q = f"SELECT {', '.join(columns)} FROM nodes WHERE doc_id=? ORDER BY node_id"
        return [tuple(r) for r in self._con().execute(q, (doc_id,)).fetchall()]

    def _write_vectors(self, doc_id: str, arr: np.ndarray) -> None:
        final = self.vectors_dir / f"{doc_id}.npy"
        tmp = self.vectors_dir / f".{doc_id}.{os.getpid()}.tmp.npy"
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(arr, dtype=np.float32), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)

    def load_embeddings(self, doc_id: str, mmap: bool = True) -> np.ndarray:
        """Node embeddings of a document: float32 (|V|, 384), row i = node id i.

        Raises:
            WorkspaceError: the vector file is missing or does not match the tree.
        """
        p = self.vectors_dir / f"{doc_id}.npy"
        try:
            arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise WorkspaceError(f"vector file for {doc_id} is missing or unreadable: {e}") from e
        return arr

    def vectors_ok(self, doc_id: str) -> bool:
        """True when the document's vector file loads and has one row per node."""
        rec = self.document(doc_id)
        try:
            arr = self.load_embeddings(rec.doc_id)
        except WorkspaceError:
            return False
        return arr.ndim == 2 and arr.shape[0] == rec.n_nodes

    def write_embeddings(self, doc_id: str, embeddings: np.ndarray) -> None:
        """Replace a stored document's vector file atomically (temp file + ``os.replace``).

        Args:
            embeddings: float32 (|V|, d), row i = node id i.

        Raises:
            WorkspaceError: no such document.
            ValueError: the row count does not match the document's nodes.
        """
        rec = self.document(doc_id)
        if embeddings.ndim != 2 or embeddings.shape[0] != rec.n_nodes:
            raise ValueError(f"embeddings have shape {embeddings.shape} for {rec.n_nodes} nodes")
        self._write_vectors(rec.doc_id, embeddings)

    def update_summaries(self, doc_id: str, summaries: dict[int, str]) -> None:
        """Set node summaries (one transaction); the document's stored evidence lengths
        (``collection/docinfo/chars``, which count section summaries) are dropped."""
        from .docinfo import forget

        with self.transaction() as con:
            con.executemany(
                "UPDATE nodes SET summary=? WHERE doc_id=? AND node_id=?",
                [(storable_text(s), doc_id, int(i)) for i, s in summaries.items()],
            )
        forget(self.path, doc_id, ["chars"])

    # ------------------------------------------------------------------ index and runs
    params_key = staticmethod(params_key)
