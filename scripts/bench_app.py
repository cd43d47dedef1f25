#!/usr/bin/env python
"""Benchmark the DocMaster Streamlit app in a real browser on an existing workspace.

Starts the app as the README says (``python -m streamlit run app.py --server.headless
true --server.port P --server.fileWatcherType none``, workspace passed through
``DOCMASTER_WORKSPACE_ROOT`` / ``DOCMASTER_WORKSPACE``), drives headless Debian Chromium
with Playwright (``executable_path``; no browser download) and measures, in wall-clock
seconds from the click / key press until the app's rerun has finished in the browser:

* page load of each of the six pages (fresh browser session each; the very first
  load of the server is reported apart as ``cold``);
* Semantic clusters, one document (the largest, or ``--doc``): choosing it, then
  ``--steps`` alpha-slider changes (ArrowRight on the slider thumb; each a new
  parameter set, i.e. a real PC-KMeans rebuild), the first one reported as cold, then
  one step back (a cached parameter set);
* Filter: for each condition, entering it and clicking "Run filter with A and B" until
  both per-document decision tables (one row per workspace document) are drawn; the
  first after ``--pause`` seconds on the page (default 0), as a person reads and types;
  then the Filter page opened twice in a fresh run, drawing the stored runs' tables (a
  reopened demo).

The app writes to the workspace (indexes per parameter set, filter runs, 2-D layouts,
LLM cache): pass ``--copy`` to benchmark a temporary copy and leave it untouched.

Usage::

    python scripts/bench_app.py -w /path/to/workspace [--copy] [--doc NAME] [--steps 5]
        [--json out.json] [--shots DIR] [--umap on|off] [--layouts-first]

Exit code 0 on success, 1 when the app showed an exception box, 2 on a setup error.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from support.browser_driver import (  # noqa: E402
    PAGES,
    app_server,
    chromium,
    decision_tables_ready,
    exception_count,
    move_slider,
    navigate,
    open_options,
    open_page,
    run_filter_button,
    selectbox,
    selected_text,
    set_condition,
    slider_value,
    timed,
    wait_idle,
)
from ui.plain import SLIDERS  # noqa: E402

#: The alpha slider as the Clusters page labels it (plain words since issue 36).
ALPHA = SLIDERS["alpha"][0]

DEFAULT_CONDITIONS = [
    "Does the paper propose a retrieval-augmented generation method?",
    "The document reports an evaluation on a public benchmark dataset.",
    "The document describes a neural network architecture for image data.",
]


def _summary(xs: list[float]) -> dict[str, float]:
    return {"n": len(xs), "median": round(statistics.median(xs), 3), "max": round(max(xs), 3),
            "min": round(min(xs), 3)} if xs else {"n": 0}


def _wait_umap(page, timeout: float) -> float:
    """Wait until the clusters chart can show UMAP: the page's "UMAP layout not ready
    yet" notice gives way to the "Switch to the UMAP layout" button (pressed here), or
    no notice is shown (the layout was stored already); returns the seconds waited
    (``timeout`` when it never came)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        switch = page.get_by_role("button", name="Switch to the UMAP layout")
        if switch.count():
            switch.first.click()
            try:
                wait_idle(page, timeout=60)
            except TimeoutError:
                pass
            return time.perf_counter() - t0
        if page.get_by_text("UMAP layout not ready yet").count() == 0:
            return time.perf_counter() - t0
        time.sleep(0.5)
    return timeout


