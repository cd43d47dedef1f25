"""The ``docmaster`` command line (also ``python -m docmaster_core``): :mod:`.commands`
(the parser and the commands), :mod:`.eval` (``docmaster eval``), :mod:`.review` (the
review: ``filter --review`` and ``docmaster review``) and :mod:`.common` (what the commands share)."""
from . import common
from .commands import build_parser, main

__all__ = ["main", "build_parser", "common"]
