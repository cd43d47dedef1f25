"""Browser tests of the demo path (issue 24), in headless Debian Chromium through
Playwright, on real corpus PDFs (``../shared/corpus/pdf``; skipped when absent)
ingested with the real embedder, and the app started as the README says with UMAP on:

1. The Semantic clusters page does not wait for UMAP on a newly opened document: it
   draws PCA at once and says the UMAP layout is still being computed; when the
   background worker has stored it, a button offers the switch and the chart stays PCA
   until it is pressed (no silent jump). The finished worker leaves no zombie process.
2. Colours and names follow the clusters' content under an alpha move (0.60 -> 0.30):
   a point changes colour only when it leaves its group's matched successor (at most
   n - maximum overlap matching points change), and one name keeps one colour.
3. The hyper-edge graph of the Transformer paper opens on a body hyper-edge, not on its
   front matter (the copyright notice), and its graph is drawn when the page is done.
4. The first five minutes on an empty workspace: the example collection, its filter,
   the Chat's scope kept across page switches, the example question answered ("six
   months") from all documents, the examples removed in one click, ``docmaster check``
   passing.

Skipped unless the ``playwright`` package and a Chromium binary are present.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

from ui.plain import GROUP_RE
from support.browser_driver import (
    CHROMIUM,
    app_server,
    chromium,
    exception_count,
    move_slider,
    open_options,
    open_page,
    selectbox,
    selected_text,
    slider_value,
    timed,
    wait_idle,
)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRANSFORMER = "1706.03762v7_attention-is-all-you-need.pdf"
PDFS = [TRANSFORMER, "1505.04597_unet.pdf"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary (apt-get install chromium)"),
]

_TRACES_JS = """
() => {
  const c = document.querySelector("[data-testid='stVegaLiteChart']");
  if (!c) return null;
  const title = c.querySelector(".role-title-text");
  const traces = {};
  for (const p of c.querySelectorAll("g.mark-symbol.role-mark path")) {
    const m = /topic: (.*?); passage #: (\\d+);/.exec(p.getAttribute("aria-label") || "");
    if (!m) continue;
    const t = traces[m[1]] || (traces[m[1]] = {name: m[1], color: p.getAttribute("fill"), nodes: []});
    t.nodes.push(Number(m[2]));
  }
  return {title: title ? title.textContent : "", traces: Object.values(traces)};
}
"""


def _chart(page, timeout: float = 30.0) -> dict:
    """The clusters chart (Vega-Lite, drawn as SVG; each point's ``aria-label`` names its
    fields): ``{"title", "traces": [{"name", "color", "nodes"}]}``, one trace per topic, once
    two reads 0.2 s apart agree (Vega draws asynchronously after the script run ends)."""
    end = time.time() + timeout
    last = None
    while time.time() < end:
        got = page.evaluate(_TRACES_JS)
        if got and got["traces"] and got == last:  # the same in two reads: Vega has finished drawing
            return got
        last = got
        time.sleep(0.2)
    raise AssertionError("no clusters chart drawn")


def _live_text(page, text: str) -> int:
    """Elements showing ``text`` that belong to the current run: during a rerun (of the page or
    a fragment) Streamlit keeps the previous run's elements, marked stale (``data-stale``, drawn
    faded), until the run replaces them; those are not what the page now says."""
    return page.locator("[data-testid='stElementContainer']:not([data-stale='true'])", has_text=text).count()


def _points(chart: dict) -> dict[int, tuple[str, str]]:
    """``{node: (cluster id, colour)}``; a legend name is "Topic 3 · its telling words (size)", of
    which the id is what follows a cluster across redraws."""
    return {int(n): (t["name"].split(" · ")[0], t["color"]) for t in chart["traces"] for n in t["nodes"]}


def _server_pid(url: str) -> int | None:
    port = url.rsplit(":", 1)[1]
    for p in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(cmd) and port.encode() in cmd:
            return int(p.name)
    return None


def _zombie_children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z" and int(fields[1]) == pid:
            out.append(int(p.name))
    return out


@pytest.fixture(scope="module")
def umap_server(tmp_path_factory, embedder):
    """The app (UMAP on) on a workspace of the Transformer and U-Net papers."""
    pytest.importorskip("playwright.sync_api")
    pdfs = [SHARED / "corpus" / "pdf" / n for n in PDFS]
    if not all(p.is_file() for p in pdfs):
        pytest.skip(f"corpus PDFs not found under {SHARED / 'corpus' / 'pdf'}")
    from docmaster_core.pipeline import DocMaster

    root = tmp_path_factory.mktemp("browser_demo_root")
    res = DocMaster(root / "ws", embedder=embedder).ingest(pdfs)  # no layout yet: not ingested by the app
    assert all(r.status == "ingested" for r in res), [r.reason for r in res]
    with app_server(root, root / "ws", root / "server.log", {"DOCMASTER_UI_UMAP": "on"}) as url:
        yield url, root / "ws"


def _choose_the_transformer_paper(page) -> None:
    """Pick the Transformer paper in the page's Document selector (when it is not chosen) and wait."""
    if "attention" not in selected_text(selectbox(page, "Document")).lower():
        timed(page, open_options(page, "Document", "attention").click)
    wait_idle(page)