def _shot(page, path: Path) -> None:
    """Full-page screenshot; the viewport only when the full page takes too long."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.screenshot(path=str(path), full_page=True, timeout=60_000)
    except PlaywrightTimeout:
        print(f"full-page screenshot of {path.name} timed out; viewport only", file=sys.stderr)
        page.screenshot(path=str(path), timeout=60_000)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-w", "--workspace", required=True, type=Path)
    ap.add_argument("--copy", action="store_true", help="benchmark a temporary copy of the workspace")
    ap.add_argument("--doc", default=None, help="file name (substring) or doc id for the clusters page; default the largest")
    ap.add_argument("--steps", type=int, default=5, help="alpha-slider changes on the clusters page")
    ap.add_argument("--condition", action="append", default=None, help="filter condition (repeatable; default 3)")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds on the Filter page before the first condition is entered (a person reads the page "
                         "and types it, while the app loads the collection's views in the background; "
                         "default 0: pasted at once)")
    ap.add_argument("--umap", choices=["on", "off"], default="on",
                    help="UMAP in the app (on: the slider changes are measured once UMAP is ready)")
    ap.add_argument("--umap-timeout", type=float, default=240.0)
    ap.add_argument("--layouts-first", action="store_true",
                    help="compute the documents' 2-D UMAP layouts before the app starts (as a workspace ingested "
                    "through the app has them); the seconds it took are reported")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--shots", type=Path, default=None, help="save a full-page screenshot of each page here (1400 px)")
    args = ap.parse_args(argv)

    from docmaster_core.store.workspace import Workspace

    src = args.workspace.expanduser().resolve()
    if not (src / "workspace.sqlite").is_file():
        print(f"not a workspace: {src}", file=sys.stderr)
        return 2
    tmp = None
    ws_dir = src
    if args.copy:
        tmp = Path(tempfile.mkdtemp(prefix="docmaster_bench_app_"))
        ws_dir = tmp / src.name
        shutil.copytree(src, ws_dir)
    try:
        ws = Workspace(ws_dir, create=False)
        docs = ws.documents()
        ws.close()
        if not docs:
            print("the workspace has no documents", file=sys.stderr)
            return 2
        if args.doc:
            cand = [d for d in docs if d.doc_id == args.doc or args.doc.lower() in d.file_name.lower()]
            if not cand:
                print(f"no document matches {args.doc!r}", file=sys.stderr)
                return 2
            doc = cand[0]
        else:
            doc = max(docs, key=lambda d: d.n_nodes)
        n_docs, n_nodes = len(docs), sum(d.n_nodes for d in docs)
        layouts_s = None
        if args.layouts_first:
            from docmaster_core.config import get_settings
            from docmaster_core.pipeline import DocMaster

            t0 = time.perf_counter()
            dm = DocMaster(ws_dir, get_settings(ui_umap=True))
            n_q = dm.ensure_layouts()
            dm.wait_for_layouts(timeout=3600)
            layouts_s = round(time.perf_counter() - t0, 1)
            print(f"computed {n_q} layouts in {layouts_s} s before the benchmark", file=sys.stderr)
        conditions = args.condition or DEFAULT_CONDITIONS
        log = (tmp or Path(tempfile.gettempdir())) / "docmaster_bench_app_server.log"
        res: dict = {
            "workspace": str(src), "copied": bool(args.copy), "documents": n_docs, "nodes": n_nodes,
            "doc": {"file": doc.file_name, "nodes": doc.n_nodes, "text_nodes": (doc.counts or {}).get("TEXT")},
            "umap": args.umap, "cpus": os.cpu_count(), "load_before": os.getloadavg(), "layouts_first_s": layouts_s,
        }
        exceptions: list[str] = []

        def check(where: str) -> None:
            if exception_count(page):
                exceptions.append(where)

        extra = {} if args.umap == "on" else {"DOCMASTER_UI_UMAP": "off"}
        with app_server(ws_dir.parent, ws_dir, log, extra) as url, chromium() as page:
            # ------------------------------------------------ page loads
            res["first_load_cold"] = round(open_page(page, f"{url}/"), 3)
            loads = {}
            for path, _ in PAGES:
                loads[path or "upload"] = round(open_page(page, f"{url}/{path}"), 3)
                check(f"load {path or 'upload'}")
            res["page_load"] = loads

            # ------------------------------------------------ clusters, one document
            open_page(page, f"{url}/clusters")
            label = doc.file_name[:40]
            res["clusters_choose_doc"] = round(timed(page, open_options(page, "Document", label).click, 300), 3)
            if label.lower() not in selected_text(selectbox(page, "Document")).lower():
                print(f"warning: document {label!r} not selected", file=sys.stderr)
            check("clusters choose document")
            if args.umap == "on":
                res["umap_wait"] = round(_wait_umap(page, args.umap_timeout), 1)
            steps, values = [], []
            for _ in range(args.steps):
                steps.append(timed(page, lambda: move_slider(page, ALPHA, 1), 300))
                values.append(slider_value(page, ALPHA))
                check("clusters slider")
            back = timed(page, lambda: move_slider(page, ALPHA, 1, "ArrowLeft"), 300)
            check("clusters slider back")
            res["clusters_slider"] = {
                "values": values, "cold_first": round(steps[0], 3) if steps else None,
                "warm": _summary(steps[1:]), "all": _summary(steps), "each": [round(x, 3) for x in steps],
                "revisit_cached": round(back, 3),
            }
            if args.shots:
                args.shots.mkdir(parents=True, exist_ok=True)
                wait_idle(page)
                _shot(page, args.shots / "clusters.png")

            # ------------------------------------------------ filter, several conditions
            navigate(page, "Filter")
            wait_idle(page)
            time.sleep(max(0.0, args.pause))
            res["filter_pause_s"] = args.pause
            runs = []
            for cond in conditions:
                set_condition(page, cond)
                wait_idle(page)
                dt = timed(page, run_filter_button(page).click, 600, until=lambda: decision_tables_ready(page, n_docs))
                ok = decision_tables_ready(page, n_docs)
                runs.append({"condition": cond, "seconds": round(dt, 3), "tables_ok": ok})
                check(f"filter {cond[:30]}")
            res["filter"] = {"runs": runs, "summary": _summary([r["seconds"] for r in runs])}
            # a reopened Filter page draws the stored runs' tables (the demo after a reload): first paint
            reopen = [open_page(page, f"{url}/filter") for _ in range(2)]
            res["filter_reopen"] = {"each": [round(x, 3) for x in reopen],
                                    "tables_ok": decision_tables_ready(page, n_docs)}
            check("filter reopened")
            print(json.dumps({k: res[k] for k in ("page_load", "clusters_choose_doc", "clusters_slider", "filter")}),
                  file=sys.stderr, flush=True)
            if args.shots:
                wait_idle(page)
                _shot(page, args.shots / "filter.png")
                for path, title in PAGES:
                    if path in ("clusters", "filter"):
                        continue
                    try:
                        navigate(page, title, timeout=180)
                        wait_idle(page, timeout=180)
                        if path == "hyperedges":
                            time.sleep(2.0)  # the agraph component lays out its graph client-side
                        _shot(page, args.shots / f"{path or 'upload'}.png")
                        check(f"shot {path}")
                    except Exception as e:  # noqa: BLE001 - a screenshot failure must not lose the figures
                        print(f"screenshot of {title} failed: {type(e).__name__}: {e}", file=sys.stderr)
        res["load_after"] = os.getloadavg()
        res["exceptions"] = exceptions
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------ report
    print(f"workspace {src}: {n_docs} documents, {n_nodes} nodes; clusters document {doc.file_name} "
          f"({doc.n_nodes} nodes); UMAP {args.umap}; {os.cpu_count()} CPUs, load {res['load_before']}")
    rows = [("first page load (cold server)", res["first_load_cold"], "")]
    rows += [(f"page load {k}", v, "") for k, v in res["page_load"].items()]
    rows.append(("clusters: choose document", res["clusters_choose_doc"], ""))
    cs = res["clusters_slider"]
    rows.append(("clusters: slider, first (cold)", cs["cold_first"], "goal < 2 s"))
    if cs["warm"]["n"]:
        rows.append((f"clusters: slider, warm median (n={cs['warm']['n']})", cs["warm"]["median"], "goal < 2 s"))
        rows.append(("clusters: slider, warm max", cs["warm"]["max"], "goal < 2 s"))
    rows.append(("clusters: slider back (cached)", cs["revisit_cached"], ""))
    for r in res["filter"]["runs"]:
        rows.append((f"filter A+B: {r['condition'][:45]}", r["seconds"], "goal < 5 s" + ("" if r["tables_ok"] else " TABLES MISSING")))
    rows.append(("filter A+B: median", res["filter"]["summary"]["median"], "goal < 5 s"))
    for i, v in enumerate(res["filter_reopen"]["each"], 1):
        rows.append((f"page load filter, stored runs ({i})", v,
                     "goal < 2 s" + ("" if res["filter_reopen"]["tables_ok"] else " TABLES MISSING")))
    w = max(len(r[0]) for r in rows)
    print(f"{'interaction':<{w}}  {'seconds':>8}")
    for name, v, note in rows:
        print(f"{name:<{w}}  {v:>8.2f}  {note}")
    if res.get("umap_wait") is not None:
        print(f"(waited {res['umap_wait']} s for the background UMAP before the slider changes)")
    if exceptions:
        print("EXCEPTION BOXES SHOWN:", exceptions)
    if args.json:
        args.json.write_text(json.dumps(res, indent=2))
    return 1 if exceptions else 0


if __name__ == "__main__":
    sys.exit(main())
