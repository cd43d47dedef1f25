"""Snapshot what the engine decides and answers on a workspace, to show that a change
keeps behaviour: ``filter --json`` (the tree, semantic, hyper-edge and combined strategies) for each condition,
and ``ask --json`` for the first questions of a QA cases file, with the fields that
vary from run to run (run ids, timings) removed.

Run it before and after a change (e.g. from two checkouts) and compare the folders:

    python scripts/snapshot_outputs.py --workspace W --out /tmp/before \\
        --conditions ../shared/eval/filter_conditions.tsv ../shared/eval/filter_conditions_q.tsv \\
        --qa eval/qa_cases.tsv --questions 10
    (the same from the other checkout with --out /tmp/after)
    diff -r /tmp/before /tmp/after && echo identical

The commands run through ``python -m docmaster_core`` of the checkout the script is run
from (its parent folder is put first on ``PYTHONPATH``). ``filter`` saves a run in the
workspace each time (as any filter does); nothing else is written there.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

VOLATILE = {"run_id", "timings", "usage", "seconds", "created"}


def _strip(obj):
    """The JSON without its run-to-run fields (recursively)."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _run(args: list[str], repo: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    out = subprocess.run([sys.executable, "-m", "docmaster_core", *args], cwd=repo, env=env,
                         capture_output=True, text=True, check=False)
    try:
        return _strip(json.loads(out.stdout))
    except json.JSONDecodeError:
        return {"exit": out.returncode, "stderr": out.stderr[-2000:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--out", required=True, help="folder for one JSON file per condition / question")
    ap.add_argument("--conditions", nargs="+", default=[], help="TSV files with columns condition, text")
    ap.add_argument("--qa", help="TSV with a question column (eval/qa_cases.tsv)")
    ap.add_argument("--questions", type=int, default=10, help="how many questions of --qa (first ones)")
    a = ap.parse_args(argv)
    repo = Path(__file__).resolve().parent.parent
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in a.conditions:
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                res = _run(["filter", row["text"], "-w", a.workspace, "--json"], repo)
                (out / f"filter_{row['condition']}.json").write_text(json.dumps(res, indent=1, sort_keys=True))
                print(f"filter {row['condition']}: {len(res.get('matches', []))} match", flush=True)
    if a.qa:
        with open(a.qa, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))[: a.questions]
        for i, row in enumerate(rows, 1):
            res = _run(["ask", row["question"], "-w", a.workspace, "--json"] +
                       (["--docs", row["file"]] if row.get("file") else []), repo)
            (out / f"ask_{i:02d}.json").write_text(json.dumps(res, indent=1, sort_keys=True))
            print(f"ask {i}: {len((res.get('answer') or {}).get('citations', []))} citations", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
