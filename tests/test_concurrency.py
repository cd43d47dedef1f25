"""Concurrency (issue 7): one writer at a time, readers always see whole documents.

Two real ``python -m docmaster_core ingest`` processes on one workspace: the second is
refused with a clear message (exit code 3) while the first holds the single-writer
lock, and the database stays sound. A reader thread loops over ``documents()``,
``load_tree`` and ``load_embeddings`` during the ingest and never sees a half document;
``docmaster check`` run during the ingest passes.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from docmaster_core import cli
from docmaster_core.errors import DocMasterError
from docmaster_core.store.workspace import Workspace

try:
    from support.pdf_factory import make_many_pages_pdf, make_paper_pdf, make_simple_pdf, make_two_column_pdf
except ImportError:  # tests imported as a package
    from tests.pdf_factory import make_many_pages_pdf, make_paper_pdf, make_simple_pdf, make_two_column_pdf

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), DOCMASTER_EMBEDDING__MODEL="hashing",
                DOCMASTER_LLM__BACKEND="offline", DOCMASTER_PARSING__PARSER="pymupdf")


class _Reader(threading.Thread):
    def __init__(self, ws_dir: Path):
        super().__init__(daemon=True)
        self.ws_dir = ws_dir
        self.stop = threading.Event()
        self.counts: list[int] = []
        self.half: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        ws = None
        while not self.stop.is_set():
            try:
                if ws is None and (self.ws_dir / "workspace.sqlite").exists():
                    ws = Workspace(self.ws_dir, create=False)
                if ws is not None:
                    docs = ws.documents()
                    for d in docs:
                        t = ws.load_tree(d.doc_id)
                        e = ws.load_embeddings(d.doc_id)
                        if not (len(t.nodes) == d.n_nodes == e.shape[0] and t.nodes[0].type.value == "ROOT"
                                and all(n.summary for n in t.nodes)):
                            self.half.append(d.file_name)
                    self.counts.append(len(docs))
            except (DocMasterError, OSError, ValueError) as exc:  # pragma: no cover - reported below
                self.errors.append(f"{type(exc).__name__}: {exc}")
            time.sleep(0.02)
        if ws is not None:
            ws.close()


@pytest.mark.slow
def test_two_ingests_at_once_and_readers_during_ingest(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    make_paper_pdf(src / "paper.pdf")
    make_paper_pdf(src / "paper_outline.pdf", with_outline=True)
    make_two_column_pdf(src / "two_column.pdf")
    make_many_pages_pdf(src / "pages.pdf", 8)
    other = make_simple_pdf(tmp_path / "other.pdf", "The second writer brings this page about locks. " * 6)
    ws_dir = tmp_path / "ws"
    reader = _Reader(ws_dir)
    reader.start()
    a = subprocess.Popen([sys.executable, "-m", "docmaster_core", "ingest", str(src), "--workspace", str(ws_dir),
                          "--json", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=str(REPO))
    try:
        lock = ws_dir / ".write.lock"
        deadline = time.monotonic() + 120
        while a.poll() is None and time.monotonic() < deadline:
            if lock.exists() and lock.read_text().strip() == str(a.pid):
                break  # the first writer holds the lock
            time.sleep(0.02)
        b = subprocess.run([sys.executable, "-m", "docmaster_core", "ingest", str(other), "--workspace", str(ws_dir)],
                           capture_output=True, text=True, env=_env(), cwd=str(REPO), timeout=180)
        a_running = a.poll() is None
        # a check during the ingest: the database is sound at every moment
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc_check = cli.main(["check", "--workspace", str(ws_dir), "--json"])
        out_a, err_a = a.communicate(timeout=300)
    finally:
        if a.poll() is None:
            a.kill()
        reader.stop.set()
        reader.join(timeout=30)
    if a_running:  # the second writer ran entirely while the first held the lock
        assert b.returncode == 3, (b.stdout, b.stderr)
        assert "being written by another process" in b.stderr and b.stderr.count("\n") == 1
        assert "Traceback" not in b.stderr
    else:  # pragma: no cover - only on a machine fast enough to finish the first ingest first
        assert b.returncode == 0
    assert rc_check == 0 and json.loads(buf.getvalue())["problems"] == []
    assert a.returncode == 0, err_a.decode()[-2000:]
    assert json.loads(out_a)["ingested"] == 4
    ws = Workspace(ws_dir, create=False)
    names = sorted(d.file_name for d in ws.documents())
    assert names == sorted(["paper.pdf", "paper_outline.pdf", "two_column.pdf", "pages.pdf"]
                           + (["other.pdf"] if not a_running else []))
    assert ws.check() == []
    # the reader saw only whole documents, and saw the collection grow
    assert reader.errors == [] and reader.half == []
    assert reader.counts and max(reader.counts) >= 4
    assert reader.counts == sorted(reader.counts)  # never a document that disappears again


def test_writer_lock_is_released_when_the_writer_dies(tmp_path):
    """The lock is an ``flock``: a killed writer cannot leave the workspace locked."""
    ws_dir = tmp_path / "ws"
    Workspace(ws_dir).close()
    code = ("import sys, time; from docmaster_core.store.workspace import Workspace; "
            "w = Workspace(sys.argv[1]); w.acquire_write_lock(); print('locked', flush=True); time.sleep(600)")
    p = subprocess.Popen([sys.executable, "-c", code, str(ws_dir)], stdout=subprocess.PIPE, text=True,
                         env=_env(), cwd=str(REPO))
    try:
        assert p.stdout.readline().strip() == "locked"
        from docmaster_core.errors import WorkspaceLockedError

        ws = Workspace(ws_dir)
        try:
            ws.acquire_write_lock()
            raise AssertionError("lock was not exclusive")
        except WorkspaceLockedError as e:
            assert "another process" in str(e)
    finally:
        p.kill()
        p.wait()
    ws.acquire_write_lock()  # free again after the kill
    ws.release_write_lock()


def test_writers_of_one_process_take_turns_and_another_process_is_named(tmp_path):
    """Two workspace objects of one process (the app's sessions, a background save) never
    see each other as "another process": the second waits for the first. A real other
    process is named with what it is doing (issue 36)."""
    import threading
    import time

    from docmaster_core.errors import WorkspaceLockedError

    ws_dir = tmp_path / "ws"
    a, b = Workspace(ws_dir), Workspace(ws_dir)
    order = []

    def first():
        with a.writing(what="index save"):
            order.append("a in")
            time.sleep(0.3)
            order.append("a out")

    th = threading.Thread(target=first)
    th.start()
    time.sleep(0.05)
    with b.writing(what="collection index"):  # waits, no error
        order.append("b in")
    th.join()
    assert order == ["a in", "a out", "b in"]
    with a.writing(), b.writing():  # the same thread through two objects: re-entrant
        pass
    from support.locks import other_writer

    with other_writer(ws_dir, "ingest") as p:
        try:
            a.acquire_write_lock()
            raise AssertionError("lock was not exclusive")
        except WorkspaceLockedError as e:
            assert f"another process (process {p.pid}: ingest since" in str(e)
    a.acquire_write_lock()
    a.release_write_lock()


def test_threads_sharing_one_workspace_object_take_turns_and_a_long_hold_is_named(tmp_path, monkeypatch):
    """The app's facade is shared by its threads (a page's run, background index saves): a second
    thread writing through the *same* workspace object waits for the first (it used to go straight
    in, and its exit could release the first one's lock); a writer of this process that holds the
    lock too long is named instead of being waited for without end (a newcomer's clusters page
    hung with no message, issue 36)."""
    from docmaster_core.errors import WorkspaceLockedError
    from docmaster_core.store import workspace as wsmod

    ws = Workspace(tmp_path / "ws")
    order, started = [], threading.Event()

    def first():
        with ws.writing(what="index save"):
            order.append("a in")
            started.set()
            time.sleep(0.4)
            order.append("a out")

    th = threading.Thread(target=first)
    th.start()
    started.wait(5)
    with ws.writing(what="collection index"):  # the same object, another thread: waits
        order.append("b in")
        with ws.writing():  # re-entrant for this thread
            pass
    th.join()
    assert order == ["a in", "a out", "b in"]
    ws.release_write_lock()  # holds nothing any more: a no-op
    monkeypatch.setattr(wsmod, "IN_PROCESS_WAIT_S", 0.3)
    release = threading.Event()

    def holder():
        with ws.writing(what="index save"):
            started.set()
            release.wait(10)

    started.clear()
    th = threading.Thread(target=holder)
    th.start()
    started.wait(5)
    try:
        with pytest.raises(WorkspaceLockedError, match=r"being written by this app \(index save since"):
            ws.acquire_write_lock()
    finally:
        release.set()
        th.join()
    ws.acquire_write_lock()  # free again
    ws.release_write_lock()
