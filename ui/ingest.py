"""Upload saving, ingest with per-document progress, and the collection table.

Uploaded files are written under ``<workspace>/uploads/`` with sanitised names: the
name the browser sent is never used as a path as given (no directories, no
traversal, no control or shell characters, bounded length). Ingest goes through
:meth:`docmaster_core.pipeline.DocMaster.ingest` with a progress callback that moves
one progress bar per document through its stages (SPEC F1, F2, F9).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Iterable, Sequence

import streamlit as st

from .text import plural, shorten

__all__ = [
    "STAGE_PROGRESS",
    "sanitize_filename",
    "save_uploads",
    "ProgressBoard",
    "ingest_files",
    "interrupted_ingest",
    "dismiss_interrupted",
    "ingest_summary",
    "collection_rows",
    "failure_rows",
    "example_doc_ids",
    "remove_documents",
    "remove_now",
]

MINERU_SUFFIX = "_content_list.json"

#: Fraction of a document's progress bar reached when a stage starts.
STAGE_PROGRESS = {
    "queued": 0.0,
    "parsing": 0.05,
    "embedding": 0.35,
    "summarising": 0.55,
    "storing": 0.75,
    "indexing": 0.85,
    "done": 1.0,
    "skipped": 1.0,
    "failed": 1.0,
}

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def sanitize_filename(name: str, max_len: int = 120) -> str:
    """A safe file name derived from an uploaded name.

    Only the last path component is kept (both ``/`` and ``\\`` separators), the
    text is NFKC-normalised and reduced to ``[A-Za-z0-9._-]`` (other runs become
    ``_``), leading dots/dashes are removed (no hidden files, no option-like names),
    and the stem is cut so the whole name has at most ``max_len`` characters. The
    ``.pdf`` and ``_content_list.json`` suffixes are kept (case folded).

    Args:
        name: The uploaded file name (untrusted).
        max_len: Maximum length of the result.

    Returns:
        A non-empty name; ``"upload"`` plus the suffix when nothing usable is left.
    """
    base = PureWindowsPath(PurePosixPath(str(name).replace("\x00", "")).name).name
    base = unicodedata.normalize("NFKC", base)
    lower = base.lower()
    if lower.endswith(MINERU_SUFFIX):
        stem, suffix = base[: -len(MINERU_SUFFIX)], MINERU_SUFFIX
    elif lower.endswith(".pdf"):
        stem, suffix = base[:-4], ".pdf"
    else:
        p = PurePosixPath(base)
        stem, suffix = p.stem, _SAFE.sub("", p.suffix.lower())[:10]
    stem = _SAFE.sub("_", stem).strip("._-")
    stem = stem[: max(1, max_len - len(suffix))] or "upload"
    return stem + suffix


def save_uploads(uploads_dir: Path, files: Iterable[tuple[str, bytes]]) -> list[Path]:
    """Write uploaded files under ``uploads_dir`` with sanitised, unique names.

    A name already taken by a file with *different* bytes gets the first 8 hex
    digits of the content's SHA-256 appended to its stem; identical bytes reuse the
    existing file. Writes are atomic (temp file + rename).

    Args:
        uploads_dir: Target folder (created if missing).
        files: ``(uploaded name, content bytes)`` pairs.

    Returns:
        The saved paths, in input order (duplicates of the same content collapse).
    """
    uploads_dir.mkdir(parents=True, exist_ok=True)
    root = uploads_dir.resolve()
    out: list[Path] = []
    for name, data in files:
        safe = sanitize_filename(name)
        target = root / safe
        if target.exists() and target.read_bytes() != data:
            digest = hashlib.sha256(data).hexdigest()[:8]
            if safe.lower().endswith(MINERU_SUFFIX):
                safe = f"{safe[: -len(MINERU_SUFFIX)]}-{digest}{MINERU_SUFFIX}"
            else:
                stem, dot, suf = safe.rpartition(".")
                safe = f"{stem}-{digest}.{suf}" if dot else f"{safe}-{digest}"
            target = root / safe
        if target.parent != root:  # defensive: sanitize_filename never yields separators
            raise ValueError(f"refusing to write outside {root}")
        if not target.exists():
            tmp = root / f".{safe}.part"
            tmp.write_bytes(data)
            tmp.replace(target)
        if target not in out:
            out.append(target)
    return out


@dataclass
class _Row:
    bar: Any
    started: float


class ProgressBoard:
    """One progress bar per document, moved by ingest events.

    Args:
        files: The paths about to be ingested (labels show their names).
        container: Where to draw (default: the current Streamlit container).
    """

    def __init__(self, files: Sequence[Path], container: Any | None = None):
        self.container = container if container is not None else st.container()
        self.rows: dict[str, _Row] = {}
        self.events: list[Any] = []
        with self.container:
            self.overall = st.progress(0.0, text=f"0 / {len(files)} documents")
            for p in files:
                self.rows[str(p)] = _Row(st.progress(0.0, text=f"{shorten(p.name, 70)} · queued"), time.perf_counter())
        self.total = len(files)
        self.finished = 0

    def __call__(self, ev: Any) -> None:
        """Progress callback for ``DocMaster.ingest(on_progress=...)``."""
        self.events.append(ev)
        row = self.rows.get(str(ev.file))
        if row is None:
            return
        frac = STAGE_PROGRESS.get(ev.stage, 0.0)
        name = shorten(Path(ev.file).name, 70)
        label = {"done": "done", "skipped": "already in workspace", "failed": "failed"}.get(ev.stage, ev.stage)
        if ev.stage == "skipped" and getattr(ev, "message", ""):
            # e.g. "same content as kettle_manual.pdf, already in workspace"
            label = shorten(" ".join(str(ev.message).split()), 90)
        row.bar.progress(frac, text=f"{name} · {label} · {ev.elapsed:.1f} s")
        if ev.stage in ("done", "skipped", "failed"):
            self.finished += 1
            self.overall.progress(
                min(1.0, self.finished / max(1, self.total)), text=f"{self.finished} / {self.total} documents"
            )


#: An ingest's journal (``uploads/.ingest-<id>.json``: the files it was given) lives until the ingest
#: returns. The app's ingest runs with its page's script, so a closed tab stops it; a journal whose
#: ingest is not running in this server process (:data:`_RUNNING`) is one that stopped part-way.
_JOURNAL_GLOB = ".ingest-*.json"
_RUNNING: set[str] = set()
_RUNNING_LOCK = threading.Lock()


def _journal(dm: Any, paths: Sequence[Path]) -> Path:
    j = Path(dm.path) / "uploads" / f".ingest-{uuid.uuid4().hex[:12]}.json"
    j.parent.mkdir(parents=True, exist_ok=True)
    j.write_text(json.dumps({"started": time.time(), "files": [str(p) for p in paths]}), encoding="utf-8")
    with _RUNNING_LOCK:
        _RUNNING.add(str(j))
    return j


def interrupted_ingest(dm: Any) -> tuple[list[Path], list[Path]]:
    """Files of an ingest that stopped before it finished (the tab was closed or the page
    left while it ran) and are neither in the workspace nor recorded as failed.

    Returns:
        ``(files, journals)``: the files still on disk under ``uploads/`` that were not
        ingested, and the journals naming them (:func:`dismiss_interrupted` deletes
        them). A journal whose files are all in the workspace is deleted here. (An
        ingest running in another app server on the same workspace would be taken for a
        stopped one: the journal knows only this process's ingests.)
    """
    up = Path(dm.path) / "uploads"
    with _RUNNING_LOCK:
        found = [j for j in sorted(up.glob(_JOURNAL_GLOB)) if str(j) not in _RUNNING] if up.is_dir() else []
    if not found:  # the usual case: nothing is asked of the workspace
        return [], []
    have = {d.file_name for d in dm.documents()} | {f["file_name"] for f in dm.failures()}
    files: list[Path] = []
    journals: list[Path] = []
    for j in found:
        try:
            listed = [Path(f) for f in json.loads(j.read_text(encoding="utf-8")).get("files", [])]
        except (OSError, ValueError):
            listed = []
        left = [f for f in listed if f.name not in have and f.is_file() and f not in files]
        if left:
            files += left
            journals.append(j)
        else:
            j.unlink(missing_ok=True)
    return files, journals


def dismiss_interrupted(journals: Sequence[Path]) -> None:
    """Forget stopped ingests (their files stay under ``uploads/``)."""
    for j in journals:
        Path(j).unlink(missing_ok=True)


def ingest_files(dm: Any, paths: Sequence[Path], on_progress: Callable[[Any], None] | None = None) -> list[dict]:
    """Ingest ``paths`` into the facade's workspace; one result dict per input.

    Result dicts are ``IngestResult.to_dict()``: ``file, status (ingested | skipped |
    failed), doc_id, reason, pages, nodes, counts, timings`` (seconds).

    When the LLM backend is unusable (e.g. the OpenAI backend without an API key),
    ``dm.ingest`` refuses the whole batch before touching a file; every file then gets
    a ``failed`` result carrying that one reason (nothing is recorded in the workspace).

    While it runs, a journal under ``uploads/`` names the files; when the ingest is
    stopped part-way (the page's script stops with the tab), :func:`interrupted_ingest`
    finds what it did not ingest.

    Raises:
        WorkspaceLockedError: another process is writing to the workspace.
    """
    from docmaster_core.errors import ConfigError, WorkspaceLockedError

    journal = _journal(dm, paths)
    try:
        results = dm.ingest([str(p) for p in paths], on_progress=on_progress)
    except (ConfigError, WorkspaceLockedError) as e:
        journal.unlink(missing_ok=True)  # refused before any file: nothing stopped part-way
        if isinstance(e, WorkspaceLockedError):
            raise
        reason = " ".join(str(e).split())
        return [{"file": str(p), "status": "failed", "doc_id": None, "reason": f"{Path(p).name}: {reason}",
                 "pages": 0, "nodes": 0, "counts": {}, "timings": {}} for p in paths]
    finally:  # (a stopped script leaves its journal: the next visit says what was not ingested)
        with _RUNNING_LOCK:
            _RUNNING.discard(str(journal))
    journal.unlink(missing_ok=True)
    new = [r.doc_id for r in results if r.status == "ingested" and r.doc_id]
    if new:
        from .projection import queue_missing_layouts

        queue_missing_layouts(dm, new)  # their UMAP layouts for the cluster view, in the background
    return [r.to_dict() for r in results]


_TYPES = {"TITLE": "titles", "TEXT": "texts", "TABLE": "tables", "IMAGE": "images", "EQUATION": "equations"}


def ingest_summary(results: Sequence[dict]) -> str:
    """One plain sentence about an ingest batch, e.g. ``"1 of 3 files added to the
    workspace; 2 failed."`` or ``"2 files added; 1 was already in the workspace."``."""
    n = len(results)
    added = sum(r["status"] == "ingested" for r in results)
    skipped = sum(r["status"] == "skipped" for r in results)
    failed = sum(r["status"] == "failed" for r in results)
    head = (f"{plural(added, 'file')} added to the workspace" if added == n
            else f"{added} of {plural(n, 'file')} added to the workspace")
    tail = []
    if skipped:
        tail.append(f"{skipped} {'was' if skipped == 1 else 'were'} already in it")
    if failed:
        tail.append(f"{failed} failed")
    return head + ("; " + ", ".join(tail) if tail else "") + "."


def collection_rows(dm: Any) -> list[dict[str, Any]]:
    """One row per stored document, the newest first: file, title, added (local time,
    ``YYYY-MM-DD HH:MM``), pages, nodes, nodes by type (titles, texts, tables, images,
    equations), parser, status, doc_id.

    ``status`` is ``"indexed"`` when a semantic index is stored for the document,
    else ``"stored"``.
    """
    import time

    with_index = {doc_id for doc_id, _key, _t in dm.index_versions()}  # one query, no index is parsed
    rows = []
    for d in sorted(dm.documents(), key=lambda d: -float(d.added_at or 0.0)):
        indexed = d.doc_id in with_index
        row = {"file": d.file_name, "title": shorten(d.title, 80),
               "added": time.strftime("%Y-%m-%d %H:%M", time.localtime(float(d.added_at or 0.0))),
               "pages": d.n_pages, "nodes": d.n_nodes}
        for t, col in _TYPES.items():
            row[col] = int(d.counts.get(t, 0))
        row.update({"parser": d.parser, "status": "indexed" if indexed else "stored", "doc_id": d.doc_id})
        rows.append(row)
    return rows


def failure_rows(dm: Any) -> list[dict[str, Any]]:
    """Files that failed to ingest and were not ingested since: ``{file, reason}``."""
    return [{"file": f["file_name"], "reason": f["reason"]} for f in dm.failures()]


def example_doc_ids(dm: Any) -> list[str]:
    """The doc ids of the example collection's documents in the workspace (by their file
    names, :data:`docmaster_core.examples.EXAMPLE_FILES`)."""
    from docmaster_core.examples import EXAMPLE_FILES

    return [d.doc_id for d in dm.documents() if d.file_name in EXAMPLE_FILES]


def remove_documents(dm: Any, doc_ids: Sequence[str]) -> list[str]:
    """Remove documents from the workspace (:meth:`DocMaster.remove`, under the
    workspace's write lock) and forget them in the session: the current document,
    per-document selections and highlights, the chat's chosen documents. The
    session's filter results are kept as they were decided (the Filter page marks the
    removed documents), like the saved runs.

    Returns:
        The removed documents' file names.

    Raises:
        WorkspaceError: an unknown document (nothing removed).
        WorkspaceLockedError: another process is writing the workspace.
    """
    from . import state

    removed = dm.remove(list(doc_ids))
    gone = {r.doc_id for r in removed}
    for key in (state.DOC_ID, state.FILTER_DOC):
        if state.get(key) in gone:
            state.put(key, None)
    for key in (state.NODE_BY_DOC, state.TREE_EXPANDED, state.HYPEREDGE_BY_DOC, state.HIGHLIGHT):
        cur = state.get(key) or {}
        state.put(key, {k: v for k, v in cur.items() if k not in gone})
    state.put(state.CHAT_DOCS, [d for d in (state.get(state.CHAT_DOCS) or []) if d not in gone])
    return [r.file_name for r in removed]


def remove_now(doc_ids: Sequence[str]) -> None:
    """Button callback of the Upload page: remove ``doc_ids`` from the session's
    workspace (:func:`remove_documents`) and leave a one-line notice for the page
    (``state.REMOVE_NOTICE``; its ``gen`` counts removals, so the collection table is
    drawn afresh without the old row selection)."""
    from docmaster_core.errors import DocMasterError

    from . import state
    from .resources import current_docmaster

    notice = dict(state.get(state.REMOVE_NOTICE) or {"gen": 0})
    try:
        names = remove_documents(current_docmaster(), doc_ids)
    except DocMasterError as e:
        notice.update(ok=False, text=f"Nothing removed: {e}")
    else:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        notice.update(ok=True, text=f"Removed {plural(len(names), 'document')}: {shown}.",
                      gen=int(notice.get("gen", 0)) + 1)
    state.put(state.REMOVE_NOTICE, notice)
    state.put(state.REMOVE_PENDING, [])
