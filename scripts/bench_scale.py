#!/usr/bin/env python
"""Scale benchmark (issue 18): workspace open time, memory, offline filter and ``ask``
latency on synthetic workspaces of 1k, 5k and 20k documents, and how each grows with N.

The synthetic workspaces are made from a real one (default ``/work/ws_corpus``, 88
documents) without any embedding: its documents, nodes, tree edges and stored
semantic indexes are copied with SQL under new doc ids and content hashes (copy ``k``
of a document gets the file name ``c<k>_<name>``), and each copy's node vectors are
the original's with Gaussian noise added and re-normalised::

    v' = (v + sigma * n) / |v + sigma * n|,   n ~ N(0, I_d), seeded

``sigma`` = 0.0168 gives a mean cosine of 0.95 between a vector and its copy (for d =
384: cos ~ 1 / sqrt(1 + d sigma^2)). So every copy ranks like its original but not
identically.

Each size is measured in a fresh Python process (``measure``): the embedding model is
loaded first and reported apart (it does not grow with N), then

* ``open_s``: ``DocMaster(workspace)`` and its first corpus view (everything the view
  builds or loads on first use, e.g. a one-time migration is included; see
  ``first_filter_s`` for the structures the filter builds on its first call);
* ``reopen_s``: the corpus view opened again after dropping the process's cache (what
  a later process pays once a one-time migration is done);
* ``first_filter_s``: the first offline filter (cold caches: lexical statistics, section
  index, hyper-edges, document terms);
* ``filter_s``: median seconds per condition of the following offline filters
  (``decider="calibrated"``, ``save=False``, default strategies), one per condition;
* ``ask_s``: median seconds of an offline ``ask`` over all documents;
* ``rss_open_mb`` / ``peak_rss_mb``: resident memory after opening, and the process's
  peak (``ru_maxrss``) over the whole measurement, in MiB;
* ``disk_mb``: the workspace directory's size in MiB (``disk_split_mb`` per entry);
* issue 25: ``indexes_s`` (``DocMaster.collection_indexes()``: the one-time build of the
  candidate indexes and per-document arrays, or their loading), ``candidates`` (stage-1
  figures of each filter), ``peak_rss_filters_mb``, and with ``--agreement N`` the
  agreement of the first N conditions' decisions with exhaustive scoring (same code,
  ``candidates.min_docs`` above the collection size).

Usage::

    python scripts/bench_scale.py build   --sizes 1000,5000 --out /work/scale [--source /work/ws_corpus]
    python scripts/bench_scale.py measure --sizes 1000,5000 --out /work/scale --json /work/scale/after.json
    python scripts/bench_scale.py report  /work/scale/before.json [/work/scale/after.json]
    python scripts/bench_scale.py ray WORKSPACE --workers 1,2 [--min-docs 0] [--conditions A.tsv B.tsv]

``report`` prints a markdown table per result file, the fitted growth exponent of each
metric (slope of log(metric) over log(N), least squares; 1.0 = linear) and the
extrapolation to 100k documents with that exponent from the largest measured size.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = "/work/ws_corpus"
DEFAULT_CONDITIONS = ROOT.parent / "shared" / "eval" / "filter_conditions.tsv"
#: Used when no labelled condition file is found.
BUILTIN_CONDITIONS = [
    "Does the paper propose a retrieval-augmented generation method?",
    "Does the paper introduce a new benchmark or dataset as one of its main contributions?",
    "Does the document describe a distributed storage or database system deployed in production?",
]
QUESTION = "Which datasets are used to evaluate open-domain question answering?"
SIGMA = 0.0168
METRICS = ("open_s", "reopen_s", "first_filter_s", "filter_s", "ask_s", "rss_open_mb", "peak_rss_mb", "disk_mb")


# ---------------------------------------------------------------------------- build
def _new_id(old: str, k: int) -> str:
    return hashlib.sha256(f"{old}:{k}".encode()).hexdigest()[:16]


def _index_template(con: sqlite3.Connection) -> None:
    """TEMP table ``tmpl``: the source's stored indexes in the storage format of the code
    under test (float arrays in binary since issue 37; a source written before keeps them
    as JSON text, which is converted here once per original, not once per copy)."""
    from docmaster_core.store import upkeep

    cols = {r[1] for r in con.execute("PRAGMA src.table_info(indexes)")}
    con.execute("CREATE TEMP TABLE tmpl(doc_id TEXT, params_key TEXT, params_json TEXT, data_json TEXT, "
                "created_at REAL, arrays BLOB)")
    sel = "arrays" if "arrays" in cols else "NULL"
    rows = con.execute(f"SELECT doc_id, params_key, params_json, data_json, created_at, {sel} FROM src.indexes").fetchall()
    out = []
    for doc_id, key, params, text, at, blob in rows:
        if blob is None:
            data = upkeep._decode_index(text, None)
            lean = upkeep._arrays_from_lists(data)
            if lean is not None:
                body, arrays = upkeep.split_arrays(lean)
                text, blob = json.dumps(body), upkeep.pack_arrays(arrays)
        out.append((doc_id, key, params, text, at, blob))
    con.executemany("INSERT INTO tmpl VALUES(?,?,?,?,?,?)", out)


def build(source: Path, out: Path, n_docs: int, seed: int = 0, sigma: float = SIGMA) -> Path:
    """Build the synthetic workspace ``out/ws_<n_docs>`` from ``source`` (see module doc).

    Returns the workspace path. An existing one is replaced.
    """
    import numpy as np

    from docmaster_core.store.workspace import Workspace

    dest = out / f"ws_{n_docs}"
    if dest.exists():
        shutil.rmtree(dest)
    ws = Workspace(dest)  # creates the schema of the code under test
    ws.close()
    src_db = source / "workspace.sqlite"
    con = sqlite3.connect(dest / "workspace.sqlite", isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("ATTACH DATABASE ? AS src", (f"file:{src_db}?mode=ro",))
    orig = [r[0] for r in con.execute("SELECT doc_id FROM src.documents ORDER BY added_at, doc_id")]
    pairs = [(orig[i % len(orig)], i // len(orig)) for i in range(n_docs)]
    con.execute("CREATE TEMP TABLE map(old TEXT, k INTEGER, new TEXT, sha TEXT)")
    con.executemany("INSERT INTO map VALUES(?,?,?,?)",
                    [(o, k, _new_id(o, k), hashlib.sha256(f"sha:{o}:{k}".encode()).hexdigest()) for o, k in pairs])
    cols_doc = ("file_name, source_path, title, n_pages, parser, n_nodes, counts_json, page_sizes_json, "
                "embedding_model, timings_json")
    cols_node = ("type, depth, parent, level, ord, page_start, page_end, bboxes_json, section_path_json, content, "
                 "summary, extra_json")
    _index_template(con)
    con.execute("BEGIN")
    con.execute(f"INSERT INTO documents(doc_id, sha256, {cols_doc}, added_at) SELECT m.new, m.sha, "
                "'c' || m.k || '_' || d.file_name, d.source_path, d.title, d.n_pages, d.parser, d.n_nodes, d.counts_json,"
                " d.page_sizes_json, d.embedding_model, d.timings_json, d.added_at + m.k * 100000.0"
                " FROM map m JOIN src.documents d ON d.doc_id = m.old")
    con.execute(f"INSERT INTO nodes(doc_id, node_id, {cols_node}) SELECT m.new, n.node_id, "
                + ", ".join(f"n.{c.strip()}" for c in cols_node.split(","))
                + " FROM map m JOIN src.nodes n ON n.doc_id = m.old")
    con.execute("INSERT INTO edges(doc_id, src, dst, kind) SELECT m.new, e.src, e.dst, e.kind"
                " FROM map m JOIN src.edges e ON e.doc_id = m.old")
    con.execute("INSERT INTO indexes(doc_id, params_key, params_json, data_json, created_at, arrays) SELECT m.new, "
                "i.params_key, i.params_json, i.data_json, i.created_at, i.arrays FROM map m JOIN tmpl i ON i.doc_id = m.old")
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    rng = np.random.default_rng(seed)
    cache: dict[str, np.ndarray] = {}
    vdir = dest / "vectors"
    for o, k in pairs:
        v = cache.get(o)
        if v is None:
            v = cache[o] = np.load(source / "vectors" / f"{o}.npy").astype(np.float32)
        p = v + np.float32(sigma) * rng.standard_normal(v.shape, dtype=np.float32)
        p /= np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)
        np.save(vdir / f"{_new_id(o, k)}.npy", p.astype(np.float32), allow_pickle=False)
    return dest


# ---------------------------------------------------------------------------- measure
def _dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def _rss_mb() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # pragma: no cover
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _rss_split_mb() -> dict:
    """Resident memory split into anonymous (heap) and file-backed (memory-mapped files,
    reclaimable by the kernel) parts, MiB, from ``/proc/self/status``."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) / 1024
    return out


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _conditions(path: str | None, n: int) -> list[str]:
    p = Path(path) if path else DEFAULT_CONDITIONS
    if p.is_file():
        with open(p, newline="", encoding="utf-8") as f:
            texts = [r["text"] for r in csv.DictReader(f, delimiter="\t")]
        return texts[:n]
    return BUILTIN_CONDITIONS[:n]


