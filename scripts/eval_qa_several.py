#!/usr/bin/env python
"""A question about several documents: does the answer cite the ones that answer it? (issue 35)

For each labelled filter condition with at least ``--matches`` matching documents, a scope of
``--matches`` matching and as many non-matching documents (seeded) is asked "Which of these
documents ...?" (the condition's text, its "Does the paper" turned into "Which of these papers";
a condition not written so is asked as "Which of these documents meet this: TEXT"). Reported:
the share of the scope's matching documents the answer cites (recall) and the share of cited
documents that match (precision), averaged over conditions.

    python scripts/eval_qa_several.py -w CORPUS_WS --cases C.tsv [C2.tsv] --conditions K.tsv [K2.tsv] [--matches 4] [--json OUT]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def as_question(text: str) -> str:
    """"Does the paper propose X?" -> "Which of these papers propose X?"."""
    m = re.match(r"^\s*(?:does|is|did)\s+the\s+(paper|document|agreement|contract)\s+(.*)$", text, re.I)
    if m:
        return f"Which of these {m.group(1).lower()}s {m.group(2)}"
    return f"Which of these documents meet this: {text.strip()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workspace", required=True)
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--conditions", nargs="+", required=True)
    ap.add_argument("--matches", type=int, default=4, help="matching (and as many non-matching) documents per scope")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import numpy as np

    from docmaster_core.pipeline import DocMaster

    dm = DocMaster(a.workspace)
    ids = {d.file_name: d.doc_id for d in dm.documents()}
    texts = {r["condition"]: r["text"] for f in a.conditions
             for r in csv.DictReader(open(f, newline="", encoding="utf-8"), delimiter="\t")}
    labels: dict[str, dict[str, int]] = {}
    for f in a.cases:
        for r in csv.DictReader(open(f, newline="", encoding="utf-8"), delimiter="\t"):
            if r["file"] in ids and r["label"] in ("0", "1"):
                labels.setdefault(r["condition"], {})[ids[r["file"]]] = int(r["label"])
    rng = np.random.default_rng(a.seed)
    rows = []
    for cid, lab in sorted(labels.items()):
        pos = sorted(d for d, y in lab.items() if y == 1)
        neg = sorted(d for d, y in lab.items() if y == 0)
        if len(pos) < a.matches or len(neg) < a.matches or cid not in texts:
            continue
        p = [pos[i] for i in rng.choice(len(pos), a.matches, replace=False)]
        n = [neg[i] for i in rng.choice(len(neg), a.matches, replace=False)]
        q = as_question(texts[cid])
        res = dm.ask(q, docs=p + n, save=False)
        cited = {c.doc_id for c in res.answer.citations}
        rows.append({"condition": cid, "question": q, "recall": len(cited & set(p)) / len(p),
                     "precision": len(cited & set(p)) / len(cited) if cited else None, "cited": len(cited),
                     "outcome": res.answer.outcome})
    n = len(rows) or 1
    prec = [r["precision"] for r in rows if r["precision"] is not None]
    print(f"{len(rows)} conditions, scope {a.matches} matching + {a.matches} not: matching documents cited "
          f"{sum(r['recall'] for r in rows) / n:.3f}; cited documents that match "
          f"{(sum(prec) / len(prec)) if prec else float('nan'):.3f}; documents cited per answer "
          f"{sum(r['cited'] for r in rows) / n:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
