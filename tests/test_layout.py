"""2-D layouts of the cluster view (docmaster_core.index.layout): computed once per
document version by a background worker, stored in the workspace, never waited for;
the worker process is reaped (no zombie); a removal deletes the document's layouts."""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import numpy as np
import pytest

from docmaster_core.config import get_settings
from docmaster_core.index.layout import LayoutQueue, layout_name, pca_2d
from docmaster_core.pipeline import DocMaster
from docmaster_core.store.workspace import Workspace
from tests.support.toy import make_tree


class _NoLLM:
    backend_name = "offline"
    is_offline = True


def _add_doc(ws: Workspace, name: str, n_par: int, seed: int) -> str:
    """A document of ``n_par`` TEXT nodes in two sections with random unit embeddings
    (the layout depends on the embeddings only)."""
    paras = [f"{name} paragraph {i} about topic {i % 3}." for i in range(n_par)]
    sha = hashlib.sha256(name.encode()).hexdigest()
    tree = make_tree(sha[:16], name, name, [("1 First", paras[: n_par // 2]), ("2 Second", paras[n_par // 2:])])
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(len(tree.nodes), 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    ws.add_document(tree, emb, sha256=sha, source_path=f"/toy/{name}", parser="test", embedding_model="test-emb")
    return tree.doc_id


def _state(pid: int) -> str | None:
    """The process state letter of ``pid`` ('Z' = zombie), or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        return None
    return None


def test_pca_is_deterministic():
    X = np.random.default_rng(0).normal(size=(30, 16)).astype(np.float32)
    P = pca_2d(X)
    assert P.shape == (30, 2) and P.dtype == np.float32
    np.testing.assert_array_equal(P, pca_2d(X))
    assert P[:, 0].var() >= P[:, 1].var()
    assert pca_2d(X[:1]).shape == (1, 2)


@pytest.mark.slow  # two UMAP workers (numba compilation): ~1-2 min on 2 cores
def test_layout_never_waits_and_is_stored_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCMASTER_UI_UMAP", "on")
    ws = Workspace(tmp_path / "ws")
    a = _add_doc(ws, "a.pdf", 24, 0)
    b = _add_doc(ws, "b.pdf", 20, 1)
    tiny = _add_doc(ws, "tiny.pdf", 4, 2)
    dm = DocMaster(ws, get_settings(), llm=_NoLLM())

    t0 = time.perf_counter()
    lay = dm.layout(a)
    assert time.perf_counter() - t0 < 5.0  # PCA at once, UMAP queued
    assert lay.method == "PCA" and lay.status == "computing"
    assert lay.coords.shape == (24, 2) and lay.node_ids.tolist() == dm.tree(a).text_node_ids().tolist()
    assert dm.ensure_layouts() == 1  # b queued behind a; a is queued already, tiny is too small
    assert dm.layout(tiny).status == "too few points"
    worker = LayoutQueue(ws.path).worker()
    assert worker is not None
    assert dm.wait_for_layouts(timeout=300)
    lay = dm.layout(a)
    assert lay.method == "UMAP" and lay.status == "ready" and lay.coords.shape == (24, 2)
    assert dm.layout_status(lay.name) == "ready" and dm.layout(b).status == "ready"
    assert dm.ensure_layouts() == 0  # stored once
    stored = sorted(p.name for p in (ws.path / "layouts").glob("*.npy"))
    assert len(stored) == 2 and all(n.startswith("doc_") for n in stored)

    # the finished worker was reaped: its process is gone, not a zombie
    for _ in range(50):
        if _state(worker.pid) is None:
            break
        time.sleep(0.1)
    assert _state(worker.pid) is None, f"worker {worker.pid} left in state {_state(worker.pid)}"
    assert worker.returncode == 0

    # the collection layout: rows in document order, node ids ascending in each
    coll = dm.collection_layout([a, b])
    assert coll.coords.shape == (44, 2) and coll.doc_ids[:24] == [a] * 24 and coll.status == "computing"
    assert dm.wait_for_layouts(timeout=300) and dm.collection_layout([a, b]).method == "UMAP"

    # removing a document deletes its layout and the collection layouts
    dm.remove(b)
    left = sorted(p.name for p in (ws.path / "layouts").glob("*.npy"))
    assert left == [f"{dm._doc_layout_name(ws.document(a))}.npy"]


def test_layout_disabled_and_failures(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCMASTER_UI_UMAP", "off")
    ws = Workspace(tmp_path / "ws")
    a = _add_doc(ws, "a.pdf", 12, 0)
    dm = DocMaster(ws, get_settings(), llm=_NoLLM())
    lay = dm.layout(a)
    assert (lay.method, lay.status) == ("PCA", "disabled")
    assert dm.ensure_layouts() == 0 and not (ws.path / "layouts" / "queue").exists()

    # a failed job says why, and is not retried silently
    q = LayoutQueue(ws.path)
    name = layout_name("doc_x", (1,))
    q.dir.mkdir(parents=True)
    (q.dir / f"{name}.failed").write_text("ValueError: broken input")
    coords, method, status = q.layout(name, np.zeros((10, 4), np.float32))
    assert method == "PCA" and status == "failed: ValueError: broken input"


@pytest.mark.skipif(not hasattr(os, "nice"), reason="POSIX only")
def test_worker_exits_when_another_holds_the_queue(tmp_path):
    import fcntl
    import subprocess
    import sys

    q = LayoutQueue(tmp_path)
    q.queue.mkdir(parents=True)
    np.save(q.queue / "1~0001~doc_y-0000000000000000.npy", np.zeros((10, 4), np.float32))
    with open(q.dir / "worker.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run([sys.executable, "-m", "docmaster_core.index.layout_worker", str(q.dir)],
                           capture_output=True, timeout=120)
    assert r.returncode == 0 and q.pending() == 1  # left for the worker holding the lock


def test_worker_never_outlives_the_app(tmp_path):
    """Started for a parent process that is not (any more) its parent, the worker leaves
    the queue for the next start and exits instead of running on as an orphan."""
    import subprocess
    import sys

    q = LayoutQueue(tmp_path)
    q.queue.mkdir(parents=True)
    np.save(q.queue / "1~0001~doc_y-0000000000000000.npy", np.zeros((10, 4), np.float32))
    r = subprocess.run([sys.executable, "-m", "docmaster_core.index.layout_worker", str(q.dir), "1"],
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and q.pending() == 1 and not list(q.dir.glob("doc_y*.npy"))
