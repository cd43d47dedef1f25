#!/usr/bin/env python
"""Benchmark of the rank-order review (issue 33) on labelled conditions, with the label oracle.

For each condition the run's ranking (the combined evidence score, ``run_filter`` with the
offline decider, not saved) is computed once and cached in ``--rankings``; then, for each
recall target, noise level and seed, :func:`docmaster_core.filtering.review.run_review`
runs with the label oracle of ``scripts/oracle_llm.py`` (the same :class:`Oracle` the chat
server answers from; a flip is drawn per seed, condition and document, and a document is
asked at most once, so its answer is fixed within a run). The oracle is asked one document
at a time in a check (``chunk=1``), as a user is.

Reported per condition: matches (by the public labels), recall relative to the oracle's
answers and to the labels, the share of runs meeting the target *relative to the oracle*
(what the rule promises), answers asked as a share of the documents, and the floor: what
the rule asks when the oracle's matches rank first (:func:`planned_calls`).

``--copies N`` builds a bigger collection from the same documents: each is copied until
there are N, every copy carries its document's label and evidence score (so copies tie;
ties are broken by a random order drawn per seed, as any order of identical documents
would be), and the noisy oracle flips each copy's answer independently.

``--bargain BUDGET`` also runs BARGAIN's recall procedure (``BARGAIN_R``, Zeighami, Shankar
and Parameswaran 2025; ``pip install bargain``, a benchmark-only dependency) on the same
collections with the same oracle, the ranking as its proxy score and BUDGET oracle calls:
it certifies the recall of a set that holds every document above a threshold of the
proxy, asked or not, so its precision relative to the oracle is reported beside.

Usage::

    python scripts/bench_review.py --workspace /work/ws/corpus --rankings /tmp/rank_p.json \\
        [--cases ../shared/eval/filter_cases.tsv --conditions ../shared/eval/filter_conditions.tsv] \\
        [--seeds 20] [--flip 0 0.1] [--recall-target 0.8 0.9 0.95] [--delta 0.1] [--copies 5000] [--json OUT]
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval"


def doc_features(workspace: str, data: dict[str, dict]) -> dict[str, tuple]:
    """``{cid: (float32 (D, d), scipy CSR (D, V))}``: each document's mean evidence embedding for
    the condition and its evidence's term counts (as the product's review,
    :meth:`~docmaster_core.filtering.review.Feedback.from_evidence`), rows in the order of the
    condition's ``files``."""
    from docmaster_core.retrieval.keyword import evidence_term_counts
    from docmaster_core.pipeline import DocMaster
    from docmaster_core.store.workspace import Workspace

    view = DocMaster(Workspace(workspace, create=False)).retriever().view
    by = {dv.file_name: dv.doc_id for dv in view.docs}
    out = {}
    for cid, d in data.items():
        ids = [by[f] for f in d["files"]]
        ev = {by[f]: e for f, e in zip(d["files"], d["evidence"])}
        out[cid] = (view.evidence_vectors(ids, ev), evidence_term_counts(view, ids, ev))
    return out


def rankings(workspace: str, conditions: list[tuple[str, str]]) -> dict[str, dict]:
    """``{cid: {"text", "files", "rank", "evidence"}}``: the combined ranking and each document's
    evidence node ids, one retrieval per condition."""
    from docmaster_core.pipeline import DocMaster
    from docmaster_core.store.workspace import Workspace

    dm = DocMaster(Workspace(workspace, create=False))
    out = {}
    for cid, text in conditions:
        run = dm.filter(text, strategies=["combined"], decider="calibrated", save=False)
        out[cid] = {"text": text, "files": [d.file_name for d in run.documents],
                    "rank": [int(d.decisions["combined"].rank) for d in run.documents],
                    "evidence": [[int(e.node_id) for e in d.evidence["combined"] if e.node_id >= 0]
                                 for d in run.documents]}
    return out


def copies(n_docs: int, total: int) -> np.ndarray:
    """int64 (total,) original document index of each copy (each document ``total // n`` or one more times)."""
    return np.arange(total, dtype=np.int64) % n_docs


