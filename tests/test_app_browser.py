"""Browser smoke test: the real Streamlit server, every page opened in headless Chromium,
no page shows an exception, and one screenshot per page.

Skipped unless the ``playwright`` package and a Chromium binary are present (Debian:
``apt-get install chromium``; this test never downloads browsers). Screenshots go to
``$DOCMASTER_SHOTS_DIR`` when set, else to pytest's temporary directory.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = next((p for p in (os.environ.get("DOCMASTER_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p and Path(p).is_file()), None)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary (apt-get install chromium)"),
]

PAGES = [("", "Upload"), ("tree", "Tree explorer"), ("hyperedges", "Hyper-edge graph"),
         ("clusters", "Semantic clusters"), ("filter", "Filter"), ("chat", "Chat")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("playwright.sync_api")
    from test_app import make_pdf

    from docmaster_core.pipeline import DocMaster

    root = tmp_path_factory.mktemp("browser_root")
    inputs = tmp_path_factory.mktemp("browser_inputs")
    pdfs = [make_pdf(inputs / "retrieval.pdf", "Dense Retrieval", "retrieval"),
            make_pdf(inputs / "storage.pdf", "A Storage System", "storage")]
    res = DocMaster(root / "ws").ingest(pdfs)
    assert all(r.status == "ingested" for r in res), [r.reason for r in res]
    port = _free_port()
    env = dict(os.environ, DOCMASTER_WORKSPACE_ROOT=str(root), DOCMASTER_WORKSPACE=str(root / "ws"),
               DOCMASTER_UI_UMAP="off")
    log = open(root / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("streamlit server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _settle(page, timeout: float = 90.0) -> None:
    """Wait until the app has drawn its content and no skeleton is left."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout * 1000)
    page.wait_for_selector("h1", timeout=timeout * 1000)
    end = time.time() + timeout
    while time.time() < end and page.locator("[data-testid='stSkeleton']").count():
        time.sleep(0.3)
    time.sleep(1.5)


def test_every_page_renders_in_chromium(server, tmp_path):
    from playwright.sync_api import sync_playwright

    out = Path(os.environ.get("DOCMASTER_SHOTS_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--no-first-run"],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            for path, title in PAGES:
                page.goto(f"{server}/{path}")
                _settle(page)
                assert page.locator("h1").first.inner_text().strip() == title
                assert page.locator("[data-testid='stException']").count() == 0, path
                assert page.get_by_text("LLM: offline (extractive)").count() >= 1, path
                page.screenshot(path=str(out / f"{path or 'upload'}.png"), full_page=True)
        finally:
            browser.close()
    assert len(list(out.glob("*.png"))) == len(PAGES)
