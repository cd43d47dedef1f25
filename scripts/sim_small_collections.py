"""Filter F1 of the offline decider on small sub-collections of a labelled corpus.

The offline decision rule standardises evidence scores over the run's collection; below
``OfflineCalibration.min_collection`` documents it uses prior statistics instead
(:mod:`docmaster_core.retrieval.decider`). This script measures both regimes the way a
user meets them: for every labelled condition it draws ``--draws`` random
sub-collections of ``n`` documents (n uniform in each size band; every second draw holds at
least one matching document), applies the rule to the evidence scores of those documents
only, and reports the micro-F1 per condition, macro-averaged over the conditions of each
half (odd / even condition order: half A was used to choose the prior rule's parameters,
half B is held out) and over the strategies.

Usage::

    python scripts/sim_small_collections.py WORKSPACE --cases CASES.tsv --conditions CONDITIONS.tsv

Evidence is retrieved once per condition over the whole workspace (retrieval is per
document, so a sub-collection's evidence is the same); only the lexical idf comes from the
whole workspace.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docmaster_core.pipeline import DocMaster  # noqa: E402
from docmaster_core.retrieval import evaluation as ev  # noqa: E402
from docmaster_core.retrieval.decider import (DEFAULT_CALIBRATION, calibrated_decisions, condition_terms,  # noqa: E402
                                              dense_score, lexical_score, lexical_stats)
from docmaster_core.retrieval.filter import collect_evidence  # noqa: E402

STRATS = ["tree", "semantic", "hyperedge", "combined", "flat"]
BANDS = [(2, 4), (5, 7), (8, 12), (13, 20)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workspace")
    ap.add_argument("--cases", required=True)
    ap.add_argument("--conditions", required=True)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    dm = DocMaster(a.workspace)
    retr = dm.retriever()
    view = retr.view
    st = lexical_stats(view)
    cases, texts = ev.load_filter_cases(a.cases, a.conditions)
    fidx = {d.file_name: i for i, d in enumerate(view.docs)}
    scores = {}
    for key, text in texts.items():
        docs, cos_by = collect_evidence(retr, text, STRATS, dm.settings.retrieval.top_k, view=view)
        terms = condition_terms(text)
        rows = [(fidx[c.file], c.label == 1) for c in cases if c.condition == key and c.file in fidx]
        for s in STRATS:
            d = np.array([dense_score(c, DEFAULT_CALIBRATION.top_m) for c in cos_by[s]])
            l = np.array([lexical_score(terms, [e.text for e in dd.evidence[s]], st)[0] for dd in docs])
            scores[(key, s)] = (d, l, rows)
    keys = list(texts)
    halves = {"A": keys[0::2], "B": keys[1::2]}
    old = lambda d, l: d >= 0.55  # the fixed rule used before the prior rule (small collections only)
    new = lambda d, l: calibrated_decisions(d, l)[0]
    print(f"{'size':8} {'rule':22} {'F1 half A':>10} {'F1 half B':>10}   (macro over conditions and the 5 strategies)")
    for lo, hi in BANDS:
        rules = {"current rule": new}
        if hi < DEFAULT_CALIBRATION.min_collection:
            rules["old fixed d >= 0.55"] = old
        for name, rule in rules.items():
            out = []
            for h in ("A", "B"):
                f1s = []
                for s in STRATS:
                    rng = np.random.default_rng(a.seed)
                    for key in halves[h]:
                        d, l, rows = scores[(key, s)]
                        r = np.array([x for x, _ in rows])
                        y = np.array([b for _, b in rows])
                        if not y.any() or y.all():
                            continue
                        tp = fp = fn = 0
                        for t in range(a.draws):
                            n = int(rng.integers(lo, hi + 1))
                            if t % 2 == 0:
                                sel = np.r_[rng.choice(r[y], 1), rng.choice(r[~y], min(n - 1, (~y).sum()), replace=False)]
                            else:
                                sel = rng.choice(r, min(n, r.size), replace=False)
                            dec = rule(d[sel], l[sel])
                            yy = np.isin(sel, r[y])
                            tp += int((dec & yy).sum()); fp += int((dec & ~yy).sum()); fn += int((~dec & yy).sum())
                        f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
                out.append(float(np.mean(f1s)) if f1s else float("nan"))
            print(f"{lo:>2}-{hi:<5} {name:22} {out[0]:10.3f} {out[1]:10.3f}")


if __name__ == "__main__":
    main()
