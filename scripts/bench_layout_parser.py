#!/usr/bin/env python
"""Speed of the parser backends: pages per second of ``fast`` (heuristic PyMuPDF) and
``layout`` (PyMuPDF layout model, both feature sets), measured alternately per file in
one run so that load on the machine affects all of them alike.

Usage::

    python scripts/bench_layout_parser.py [--corpus DIR] [--files F1,F2,...] [--repeats N] [--json]

Per file and backend the best of ``--repeats`` runs is kept (the model is loaded
once before timing). The layout backend also reports its own split (``seconds``:
layout model vs. text/mapping).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docmaster_core.config import ParsingSettings  # noqa: E402
from docmaster_core.model import NodeType  # noqa: E402
from docmaster_core.parsing import LayoutParser, PyMuPDFParser  # noqa: E402

DEFAULT_FILES = [
    "1706.03762v7_attention-is-all-you-need.pdf",
    "1810.04805_bert.pdf",
    "doc_nara-2022-2026-strategic-plan.pdf",
    "mapreduce-simplified-data-processing.pdf",
    "doc_disney-q1-fy25-earnings-release.pdf",
]


def machine() -> dict:
    info = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "Model name":
                info["cpu"] = v.strip()
            if k.strip() == "CPU(s)":
                info["cpus"] = v.strip()
            if k.strip() == "Flags":
                fl = set(v.split())
                info["avx2"] = "avx2" in fl
                info["avx512f"] = "avx512f" in fl
    except Exception:
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "pdf"))
    ap.add_argument("--files", default=",".join(DEFAULT_FILES), help="comma-separated file names in the corpus")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    backends = {
        "fast": PyMuPDFParser(ParsingSettings()),
        "layout": LayoutParser(ParsingSettings()),
        "layout-rf": LayoutParser(ParsingSettings(layout_features="rf")),
    }
    files = [Path(args.corpus) / f for f in args.files.split(",") if f]
    # warm up: load the models once
    for name in ("layout", "layout-rf"):
        backends[name].parse(files[0])
    rows = []
    for f in files:
        for name, p in backends.items():
            best = None
            for _ in range(max(1, args.repeats)):
                t0 = time.perf_counter()
                d = p.parse(f)
                dt = time.perf_counter() - t0
                if best is None or dt < best[0]:
                    best = (dt, d)
            dt, d = best
            rows.append({
                "file": f.name, "backend": name, "pages": d.n_pages, "seconds": round(dt, 3),
                "pages_per_s": round(d.n_pages / dt, 2),
                "titles": sum(1 for e in d.elements if e.type == NodeType.TITLE),
                "equations": sum(1 for e in d.elements if e.type == NodeType.EQUATION),
                "tables": sum(1 for e in d.elements if e.type == NodeType.TABLE),
                "split": d.metadata.get("seconds"),
            })
            print(f"{f.name[:45]:45s} {name:9s} {d.n_pages:3d} p {dt:7.2f} s {d.n_pages / dt:6.2f} p/s", file=sys.stderr)
    total = {}
    for name in backends:
        rs = [r for r in rows if r["backend"] == name]
        pg, s = sum(r["pages"] for r in rs), sum(r["seconds"] for r in rs)
        total[name] = {"pages": pg, "seconds": round(s, 2), "pages_per_s": round(pg / s, 2)}
    out = {"machine": machine(), "command": "python scripts/bench_layout_parser.py " + " ".join(argv or sys.argv[1:]),
           "totals": total, "files": rows}
    print(json.dumps(out, indent=1) if args.json else json.dumps(total, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
