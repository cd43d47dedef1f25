"""A parse function that kills its process on files named ``crash*.pdf`` (a stand-in for a
PDF library crashing on a hostile file) and parses every other file normally.

Module-level, so a spawned parse process can import it by name."""
from __future__ import annotations

import os
from pathlib import Path

from docmaster_core.ingest.prepare import parse_file


def parse_or_crash(path: Path, parsing):
    """:func:`docmaster_core.ingest.prepare.parse_file`, except that a file whose name
    starts with ``crash`` ends the calling process at once (exit status 3)."""
    if Path(path).name.startswith("crash"):
        os._exit(3)
    return parse_file(path, parsing)
