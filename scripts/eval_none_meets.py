"""Conditions nothing in a collection meets: how many documents does the filter keep? (issue 32)

Runs the default filter (offline decider) for every condition of a TSV (columns
``condition, text``; conditions written so that no document of the collection meets
them) and prints, per condition, the documents kept sure, kept uncertain, and whether
the run said that no document meets the condition.

    python scripts/eval_none_meets.py -w CUAD_WS --conditions eval/none_meets_contracts.tsv
    python scripts/eval_none_meets.py -w CORPUS_WS --conditions eval/none_meets_papers.tsv

Goal (issue 32): no sure keep and at most one uncertain keep per condition.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workspace", required=True)
    ap.add_argument("--conditions", required=True, help="TSV with columns condition, text")
    ap.add_argument("--strategy", default="combined")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    from docmaster_core.pipeline import DocMaster

    dm = DocMaster(a.workspace)
    with open(a.conditions, newline="", encoding="utf-8") as f:
        conds = [(r["condition"], r["text"]) for r in csv.DictReader(f, delimiter="\t")]
    rows = []
    for cid, text in conds:
        run = dm.filter(text, strategy=a.strategy, save=False)
        kept = [d for d in run.documents if d.decision(a.strategy)]
        unsure = [d.file_name for d in kept if d.decisions[a.strategy].uncertain]
        sure = [d.file_name for d in kept if not d.decisions[a.strategy].uncertain]
        rows.append({"condition": cid, "text": text, "sure": sure, "uncertain": unsure,
                     "none_meets": bool(run.cuts[a.strategy].none_meets)})
    if a.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'cond':6} {'sure':>4} {'unsure':>6} none_meets  documents kept")
        for r in rows:
            print(f"{r['condition']:6} {len(r['sure']):4d} {len(r['uncertain']):6d} {str(r['none_meets']):10}  "
                  f"{', '.join(f[:24] for f in r['sure'] + r['uncertain'])}")
        ok = sum(not r["sure"] and len(r["uncertain"]) <= 1 for r in rows)
        print(f"total kept {sum(len(r['sure']) + len(r['uncertain']) for r in rows)} "
              f"({sum(len(r['sure']) for r in rows)} sure); conditions meeting the goal {ok} of {len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
