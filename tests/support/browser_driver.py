"""Driving the DocMaster Streamlit app in headless Chromium (shared by the browser test
and ``scripts/bench_app.py``).

The app is started exactly as the README says (``python -m streamlit run app.py
--server.headless true ...``) with the workspace passed through
``DOCMASTER_WORKSPACE_ROOT`` / ``DOCMASTER_WORKSPACE``. Chromium is the Debian package
driven by Playwright's Python package through ``executable_path``; no browser is ever
downloaded.

Timing of one interaction (:func:`timed`): a ``MutationObserver`` in the page records
every change of the ``data-test-script-state`` attribute of ``[data-testid='stApp']``
(``running`` / ``notRunning``) with ``performance.now()``; the interval runs from the
moment just before the click or key press to the first ``notRunning`` that follows a
``running`` after it, i.e. until the server-side rerun has finished and its last
delta has reached the browser. Changes delivered in one observer callback are recorded
one by one (from each record's ``oldValue``), so a short rerun is never missed. All times are wall-clock seconds.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = next((p for p in (os.environ.get("DOCMASTER_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p and Path(p).is_file()), None)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]
#: (URL path, page title) of the six pages, in navigation order.
PAGES = [("", "Upload"), ("tree", "Tree explorer"), ("hyperedges", "Hyper-edge graph"),
         ("clusters", "Semantic clusters"), ("filter", "Filter"), ("chat", "Chat")]
EXCEPTION = "[data-testid='stException']"

_OBSERVER_JS = """
() => {
  const cur = document.querySelector("[data-testid='stApp']");
  if (window.__dmObs && window.__dmApp === cur) return;
  if (window.__dmObs) window.__dmObs.disconnect();
  window.__dmEvents = window.__dmEvents || [];
  const attach = () => {
    const app = document.querySelector("[data-testid='stApp']");
    if (!app) { setTimeout(attach, 50); return; }
    window.__dmApp = app;
    window.__dmEvents.push([performance.now(), app.getAttribute('data-test-script-state')]);
    // one callback may carry several changes (running -> notRunning in one batch): each
    // record's oldValue is the state before it, so every state in between is recorded
    window.__dmObs = new MutationObserver((records) => {
      const now = performance.now();
      for (let i = 1; i < records.length; i++) window.__dmEvents.push([now, records[i].oldValue]);
      window.__dmEvents.push([now, app.getAttribute('data-test-script-state')]);
    });
    window.__dmObs.observe(app, {attributes: true, attributeOldValue: true,
                                 attributeFilter: ['data-test-script-state']});
  };
  attach();
}
"""

_DONE_JS = """
(t0) => {
  const ev = window.__dmEvents || [];
  let ran = false;
  for (const [t, s] of ev) {
    if (t < t0) continue;
    if (s === 'running') ran = true;
    else if (ran && s === 'notRunning') return t;
  }
  return null;
}
"""


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def app_server(root: Path, workspace: Path, log_path: Path, extra_env: dict[str, str] | None = None,
               start_timeout: float = 60.0) -> Iterator[str]:
    """Run ``streamlit run app.py`` headless on a free port; yields its base URL.

    Args:
        root: ``DOCMASTER_WORKSPACE_ROOT`` (the workspace must lie under it).
        workspace: ``DOCMASTER_WORKSPACE``.
        log_path: Where the server's stdout/stderr go.
        extra_env: More environment variables (e.g. ``DOCMASTER_UI_UMAP=off``).
        start_timeout: Seconds to wait for the port to accept connections.

    Raises:
        RuntimeError: the server did not start (see the log).
    """
    port = free_port()
    env = dict(os.environ, DOCMASTER_WORKSPACE_ROOT=str(root), DOCMASTER_WORKSPACE=str(workspace),
               **(extra_env or {}))
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app.py"), "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + start_timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"streamlit server did not start; see {log_path}") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 1800) -> Iterator[Any]:
    """A Playwright page in headless Debian Chromium (``executable_path``, no download).

    Raises:
        RuntimeError: no Chromium binary was found.
    """
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        raise RuntimeError("no Chromium binary (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def install_observer(page: Any) -> None:
    """Start recording the app's script-run state changes (idempotent per page load)."""
    page.evaluate(_OBSERVER_JS)


def wait_idle(page: Any, timeout: float = 120.0, quiet: float = 0.5) -> None:
    """Wait until the app is connected, no script runs, no skeleton is drawn, and this
    has held for ``quiet`` seconds.

    Raises:
        TimeoutError: not idle within ``timeout`` seconds.
    """
    end = time.time() + timeout
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout * 1000)
    calm_since = None
    while time.time() < end:
        state = page.evaluate(
            "() => { const a = document.querySelector(\"[data-testid='stApp']\");"
            " return a ? a.getAttribute('data-test-script-state') : null; }"
        )
        busy = state != "notRunning" or page.locator("[data-testid='stSkeleton']").count() > 0
        if busy:
            calm_since = None
        elif calm_since is None:
            calm_since = time.time()
        elif time.time() - calm_since >= quiet:
            return
        time.sleep(0.1)
    raise TimeoutError(f"app not idle after {timeout} s")


