#!/usr/bin/env python
"""Ray ingest benchmark (issue 18): the same N PDFs ingested into two fresh workspaces,
once with the local executor and once with ``executor="ray"`` (a local in-process Ray
instance started for the run, as ``docmaster ingest --executor ray`` does without
``--ray-address``).

    HF_HUB_OFFLINE=1 python scripts/bench_ray_ingest.py [--pdfs 12] [--corpus DIR] [--index] [--json]

Each executor runs in its own Python process (each pays its own model load and Ray
start), with the offline LLM (summaries on; the semantic index only with ``--index``).
Workspaces go to a temporary folder outside the repository and are deleted afterwards.

Reported (seconds, ``time.perf_counter``):

* wall: the ``DocMaster.ingest`` call, start to return (Ray start and shutdown included);
* parse / tree / embed: sums of the per-document stage timings (on Ray these run in
  the workers and overlap; the first embed of each model includes its model load);
* driver: summarise + store (+ index) per document, always serial in the ingesting process;
* start-up: time from the ``ingest`` call to the first ``parsing`` event (hashing, plus
  the Ray start for the ray executor); Ray overhead = ray start-up - local start-up.

The extrapolation to W workers is ``(parse + tree + embed) / n / W + driver / n``
(seconds per document): the worker-side cost spread over W workers plus the driver's
serial part, with no scheduling or transfer cost assumed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run_one(executor: str, pdfs: list[str], workspace: str, index: bool) -> dict:
    """Ingest ``pdfs`` into ``workspace`` with one executor; returns the measurements."""
    from docmaster_core.config import get_settings
    from docmaster_core.pipeline import DocMaster

    settings = get_settings(llm={"backend": "offline"})
    dm = DocMaster(workspace, settings)
    first: list[float] = []
    t0 = time.perf_counter()

    def on_progress(ev):
        if ev.stage == "parsing" and not first:
            first.append(time.perf_counter() - t0)

    res = dm.ingest(pdfs, build_index=index, executor=executor, on_progress=on_progress)
    wall = time.perf_counter() - t0
    stages: dict[str, float] = {}
    for r in res:
        if r.status == "ingested":
            for k, v in r.timings.items():
                stages[k] = stages.get(k, 0.0) + v
    return {
        "executor": executor,
        "wall": wall,
        "startup": first[0] if first else 0.0,
        "ingested": sum(r.status == "ingested" for r in res),
        "failed": [r.reason for r in res if r.status == "failed"],
        "stages": stages,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "pdf"),
                    help="folder of PDFs (default ../shared/corpus/pdf)")
    ap.add_argument("--pdfs", type=int, default=12, help="ingest the first N PDFs of the folder, sorted by name")
    ap.add_argument("--index", action="store_true", help="also build the per-document semantic index")
    ap.add_argument("--json", action="store_true", help="print the raw measurements as JSON too")
    ap.add_argument("--_one", nargs=2, metavar=("EXECUTOR", "WORKSPACE"), help=argparse.SUPPRESS)
    ap.add_argument("--_files", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args._one:  # child process: one executor
        print(json.dumps(run_one(args._one[0], args._files, args._one[1], args.index)))
        return 0

    pdfs = sorted(Path(args.corpus).glob("*.pdf"), key=lambda p: p.name)[: args.pdfs]
    if not pdfs:
        print(f"no PDFs in {args.corpus}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="docmaster_bench_ray_"))
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    out = []
    try:
        for executor in ("local", "ray"):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--_one", executor, str(tmp / f"ws_{executor}"),
                   *(["--index"] if args.index else []), "--_files", *map(str, pdfs)]
            print(f"running {executor} on {len(pdfs)} PDFs ...", file=sys.stderr, flush=True)
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores (load average {load:.1f} at the end), "
          f"Python {platform.python_version()}; {len(pdfs)} PDFs from {args.corpus}; offline LLM, "
          f"summaries on, semantic index {'on' if args.index else 'off'}.\n")
    print("| executor | ingested | wall s | s/doc | parse s | tree s | embed s | driver s (summarise+store"
          + ("+index" if args.index else "") + ") | start-up s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out:
        st, n = r["stages"], max(1, r["ingested"])
        driver = st.get("summarise", 0) + st.get("store", 0) + st.get("index", 0)
        print(f"| {r['executor']} | {r['ingested']} | {r['wall']:.1f} | {r['wall'] / n:.2f} | {st.get('parse', 0):.1f} | "
              f"{st.get('tree', 0):.2f} | {st.get('embed', 0):.1f} | {driver:.1f} | {r['startup']:.1f} |")
    local, ray = out
    print(f"\nRay start-up overhead: {ray['startup'] - local['startup']:.1f} s "
          "(time to the first submitted parse task, minus the local run's).")
    st, n = ray["stages"], max(1, ray["ingested"])
    cost = (st.get("parse", 0) + st.get("tree", 0) + st.get("embed", 0)) / n
    drv = (st.get("summarise", 0) + st.get("store", 0) + st.get("index", 0)) / n
    est = ", ".join(f"W={w}: {cost / w + drv:.2f}" for w in (1, 2, 4, 8, 16))
    print(f"Extrapolation (from the ray run): worker cost {cost:.2f} s/doc, driver {drv:.3f} s/doc; "
          f"cost/W + driver = {est} s/doc.")
    for r in out:
        if r["failed"]:
            print(f"{r['executor']}: {len(r['failed'])} failed: " + "; ".join(r["failed"]))
    if args.json:
        print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
