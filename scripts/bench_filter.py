#!/usr/bin/env python
"""Filter latency benchmark (SPEC F6 goal: < 1 s per condition over the 88-document
corpus for the offline path, LLM time excluded).

For each condition the script times, with warm caches (the workspace view, FAISS
index, section index, hyper-edges and flat chunk vectors are built once before
timing; that cold start is reported separately):

* ``retrieval`` - query embedding and all retrieval for every document: the structure-
  aware strategies (tree, semantic, hyper-edge, combined) and, separately, flat;
* ``decide`` - the offline calibrated decisions (this is the offline backend's "LLM
  time"; reported, not part of the goal figure);
* ``total`` - ``run_filter`` end to end without saving.

Usage::

    python scripts/bench_filter.py --workspace /work/ws_corpus \\
        [--conditions ../shared/eval/filter_conditions.tsv] [--repeat 3] [--json OUT.json]

Times are wall-clock seconds (``time.perf_counter``), median over ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

DEFAULT_CONDITIONS = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "filter_conditions.tsv"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", "-w", required=True)
    ap.add_argument("--conditions", default=str(DEFAULT_CONDITIONS), help="TSV condition<TAB>text")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)

    from docmaster_core.pipeline import DocMaster
    from docmaster_core.filtering.run import run_filter
    from docmaster_core.store.workspace import Workspace

    with open(args.conditions, newline="", encoding="utf-8") as f:
        conds = [(r["condition"], r["text"]) for r in csv.DictReader(f, delimiter="\t")]
    dm = DocMaster(Workspace(args.workspace, create=False))
    st = dm.settings.retrieval
    t0 = time.perf_counter()
    dm.embedder.encode(["warm-up"])
    t_model = time.perf_counter() - t0
    r = dm.retriever()
    t0 = time.perf_counter()
    view = r.view
    t_view = time.perf_counter() - t0
    t0 = time.perf_counter()
    r.rank("warm-up", ["tree", "semantic", "hyperedge", "combined"], view=view)
    t_struct = time.perf_counter() - t0
    t0 = time.perf_counter()
    r.rank("warm-up", ["flat"], view=view)
    t_flat = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_filter(dm.ws, dm.embedder, None, st, "warm-up condition", retriever=r, save=False)
    t_lex = time.perf_counter() - t0
    cold = {"model_load": t_model, "view": t_view, "structure_indexes": t_struct, "flat_chunks": t_flat,
            "first_filter": t_lex}

    rows = []
    for key, text in conds:
        rs, rf, dec, tot = [], [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r.rank(text, ["tree", "semantic", "hyperedge", "combined"], view=view)
            rs.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r.rank(text, ["flat"], view=view)
            rf.append(time.perf_counter() - t0)
            run = run_filter(dm.ws, dm.embedder, None, st, text, retriever=r, save=False)
            dec.append(run.timings["decide"])
            tot.append(run.timings["total"])
        rows.append({"condition": key, "structure_retrieval": statistics.median(rs), "flat_retrieval": statistics.median(rf),
                     "decide": statistics.median(dec), "total": statistics.median(tot)})
    summ = {
        "documents": len(view.docs),
        "nodes": int(view.emb.shape[0]),
        "chunks": int(r.flat(view).emb.shape[0]),
        "cold_start": cold,
        "mean": {k: statistics.mean(x[k] for x in rows) for k in ("structure_retrieval", "flat_retrieval", "decide", "total")},
        "max": {k: max(x[k] for x in rows) for k in ("structure_retrieval", "flat_retrieval", "decide", "total")},
        "per_condition": rows,
    }
    print(f"{summ['documents']} documents, {summ['nodes']} nodes, {summ['chunks']} flat chunks")
    print("cold start: " + ", ".join(f"{k} {v:.2f} s" for k, v in cold.items()))
    print(f"{'condition':10} {'structure':>10} {'flat':>10} {'decide':>10} {'total':>10}   (seconds, median of {args.repeat})")
    for x in rows:
        print(f"{x['condition']:10} {x['structure_retrieval']:10.3f} {x['flat_retrieval']:10.3f} {x['decide']:10.3f} {x['total']:10.3f}")
    for agg in ("mean", "max"):
        a = summ[agg]
        print(f"{agg:10} {a['structure_retrieval']:10.3f} {a['flat_retrieval']:10.3f} {a['decide']:10.3f} {a['total']:10.3f}")
    goal = summ["max"]["structure_retrieval"] < 1.0
    print(f"goal (< 1 s per condition, retrieval excluding decisions): {'met' if goal else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(summ, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
