"""Shared pytest fixtures.

``embedder``: the REAL all-MiniLM-L6-v2 embedder (``get_embedder()``), loaded once per
test session and shared by every test file (pytest makes conftest fixtures available
to all tests in this folder). Tests that use it are slow-ish on first use (model load,
a few seconds) and skip cleanly when the packaged model is not installed.

``isolated_environment`` (autouse): every test starts without the developer's
``DOCMASTER_*`` settings and OpenAI variables (``DOCMASTER_TEST_*``, which tell the tests
where their services run, are kept), and whatever a test sets is undone after it.
"""
from __future__ import annotations

import os

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


_ISOLATED = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
#: The developer's own settings, as the test session found them (fixtures that set such a
#: variable on purpose, e.g. the app's workspace, are not undone by the fixture below).
_SHELL = {k: v for k, v in os.environ.items()
          if (k.startswith("DOCMASTER_") and not k.startswith("DOCMASTER_TEST_")) or k in _ISOLATED}


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch):
    """Remove the settings the developer's shell carried into the session (``DOCMASTER_*``
    but ``DOCMASTER_TEST_*``, and the OpenAI variables) for the test; monkeypatch restores
    them, and anything the test sets through it, afterwards."""
    for name, value in _SHELL.items():
        if os.environ.get(name) == value:
            monkeypatch.delenv(name, raising=False)
    yield
