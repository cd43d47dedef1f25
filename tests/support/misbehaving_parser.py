"""Parse functions that misbehave on purpose, for the parse-process tests: one kills its
process on files named ``crash*.pdf`` (a stand-in for a PDF library crashing on a hostile
file), one hangs on files named ``park*.pdf``; every other file is parsed normally.

Module-level, so a spawned parse process can import them by name."""
from __future__ import annotations

import os
import time
from pathlib import Path

from docmaster_core.ingest.prepare import parse_file

#: Environment variable naming the file :func:`parse_or_park` writes its process id to.
PARK_PIDFILE = "DOCMASTER_TEST_PARK_PIDFILE"


def parse_or_crash(path: Path, parsing):
    """:func:`docmaster_core.ingest.prepare.parse_file`, except that a file whose name
    starts with ``crash`` ends the calling process at once (exit status 3)."""
    if Path(path).name.startswith("crash"):
        os._exit(3)
    return parse_file(path, parsing)


def parse_or_park(path: Path, parsing):
    """:func:`docmaster_core.ingest.prepare.parse_file`, except that on a file whose name
    starts with ``park`` it writes its process id to ``$DOCMASTER_TEST_PARK_PIDFILE`` and
    sleeps for 10 minutes (a parse that outlives whoever waits for it)."""
    if Path(path).name.startswith("park"):
        Path(os.environ[PARK_PIDFILE]).write_text(str(os.getpid()))
        time.sleep(600)
    return parse_file(path, parsing)
