"""Another process that holds a workspace's write lock, for tests of what a writer sees."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def other_writer(workspace: str | os.PathLike, what: str = "index") -> Iterator[subprocess.Popen]:
    """A Python process that opens ``workspace``, takes its write lock (doing ``what``) and
    waits; killed on exit. Yields the process (its ``pid`` is in the lock file)."""
    code = ("import sys, time; from docmaster_core.store.workspace import Workspace; "
            "w = Workspace(sys.argv[1]); w.acquire_write_lock(what=sys.argv[2]); print('locked', flush=True); "
            "time.sleep(600)")
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, "-c", code, str(workspace), what], stdout=subprocess.PIPE, text=True,
                         cwd=str(REPO), env=env)
    try:
        if p.stdout.readline().strip() != "locked":
            raise RuntimeError("the other writer did not take the lock")
        yield p
    finally:
        p.kill()
        p.wait()
