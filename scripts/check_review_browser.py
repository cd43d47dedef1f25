#!/usr/bin/env python
"""The Filter page's Review in a real browser (issue 33): answer documents by keyboard, reload, export, evaluate.

Runs the app (the README's command, headless) on a copy of an ingested workspace of real
PDFs, drives it with Playwright in Debian Chromium, and:

1. runs the filter for a labelled condition and turns the review on;
2. answers ``--answers`` documents with the keys M / N, reading each document's label from
   the cases file (the user acting as the label oracle), and records the count line after
   each answer;
3. reloads the page, opens the review again and checks the answers are still there;
4. downloads the answers and the condition as TSV files and runs ``docmaster eval filter``
   on them.

Screenshots, the two TSV files, the eval output and ``review_browser.json`` go to ``--out``
(outside the repository). Nothing is asserted beyond what the steps need; the JSON says
what was seen.

Usage::

    python scripts/check_review_browser.py --workspace /work/ws/cuad --out /tmp/review_browser \\
        --cases ../shared/eval/filter_cases_cuad.tsv --conditions ../shared/eval/filter_conditions_cuad.tsv \\
        --condition-id V1 [--answers 10]
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.browser_driver import (  # noqa: E402
    app_server, chromium, decision_tables_ready, exception_count, navigate, open_page, run_filter_button,
    set_condition, wait_idle,
)


def _count_line(page) -> str:
    loc = page.locator("[data-testid='stMarkdownContainer']").filter(has_text=re.compile(r"\d+ answered · "))
    return loc.first.inner_text() if loc.count() else ""


def _next_file(page) -> str:
    loc = page.locator("[data-testid='stMarkdownContainer']").filter(has_text=re.compile(r"^Next: "))
    if not loc.count():
        return ""
    return loc.first.inner_text().split("\n")[0][len("Next: "):].strip()


def _review_on(page) -> None:
    page.get_by_text("Review the documents one by one").first.click()
    wait_idle(page)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", required=True, help="an ingested workspace (copied, never changed)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--conditions", required=True)
    ap.add_argument("--condition-id", required=True)
    ap.add_argument("--answers", type=int, default=10)
    args = ap.parse_args(argv)

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    ws = out / "ws"
    shutil.copytree(args.workspace, ws)
    with open(args.conditions, newline="", encoding="utf-8") as f:
        text = {r["condition"]: r["text"] for r in csv.DictReader(f, delimiter="\t")}[args.condition_id]
    with open(args.cases, newline="", encoding="utf-8") as f:
        labels = {r["file"]: int(r["label"]) for r in csv.DictReader(f, delimiter="\t")
                  if r["condition"] == args.condition_id}
    seen: dict = {"condition": text, "answers": [], "exceptions": 0}
    with app_server(out, ws, out / "server.log") as url, chromium() as page:
        open_page(page, url)
        navigate(page, "Filter")
        set_condition(page, text)
        wait_idle(page)
        run_filter_button(page).click()
        end = time.time() + 300
        n_docs = len(list((ws / "vectors").glob("*.npy")))
        while not decision_tables_ready(page, n_docs) and time.time() < end:
            time.sleep(0.5)
        wait_idle(page)
        _review_on(page)
        seen["before"] = _count_line(page)
        page.screenshot(path=str(out / "review_start.png"), full_page=True)
        for i in range(args.answers):
            name = _next_file(page)
            if not name:
                break
            key = "m" if labels.get(name) == 1 else "n"
            page.evaluate("() => document.activeElement && document.activeElement.blur()")  # keys go to the app
            before = _count_line(page)
            page.keyboard.press(key)
            end = time.time() + 30
            while _count_line(page) == before and time.time() < end:  # the answer's rerun has drawn
                time.sleep(0.2)
            wait_idle(page)
            seen["answers"].append({"file": name, "key": key, "count_line": _count_line(page)})
        page.screenshot(path=str(out / "review_after_answers.png"), full_page=True)
        seen["exceptions"] += exception_count(page)
        # reload: a new browser session on the same workspace
        open_page(page, url)
        navigate(page, "Filter")
        run_filter_button(page).click()
        end = time.time() + 300
        while not decision_tables_ready(page, n_docs) and time.time() < end:
            time.sleep(0.5)
        wait_idle(page)
        _review_on(page)
        seen["after_reload"] = _count_line(page)
        page.get_by_text(re.compile(r"^Your answers \(\d+\)")).first.click()
        wait_idle(page)
        for label, fname in (("Export answers", "cases.tsv"), ("Export the condition", "conditions.tsv")):
            with page.expect_download() as dl:
                page.get_by_role("button", name=re.compile(label)).first.click()
            dl.value.save_as(str(out / fname))
        page.screenshot(path=str(out / "review_after_reload.png"), full_page=True)
        seen["exceptions"] += exception_count(page)
    ev = subprocess.run([sys.executable, "-m", "docmaster_core", "eval", "filter", "--cases", str(out / "cases.tsv"),
                         "--conditions", str(out / "conditions.tsv"), "-w", str(ws), "--strategy", "combined"],
                        capture_output=True, text=True, cwd=ROOT)
    (out / "eval_filter.txt").write_text(ev.stdout + ev.stderr)
    seen["eval_rc"] = ev.returncode
    seen["exported_rows"] = len((out / "cases.tsv").read_text().splitlines()) - 1
    (out / "review_browser.json").write_text(json.dumps(seen, indent=1))
    print(json.dumps(seen, indent=1))
    return 0 if ev.returncode == 0 and seen["exceptions"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
