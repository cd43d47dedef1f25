#!/usr/bin/env python
"""Ingest benchmark (issue 2): parse speed, end-to-end ingest, ratio to embedding alone,
and the cost of a second ingest.

    python scripts/bench_ingest.py --corpus ../shared/corpus/pdf --workspace /tmp/ws_bench [--json]

Steps (each timed with ``time.perf_counter``, seconds):
1. end-to-end ``DocMaster.ingest`` into an empty workspace (parse, tree, offline
   summaries, embeddings, store, per-document index);
2. embedding alone: the same node texts (read back from the workspace) encoded again
   with the same model and batch size;
3. parse only: every PDF parsed again and turned into a tree (pages/s);
4. a second ``ingest`` of the same folder (nothing should be parsed or embedded).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docmaster_core.pipeline import DocMaster, collect_inputs, node_embedding_text  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus" / "pdf"))
    ap.add_argument("--workspace", required=True, help="workspace to create (must not hold documents yet)")
    ap.add_argument("--skip-e2e", action="store_true", help="reuse an existing workspace for steps 2-4")
    ap.add_argument("--embed-only", choices=["rerun", "stored"], default="rerun",
                    help="rerun: encode all node texts again (a second model pass); stored: use the "
                         "per-document embedding times recorded during the ingest (same load conditions)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    dm = DocMaster(args.workspace)
    out: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
    dm.embedder.encode(["warm up the model"])  # model load is not ingest work

    if not args.skip_e2e:
        if dm.ws.documents():
            print("workspace already holds documents; use a fresh one or --skip-e2e", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        res = dm.ingest([args.corpus], on_progress=lambda e: e.stage == "done" and print(
            f"  [{e.index + 1}/{e.total}] {Path(e.file).name} {e.elapsed:.1f}s", file=sys.stderr, flush=True))
        out["e2e_s"] = time.perf_counter() - t0
        out["ingested"] = sum(r.status == "ingested" for r in res)
        out["failed"] = [r.reason for r in res if r.status == "failed"]
        stages: dict[str, float] = {}
        for r in res:
            for k, v in r.timings.items():
                stages[k] = stages.get(k, 0.0) + v
        out["stage_totals_s"] = {k: round(v, 1) for k, v in stages.items()}

    docs = dm.ws.documents()
    out["documents"] = len(docs)
    out["pages"] = sum(d.n_pages for d in docs)
    texts = []
    for d in docs:
        tree = dm.ws.load_tree(d.doc_id)
        texts.extend(node_embedding_text(tree, n.id) for n in tree.nodes)
    out["nodes"] = len(texts)
    stored_total = sum(d.timings.get("total", 0.0) for d in docs)
    if stored_total == 0.0 and docs:  # workspaces written before per-document totals were stored
        first = min(docs, key=lambda d: d.added_at)
        stored_total = (max(d.added_at for d in docs) - first.added_at) + sum(first.timings.values())
    stored_embed = sum(d.timings.get("embed", 0.0) for d in docs)
    out["stored_total_s"] = stored_total
    out["stored_embed_s"] = stored_embed
    if args.embed_only == "rerun":
        t0 = time.perf_counter()
        dm.embedder.encode(texts)
        out["embed_only_s"] = time.perf_counter() - t0
    else:
        out["embed_only_s"] = stored_embed
    out["embed_texts_per_s"] = len(texts) / out["embed_only_s"]
    out["ratio_e2e_to_embed"] = out.get("e2e_s", stored_total) / out["embed_only_s"]

    from docmaster_core.parsing import parse_document
    from docmaster_core.tree.build import build_tree

    inputs, _ = collect_inputs([args.corpus])
    t0 = time.perf_counter()
    pages = 0
    for p in inputs:
        try:
            parsed = parse_document(p, settings=dm.settings.parsing)
            build_tree(parsed, "bench", dm.settings.parsing)
            pages += parsed.n_pages
        except Exception as e:  # noqa: BLE001 - benchmark keeps going
            print(f"parse failed: {p.name}: {e}", file=sys.stderr)
    out["parse_s"] = time.perf_counter() - t0
    out["parse_pages_per_s"] = pages / out["parse_s"]

    t0 = time.perf_counter()
    res2 = DocMaster(args.workspace, embedder=dm.embedder).ingest([args.corpus])
    out["second_ingest_s"] = time.perf_counter() - t0
    out["second_ingest_skipped"] = sum(r.status == "skipped" for r in res2)
    out["second_to_first_pct"] = 100.0 * out["second_ingest_s"] / out.get("e2e_s", stored_total)

    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:24} {v:.3f}" if isinstance(v, float) else f"{k:24} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