def open_page(page: Any, url: str, timeout: float = 120.0) -> float:
    """Navigate to ``url`` and wait until the page has finished its first run.

    Returns:
        Seconds from navigation start to idle (the page-load time; ``quiet`` excluded).
    """
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("h1", timeout=timeout * 1000)
    install_observer(page)
    wait_idle(page, timeout=timeout, quiet=0.5)
    return time.perf_counter() - t0 - 0.5


def navigate(page: Any, title: str, timeout: float = 120.0) -> float:
    """Switch page through the sidebar navigation (same session, state kept).

    Returns:
        Seconds from the click until the page's run has finished.
    """
    link = page.locator("[data-testid='stSidebarNav'] a").filter(has_text=title).first
    try:
        dt = timed(page, link.click, timeout=timeout)
    except TimeoutError:  # the run was missed (e.g. the app element was re-created): wait for idle instead
        wait_idle(page, timeout=timeout)
        dt = float("nan")
    page.wait_for_selector("h1", timeout=timeout * 1000)
    return dt


def timed(page: Any, action: Callable[[], None], timeout: float = 120.0,
          until: Callable[[], bool] | None = None) -> float:
    """Perform ``action`` (a click or key press) and time the rerun it triggers.

    Args:
        page: The Playwright page (with :func:`install_observer` done).
        action: Triggers the rerun.
        timeout: Seconds before giving up.
        until: Optional extra condition (e.g. a table is present) that must hold too;
            then the time is the later of the rerun end and the condition.

    Returns:
        Seconds from just before the action to the end of the rerun.

    Raises:
        TimeoutError: the rerun did not finish within ``timeout``.
    """
    install_observer(page)
    t0 = page.evaluate("() => performance.now()")
    action()
    end = time.time() + timeout
    t_done = None
    while time.time() < end:
        if t_done is None:
            t_done = page.evaluate(_DONE_JS, t0)
        if t_done is not None and (until is None or until()):
            break
        time.sleep(0.05)
    else:
        raise TimeoutError(f"no finished rerun within {timeout} s")
    if until is not None:
        t_done = max(t_done, page.evaluate("() => performance.now()") - 50.0)
    return (t_done - t0) / 1000.0


def exception_count(page: Any) -> int:
    """Number of Streamlit exception boxes currently shown."""
    return page.locator(EXCEPTION).count()


def move_slider(page: Any, label: str, presses: int = 1, key: str = "ArrowRight") -> None:
    """Focus the thumb of the slider whose label contains ``label`` and press ``key``.

    Raises:
        LookupError: no such slider.
    """
    box = page.locator("[data-testid='stSlider']").filter(has_text=label)
    if box.count() == 0:
        raise LookupError(f"no slider labelled {label!r}")
    thumb = box.first.get_by_role("slider").first  # <input type=range> (react-aria) or [role=slider]
    thumb.focus()
    for _ in range(presses):
        thumb.press(key)


def slider_value(page: Any, label: str) -> str:
    """The current value (as text) of the slider whose label contains ``label``."""
    thumb = page.locator("[data-testid='stSlider']").filter(has_text=label).first.get_by_role("slider").first
    return thumb.get_attribute("aria-valuetext") or thumb.get_attribute("aria-valuenow") or ""


def selectbox(page: Any, label: str):
    """The ``stSelectbox`` element whose label contains ``label``."""
    return page.locator("[data-testid='stSelectbox']").filter(has_text=label).first


def selected_text(box: Any) -> str:
    """The text of the chosen option of a selectbox (its combobox input's value)."""
    inp = box.locator("input")
    return inp.first.input_value() if inp.count() else box.inner_text()


def open_options(page: Any, label: str, option_text: str):
    """Open the selectbox labelled ``label`` and type ``option_text`` into its search
    box (the dropdown is virtualised); returns the locator of the first matching option
    (click it to choose)."""
    selectbox(page, label).click()
    page.keyboard.type(option_text)
    return page.get_by_role("option").filter(has_text=option_text).first


def choose_option(page: Any, label: str, option_text: str) -> None:
    """Open the selectbox labelled ``label``, type ``option_text`` into its search box
    and click the first option containing it."""
    open_options(page, label, option_text).click()


def set_condition(page: Any, text: str) -> None:
    """Type the filter condition and commit it (Ctrl+Enter commits a text area)."""
    area = page.locator("[data-testid='stTextArea'] textarea").first
    area.fill(text)
    area.press("Control+Enter")


def run_filter_button(page: Any):
    """The 'Run filter with A and B' button."""
    return page.get_by_role("button", name="Run filter with A and B")


def decision_tables_ready(page: Any, n_docs: int) -> bool:
    """True when both per-configuration ranked tables are drawn (the ``kept N of M
    documents`` line of A and B is shown and at least two data frames exist)."""
    txt = kept_lines(page)
    return txt.count() >= 2 and page.locator("[data-testid='stDataFrame']").count() >= 2 and \
        txt.first.inner_text().find(f"of {n_docs} documents") >= 0


def kept_lines(page: Any) -> Any:
    """The ``Configuration X · kept N of M documents (...)`` lines of the Filter page."""
    return page.locator("[data-testid='stMarkdownContainer']").filter(has_text=re.compile(r"kept \d+ of \d+ documents"))
