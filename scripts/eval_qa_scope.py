#!/usr/bin/env python
"""Questions about one paper asked over a scope of several: is the answer quoted from that paper
alone? (issue 35, a newcomer's padded answers)

Each answerable question of the QA case files (``file, question, kind, key``; one chosen paper
each) is asked over a scope of its paper and the ``--near`` papers closest to it (cosine of the
documents' mean node embeddings), as a user asks over the documents a filter kept. Reported:
right (the key quoted in a citation from the question's paper), the share of answers that cite
another paper, and cited passages from other papers over all cited passages.

    python scripts/eval_qa_scope.py -w CORPUS_WS --cases eval/qa_cases.tsv eval/qa_cases_papers2.tsv [--near 3] [--json OUT]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-w", "--workspace", required=True)
    ap.add_argument("--cases", nargs="+", required=True, help="QA case TSVs (file, question, kind, key)")
    ap.add_argument("--near", type=int, default=3, help="other papers in each question's scope")
    ap.add_argument("--json", help="write every case's outcome here")
    a = ap.parse_args(argv)
    import numpy as np

    from docmaster_core.pipeline import DocMaster

    dm = DocMaster(a.workspace)
    view = dm.retriever().view
    emb = np.asarray(view.emb, dtype=np.float32)
    mean = np.stack([emb[d.start:d.start + d.n_nodes].mean(0) for d in view.docs])
    mean /= np.linalg.norm(mean, axis=1, keepdims=True)
    by = {d.file_name: i for i, d in enumerate(view.docs)}
    rows = [r for f in a.cases for r in csv.DictReader(open(f, newline="", encoding="utf-8"), delimiter="\t")
            if r["kind"] != "unanswerable" and r["file"] in by]

    def norm(s: str) -> str:
        return re.sub(r"\s+", " ", s).lower()

    out = []
    for r in rows:
        i = by[r["file"]]
        near = [int(j) for j in np.argsort(-(mean @ mean[i])) if j != i][:a.near]
        res = dm.ask(r["question"], docs=[view.docs[j].doc_id for j in [i, *near]], save=False)
        own = [c for c in res.answer.citations if c.doc_id == view.docs[i].doc_id]
        out.append({"file": r["file"], "question": r["question"], "right": any(norm(r["key"]) in norm(c.quote) for c in own),
                    "cited": len(res.answer.citations), "cited_other": len(res.answer.citations) - len(own),
                    "outcome": res.answer.outcome, "doc_source": res.doc_source})
    n = len(out) or 1
    print(f"{len(out)} questions, scope = the paper + {a.near} nearest: right {sum(o['right'] for o in out) / n:.3f}; "
          f"answers citing another paper {sum(o['cited_other'] > 0 for o in out) / n:.3f}; cited passages from other "
          f"papers {sum(o['cited_other'] for o in out)} of {sum(o['cited'] for o in out)}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