class _Figures(dict):
    """The figures of one size, saved to ``path`` (JSON) whenever one is set, so that a
    measurement stopped by ``--timeout`` still reports what it got."""

    def __init__(self, path: str | None, **kw):
        super().__init__(**kw)
        self.path = path

    def __setitem__(self, k, v):
        super().__setitem__(k, v)
        if self.path:
            Path(self.path).write_text(json.dumps(self))


def measure_one(ws_path: Path, conditions: list[str], partial: str | None = None, agreement: int = 0) -> dict:
    """Measure one workspace in this process (see module doc); returns the figures."""
    from docmaster_core.pipeline import DocMaster

    out: dict = _Figures(partial, workspace=str(ws_path), rss_start_mb=_rss_mb())
    t0 = time.perf_counter()
    from docmaster_core.config import get_settings

    settings = get_settings()
    settings.llm.backend = "offline"
    emb = DocMaster(ws_path, settings).embedder
    emb.encode(["warm-up"])
    out["model_s"] = time.perf_counter() - t0
    out["rss_model_mb"] = _rss_mb()
    t0 = time.perf_counter()
    dm = DocMaster(ws_path, settings, embedder=emb)
    view = dm.retriever().view
    out["open_s"] = time.perf_counter() - t0
    from docmaster_core.retrieval.corpus import clear_corpus_cache

    clear_corpus_cache()  # a second open: what every later process pays (no one-time migration)
    t0 = time.perf_counter()
    view = dm.retriever().view
    out["reopen_s"] = time.perf_counter() - t0
    out["rss_open_mb"] = _rss_mb()
    out["rss_open_split_mb"] = _rss_split_mb()
    print(f"open: {out['open_s']:.1f} s, RSS {out['rss_open_mb']:.0f} MiB", file=sys.stderr, flush=True)
    out["n_docs"] = len(view.docs)
    out["n_nodes"] = int(view.doc_of.shape[0])
    if hasattr(dm, "collection_indexes"):  # issue 25: the candidate indexes (one-time build, then loaded)
        t0 = time.perf_counter()
        out["indexes"] = dm.collection_indexes()
        out["indexes_s"] = time.perf_counter() - t0
        out["rss_indexes_mb"] = _rss_mb()
        print(f"indexes: {out['indexes_s']:.1f} s {out['indexes']}", file=sys.stderr, flush=True)
    times, matches, cands, runs = [], [], [], []
    for i, cond in enumerate(conditions):
        t0 = time.perf_counter()
        run = dm.filter(cond, decider="calibrated", save=False)
        dt = time.perf_counter() - t0
        m = sorted(run.matches())
        matches.append([len(m), hashlib.sha256(json.dumps(m).encode()).hexdigest()[:12]])
        cands.append(getattr(run, "candidates", {}) or {})
        if i < agreement:
            runs.append({d.doc_id: {s: x.decision for s, x in d.decisions.items()} for d in run.documents})
        print(f"filter {i}: {dt:.2f} s, {len(m)} matches, {cands[-1].get('candidates', 'all')} candidates",
              file=sys.stderr, flush=True)
        if i == 0:
            out["first_filter_s"] = dt
            t0 = time.perf_counter()
            dm.filter(cond, decider="calibrated", save=False)
            dt = time.perf_counter() - t0
        times.append(dt)
    out["filter_s"] = statistics.median(times)
    out["filter_each_s"] = times
    out["matches"] = matches
    out["candidates"] = cands
    out["rss_filter_mb"] = _rss_mb()
    out["rss_filter_split_mb"] = _rss_split_mb()
    out["peak_rss_filters_mb"] = _peak_rss_mb()  # before the exhaustive runs of --agreement and ask
    if runs:  # agreement of the run's decisions with exhaustive scoring of every document (same code)
        from docmaster_core.config import CandidateSettings

        same = total = 0
        ex_t = []
        for cond, got in zip(conditions, runs):
            t0 = time.perf_counter()
            ex = dm.filter(cond, decider="calibrated", save=False, candidates=CandidateSettings(min_docs=10**9))
            ex_t.append(time.perf_counter() - t0)
            for d in ex.documents:
                for s, x in d.decisions.items():
                    total += 1
                    same += got[d.doc_id][s] == x.decision
            print(f"exhaustive: {ex_t[-1]:.1f} s, agreement so far {same}/{total}", file=sys.stderr, flush=True)
            out["agreement"] = {"same": same, "decisions": total, "conditions": len(ex_t), "exhaustive_s": ex_t}
        out["peak_rss_with_exhaustive_mb"] = _peak_rss_mb()
    ask_t = []
    for _ in range(2):
        t0 = time.perf_counter()
        dm.ask(QUESTION, save=False)
        ask_t.append(time.perf_counter() - t0)
    out["ask_first_s"] = ask_t[0]
    out["ask_s"] = ask_t[-1]
    out["peak_rss_mb"] = _peak_rss_mb()
    out["rss_end_mb"] = _rss_mb()
    out["rss_end_split_mb"] = _rss_split_mb()
    out["disk_mb"] = _dir_mb(ws_path)
    out["disk_split_mb"] = {p.name: _dir_mb(p) if p.is_dir() else p.stat().st_size / 2**20 for p in ws_path.iterdir()}
    return out


