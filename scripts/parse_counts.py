#!/usr/bin/env python
"""Node counts per type and parse time of the PyMuPDF parser over a PDF corpus.

Parses every PDF (no embedding), builds its document tree with the default
settings, and prints, per node type, the number of parser elements and of tree
nodes, plus the total parse time (seconds, wall clock, parser only) and the time of
PyMuPDF ``find_tables`` calls when the parser reports it.

Usage::

    python scripts/parse_counts.py [--corpus DIR] [--json OUT] [--files GLOB]

The corpus defaults to ``../shared/corpus/pdf`` next to the repository.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docmaster_core.config import ParsingSettings  # noqa: E402
from docmaster_core.parsing import PyMuPDFParser  # noqa: E402
from docmaster_core.tree.build import build_tree  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Parse the corpus and print counts; returns the process exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "pdf"))
    ap.add_argument("--files", default="*.pdf")
    ap.add_argument("--json", default=None, help="write per-document counts to this file")
    args = ap.parse_args(argv)
    files = sorted(glob.glob(str(Path(args.corpus) / args.files)))
    if not files:
        print(f"no PDFs under {args.corpus}", file=sys.stderr)
        return 2
    st = ParsingSettings(parser="pymupdf")
    parser = PyMuPDFParser(st)
    elem_counts: collections.Counter = collections.Counter()
    node_counts: collections.Counter = collections.Counter()
    per_doc = {}
    t_total = 0.0
    t_tables = 0.0
    n_calls = 0
    failed = []
    for f in files:
        t0 = time.perf_counter()
        try:
            parsed = parser.parse(f)
        except Exception as e:  # noqa: BLE001 - report and continue
            failed.append((Path(f).name, f"{type(e).__name__}: {e}"))
            continue
        dt = time.perf_counter() - t0
        t_total += dt
        t_tables += float((parsed.metadata.get("seconds") or {}).get("tables", 0.0) or 0.0)
        n_calls += int(parsed.metadata.get("find_tables_calls", 0) or 0)
        ec = collections.Counter(e.type.value if hasattr(e.type, "value") else str(e.type) for e in parsed.elements)
        tree = build_tree(parsed, doc_id=Path(f).stem, settings=st)
        nc = collections.Counter(n.type.value if hasattr(n.type, "value") else str(n.type) for n in tree.nodes[1:])
        elem_counts.update(ec)
        node_counts.update(nc)
        per_doc[Path(f).name] = {"seconds": round(dt, 3), "elements": dict(ec), "nodes": dict(nc),
                                 "texts": [(e.type.value, e.page, e.text[:80]) for e in parsed.elements]}
    types = sorted(set(elem_counts) | set(node_counts))
    print(f"{len(files) - len(failed)} PDFs parsed, {len(failed)} failed")
    print(f"{'type':<10} {'elements':>9} {'nodes':>9}")
    for t in types:
        print(f"{t:<10} {elem_counts[t]:>9} {node_counts[t]:>9}")
    print(f"{'total':<10} {sum(elem_counts.values()):>9} {sum(node_counts.values()):>9}")
    print(f"parse time: {t_total:.1f} s total; find_tables: {t_tables:.1f} s in {n_calls} calls")
    for name, err in failed:
        print(f"FAILED {name}: {err}")
    if args.json:
        Path(args.json).write_text(json.dumps({"elements": dict(elem_counts), "nodes": dict(node_counts),
                                               "seconds": t_total, "table_seconds": t_tables, "find_tables_calls": n_calls,
                                               "docs": per_doc}, indent=1))
    return 0 if not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
