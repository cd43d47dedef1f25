"""Shared pytest fixtures.

``embedder``: the REAL all-MiniLM-L6-v2 embedder (``get_embedder()``), loaded once per
test session and shared by every test file (pytest makes conftest fixtures available
to all tests in this folder). Tests that use it are slow-ish on first use (model load,
a few seconds) and skip cleanly when the packaged model is not installed.
"""
from __future__ import annotations

import pytest

from docmaster_core.embedding.embedders import get_embedder
from docmaster_core.errors import EmbeddingError


@pytest.fixture(scope="session")
def embedder():
    """The shared real sentence embedder (all-MiniLM-L6-v2, 384-d, unit rows), loaded once."""
    emb = get_embedder()
    try:
        emb.encode(["warm-up sentence"])
    except EmbeddingError as e:  # pragma: no cover - only without the model package
        pytest.skip(f"real embedding model unavailable: {e}")
    return emb
