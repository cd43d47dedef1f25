"""Embedder backends side by side: throughput and quality retention (issue 18).

Two measurements:

``speed``  texts/s of each backend on the same N node texts of a workspace, rounds
           interleaved (torch, onnx, onnx-int8, torch-int8, torch, ...) so load on the
           machine hits every backend alike; the best round counts. Also the cosine of
           each backend's vectors to torch fp32 (mean, min).

``quality`` a copy of a workspace re-embedded with one backend (every node vector, and
           the semantic index rebuilt from them, offline LLM cache dropped), then the
           filter evaluation (AP, F1, leave-one-condition-out F1 on the labelled
           conditions) and, with ``--bench``, evidence-page recall@5, printed beside the
           same figures of the source workspace under torch.

Usage::

    python scripts/bench_embedder.py speed --ws WS [--n 400] [--rounds 3]
    python scripts/bench_embedder.py quality --ws WS --backend onnx-int8 --out DIR \\
        --cases C1.tsv C2.tsv --conditions K1.tsv K2.tsv [--bench mmlongbench]

Results are printed as markdown and written as JSON with ``--json FILE``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BACKENDS = {
    "torch": {"backend": "torch"},
    "onnx": {"backend": "onnx"},
    "onnx-int8": {"backend": "onnx-int8"},
    "torch-int8": {"backend": "torch", "quantize": True},
    "torch-bf16": {"backend": "torch-bf16"},
    "onnx-seq128": {"backend": "onnx", "max_seq_length": 128},
    "onnx-int8-seq128": {"backend": "onnx-int8", "max_seq_length": 128},
}


def _texts(ws: Path, n: int, seed: int = 0) -> list[str]:
    con = sqlite3.connect(f"file:{ws / 'workspace.sqlite'}?mode=ro", uri=True)
    rows = [r[0] for r in con.execute("SELECT content FROM nodes WHERE length(content) > 20 ORDER BY doc_id, node_id")]
    con.close()
    rng = np.random.default_rng(seed)
    return [rows[i] for i in rng.choice(len(rows), size=min(n, len(rows)), replace=False)]


def speed(args) -> dict:
    from docmaster_core.config import EmbeddingSettings
    from docmaster_core.embedding.embedders import get_embedder

    texts = _texts(Path(args.ws), args.n)
    embs = {k: get_embedder(EmbeddingSettings(**v)) for k, v in BACKENDS.items() if k in args.backends}
    for e in embs.values():  # load / export outside the timing
        e.encode(texts[:8])
    best = {k: float("inf") for k in embs}
    vecs = {}
    for _ in range(args.rounds):
        for k, e in embs.items():
            t = time.perf_counter()
            vecs[k] = e.encode(texts)
            best[k] = min(best[k], time.perf_counter() - t)
    ref = vecs["torch"]
    out = {"n_texts": len(texts), "rounds": args.rounds, "backends": {}}
    print(f"| backend | texts/s | speed vs torch | mean cosine to torch | min cosine |\n|---|---|---|---|---|")
    for k in embs:
        cos = (vecs[k] * ref).sum(1)
        r = {"texts_per_s": len(texts) / best[k], "speedup": best["torch"] / best[k],
             "cos_mean": float(cos.mean()), "cos_min": float(cos.min())}
        out["backends"][k] = r
        print(f"| {k} | {r['texts_per_s']:.1f} | {r['speedup']:.2f}x | {r['cos_mean']:.5f} | {r['cos_min']:.4f} |")
    return out


def _evaluate(dm, args) -> dict:
    from docmaster_core.evaluation.harness import load_filter_cases

    out = {}
    if args.cases:
        cases, texts = [], {}
        for cf, tf in zip(args.cases, args.conditions):
            c, t = load_filter_cases(cf, tf)
            cases += c
            texts.update(t)
        r = dm.eval_filter(cases, texts, decider="calibrated", save=False)
        out = {"ap": r["macro"]["combined"]["ap"], "f1": r["macro"]["combined"]["f1"],
               "loco_f1": (r.get("loco") or {}).get("macro", {}).get("combined"),
               "ap_by_strategy": {s: r["macro"][s]["ap"] for s in r["strategies"]}}
    if args.bench:
        out["recall@5"] = dm.eval_retrieval(args.bench, k=5, save=False)["recall"]
    return out


def quality(args) -> dict:
    from docmaster_core.config import get_settings
    from docmaster_core.pipeline import DocMaster

    src, dst = Path(args.ws), Path(args.out)
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    shutil.copy2(src / "workspace.sqlite", dst / "workspace.sqlite")
    shutil.copytree(src / "vectors", dst / "vectors")
    result = {"source": str(src), "backend": args.backend}

    t = time.perf_counter()
    dm = DocMaster(str(dst), get_settings(embedding=BACKENDS[args.backend]))
    with dm.ws.writing():  # torch: the stored vectors already are torch's (a re-index control)
        n = 0 if args.backend == "torch" else sum(dm.reembed_document(d.doc_id) for d in dm.ws.documents())
    result["reembed_s"], result["nodes"] = time.perf_counter() - t, n
    t = time.perf_counter()
    dm.index(force=True)
    result["reindex_s"] = time.perf_counter() - t
    result[args.backend] = _evaluate(dm, args)

    base = DocMaster(str(src), get_settings(embedding=BACKENDS["torch"]))
    result["source_torch"] = _evaluate(base, args)  # the source as stored (torch vectors, its own index)
    print(json.dumps(result, indent=1))
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--ws", required=True)
    s.add_argument("--n", type=int, default=400)
    s.add_argument("--rounds", type=int, default=3)
    s.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    q = sub.add_parser("quality")
    q.add_argument("--ws", required=True)
    q.add_argument("--backend", required=True, choices=list(BACKENDS))
    q.add_argument("--out", required=True, help="folder for the re-embedded copy (replaced)")
    q.add_argument("--cases", nargs="+", default=[], help="labelled filter cases (TSV); none: no filter figures")
    q.add_argument("--conditions", nargs="+", default=[])
    q.add_argument("--bench", default=None, help="also evidence-page recall@5 on this benchmark")
    for p in (s, q):
        p.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)
    res = speed(args) if args.cmd == "speed" else quality(args)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
