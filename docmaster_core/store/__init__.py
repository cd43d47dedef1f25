"""The workspace store (SPEC F9): one folder holding SQLite (documents, nodes, edges,
indexes, runs) and per-document vector files (:mod:`.workspace`, with its index/run
records and integrity checks in :mod:`.upkeep`), plus the collection-wide vector store
(:mod:`.collection`) and its persisted FAISS index (:mod:`.collection_index`)."""
from .workspace import (
    SCHEMA_VERSION,
    DocumentRecord,
    Workspace,
    file_sha256,
    params_key,
    storable_text,
)

__all__ = ["Workspace", "DocumentRecord", "SCHEMA_VERSION", "file_sha256", "params_key", "storable_text"]