def test_clusters_page_never_waits_for_umap_and_leaves_no_zombie(umap_server):
    url, ws = umap_server
    with chromium() as page:
        open_page(page, f"{url}/clusters")
        assert exception_count(page) == 0
        _choose_the_transformer_paper(page)
        chart = _chart(page)
        # drawn without waiting: PCA, and the page says why
        assert chart["title"].endswith("(PCA map)"), chart["title"]
        assert page.get_by_text("UMAP layout not ready yet").count() == 1
        # the background worker stores the layout; the page offers the switch and has not
        # jumped; never "not ready yet" and "is ready ... Switch" at once (issue 36)
        switch = page.get_by_role("button", name="Switch to the UMAP layout")
        end, polls = time.time() + 400, 0
        while time.time() < end:
            waiting = _live_text(page, "UMAP layout not ready yet")
            ready = _live_text(page, "The UMAP layout of this view is ready")
            assert not (waiting and ready), "two contradicting UMAP banners"
            assert waiting <= 1 and ready <= 1, (waiting, ready)
            # one banner is always on the page (the previous one, faded, while the fragment redraws)
            assert page.get_by_text("UMAP layout not ready yet").count() \
                + page.get_by_text("The UMAP layout of this view is ready").count() >= 1
            polls += 1
            if ready and switch.count():
                break
            time.sleep(0.25)
        switch.wait_for(timeout=1_000)
        assert polls > 1 and page.get_by_text("UMAP layout not ready yet").count() == 0
        assert _chart(page)["title"].endswith("(PCA map)")
        switch.click()
        wait_idle(page)
        end = time.time() + 30
        while not _chart(page)["title"].endswith("(UMAP map)") and time.time() < end:
            time.sleep(0.2)
        assert _chart(page)["title"].endswith("(UMAP map)")
        assert exception_count(page) == 0
    # both documents' layouts are stored; the worker has exited and was reaped
    end = time.time() + 300
    while any((ws / "layouts" / "queue").glob("*.npy")) and time.time() < end:
        time.sleep(1)
    assert len(list((ws / "layouts").glob("doc_*.npy"))) == len(PDFS)
    pid = _server_pid(url)
    assert pid is not None
    time.sleep(2)
    assert _zombie_children(pid) == []


