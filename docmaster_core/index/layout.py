"""2-D layouts of TEXT-node embeddings for the semantic-cluster view, computed once and
stored in the workspace.

A layout is UMAP (McInnes, Healy and Melville 2018; cosine metric, 15 neighbours,
min_dist 0.1, random_state 0) of a document's TEXT-node embeddings (the nodes
PC-KMeans clusters, :meth:`~docmaster_core.model.DocumentTree.text_node_ids`), or of
the TEXT nodes of a set of documents (the collection view). It depends only on the
embeddings, not on the index parameters, so it is computed once per document version
(doc_id, ``added_at``, embedding model, number of TEXT nodes) and kept as
``<workspace>/layouts/<name>.npy`` (float32 (n, 2), plain ``.npy``, written to a
temporary file and renamed, so a reader never sees half a file).

UMAP is slow on first use (numba compiles for ~30 s) and takes seconds per document,
so it never runs in the caller: :class:`LayoutQueue` writes the job's input to
``layouts/queue/`` and starts one background worker process
(``python -m docmaster_core.index.layout_worker``) that drains the queue, urgent
jobs first, at a lower CPU priority. Its exit is collected by a reaper thread (no
zombie processes), and it stops after its current job when the process that started it
has gone (no orphan). Until a layout is stored the reader gets the first two principal
components (:func:`pca_2d`) and a status saying why.

Settings: ``settings.ui_umap`` (env ``DOCMASTER_UI_UMAP=off``) turns UMAP off: every
layout is PCA with the status ``"disabled"``.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = [
    "MIN_UMAP_POINTS",
    "Layout2D",
    "LayoutQueue",
    "layout_name",
    "layouts_dir",
    "pca_2d",
    "umap_2d",
    "remove_layouts",
]

#: Fewer TEXT nodes than this get PCA (UMAP needs a neighbourhood graph).
MIN_UMAP_POINTS = 8
LAYOUT_DIR = "layouts"


def pca_2d(X: np.ndarray) -> np.ndarray:
    """First two principal components of the rows of ``X``.

    Args:
        X: float array (n, d).

    Returns:
        float32 array (n, 2); zeros when n < 2. Component signs are fixed
        (largest-magnitude loading positive) so the picture is deterministic.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    out = np.zeros((n, 2), dtype=np.float32)
    if n < 2:
        return out
    Xc = X - X.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    comps = vt[:2]
    signs = np.sign(comps[np.arange(comps.shape[0]), np.argmax(np.abs(comps), axis=1)])
    signs[signs == 0] = 1.0
    proj = Xc @ (comps * signs[:, None]).T
    out[:, : proj.shape[1]] = proj
    return out


def umap_2d(X: np.ndarray) -> np.ndarray:
    """UMAP of the rows of ``X`` to 2-D (cosine metric, min(15, n - 1) neighbours,
    min_dist 0.1, random_state 0; random init below 16 points). Slow on first use in a
    process (numba compilation, ~30 s): call it from the worker, not from a page.

    Args:
        X: float32 (n, d), n >= 3.

    Returns:
        float32 (n, 2).

    Raises:
        ImportError: umap-learn is not installed.
    """
    import warnings

    warnings.simplefilter("ignore")
    import umap

    X = np.asarray(X, dtype=np.float32)
    n = X.shape[0]
    reducer = umap.UMAP(n_components=2, n_neighbors=max(2, min(15, n - 1)), min_dist=0.1, metric="cosine",
                        random_state=0, init="random" if n < 16 else "spectral")
    return np.asarray(reducer.fit_transform(X), dtype=np.float32)


def layout_name(kind: str, parts: Sequence[Any]) -> str:
    """The stored name of a layout: ``<kind>-<16 hex digits of SHA-256 of parts>``.

    Args:
        kind: ``"doc_<doc_id>"`` for a document (so a removal can find its files) or
            ``"collection"``.
        parts: What the layout depends on (document versions, embedding model, n).
    """
    return f"{kind}-{hashlib.sha256(repr(tuple(parts)).encode()).hexdigest()[:16]}"


def layouts_dir(workspace: str | os.PathLike) -> Path:
    """``<workspace>/layouts`` (the stored layouts; ``queue/`` under it holds pending jobs)."""
    return Path(workspace) / LAYOUT_DIR


def remove_layouts(workspace: str | os.PathLike, doc_ids: Sequence[str]) -> int:
    """Delete the stored layouts and queued jobs of these documents, and every stored
    collection layout (they include removed documents' nodes). Returns the number of
    files deleted; missing files are not an error."""
    d = layouts_dir(workspace)
    if not d.is_dir():
        return 0
    prefixes = tuple(f"doc_{x}-" for x in doc_ids) + ("collection-",)
    n = 0
    for p in list(d.glob("*")) + list((d / "queue").glob("*")):
        stem = p.name.split("~", 1)[-1]  # queue files are "<priority>~<seq>~<name>.npy"
        if stem.startswith(prefixes):
            try:
                p.unlink()
                n += 1
            except OSError:
                pass
    return n


@dataclass
class Layout2D:
    """A 2-D layout of TEXT nodes as the cluster page draws it.

    Attributes:
        coords: float32 (n, 2) coordinates, row i = ``node_ids[i]`` of ``doc_ids[i]``.
        doc_ids: (n,) doc id per row.
        node_ids: (n,) int64 node id per row (ascending within a document).
        method: ``"UMAP"`` or ``"PCA"``.
        status: ``"ready"`` (UMAP stored), ``"computing"`` (queued or running in the
            background worker), ``"failed: <reason>"``, ``"disabled"``
            (``settings.ui_umap`` off) or ``"too few points"``.
        name: The stored name (``layouts/<name>.npy``).
    """

    coords: np.ndarray
    doc_ids: list[str]
    node_ids: np.ndarray
    method: str
    status: str
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


