"""Shared pytest fixtures.

``embedder``: the REAL all-MiniLM-L6-v2 embedder (``get_embedder()``), loaded once per
test session and shared by every test file (pytest makes conftest fixtures available
to all tests in this folder). Tests that use it are slow-ish on first use (model load,
a few seconds) and skip cleanly when the packaged model is not installed.

``app_env``, ``app_uploaded`` (per test module): the app tests' workspace root and
workspace (passed to the app through ``DOCMASTER_WORKSPACE_ROOT`` / ``DOCMASTER_WORKSPACE``,
as a deployment would, with ``DOCMASTER_UI_UMAP=off``), and that workspace with two
generated PDFs and one broken file uploaded and ingested through the Upload page.
Tests that use them are marked ``slow`` (an ingest with the real model, then several
seconds per page run); see ``pytest_collection_modifyitems``.

``isolated_environment`` (autouse): every test starts without the developer's
``DOCMASTER_*`` settings and OpenAI variables (``DOCMASTER_TEST_*``, which tell the tests
where their services run, are kept), and whatever a test sets is undone after it.
"""
from __future__ import annotations

import os
from pathlib import Path

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


# ------------------------------------------------------------------------ the app's workspace
@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """``{"root", "ws", "inputs"}``: the app's allowed root, its workspace (set in the
    environment for the module's tests, restored afterwards) and a folder for inputs."""
    root = tmp_path_factory.mktemp("approot")
    inputs = tmp_path_factory.mktemp("inputs")
    saved = {k: os.environ.get(k) for k in ("DOCMASTER_WORKSPACE_ROOT", "DOCMASTER_WORKSPACE", "DOCMASTER_UI_UMAP")}
    os.environ["DOCMASTER_WORKSPACE_ROOT"] = str(root)
    os.environ["DOCMASTER_WORKSPACE"] = str(root / "ws")
    os.environ["DOCMASTER_UI_UMAP"] = "off"
    yield {"root": root, "ws": root / "ws", "inputs": inputs}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def app_uploaded(app_env):
    """The AppTest session that uploaded two generated PDFs and one broken file through
    the Upload page and ingested them."""
    pytest.importorskip("streamlit")
    from support.app import make_pdf, open_app, run_app

    a = make_pdf(app_env["inputs"] / "retrieval.pdf", "Dense Retrieval for Open-Domain QA", "retrieval")
    b = make_pdf(app_env["inputs"] / "storage.pdf", "A Distributed Storage System", "storage")
    at = open_app()
    at.file_uploader(key="w_upload_files").set_value([
        ("../../retrieval paper.pdf", a.read_bytes(), "application/pdf"),
        ("storage.pdf", b.read_bytes(), "application/pdf"),
        ("broken.pdf", b"%PDF-1.4 this is not really a pdf", "application/pdf"),
    ])
    run_app(at)
    at.button(key="w_upload_ingest").click()
    run_app(at)
    return at


#: Fixtures whose tests are slow: an ingest with the real model, then AppTest page runs.
SLOW_FIXTURES = {"app_env", "app_uploaded"}


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test that uses the app's ingested workspace (:data:`SLOW_FIXTURES`),
    so that ``pytest -m "not slow"`` is the fast development subset."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def fresh_chat():
    """Every app test starts with no stored chat conversation: the app keeps it in the
    workspace (a reload shows it again), and the app tests share one workspace."""
    root = os.environ.get("DOCMASTER_WORKSPACE_ROOT")
    if root:
        for log in Path(root).glob("*/chat/history.json"):
            log.unlink(missing_ok=True)
    yield


@pytest.fixture(scope="module")
def ray_cluster():
    """Ray for one test module: the head at ``DOCMASTER_TEST_RAY_ADDRESS`` when set
    (``.ci/run`` starts one on 127.0.0.1 with 2 CPUs), else a local instance with 2 CPUs;
    disconnected (and a local instance stopped) after the module."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(log_to_driver=False, logging_level="ERROR")
    address = os.environ.get("DOCMASTER_TEST_RAY_ADDRESS") or None
    if address:
        ray.init(address=address, **quiet)
    else:
        ray.init(address="local", num_cpus=2, include_dashboard=False, **quiet)
    yield ray
    ray.shutdown()