# ---------------------------------------------------------------------------- ray
def measure_ray(ws_path: Path, conditions: list[str], workers: list[int], min_docs: int | None,
                address: str | None) -> dict:
    """The exact scoring of candidates on Ray against this process (issue 37).

    For each condition: the local run (warm: every condition once first), then with each
    worker count W a fresh set of actors (every condition once to warm their caches,
    then timed). Decisions, ranks and evidence node ids of every document and strategy
    are compared with the local run's.
    """
    from docmaster_core.config import get_settings
    from docmaster_core.pipeline import DocMaster

    settings = get_settings()
    settings.llm.backend = "offline"
    if min_docs is not None:
        settings.candidates.min_docs = min_docs
    dm = DocMaster(ws_path, settings)
    dm.embedder.encode(["warm-up"])
    dm.collection_indexes()

    def runs(d, cs):
        out, times = [], []
        for c in conditions:  # warm
            d.filter(c, decider="calibrated", save=False, candidates=cs)
        for c in conditions:
            t0 = time.perf_counter()
            r = d.filter(c, decider="calibrated", save=False, candidates=cs)
            times.append(time.perf_counter() - t0)
            out.append(r)
        return out, times

    def key(r):
        return {d.doc_id: {s: (x.decision, x.rank, x.evidence_ids) for s, x in d.decisions.items()}
                for d in r.documents}

    local, lt = runs(dm, settings.candidates)
    res = {"workspace": str(ws_path), "conditions": len(conditions),
           "candidates": [r.candidates.get("candidates") for r in local], "local_s": lt,
           "local_median_s": statistics.median(lt)}
    print(f"local: median {res['local_median_s']:.2f} s", file=sys.stderr, flush=True)
    for w in workers:
        cs = settings.candidates.model_copy(update={"executor": "ray", "ray_workers": w, "ray_address": address})
        t0 = time.perf_counter()
        d = DocMaster(ws_path, settings, embedder=dm.embedder)
        try:
            got, rt = runs(d, cs)
        finally:
            d.close()
        same = total = same_dec = 0
        for a, b in zip(local, got):
            ka, kb = key(a), key(b)
            for doc, by in ka.items():
                for s, v in by.items():
                    total += 1
                    same += kb[doc][s] == v
                    same_dec += kb[doc][s][0] == v[0]
        res[f"ray_{w}"] = {"median_s": statistics.median(rt), "each_s": rt, "session_s": time.perf_counter() - t0,
                           "same_decision": same_dec, "same_decision_rank_evidence": same, "of": total,
                           "scored_on": got[0].params.get("scored_on")}
        print(f"ray {w} workers: median {statistics.median(rt):.2f} s, decisions {same_dec}/{total} equal, "
              f"with rank and evidence {same}/{total}", file=sys.stderr, flush=True)
    return res


