#!/usr/bin/env python
"""Benchmark of the filter cascade (issue 14) on labelled conditions, with the label oracle as the LLM.

For each condition the evidence is retrieved once and every document's combined
evidence score and rank computed once (``run_filter`` with the offline decider, not
saved); then, for each seed and noise level, :func:`docmaster_core.filtering.cascade.run_cascade`
runs with the label oracle of ``scripts/oracle_llm.py`` as the LLM (in process: the
same :class:`Oracle` the chat server answers from, optionally flipping a fraction of
answers; here a flip is drawn per seed, condition and document, where the server draws
it per request). The cascade is the one ``docmaster filter --cascade --decide combined-only``
runs: one LLM decision per document at most, on the combined evidence.

Reported per condition (means over seeds): recall and precision against the public
labels (documents without a label left out), the share of runs meeting the recall
target and both targets, and LLM decisions as a percentage of the documents (calling
on every document = 100 %; per strategy it would be 400 %). With flipped answers the
table also gives what calling the noisy oracle on every document achieves.

Usage::

    python scripts/bench_cascade.py --workspace /work/ws_cascade \\
        [--cases ../shared/eval/filter_cases.tsv --conditions ../shared/eval/filter_conditions.tsv] \\
        [--seeds 20] [--flip 0 0.1] [--recall-target 0.9] [--precision-target 0.9] [--delta 0.1] \\
        [--sample-budget N] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
EVAL = ROOT.parent / "shared" / "eval"


def _prf(dec: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Recall and precision of bool (N,) decisions against int (N,) labels (-1 = no label)."""
    m = y >= 0
    tp = int((dec & (y == 1)).sum())
    pos = int((y == 1).sum())
    kept = int((dec & m).sum())
    return (tp / pos if pos else 1.0), (tp / kept if kept else 1.0)


def scores_per_condition(workspace: str, conditions: list[tuple[str, str]]) -> dict[str, dict]:
    """``{cid: {"files", "z", "rank", "center"}}``: combined evidence scores, one retrieval per condition."""
    from docmaster_core.pipeline import DocMaster
    from docmaster_core.store.workspace import Workspace

    dm = DocMaster(Workspace(workspace, create=False))
    out = {}
    for cid, text in conditions:
        run = dm.filter(text, strategies=["combined"], decider="calibrated", save=False)
        out[cid] = {
            "text": text,
            "files": [d.file_name for d in run.documents],
            "z": np.array([d.decisions["combined"].evidence_score for d in run.documents], dtype=np.float64),
            "rank": np.array([d.decisions["combined"].rank for d in run.documents], dtype=np.int64),
            "center": float(run.cuts["combined"].threshold),
        }
    return out


def bench(data: dict[str, dict], labels: dict, seeds: int, flip: float, targets_kw: dict) -> list[dict]:
    """One row per condition (means over ``seeds``), for one noise level."""
    from oracle_llm import Oracle, normalize

    from docmaster_core.filtering.cascade import CascadeTargets, run_cascade

    rows = []
    for cid, d in data.items():
        y = np.array([labels.get((normalize(d["text"]), f), -1) for f in d["files"]], dtype=np.int64)
        rec, prec, met_r, met_both, calls, met_r_llm = [], [], [], [], [], []
        base_r, base_p = [], []
        for seed in range(seeds):
            oracle = Oracle(labels, flip=flip, seed=seed)
            llm_y = np.array([oracle.answer(d["text"], f) for f in d["files"]], dtype=np.float64)
            t = CascadeTargets(seed=seed, **targets_kw)
            res = run_cascade(d["z"], d["rank"], d["center"], t, lambda idx: llm_y[idx])
            dec = np.array([bool(x) for x in res.decision])
            r, p = _prf(dec, y)
            rec.append(r)
            prec.append(p)
            met_r.append(r >= t.recall)
            met_both.append(r >= t.recall and p >= t.precision)
            calls.append(res.labelled / len(dec))
            r_llm, _ = _prf(dec, np.where(y >= 0, llm_y.astype(np.int64), -1))
            met_r_llm.append(r_llm >= t.recall)
            br, bp = _prf(llm_y > 0.5, y)
            base_r.append(br)
            base_p.append(bp)
        rows.append({"condition": cid, "positives": int((y == 1).sum()), "documents": int(len(y)),
                     "recall": float(np.mean(rec)), "precision": float(np.mean(prec)),
                     "met_recall": float(np.mean(met_r)), "met_both": float(np.mean(met_both)),
                     "met_recall_vs_llm": float(np.mean(met_r_llm)),
                     "calls_pct": 100.0 * float(np.mean(calls)),
                     "all_calls_recall": float(np.mean(base_r)), "all_calls_precision": float(np.mean(base_p))})
    return rows


