"""How many filter decisions flip when unrelated documents join the collection.

A document's decision should not change because unrelated documents were added to the
workspace. This script filters the same conditions over a base workspace and over a
grown one (the base documents plus unrelated ones, e.g. ``scripts/make_unrelated_pdfs.py``
output and other PDFs ingested into a copy of the base), with the offline decider, and
counts, per strategy, the base documents whose decision differs.

Usage::

    python scripts/stability_filter.py --base WS --grown WS2 --conditions C.tsv [C2.tsv ...]
        [--cut best_fraction|zscore] [--whole-collection] [--json OUT]

Prints the flipped share per strategy and per condition; ``--json`` writes it all.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from docmaster_core.pipeline import DocMaster  # noqa: E402
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION  # noqa: E402

STRATEGIES = ["tree", "semantic", "hyperedge", "combined", "flat"]


def decisions(dm: DocMaster, text: str, calib) -> dict[str, dict[str, bool | None]]:
    """``{strategy: {file name: decision}}`` of one offline filter run (not saved)."""
    run = dm.filter(text, strategies=STRATEGIES, decider="calibrated", save=False, calibration=calib)
    return {s: {d.file_name: d.decision(s) for d in run.documents} for s in STRATEGIES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="workspace of the original collection")
    ap.add_argument("--grown", required=True, help="workspace holding the same documents plus unrelated ones")
    ap.add_argument("--conditions", nargs="+", required=True, help="TSV(s) condition<TAB>text")
    ap.add_argument("--cut", choices=["best_fraction", "zscore"], default=DEFAULT_CALIBRATION.cut)
    ap.add_argument("--whole-collection", action="store_true",
                    help="take the robust statistics over the whole collection instead of the best-44 pool")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    calib = replace(DEFAULT_CALIBRATION, cut=a.cut)
    if a.whole_collection:
        calib = replace(calib, pool=None)
    texts = {}
    for f in a.conditions:
        with open(f, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh, delimiter="\t"):
                texts[r["condition"]] = r["text"]
    base, grown = DocMaster(a.base), DocMaster(a.grown)
    n_base = len(base.ws.documents())
    n_grown = len(grown.ws.documents())
    per: dict[str, dict[str, int]] = {}
    flips = {s: 0 for s in STRATEGIES}
    total = {s: 0 for s in STRATEGIES}
    for key, text in texts.items():
        db, dg = decisions(base, text, calib), decisions(grown, text, calib)
        per[key] = {}
        for s in STRATEGIES:
            changed = [f for f, v in db[s].items() if f in dg[s] and dg[s][f] != v]
            per[key][s] = len(changed)
            flips[s] += len(changed)
            total[s] += sum(f in dg[s] for f in db[s])
        print(f"{key:6} " + "  ".join(f"{s} {per[key][s]:2d}" for s in STRATEGIES), flush=True)
    share = {s: flips[s] / max(total[s], 1) for s in STRATEGIES}
    print(f"collection {n_base} -> {n_grown} documents, cut {a.cut}, statistics over "
          f"{'the whole collection' if calib.pool is None else f'the best {calib.pool}'}: decisions of the {n_base} "
          "base documents that changed")
    for s in STRATEGIES:
        print(f"  {s:10} {flips[s]:4d} of {total[s]:5d} = {100 * share[s]:.2f} %")
    if a.json:
        Path(a.json).write_text(json.dumps({"base_documents": n_base, "grown_documents": n_grown, "cut": a.cut,
                                            "pool": calib.pool,
                                            "flips": flips, "decisions": total, "share": share,
                                            "per_condition": per}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