def _check_follow(before: dict, after: dict) -> tuple[int, int, int]:
    """Invariants of one redraw: one name one colour, and a point changes colour or name only
    when it leaves its group's matched successor (at most n - maximum overlap matching).
    Returns (moved, recoloured, renamed)."""
    from scipy.optimize import linear_sum_assignment

    assert set(before) == set(after) and len(before) > 50
    for pts in (before, after):  # one name, one colour
        by_name: dict[str, set] = {}
        for name, color in pts.values():
            by_name.setdefault(name, set()).add(color)
        assert all(len(c) == 1 for c in by_name.values())
    # the fewest points any one-to-one pairing of old and new groups must change
    old = sorted({v[0] for v in before.values()})
    new = sorted({v[0] for v in after.values()})
    overlap = np.zeros((len(old), len(new)), dtype=int)
    for n in before:
        overlap[old.index(before[n][0]), new.index(after[n][0])] += 1
    r, c = linear_sum_assignment(-overlap)
    moved = len(before) - int(overlap[r, c].sum())
    recoloured = sum(before[n][1] != after[n][1] for n in before)
    renamed = sum(before[n][0] != after[n][0] for n in before)
    assert recoloured <= moved and renamed <= moved, (moved, recoloured, renamed)
    return moved, recoloured, renamed


def test_cluster_colours_and_names_follow_an_alpha_move(umap_server):
    """alpha 0.60 -> 0.30 one step (0.05) at a time, each step one redraw checked against the
    drawing before it: the app matches each drawing to the one it drew last, so steps pressed
    faster than the app redraws would be compared across a drawing the test never read."""
    url, _ = umap_server
    with chromium() as page:
        open_page(page, f"{url}/clusters")
        _choose_the_transformer_paper(page)
        prev = _points(_chart(page))
        assert slider_value(page, "alike in meaning") == "0.60"
        total = [0, 0, 0]
        for want in ("0.55", "0.50", "0.45", "0.40", "0.35", "0.30"):
            timed(page, lambda: move_slider(page, "alike in meaning", 1, key="ArrowLeft"))
            wait_idle(page)
            assert slider_value(page, "alike in meaning") == want
            now = _points(_chart(page))
            total = [a + b for a, b in zip(total, _check_follow(prev, now))]
            prev = now
        assert exception_count(page) == 0
    print(f"\nalpha 0.60 -> 0.30 in 6 steps: {len(prev)} points, {total[0]} moved group, {total[1]} changed colour, "
          f"{total[2]} changed name")


def test_graph_opens_on_a_body_hyperedge_not_front_matter(umap_server):
    from docmaster_core.index.hyperedges import hyperedge_roles
    from docmaster_core.pipeline import DocMaster

    url, ws = umap_server
    dm = DocMaster(ws)
    rec = dm.document(TRANSFORMER)
    idx = dm.load_index(rec.doc_id)
    roles = hyperedge_roles(dm.tree(rec.doc_id), idx.hyperedges)
    assert roles[idx.hyperedges[0].id] == "front"  # the paper starts with its copyright notice
    with chromium() as page:
        open_page(page, f"{url}/hyperedges")
        _choose_the_transformer_paper(page)
        shown = selected_text(selectbox(page, "Group of passages"))
        he = int(GROUP_RE.match(shown).group(1))  # "Group 26 · topic: ..."
        assert roles[he] not in ("front", "back", "appendix"), (shown, roles[he])
        # the graph is drawn when the page is done: fixed positions, no physics to settle
        frame = page.frame_locator("iframe[title*='agraph']").first
        assert frame.locator("canvas").count() >= 1
        assert exception_count(page) == 0


def _metric_labels(page) -> list[str]:
    return [x.inner_text().strip() for x in page.locator("[data-testid='stMetricLabel']").all()]


_JARGON = re.compile(r"\b(hyper-?edges?|clusters?|TEXT nodes?|must-links?|cannot-links?|SEC|PC-KMeans)\b|"
                     r"\bH\d+\b|\bC\d+\b", re.IGNORECASE)


