"""Filter F1 of the offline decider on random sub-collections of a labelled corpus.

The offline decision rule standardises evidence scores over the run's collection; below
``OfflineCalibration.min_collection`` documents it uses prior statistics instead
(:mod:`docmaster_core.filtering.decider`). This script measures the rule the way a user
meets it on collections of every size: for every labelled condition it draws ``--draws``
random sub-collections of ``n`` documents (n uniform in each size band; every second
draw holds at least one matching document) and decides them exactly as a filter run
over those documents would (:func:`docmaster_core.filtering.run.offline_decisions`,
document-level signals of the combined strategy included), then reports the micro-F1
per condition, macro-averaged over the conditions, for the rule in force and for the
z-score cut used before.

Usage::

    python scripts/sim_small_collections.py WORKSPACE --cases C.tsv [C2.tsv] --conditions T.tsv [T2.tsv] [--draws 30]

Evidence is retrieved once per condition over the whole workspace (retrieval is per
document, so a sub-collection's evidence is the same); only the lexical idf comes from the
whole workspace.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from docmaster_core.pipeline import DocMaster  # noqa: E402
from docmaster_core.evaluation import harness as ev  # noqa: E402
from docmaster_core.filtering.decider import DEFAULT_CALIBRATION  # noqa: E402
from docmaster_core.filtering.run import collect_evidence, offline_decisions  # noqa: E402

STRATS = ["tree", "semantic", "hyperedge", "combined", "flat"]
BANDS = [(2, 4), (5, 7), (8, 12), (13, 20), (21, 44)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workspace")
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--conditions", nargs="+", required=True)
    ap.add_argument("--draws", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    dm = DocMaster(a.workspace)
    retr = dm.retriever()
    view = retr.view
    cases, texts = [], {}
    for cf, tf in zip(a.cases, a.conditions):
        c, t = ev.load_filter_cases(cf, tf)
        cases += c
        texts.update(t)
    fidx = {d.file_name: i for i, d in enumerate(view.docs)}
    rules = {"now (best fraction)": DEFAULT_CALIBRATION,
             "before (z >= 3.75)": replace(DEFAULT_CALIBRATION, cut="zscore", pool=None)}
    # counts[(band, rule, strategy)] -> list of per-condition F1
    f1s: dict[tuple, list[float]] = {}
    for key, text in texts.items():
        docs, cos_by = collect_evidence(retr, text, STRATS, dm.settings.retrieval.top_k, view=view)
        rows = [(fidx[c.file], c.label == 1) for c in cases if c.condition == key and c.file in fidx]
        r = np.array([x for x, _ in rows])
        y = np.array([b for _, b in rows])
        if not y.any() or y.all():
            continue
        for lo, hi in BANDS:
            rng = np.random.default_rng(a.seed)
            draws = []
            for t in range(a.draws):
                n = int(rng.integers(lo, hi + 1))
                if t % 2 == 0:
                    sel = np.r_[rng.choice(r[y], 1), rng.choice(r[~y], min(n - 1, int((~y).sum())), replace=False)]
                else:
                    sel = rng.choice(r, min(n, r.size), replace=False)
                draws.append(sel)
            for name, calib in rules.items():
                tp = {s: 0 for s in STRATS}
                fp = dict(tp)
                fn = dict(tp)
                for sel in draws:
                    sub = [docs[i] for i in sel]
                    ids = [d.doc_id for d in sub]
                    order = np.argsort([fidx[d.file_name] for d in sub])  # view order, as a run has it
                    sub = [sub[i] for i in order]
                    yy = np.isin(sel[order], r[y])
                    decs, _ = offline_decisions(retr, view, text, sub, {s: [cos_by[s][fidx[d.file_name]] for d in sub]
                                                                       for s in STRATS}, STRATS, calib, ids)
                    for s in STRATS:
                        dec = np.array([x.decision is True for x in decs[s]])
                        tp[s] += int((dec & yy).sum())
                        fp[s] += int((dec & ~yy).sum())
                        fn[s] += int((~dec & yy).sum())
                for s in STRATS:
                    f1s.setdefault(((lo, hi), name, s), []).append(2 * tp[s] / max(2 * tp[s] + fp[s] + fn[s], 1))
        print(f"{key} done", file=sys.stderr, flush=True)
    print(f"{'size':8} {'rule':22} " + " ".join(f"{s:>9}" for s in STRATS) + "   (macro-F1 over conditions)")
    for lo, hi in BANDS:
        for name in rules:
            vals = [float(np.mean(f1s[((lo, hi), name, s)])) for s in STRATS]
            print(f"{lo:>2}-{hi:<5} {name:22} " + " ".join(f"{v:9.3f}" for v in vals))


if __name__ == "__main__":
    main()