def run_condition(d: dict, y: np.ndarray, tau: float, delta: float, flip: float, seeds: int, total: int | None,
                  oracle_cls, text: str, features: tuple | None = None, first_share: float = 0.5) -> dict:
    """Means over seeds for one condition, target and noise level."""
    from docmaster_core.filtering.review import Feedback, ReviewTargets, planned_calls, run_review

    rank = np.asarray(d["rank"], dtype=np.int64)
    src = copies(len(rank), total) if total else np.arange(len(rank))
    n = src.size
    met, rec_o, rec_t, cost, floor = [], [], [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng([seed, 7])
        tie = rng.permutation(n)
        order = np.lexsort((tie, rank[src]))  # rank order, copies of a document in a random order
        oracle = oracle_cls({}, flip=flip, seed=seed)
        flips = np.array([oracle.flipped(text, d["files"][src[i]], salt=str(i)) for i in range(n)]) if flip else \
            np.zeros(n, dtype=bool)
        truth = y[src]
        ans = np.where(flips, 1 - np.maximum(truth, 0), np.maximum(truth, 0)).astype(np.float64)
        t = ReviewTargets(recall=tau, delta=delta, seed=seed, first_share=first_share)
        fb = Feedback(features[0][src], features[1][src]) if features is not None else None
        st = run_review(order, t, lambda idx: ans[idx], chunk=1, feedback=fb)
        kept = np.zeros(n, dtype=bool)
        kept[st.matches] = True
        mo = ans > 0.5
        r_o = (kept & mo).sum() / mo.sum() if mo.sum() else 1.0
        lab = truth >= 0
        pos = (truth == 1)
        r_t = (kept & pos).sum() / pos.sum() if pos.sum() else 1.0
        met.append(r_o >= tau - 1e-12)
        rec_o.append(r_o)
        rec_t.append(r_t)
        cost.append(st.answered / n)
        floor.append(planned_calls(n, int(mo.sum()), t) / n)
        assert st.answered <= n and lab.any()
    return {"matches": int((y == 1).sum()) if not total else int((y[src] == 1).sum()), "documents": int(n),
            "met": float(np.mean(met)), "recall_oracle": float(np.mean(rec_o)), "recall_labels": float(np.mean(rec_t)),
            "cost": float(np.mean(cost)), "cost_max": float(np.max(cost)), "floor": float(np.mean(floor))}


def run_bargain(d: dict, y: np.ndarray, tau: float, delta: float, flip: float, seeds: int, total: int | None,
                oracle_cls, text: str, budget: int) -> dict:
    """Means over seeds of BARGAIN_R on one condition (same copies, ties and flips as :func:`run_condition`)."""
    from BARGAIN import BARGAIN_R, Oracle, Proxy

    rank = np.asarray(d["rank"], dtype=np.int64)
    src = copies(len(rank), total) if total else np.arange(len(rank))
    n = src.size
    met, calls, prec, size = [], [], [], []
    for seed in range(seeds):
        rng = np.random.default_rng([seed, 7])
        tie = rng.permutation(n)
        order = np.lexsort((tie, rank[src]))
        score = np.empty(n)
        score[order] = 1.0 - np.arange(n) / n  # the proxy: higher = better ranked
        oracle = oracle_cls({}, flip=flip, seed=seed)
        flips = np.array([oracle.flipped(text, d["files"][src[i]], salt=str(i)) for i in range(n)]) if flip else \
            np.zeros(n, dtype=bool)
        ans = np.where(flips, 1 - np.maximum(y[src], 0), np.maximum(y[src], 0)).astype(bool)

        class P(Proxy):
            def proxy_func(self, x):
                return True, float(score[int(x)])

        class O(Oracle):
            def oracle_func(self, x, proxy_output):
                return bool(ans[int(x)]) == proxy_output, bool(ans[int(x)])

        o = O(verbose=False, max_workers=1)
        got = BARGAIN_R(P(verbose=False, max_workers=1), o, delta=delta, target=tau, budget=budget,
                        seed=seed).process([str(i) for i in range(n)])
        kept = np.zeros(n, dtype=bool)
        kept[np.asarray(got, dtype=np.int64)] = True
        r = (kept & ans).sum() / ans.sum() if ans.sum() else 1.0
        met.append(r >= tau - 1e-12)
        calls.append(o.get_number_preds() / n)
        prec.append((kept & ans).sum() / kept.sum() if kept.sum() else 1.0)
        size.append(kept.sum() / n)
    return {"met": float(np.mean(met)), "cost": float(np.mean(calls)), "precision": float(np.mean(prec)),
            "kept": float(np.mean(size))}


def table(rows: dict[str, dict]) -> str:
    """A markdown table of the rows of one target and noise level plus a mean row."""
    lines = ["| cond | matches | runs meeting target (vs oracle) | recall vs oracle | recall vs labels | "
             "asked % docs (max) | floor % docs |", "|---|---|---|---|---|---|---|"]
    for cid, r in rows.items():
        lines.append(f"| {cid} | {r['matches']} | {100 * r['met']:.0f} % | {r['recall_oracle']:.3f} | "
                     f"{r['recall_labels']:.3f} | {100 * r['cost']:.1f} ({100 * r['cost_max']:.0f}) | "
                     f"{100 * r['floor']:.1f} |")
    v = list(rows.values())
    lines.append(f"| mean | | {100 * np.mean([r['met'] for r in v]):.0f} % | {np.mean([r['recall_oracle'] for r in v]):.3f} | "
                 f"{np.mean([r['recall_labels'] for r in v]):.3f} | {100 * np.mean([r['cost'] for r in v]):.1f} | "
                 f"{100 * np.mean([r['floor'] for r in v]):.1f} |")
    ok = sum(r["met"] >= 0.9 for r in v)
    lines.append(f"\nconditions meeting the target in >= 90 % of runs: {ok} of {len(v)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from docmaster_core.filtering.review import ReviewTargets

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", "-w", required=True)
    ap.add_argument("--rankings", required=True, help="JSON cache of the rankings (computed when missing)")
    ap.add_argument("--cases", default=str(EVAL / "filter_cases.tsv"))
    ap.add_argument("--conditions", default=str(EVAL / "filter_conditions.tsv"))
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--flip", type=float, nargs="+", default=[0.0, 0.1])
    ap.add_argument("--recall-target", type=float, nargs="+", default=[0.8, 0.9, 0.95])
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--first-share", type=float, default=ReviewTargets.first_share,
                    help="share w of delta the first stopping test spends (ReviewTargets.first_share)")
    ap.add_argument("--copies", type=int, help="build a collection of this many documents from copies")
    ap.add_argument("--bargain", type=int, metavar="BUDGET", help="also run BARGAIN_R with this many oracle calls")
    ap.add_argument("--no-feedback", dest="feedback", action="store_false",
                    help="screen in the evidence ranking's order only (default, as the product: re-ranked by the "
                    "answers so far, Feedback on each document's mean evidence embedding)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)

    from oracle_llm import Oracle, labels_from_eval, normalize

    with open(args.conditions, newline="", encoding="utf-8") as f:
        conds = [(r["condition"], r["text"]) for r in csv.DictReader(f, delimiter="\t")]
    labels = {(normalize(c), f): y for c, f, y in labels_from_eval(args.cases, args.conditions)}
    cache = Path(args.rankings)
    t0 = time.perf_counter()
    data = json.loads(cache.read_text()) if cache.exists() else None
    if data is None or set(data) != {c for c, _ in conds} or any("evidence" not in d for d in data.values()):
        data = rankings(args.workspace, conds)
        cache.write_text(json.dumps(data))
    print(f"rankings: {time.perf_counter() - t0:.1f} s for {len(conds)} conditions")
    feats = doc_features(args.workspace, data) if args.feedback else None
    out: dict = {"delta": args.delta, "seeds": args.seeds, "copies": args.copies, "tables": {}}
    for tau in args.recall_target:
        for flip in args.flip:
            rows = {}
            for cid, d in data.items():
                y = np.array([labels.get((normalize(d["text"]), f), -1) for f in d["files"]], dtype=np.int64)
                rows[cid] = run_condition(d, y, tau, args.delta, flip, args.seeds, args.copies, Oracle, d["text"],
                                          features=feats[cid] if feats is not None else None,
                                          first_share=args.first_share)
            out["tables"][f"{tau:g}/{flip:g}"] = rows
            n = args.copies or len(next(iter(data.values()))["files"])
            print(f"\n#### recall target {tau:g}, delta {args.delta:g}, {int(round(100 * flip))} % of oracle answers "
                  f"flipped, {n} documents, {args.seeds} seeds\n")
            print(table(rows), flush=True)
            if args.bargain:
                b = {cid: run_bargain(d, np.array([labels.get((normalize(d["text"]), f), -1) for f in d["files"]]),
                                      tau, args.delta, flip, args.seeds, args.copies, Oracle, d["text"], args.bargain)
                     for cid, d in data.items()}
                out["tables"][f"bargain {tau:g}/{flip:g}"] = b
                print(f"\nBARGAIN_R, budget {args.bargain}: runs meeting the target (vs oracle) "
                      f"{100 * np.mean([r['met'] for r in b.values()]):.0f} % (per condition: "
                      + ", ".join(f"{c} {100 * r['met']:.0f} %" for c, r in b.items())
                      + f"); oracle calls {100 * np.mean([r['cost'] for r in b.values()]):.1f} % of documents; "
                      f"set kept {100 * np.mean([r['kept'] for r in b.values()]):.1f} % of documents at precision "
                      f"{np.mean([r['precision'] for r in b.values()]):.3f} vs the oracle", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