_LOCK = threading.Lock()
_WORKERS: dict[str, subprocess.Popen] = {}  # layouts dir -> the worker this process started
_SEQ = [0]


class LayoutQueue:
    """The stored layouts of one workspace and the background worker computing them.

    Args:
        workspace: The workspace folder.
    """

    def __init__(self, workspace: str | os.PathLike):
        self.dir = layouts_dir(workspace)
        self.queue = self.dir / "queue"

    # -------------------------------------------------------------- files
    def path(self, name: str) -> Path:
        """``layouts/<name>.npy``."""
        return self.dir / f"{name}.npy"

    def load(self, name: str, n: int) -> np.ndarray | None:
        """The stored float32 (n, 2) coordinates, or None (absent, unreadable, or not n rows)."""
        try:
            Y = np.load(self.path(name), allow_pickle=False)
        except (OSError, ValueError):
            return None
        return Y if Y.shape == (n, 2) else None

    def failure(self, name: str) -> str | None:
        """The worker's one-line reason when computing ``name`` failed, else None."""
        try:
            return (self.dir / f"{name}.failed").read_text(errors="replace").strip()[:200] or "unknown error"
        except OSError:
            return None

    def queued(self, name: str) -> bool:
        """True while a job for ``name`` waits in (or is being computed from) the queue."""
        return any(self.queue.glob(f"*~{name}.npy"))

    # -------------------------------------------------------------- jobs
    def enqueue(self, name: str, X: np.ndarray, *, urgent: bool = False) -> None:
        """Queue the UMAP of ``X`` (float32 (n, d)) under ``name`` (no-op when stored,
        or already queued with the same or higher priority) and make sure a worker runs.

        Raises:
            OSError: the workspace is not writable.
        """
        if self.path(name).is_file():
            return
        prio = "0" if urgent else "1"
        have = [p.name.split("~", 1)[0] for p in self.queue.glob(f"*~{name}.npy")]
        if not have or (urgent and "0" not in have):
            self.queue.mkdir(parents=True, exist_ok=True)
            with _LOCK:
                _SEQ[0] += 1
                seq = f"{time.time_ns():020d}{_SEQ[0]:06d}"
            dst = self.queue / f"{prio}~{seq}~{name}.npy"
            tmp = self.queue / f".{os.getpid()}.{seq}.tmp"
            with open(tmp, "wb") as f:
                np.save(f, np.ascontiguousarray(X, dtype=np.float32), allow_pickle=False)
            os.replace(tmp, dst)
            try:
                (self.dir / f"{name}.failed").unlink()
            except OSError:
                pass
        self.start_worker()

    def pending(self) -> int:
        """Number of queued jobs."""
        return sum(1 for _ in self.queue.glob("*~*.npy")) if self.queue.is_dir() else 0

    def start_worker(self) -> subprocess.Popen | None:
        """Start the background worker unless this process's worker for the workspace is
        still running or nothing is queued. Returns the running worker (None when none
        was needed). A worker started by another process is detected by the worker
        itself (it exits at once when the queue lock is held)."""
        key = str(self.dir)
        with _LOCK:
            proc = _WORKERS.get(key)
            if proc is not None and proc.poll() is None:
                return proc
            if self.pending() == 0:
                return None
            log = open(self.dir / "worker.log", "ab")
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-W", "ignore", "-m", "docmaster_core.index.layout_worker", str(self.dir),
                     str(os.getpid())],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                    cwd=str(Path(__file__).resolve().parents[2]),
                )
            finally:
                log.close()
            _WORKERS[key] = proc
        # reap the worker when it ends: no zombie is left behind
        threading.Thread(target=proc.wait, name=f"docmaster-layout-reaper-{proc.pid}", daemon=True).start()
        return proc

    def worker(self) -> subprocess.Popen | None:
        """The worker this process started for the workspace (running or finished), or None."""
        with _LOCK:
            return _WORKERS.get(str(self.dir))

    def wait(self, timeout: float = 600.0) -> bool:
        """Wait until the queue is empty and this process's worker has exited (tests,
        scripts). Returns True when it did within ``timeout`` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            proc = self.worker()
            if proc is not None and proc.poll() is None:
                time.sleep(0.2)
                continue
            if self.pending() == 0:
                return True
            if self.start_worker() is None:
                return True
            time.sleep(0.2)
        return False

    # -------------------------------------------------------------- reading
    def layout(self, name: str, X: np.ndarray, *, enabled: bool = True, urgent: bool = True) -> tuple[np.ndarray, str, str]:
        """The coordinates of ``name`` without waiting for UMAP.

        Args:
            name: The layout's stored name (:func:`layout_name`).
            X: float32 (n, d) the embeddings it is computed from (queued when missing).
            enabled: False: PCA with the status ``"disabled"``.
            urgent: Queue a missing layout ahead of the background ones (someone is looking).

        Returns:
            ``(coords float32 (n, 2), "UMAP" | "PCA", status)`` (see :class:`Layout2D`).
        """
        n = X.shape[0]
        if not enabled:
            return pca_2d(X), "PCA", "disabled"
        if n < MIN_UMAP_POINTS:
            return pca_2d(X), "PCA", "too few points"
        Y = self.load(name, n)
        if Y is not None:
            return Y, "UMAP", "ready"
        why = self.failure(name)
        if why is not None and not self.queued(name):
            return pca_2d(X), "PCA", "failed: " + why
        try:
            self.enqueue(name, X, urgent=urgent)
        except OSError as e:
            return pca_2d(X), "PCA", f"failed: the workspace is not writable ({e.strerror or e})"
        return pca_2d(X), "PCA", "computing"