def test_graph_and_clusters_pages_read_in_plain_words(umap_server):
    """Issue 36: what a colleague sees on the two pages (rendered labels, not the script):
    a "What am I looking at?" line, metric labels without the paper's names, groups and
    topics named in words ("Group 26 · topic: ..."; legend "Topic 3 · words (n)")."""
    from ui.plain import TOPIC_RE, WHAT_CLUSTERS, WHAT_GRAPH

    url, _ = umap_server
    with chromium() as page:
        open_page(page, f"{url}/hyperedges")
        _choose_the_transformer_paper(page)
        assert page.get_by_text("What am I looking at?").count() == 1
        assert page.get_by_text(WHAT_GRAPH[:60]).count() == 1
        labels = _metric_labels(page)
        assert len(labels) == 6 and not [x for x in labels if _JARGON.search(x)], labels
        shown = selected_text(selectbox(page, "Group of passages"))
        assert GROUP_RE.match(shown) and " · topic: " in shown, shown
        assert not re.search(r"\bH\d+\b|\bC\d+\b", shown), shown
        assert page.get_by_text(re.compile(r"^Legend · grey box: a section")).count() == 1
        assert exception_count(page) == 0

        open_page(page, f"{url}/clusters")
        wait_idle(page)
        assert page.get_by_text(WHAT_CLUSTERS[:60]).count() == 1
        labels = _metric_labels(page)
        assert len(labels) == 5 and not [x for x in labels if _JARGON.search(x)], labels
        names = [t["name"] for t in _chart(page)["traces"]]
        assert names and all(TOPIC_RE.match(n) and re.search(r" · .+ \(\d+\)$", n) for n in names), names
        assert not any("no telling words" in n for n in names), names
        assert exception_count(page) == 0


def test_quick_changes_in_collection_scope_never_blame_another_process(umap_server):
    """Issue 36: parameter changes in a row on the whole collection (the second and third
    before the first rebuild ends) never report the app's own write as "another
    process"; the last one is drawn."""
    url, _ = umap_server
    with chromium() as page:
        open_page(page, f"{url}/clusters")
        timed(page, page.get_by_text("whole collection").click)
        wait_idle(page)
        assert page.locator("[data-testid='stVegaLiteChart']").count() == 1
        before = slider_value(page, "Number of topics")
        move_slider(page, "Number of topics", 2)
        time.sleep(0.3)
        move_slider(page, "alike in meaning", 1)
        time.sleep(0.3)
        move_slider(page, "Number of topics", 1)
        wait_idle(page)
        assert int(slider_value(page, "Number of topics")) == int(before) + 3
        assert page.get_by_text("another process").count() == 0
        assert page.get_by_text("Could not find").count() == 0
        assert exception_count(page) == 0
        assert page.locator("[data-testid='stVegaLiteChart']").count() == 1
        # the chart is the collection's, at the new K
        assert len(_chart(page)["traces"]) <= int(before) + 3


_STALE_METRICS_JS = """
() => ({shown: [...document.querySelectorAll("[data-stale='true'] [data-testid='stMetric']")]
          .filter(e => e.offsetParent !== null).length,
        stale: document.querySelectorAll("[data-stale='true'] [data-testid='stMetric']").length,
        hiding: !!document.querySelector(
          "[data-testid='stElementContainer']:not([data-stale='true']) .dm-hide-previous-view")})
"""


