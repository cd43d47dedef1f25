"""Ingest (SPEC F1, F2, F9): files -> document trees -> embeddings -> the workspace.

:mod:`.prepare` turns one file into a prepared document with no workspace access;
:mod:`.stage` is the facade's ingest stage (the local executor, summaries, stores);
:mod:`.ray_executor` runs the preparation on a Ray cluster."""
from . import prepare
from .prepare import *  # noqa: F401,F403  (the names of prepare.__all__)
from .stage import IngestStage

__all__ = [*prepare.__all__, "IngestStage"]