# ---------------------------------------------------------------------------- report
def slope(ns: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) over log(n) (the growth exponent), None with < 2 points."""
    pts = [(math.log(n), math.log(y)) for n, y in zip(ns, ys) if n > 0 and y and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def report(results: list[dict], target: int = 100_000) -> str:
    """Markdown table, growth exponents and the extrapolation to ``target`` documents."""
    rows = sorted(results, key=lambda r: r.get("n_docs", r.get("size", 0)))
    lines = ["| documents | nodes | open (s) | reopen (s) | first filter (s) | filter / condition (s) | ask (s) "
             "| RSS after open (MiB) | peak RSS (MiB) | disk (MiB) |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def f(r, k, fmt):
        return format(r[k], fmt) if r.get(k) is not None else "not reached"

    for r in rows:
        lines.append(f"| {r.get('n_docs', r.get('size', 0)):,} | {r.get('n_nodes', 0):,} | {f(r, 'open_s', '.1f')} | "
                     f"{f(r, 'reopen_s', '.1f')} | {f(r, 'first_filter_s', '.1f')} | {f(r, 'filter_s', '.2f')} | "
                     f"{f(r, 'ask_s', '.2f')} | {f(r, 'rss_open_mb', ',.0f')} | {f(r, 'peak_rss_mb', ',.0f')} | "
                     f"{f(r, 'disk_mb', ',.0f')} |")
    ns = [r.get("n_docs", r.get("size", 0)) for r in rows]
    lines += ["", f"| metric | growth exponent | extrapolated to {target:,} documents |", "|---|---:|---:|"]
    for m in METRICS:
        pts = [(n, r[m]) for n, r in zip(ns, rows) if r.get(m)]
        b = slope([p[0] for p in pts], [p[1] for p in pts])
        if b is None:
            lines.append(f"| {m} | n/a | n/a |")
            continue
        n_last, y_last = pts[-1]
        est = y_last * (target / n_last) ** max(b, 0.0)
        lines.append(f"| {m} | {b:.2f} | {est:,.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("build", "measure"):
        p = sub.add_parser(name)
        p.add_argument("--sizes", default="1000,5000,20000", help="comma-separated document counts")
        p.add_argument("--out", default="/work/scale", help="folder of the synthetic workspaces")
    b = sub.choices["build"]
    b.add_argument("--source", default=DEFAULT_SOURCE)
    b.add_argument("--seed", type=int, default=0)
    m = sub.choices["measure"]
    m.add_argument("--conditions", default=None, help="TSV condition<TAB>text (default the shared eval set)")
    m.add_argument("--n-conditions", type=int, default=12)
    m.add_argument("--agreement", type=int, default=0, help="after the measurements, run the first N conditions "
                   "again scoring every document exactly and report the agreement of the decisions (issue 25)")
    m.add_argument("--json", help="append the figures to this file")
    m.add_argument("--timeout", type=float, default=None, help="seconds per size; a size stopped by it reports "
                   "the figures it got (the others are missing)")
    m.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure this workspace in this process
    m.add_argument("--partial", help=argparse.SUPPRESS)
    ray = sub.add_parser("ray", help="exact scoring of candidates on Ray against this process (issue 37)")
    ray.add_argument("workspace")
    ray.add_argument("--workers", default="1,2", help="comma-separated actor counts")
    ray.add_argument("--conditions", nargs="+", default=None, help="TSV files condition<TAB>text")
    ray.add_argument("--n-conditions", type=int, default=12, help="per file")
    ray.add_argument("--min-docs", type=int, default=None, help="candidates.min_docs (0: take candidates on any size)")
    ray.add_argument("--ray-address", default=None)
    ray.add_argument("--json", help="write the figures to this file")
    r = sub.add_parser("report")
    r.add_argument("files", nargs="+")
    args = ap.parse_args(argv)

    if args.cmd == "report":
        for f in args.files:
            print(f"### {f}\n\n{report(json.loads(Path(f).read_text()))}\n")
        return 0
    if args.cmd == "ray":
        conds = [c for f in (args.conditions or [None]) for c in _conditions(f, args.n_conditions)]
        res = measure_ray(Path(args.workspace), conds, [int(w) for w in args.workers.split(",")], args.min_docs,
                          args.ray_address)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
        print(json.dumps(res))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.cmd == "build":
        for n in sizes:
            t0 = time.perf_counter()
            p = build(Path(args.source), out, n, seed=args.seed)
            print(f"built {p} ({n} documents, {_dir_mb(p):,.0f} MiB) in {time.perf_counter() - t0:.0f} s", flush=True)
        return 0
    conds = _conditions(args.conditions, args.n_conditions)
    if args.one:
        print(json.dumps(measure_one(Path(args.one), conds, args.partial, args.agreement)))
        return 0
    results = json.loads(Path(args.json).read_text()) if args.json and Path(args.json).exists() else []
    for n in sizes:
        ws = out / f"ws_{n}"
        partial = out / f".partial_{n}.{os.getpid()}.json"  # one per measuring process
        partial.unlink(missing_ok=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), "measure", "--one", str(ws), "--n-conditions",
               str(args.n_conditions), "--partial", str(partial), "--agreement", str(args.agreement)] + (["--conditions", args.conditions] if args.conditions else [])
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{n}: stopped after {args.timeout:.0f} s; partial figures kept", file=sys.stderr)
            res = json.loads(partial.read_text()) if partial.exists() else {}
            res["stopped_after_s"] = args.timeout
        else:
            if proc.returncode != 0:
                print(f"{n}: measurement failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", file=sys.stderr)
                continue
            res = json.loads(proc.stdout.strip().splitlines()[-1])
        res["size"] = n
        print(json.dumps(res), flush=True)
        results = [x for x in results if x.get("size") != n] + [res]
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
