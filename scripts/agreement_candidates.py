#!/usr/bin/env python
"""Agreement of two-stage (candidate) filtering with exhaustive scoring (issue 25).

For each condition the offline filter (``decider="calibrated"``, default strategies) is
run twice in one process on the same workspace: exhaustively (``candidates.min_docs``
above the collection size) and with the candidate stage forced (``min_docs=0``) and
the given ``pool_docs``. Prints, per pool size, the decisions that differ (condition x
document x strategy), the documents kept by the exhaustive run that were not
candidates, and the mean candidate count.

Usage::

    python scripts/agreement_candidates.py --ws WS --conditions ../shared/eval/filter_conditions.tsv \\
        [--conditions ../shared/eval/filter_conditions_q.tsv] [--pools 44,100,200] [--n 0] [--json OUT]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ws", required=True)
    ap.add_argument("--conditions", action="append", required=True)
    ap.add_argument("--pools", default="44,100,200")
    ap.add_argument("--n", type=int, default=0, help="first N conditions of each file (0: all)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    from docmaster_core.config import CandidateSettings, get_settings
    from docmaster_core.pipeline import DocMaster

    conds = []
    for f in a.conditions:
        with open(f, newline="", encoding="utf-8") as fh:
            rows = [(r["condition"], r["text"]) for r in csv.DictReader(fh, delimiter="\t")]
        conds += rows[: a.n] if a.n else rows
    settings = get_settings(llm={"backend": "offline"})
    dm = DocMaster(a.ws, settings)
    exhaustive = CandidateSettings(min_docs=10**9)
    out = {"workspace": a.ws, "conditions": [c for c, _ in conds], "pools": {}}
    base = {}
    t_ex = []
    for cid, text in conds:
        t0 = time.perf_counter()
        run = dm.filter(text, decider="calibrated", save=False, candidates=exhaustive)
        t_ex.append(time.perf_counter() - t0)
        base[cid] = {d.doc_id: {s: dd.decision for s, dd in d.decisions.items()} for d in run.documents}
    out["exhaustive_s"] = t_ex
    for pool in [int(x) for x in a.pools.split(",") if x.strip()]:
        cs = CandidateSettings(min_docs=0, pool_docs=pool)
        diff = total = missed = kept = 0
        n_cand, per, t_c = [], {}, []
        for cid, text in conds:
            t0 = time.perf_counter()
            run = dm.filter(text, decider="calibrated", save=False, candidates=cs)
            t_c.append(time.perf_counter() - t0)
            n_cand.append(run.candidates.get("candidates"))
            dd = 0
            for d in run.documents:
                b = base[cid][d.doc_id]
                for s, dec in d.decisions.items():
                    total += 1
                    dd += dec.decision != b[s]
                    if b[s] and s == "combined":
                        kept += 1
                        missed += dec.decided_by == "not-a-candidate"
            diff += dd
            per[cid] = dd
        res = {"decisions": total, "differ": diff, "agreement": 1 - diff / max(total, 1),
               "kept_combined": kept, "kept_not_candidate": missed,
               "mean_candidates": sum(n_cand) / len(n_cand), "differ_by_condition": per, "seconds": t_c}
        out["pools"][pool] = res
        print(f"pool {pool}: {diff} of {total} decisions differ (agreement {res['agreement']:.4%}); "
              f"exhaustively kept (combined) but not a candidate: {missed} of {kept}; "
              f"mean candidates {res['mean_candidates']:.1f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
