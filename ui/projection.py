"""2-D projections of node embeddings for the semantic-cluster page.

UMAP (McInnes, Healy and Melville 2018) is slow on first use (numba compiles for
~30 s), so a slider never waits for it: the page shows a PCA projection at once and
asks for UMAP in a separate worker process (``ui/umap_worker.py``, so numba's
compilation never holds this interpreter's lock); the coordinates are written to
``<workspace>/cache/umap_<key>.npy`` (plain ``.npy``, no pickle, atomic rename) and
memoised with ``st.cache_data``. Reopening the workspace shows UMAP immediately.

Set env ``DOCMASTER_UI_UMAP=off`` to use PCA only (tests, very small machines).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

__all__ = [
    "pca_2d",
    "projection_key",
    "umap_path",
    "umap_enabled",
    "umap_status",
    "request_umap",
    "load_coords",
    "get_projection",
]

_LOCK = threading.Lock()
_JOBS: dict[str, dict[str, Any]] = {}  # key -> {"proc": Popen, "log": Path}
MIN_UMAP_POINTS = 8
_WORKER = Path(__file__).with_name("umap_worker.py")


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


def projection_key(*parts: Any) -> str:
    """A short stable key (16 hex digits of SHA-256) for a projection's inputs."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def umap_path(workspace: str | Path, key: str) -> Path:
    """Where the UMAP coordinates of ``key`` are cached in the workspace."""
    return Path(workspace) / "cache" / f"umap_{key}.npy"


def umap_enabled() -> bool:
    """``settings.ui_umap``: False when env ``DOCMASTER_UI_UMAP`` is ``off``/``0``/``false``/``no``."""
    from docmaster_core.config import get_settings

    return get_settings().ui_umap


def umap_status(workspace: str | Path, key: str) -> str:
    """``"ready"`` (cached on disk), ``"running"``, ``"failed: <reason>"`` or ``"absent"``."""
    if umap_path(workspace, key).is_file():
        return "ready"
    with _LOCK:
        job = _JOBS.get(key)
    if job is None:
        return "absent"
    rc = job["proc"].poll()
    if rc is None:
        return "running"
    if rc != 0:
        try:
            reason = job["log"].read_text(errors="replace").strip().splitlines()[-1][:200]
        except (OSError, IndexError):
            reason = f"exit code {rc}"
        return "failed: " + reason
    return "absent"


def request_umap(workspace: str | Path, key: str, X: np.ndarray) -> str:
    """Start the UMAP fit of ``X`` (n, d) in a separate process unless cached or running.

    The worker (``ui/umap_worker.py``) reads ``cache/umap_<key>.in.npy`` and writes
    ``cache/umap_<key>.npy``; its stderr goes to ``cache/umap_<key>.log``.

    Returns:
        The status after the request (see :func:`umap_status`).
    """
    status = umap_status(workspace, key)
    if status != "absent":
        return status
    out = umap_path(workspace, key)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _LOCK:
        job = _JOBS.get(key)
        if job is not None and job["proc"].poll() is None:
            return "running"
        src = out.with_name(f"umap_{key}.in.npy")
        tmp = out.with_name(f".umap_{key}.{os.getpid()}.in.npy")
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(X, dtype=np.float32), allow_pickle=False)
        os.replace(tmp, src)
        log = out.with_name(f"umap_{key}.log")
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-W", "ignore", str(_WORKER), str(src), str(out)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        _JOBS[key] = {"proc": proc, "log": log}
    return "running"


@st.cache_data(max_entries=64, show_spinner=False)
def _pca_cached(key: str, _X: np.ndarray) -> np.ndarray:
    """:func:`pca_2d` memoised by projection key (the embeddings are not hashed)."""
    return pca_2d(_X)


@st.cache_data(max_entries=64, show_spinner=False)
def load_coords(path: str, mtime: float) -> np.ndarray | None:
    """Cached ``np.load`` of a coordinates file (``mtime`` keys the cache)."""
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


def get_projection(workspace: str | Path, key: str, X: np.ndarray) -> tuple[np.ndarray, str, str]:
    """2-D coordinates of the rows of ``X`` without blocking on UMAP.

    Args:
        workspace: Workspace directory (the disk cache lives under ``cache/``).
        key: Projection key (see :func:`projection_key`).
        X: float32 (n, d) embeddings (not hashed: the key must identify them).

    Returns:
        ``(coords (n, 2) float32, method "UMAP" | "PCA", status)`` where status is
        ``"ready"``, ``"running"``, ``"failed: ..."``, ``"disabled"`` or ``"too few points"``.
    """
    n = X.shape[0]
    if not umap_enabled():
        return _pca_cached(key, X), "PCA", "disabled"
    if n < MIN_UMAP_POINTS:
        return _pca_cached(key, X), "PCA", "too few points"
    p = umap_path(workspace, key)
    if p.is_file():
        Y = load_coords(str(p), p.stat().st_mtime)
        if Y is not None and Y.shape == (n, 2):
            return Y, "UMAP", "ready"
    status = request_umap(workspace, key, X)
    return _pca_cached(key, X), "PCA", status