def test_a_scope_switch_never_shows_the_previous_scopes_numbers(umap_server):
    """Issue 36: switching from one document to the whole collection, the one-document metrics
    stood (faded) under the collection's heading for seconds while its topics were found; now
    the page's first element hides them until the new ones are drawn (only the instant before
    the rerun's first element reaches the browser is left). A slider move on the same view
    keeps the faded drawing (no blank page)."""
    url, _ = umap_server
    with chromium() as page:
        open_page(page, f"{url}/clusters")
        wait_idle(page)
        assert page.locator("[data-testid='stMetric']").count() >= 1
        page.get_by_text("whole collection").click()
        samples = []
        end = time.time() + 4.0
        while time.time() < end:
            samples.append(page.evaluate(_STALE_METRICS_JS))
            time.sleep(0.02)
        wait_idle(page)
        assert any(s["hiding"] and s["stale"] for s in samples), "the previous view was never hidden"
        assert not [s for s in samples if s["hiding"] and s["shown"]], "previous metrics shown during the switch"
        assert page.locator("[data-testid='stMetric']").count() >= 1
        # the same view redrawn: nothing hidden (the faded drawing stays while it is recomputed)
        move_slider(page, "Number of topics", 1)
        samples = [page.evaluate(_STALE_METRICS_JS) for _ in range(20)]
        wait_idle(page)
        assert not any(s["hiding"] for s in samples)
        assert page.locator("[data-testid='stVegaLiteChart']").count() == 1 and exception_count(page) == 0


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory):
    """The app (UMAP off) on an empty workspace: the README's first five minutes."""
    pytest.importorskip("playwright.sync_api")
    root = tmp_path_factory.mktemp("browser_first_minutes")
    with app_server(root, root / "ws", root / "server.log", {"DOCMASTER_UI_UMAP": "off"}) as url:
        yield url, root / "ws"


def test_first_five_minutes_chat_scope_example_answer_and_removal(empty_server):
    """The example collection, its suggested filter, the Chat's scope kept across page
    switches, the example question answered from all documents, the examples removed
    in one click and ``docmaster check`` passing afterwards."""
    from playwright.sync_api import expect

    from docmaster_core import cli
    from docmaster_core.examples import EXAMPLE_QUESTION
    from support.browser_driver import decision_tables_ready, navigate, run_filter_button

    url, ws = empty_server
    with chromium() as page:
        open_page(page, url)
        timed(page, page.get_by_role("button", name="Load an example collection").click, timeout=600)
        wait_idle(page, timeout=300)
        assert page.get_by_text("Examples loaded").count() == 1
        navigate(page, "Filter")
        wait_idle(page)
        button = run_filter_button(page)
        expect(button).to_be_enabled(timeout=30_000)
        timed(page, button.click, timeout=300, until=lambda: decision_tables_ready(page, 3))

        navigate(page, "Chat")
        wait_idle(page)
        assert page.get_by_text("Answering from: all 3 documents").count() == 1  # the default
        timed(page, page.get_by_text("documents kept by the last filter run (1; ").click)
        assert page.get_by_text(re.compile(r"Answering from: the 1 of 3 documents kept by filter run \d+")).count() == 1
        navigate(page, "Upload")
        navigate(page, "Chat")  # the choice stays for the session
        wait_idle(page)
        assert page.get_by_text(re.compile(r"Answering from: the 1 of 3 documents kept by filter run")).count() == 1
        page.get_by_text("all documents (3)").click()  # a radio choice: its rerun is checked by what it shows
        expect(page.get_by_text("Answering from: all 3 documents")).to_have_count(1, timeout=120_000)
        wait_idle(page)
        box = page.locator("[data-testid='stChatInputTextArea']")
        box.fill(EXAMPLE_QUESTION)
        timed(page, lambda: box.press("Enter"), timeout=300)
        wait_idle(page)
        answer = page.locator("[data-testid='stChatMessage']").last.inner_text()
        assert "six months" in answer, answer
        assert exception_count(page) == 0

        navigate(page, "Upload")
        wait_idle(page)
        timed(page, page.get_by_role("button", name="Remove the example documents").click, timeout=300)
        wait_idle(page)
        assert page.get_by_text("Removed 3 documents").count() == 1
        assert exception_count(page) == 0
    assert cli.main(["check", "--workspace", str(ws)]) == 0
    # the ingest's parse process does not run the app script again (a quiet terminal)
    log = (ws.parent / "server.log").read_text(errors="replace")
    assert "missing ScriptRunContext" not in log
