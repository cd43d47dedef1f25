"""An ingest stopped part-way (its tab closed: the app's ingest runs with the page's script) is
said on the next visit to the Upload page, which offers to ingest the files it did not reach
(a newcomer closed the tab after 12 s and found no word of it later)."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from support.app import collection_table, make_pdf, open_app, run_app  # noqa: E402
from ui import ingest as ui_ingest  # noqa: E402


def _warnings(at):
    """The page's warnings as shown (Markdown escapes removed)."""
    return [w.value.replace("\\", "") for w in at.warning]


def _journal(ws, files, name=".ingest-test.json"):
    j = ws / "uploads" / name
    j.write_text(json.dumps({"started": 0, "files": [str(f) for f in files]}), encoding="utf-8")
    return j


def test_a_stopped_ingest_is_said_and_resumed(app_env, app_uploaded):
    ws = app_env["ws"]
    up = ws / "uploads"
    late = make_pdf(up / "manual.pdf", "An Espresso Machine Manual", "storage")
    journal = _journal(ws, [up / "retrieval_paper.pdf", up / "storage.pdf", late])
    # an ingest still running in this server process is not "stopped"
    ui_ingest._RUNNING.add(str(journal))
    try:
        at = open_app("pages/upload.py")
        assert not [w for w in _warnings(at) if "stopped before it finished" in w]
    finally:
        ui_ingest._RUNNING.discard(str(journal))
    at = open_app("pages/upload.py")
    warn = [w for w in _warnings(at) if "stopped before it finished" in w]
    assert len(warn) == 1 and "1 file not ingested: manual.pdf" in warn[0], warn
    at.button(key="w_upload_resume").click()
    run_app(at)
    assert sorted(collection_table(at)["file"]) == ["manual.pdf", "retrieval_paper.pdf", "storage.pdf"]
    assert not list(up.glob(".ingest-*.json"))  # the resumed ingest finished: nothing is left to say
    assert not [w for w in _warnings(at) if "stopped before it finished" in w]


def test_a_stopped_ingest_can_be_forgotten(app_env, app_uploaded):
    ws = app_env["ws"]
    other = make_pdf(ws / "uploads" / "other.pdf", "Another Report", "retrieval")
    _journal(ws, [other], ".ingest-forget.json")
    at = open_app("pages/upload.py")
    assert any("other.pdf" in w for w in _warnings(at))
    at.button(key="w_upload_dismiss").click()
    run_app(at)
    assert not [w for w in _warnings(at) if "stopped before it finished" in w]
    assert not (ws / "uploads" / ".ingest-forget.json").exists() and other.exists()  # the upload stays
