#!/usr/bin/env python
"""Screenshots of the demo path for the README, in headless Debian Chromium.

Starts the app on a temporary copy of a workspace (the README command, as
``scripts/bench_app.py`` does) and, in one browser session: opens the Tree explorer
on a document and expands the whole tree; shows the Hyper-edge graph of the same
document; runs a filter, shows kept documents only and the evidence of the best kept
one; asks the Chat a question and opens its first source. Saves ``tree.png``,
``hyperedges.png``, ``filter.png`` and ``chat.png`` (1400 px wide) and prints the
seconds each step took and whether the answer's [E1] link has its anchor on the page.

Usage::

    python scripts/demo_shots.py -w WORKSPACE --out docs/screenshots [--doc attention]

Exit code 0 on success, 1 when the app showed an exception box, 2 on a setup error.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from support.browser_driver import (  # noqa: E402
    app_server,
    chromium,
    decision_tables_ready,
    exception_count,
    navigate,
    open_options,
    open_page,
    run_filter_button,
    set_condition,
    timed,
    wait_idle,
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-w", "--workspace", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--doc", default="attention-is-all-you-need", help="file name substring of the document shown")
    ap.add_argument("--condition", default="The paper uses multi-head self-attention.")
    ap.add_argument("--question", default="How many attention heads does the base Transformer use?")
    args = ap.parse_args(argv)
    src = args.workspace.expanduser().resolve()
    if not (src / "workspace.sqlite").is_file():
        print(f"not a workspace: {src}", file=sys.stderr)
        return 2
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(src, create=False)
    n_docs = len(ws.documents())
    ws.close()
    tmp = Path(tempfile.mkdtemp(prefix="docmaster_shots_"))
    ws_dir = tmp / src.name
    shutil.copytree(src, ws_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    bad: list[str] = []
    try:
        with app_server(ws_dir.parent, ws_dir, tmp / "server.log", {"DOCMASTER_UI_UMAP": "off"}) as url, \
                chromium() as page:
            def shot(name: str) -> None:
                wait_idle(page, timeout=180)
                if exception_count(page):
                    bad.append(name)
                page.screenshot(path=str(args.out / f"{name}.png"), full_page=True, timeout=60_000)

            times["tree: load"] = open_page(page, f"{url}/tree")
            times["tree: choose document"] = timed(page, open_options(page, "Document", args.doc).click, 300)
            times["tree: expand all"] = timed(page, page.get_by_role("button", name="Expand all").click, 120)
            shot("tree")
            times["graph: open"] = navigate(page, "Hyper-edge graph", timeout=180)
            time.sleep(3.0)  # the graph is laid out client-side
            shot("hyperedges")
            navigate(page, "Filter", timeout=180)
            wait_idle(page)
            set_condition(page, args.condition)
            wait_idle(page)
            times["filter: A and B"] = timed(page, run_filter_button(page).click, 600,
                                             until=lambda: decision_tables_ready(page, n_docs))
            times["filter: kept only"] = timed(page, page.get_by_text("Kept documents only").click, 120)
            shot("filter")
            navigate(page, "Chat", timeout=180)
            wait_idle(page)
            box = page.get_by_test_id("stChatInputTextArea")
            box.fill(args.question)
            times["chat: answer"] = timed(page, lambda: box.press("Enter"), 300)
            wait_idle(page, timeout=180)
            link = page.locator("a[href^='#cite-']").first
            anchor_ok = link.count() > 0 and page.locator(f"[id='{link.get_attribute('href')[1:]}']").count() > 0
            print(f"[E1] link with its anchor on the page: {anchor_ok}")
            pill = page.locator("[data-testid='stButtonGroup'] button").filter(has_text="E1").first
            if pill.count():
                times["chat: open source E1"] = timed(page, pill.click, 120)
            shot("chat")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for k, v in times.items():
        print(f"{k:<28} {v:6.2f} s")
    if bad:
        print("EXCEPTION BOXES SHOWN:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
