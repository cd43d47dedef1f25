#!/usr/bin/env python
"""A/B parse time of two checkouts of DocMaster on the same PDFs, interleaved.

Two worker processes (one per checkout, ``PYTHONPATH`` = that checkout) parse the
same files in turn, file by file (A then B, then B then A on the next file), so that
both see the same machine load; each reports wall-clock and CPU seconds of
the parser's ``parse`` (parser only, no tree, no embedding). Prints totals and the
ratio B / A.

Usage::

    python scripts/parse_time_ab.py --a /path/to/old/checkout --b . [--corpus DIR] [--files GLOB] [--repeat 1]
    python scripts/parse_time_ab.py --a . --b . --parser-b auto   # the layout gate against fast

``--parser-a`` / ``--parser-b`` name the backend of each side (default ``fast``; the
worker needs a checkout with ``get_parser``); pages sent to the layout model are
counted per reason from ``metadata["layout_pages"]``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from pathlib import Path

WORKER = r"""
import json, os, sys, time
from docmaster_core.config import ParsingSettings
from docmaster_core.parsing import get_parser
name = os.environ.get("AB_PARSER", "fast")
kw = json.loads(os.environ.get("AB_SETTINGS") or "{}")
p = get_parser(name, ParsingSettings(parser=name, **kw))
for line in sys.stdin:
    f = line.strip()
    w0, c0 = time.perf_counter(), time.process_time()
    n, lp = 0, []
    try:
        d = p.parse(f)
        ok = True
        n, lp = d.n_pages, d.metadata.get("layout_pages") or []
    except Exception:
        ok = False
    print(json.dumps([time.perf_counter() - w0, time.process_time() - c0, ok, n, [r["reasons"] for r in lp]]), flush=True)
"""


def _worker(root: str, parser: str = "fast", settings: str = "") -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(root).resolve()), AB_PARSER=parser, AB_SETTINGS=settings)
    return subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, cwd=str(Path(root).resolve()))


def _ask(w: subprocess.Popen, f: str) -> tuple[float, float]:
    assert w.stdin is not None and w.stdout is not None
    w.stdin.write(f + "\n")
    w.stdin.flush()
    wall, cpu, ok, n, lp = json.loads(w.stdout.readline())
    if not ok:
        print(f"warning: {f} did not parse in one checkout; its time is not comparable", file=sys.stderr)
    return wall, cpu, n, lp


def main(argv: list[str] | None = None) -> int:
    """Run the interleaved comparison; returns the exit code."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="checkout A (baseline)")
    ap.add_argument("--b", required=True, help="checkout B (candidate)")
    ap.add_argument("--corpus", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "pdf"))
    ap.add_argument("--files", default="*.pdf")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--parser-a", default="fast", help="backend of A (get_parser name; fast = no layout model)")
    ap.add_argument("--parser-b", default="fast", help="backend of B, e.g. auto (fast + the layout gate)")
    ap.add_argument("--settings-b", default="", help='ParsingSettings of B as JSON, e.g. \'{"layout_features": "rf"}\'')
    args = ap.parse_args(argv)
    # absolute paths: each worker runs in its own checkout's folder
    files = sorted(glob.glob(str(Path(args.corpus).resolve() / args.files)))
    if not files:
        print(f"no PDFs under {args.corpus}", file=sys.stderr)
        return 2
    wa, wb = _worker(args.a, args.parser_a), _worker(args.b, args.parser_b, args.settings_b)
    tot = {"a": [0.0, 0.0], "b": [0.0, 0.0]}
    pages = {"a": 0, "b": 0}
    gated: dict[str, dict[str, int]] = {"a": {}, "b": {}}
    for r in range(args.repeat):
        for i, f in enumerate(files):
            order = [("a", wa), ("b", wb)] if (i + r) % 2 == 0 else [("b", wb), ("a", wa)]
            for k, w in order:
                wall, cpu, n, lp = _ask(w, f)
                tot[k][0] += wall
                tot[k][1] += cpu
                if r == 0:
                    pages[k] += n
                    gated[k]["pages"] = gated[k].get("pages", 0) + len(lp)
                    for reasons in lp:
                        for why in reasons:
                            gated[k][why] = gated[k].get(why, 0) + 1
    for w in (wa, wb):
        assert w.stdin is not None
        w.stdin.close()
        w.wait()
    print(f"{len(files)} PDFs x {args.repeat}")
    print(f"A wall {tot['a'][0]:.1f} s  cpu {tot['a'][1]:.1f} s")
    print(f"B wall {tot['b'][0]:.1f} s  cpu {tot['b'][1]:.1f} s")
    for k in ("a", "b"):
        g = gated[k]
        if g.get("pages"):
            print(f"{k.upper()}: {g['pages']} of {pages[k]} pages to the layout model ({100 * g['pages'] / max(1, pages[k]):.1f} %); "
                  + ", ".join(f"{why} {v}" for why, v in sorted(g.items()) if why != "pages"))
    print(f"B/A wall {tot['b'][0] / tot['a'][0]:.3f}  cpu {tot['b'][1] / tot['a'][1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
