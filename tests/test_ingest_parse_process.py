"""The local ingest executor parses in a separate process (issue 26): same trees as the
in-process parse, and a crash of the parser fails only the file it was parsing."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.pdf_factory import make_paper_pdf, make_simple_pdf, make_two_column_pdf

from docmaster_core.config import get_settings
from docmaster_core.pipeline import DocMaster


def _inputs(folder):
    folder.mkdir()
    make_paper_pdf(folder / "a_paper.pdf")
    make_two_column_pdf(folder / "b_columns.pdf")
    make_simple_pdf(folder / "c_simple.pdf", "A short page about filter cartridges and water quality.")
    return sorted(folder.glob("*.pdf"))


def _trees(dm, results):
    return {Path(r.file).name: [(n.type.value, n.content, n.page_start, n.bboxes, n.section_path, n.summary) for n in dm.ws.load_tree(r.doc_id).nodes]
            for r in results}


def test_parse_process_gives_the_same_trees_as_a_thread(tmp_path, embedder, monkeypatch):
    pdfs = _inputs(tmp_path / "in")
    monkeypatch.setenv("DOCMASTER_INGEST__PARSE_PROCESS", "false")
    threaded = DocMaster(tmp_path / "t", get_settings(), embedder=embedder)
    assert threaded.settings.ingest.parse_process is False
    r_thread = threaded.ingest(pdfs, build_index=False)
    monkeypatch.setenv("DOCMASTER_INGEST__PARSE_PROCESS", "true")
    proc = DocMaster(tmp_path / "p", get_settings(), embedder=embedder)
    r_proc = proc.ingest(pdfs, build_index=False)
    assert [r.status for r in r_proc] == ["ingested"] * 3 == [r.status for r in r_thread]
    assert _trees(proc, r_proc) == _trees(threaded, r_thread)
    assert proc._parse_pool is None  # the parse process ends with the batch


def test_a_parser_crash_fails_only_its_file(tmp_path, embedder, monkeypatch):
    import support.misbehaving_parser as crashing

    pdfs = _inputs(tmp_path / "in")
    make_simple_pdf(tmp_path / "in" / "crash_me.pdf", "This file takes the parser down.")
    files = [pdfs[0], tmp_path / "in" / "crash_me.pdf", pdfs[1], pdfs[2]]
    monkeypatch.setattr("docmaster_core.ingest.stage.parse_file", crashing.parse_or_crash)
    dm = DocMaster(tmp_path / "w", get_settings(), embedder=embedder)
    assert dm.settings.ingest.parse_process
    res = dm.ingest(files, build_index=False)
    assert [r.status for r in res] == ["ingested", "failed", "ingested", "ingested"]
    assert res[1].reason == "crash_me.pdf: the parser process crashed on this file"
    assert [d.file_name for d in dm.ws.documents()] == sorted(p.name for p in pdfs)
    assert [f for f in dm.ws.failures() if "crash_me.pdf" in str(f)]  # this process survived and recorded it


_KILLED_INGEST = """
import sys
from pathlib import Path
import support.misbehaving_parser as mp
import docmaster_core.ingest.stage as stage
from docmaster_core.config import get_settings
from docmaster_core.pipeline import DocMaster
stage.parse_file = mp.parse_or_park
inputs = sorted(Path(sys.argv[2]).glob("*.pdf"))
DocMaster(sys.argv[1], get_settings()).ingest(inputs, build_index=False, summaries=False)
"""


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie waiting for its new
    parent to reap it has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_parse_process_ends_when_the_ingest_is_killed(tmp_path):
    """kill -9 of an ingesting process leaves no parse process behind: the parse process
    notices that its parent is gone and exits within a few seconds."""
    folder = tmp_path / "in"
    folder.mkdir()
    make_simple_pdf(folder / "a_first.pdf", "A first page.")
    make_simple_pdf(folder / "park_here.pdf", "The parse of this file never ends.")
    pidfile = tmp_path / "parse.pid"
    env = {**os.environ, "DOCMASTER_EMBEDDING__MODEL": "hashing", "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
        "DOCMASTER_TEST_PARK_PIDFILE": str(pidfile)}
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_INGEST, str(tmp_path / "w"), str(folder)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not pidfile.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pidfile.exists(), "the parse process never reached the parked file"
        child = int(pidfile.read_text())
        assert child != proc.pid
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(child), "the parse process outlived the killed ingest"
    finally:
        if proc.poll() is None:
            proc.kill()
