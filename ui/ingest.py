"""Upload saving, ingest with per-document progress, and the collection table.

Uploaded files are written under ``<workspace>/uploads/`` with sanitised names: the
name the browser sent is never used as a path as given (no directories, no
traversal, no control or shell characters, bounded length). Ingest goes through
:meth:`docmaster_core.pipeline.DocMaster.ingest` with a progress callback that moves
one progress bar per document through its stages (SPEC F1, F2, F9).
"""
from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Callable, Iterable, Sequence

import streamlit as st

from .text import shorten

__all__ = [
    "STAGE_PROGRESS",
    "sanitize_filename",
    "save_uploads",
    "ProgressBoard",
    "ingest_files",
    "collection_rows",
    "failure_rows",
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


def ingest_files(dm: Any, paths: Sequence[Path], on_progress: Callable[[Any], None] | None = None) -> list[dict]:
    """Ingest ``paths`` into the facade's workspace; one result dict per input.

    Result dicts are ``IngestResult.to_dict()``: ``file, status (ingested | skipped |
    failed), doc_id, reason, pages, nodes, counts, timings`` (seconds).

    When the LLM backend is unusable (e.g. the OpenAI backend without an API key),
    ``dm.ingest`` refuses the whole batch before touching a file; every file then gets
    a ``failed`` result carrying that one reason (nothing is recorded in the workspace).

    Raises:
        WorkspaceLockedError: another process is writing to the workspace.
    """
    from docmaster_core.errors import ConfigError

    try:
        results = dm.ingest([str(p) for p in paths], on_progress=on_progress)
    except ConfigError as e:
        reason = " ".join(str(e).split())
        return [{"file": str(p), "status": "failed", "doc_id": None, "reason": f"{Path(p).name}: {reason}",
                 "pages": 0, "nodes": 0, "counts": {}, "timings": {}} for p in paths]
    return [r.to_dict() for r in results]


_TYPES = {"TITLE": "titles", "TEXT": "texts", "TABLE": "tables", "IMAGE": "images", "EQUATION": "equations"}


def collection_rows(dm: Any) -> list[dict[str, Any]]:
    """One row per stored document, the newest first: file, title, added (local time,
    ``YYYY-MM-DD HH:MM``), pages, nodes, nodes by type (titles, texts, tables, images,
    equations), parser, status, doc_id.

    ``status`` is ``"indexed"`` when a semantic index is stored for the document,
    else ``"stored"``.
    """
    import time

    ws = dm.ws
    with_index = {doc_id for doc_id, _key, _t in ws.index_versions()}  # one query, no index is parsed
    rows = []
    for d in sorted(ws.documents(), key=lambda d: -float(d.added_at or 0.0)):
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
    return [{"file": f["file_name"], "reason": f["reason"]} for f in dm.ws.failures()]