def table(rows: list[dict], flip: float, recall_target: float) -> str:
    """A markdown table of :func:`bench` rows plus a mean row."""
    head = ("| cond | matches | recall | precision | runs recall >= target | runs both targets | "
            "LLM calls % docs |" + (" all-calls recall / precision |" if flip else ""))
    sep = "|" + "---|" * (head.count("|") - 1)
    lines = [head, sep]
    for r in rows:
        lines.append(f"| {r['condition']} | {r['positives']} | {r['recall']:.3f} | {r['precision']:.3f} | "
                     f"{100 * r['met_recall']:.0f} % | {100 * r['met_both']:.0f} % | {r['calls_pct']:.1f} |"
                     + (f" {r['all_calls_recall']:.3f} / {r['all_calls_precision']:.3f} |" if flip else ""))
    ok = sum(r["met_recall"] >= 0.9 for r in rows)
    lines.append(f"| mean | | {np.mean([r['recall'] for r in rows]):.3f} | {np.mean([r['precision'] for r in rows]):.3f} | "
                 f"{100 * np.mean([r['met_recall'] for r in rows]):.0f} % | {100 * np.mean([r['met_both'] for r in rows]):.0f} % | "
                 f"{np.mean([r['calls_pct'] for r in rows]):.1f} |"
                 + (f" {np.mean([r['all_calls_recall'] for r in rows]):.3f} / "
                    f"{np.mean([r['all_calls_precision'] for r in rows]):.3f} |" if flip else ""))
    lines.append(f"\nconditions with recall >= {recall_target:g} in >= 90 % of runs: {ok} of {len(rows)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", "-w", required=True)
    ap.add_argument("--cases", default=str(EVAL / "filter_cases.tsv"))
    ap.add_argument("--conditions", default=str(EVAL / "filter_conditions.tsv"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--flip", type=float, nargs="+", default=[0.0, 0.1], help="fractions of oracle answers flipped")
    ap.add_argument("--recall-target", type=float, default=0.9)
    ap.add_argument("--precision-target", type=float, default=0.9)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--sample-budget", type=int)
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)

    import csv

    from oracle_llm import labels_from_eval, normalize

    with open(args.conditions, newline="", encoding="utf-8") as f:
        conds = [(r["condition"], r["text"]) for r in csv.DictReader(f, delimiter="\t")]
    labels = {(normalize(c), f): y for c, f, y in labels_from_eval(args.cases, args.conditions)}
    t0 = time.perf_counter()
    data = scores_per_condition(args.workspace, conds)
    t_ret = time.perf_counter() - t0
    kw = {"recall": args.recall_target, "precision": args.precision_target, "delta": args.delta,
          "sample_budget": args.sample_budget}
    out = {"targets": kw, "seeds": args.seeds, "retrieval_s": round(t_ret, 1), "tables": {}}
    for flip in args.flip:
        rows = bench(data, labels, args.seeds, flip, kw)
        out["tables"][str(flip)] = rows
        print(f"\n### {int(round(100 * flip))} % of oracle answers flipped "
              f"(recall target {args.recall_target:g}, precision target {args.precision_target:g}, "
              f"delta {args.delta:g}, {args.seeds} seeds)\n")
        print(table(rows, flip, args.recall_target))
    print(f"\nretrieval and evidence scores: {t_ret:.1f} s for {len(conds)} conditions")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
