"""Benchmark the semantic index algorithms: SEC + top-k anchors and PC-KMeans.

Measures wall time and CPU time of all threads (seconds, best of ``--repeat``; CPU
time is less sensitive to other load on the machine) and peak traced memory (MiB,
``tracemalloc``, which sees NumPy's buffers) in a separate run, plus the process
maximum resident set size (``resource.getrusage``) at the end.

Workloads:

* SEC on a synthetic, paper-like document tree with ``--n-text`` TEXT nodes (default
  2,000): ROOT -> sections -> subsections -> paragraphs, with tables, images and
  equations interspersed; embeddings are 384-d unit vectors with per-section topics.
  Both the full matrix (``sec_matrix`` + ``top_k_anchor_pairs``) and the streaming
  ``top_k_sec_pairs`` are timed. Goal: < 2 s and < 1 GiB for n = 2,000.
* PC-KMeans on ``--pck-n`` x 384 (default 50,000) points from ``--K`` (50) Gaussian
  topics, with ``--constraints`` must-links and as many cannot-links.

Usage::

    python scripts/bench_index.py            # table
    python scripts/bench_index.py --json     # one JSON object
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docmaster_core.index.pckmeans import PCKMeans  # noqa: E402
from docmaster_core.index.sec import sec_matrix, top_k_anchor_pairs, top_k_sec_pairs  # noqa: E402
from docmaster_core.model import DocumentTree, Node, NodeType  # noqa: E402

DIM = 384


def synthetic_tree(n_text: int, seed: int = 0) -> tuple[DocumentTree, np.ndarray]:
    """A paper-like document tree with exactly ``n_text`` TEXT nodes and (|V|, 384) embeddings."""
    rng = np.random.default_rng(seed)
    nodes: list[Node] = []

    def add(t: NodeType, parent: int | None, content: str) -> int:
        i = len(nodes)
        depth = 0 if parent is None else nodes[parent].depth + 1
        nodes.append(Node(id=i, type=t, depth=depth, parent=parent, children=[], content=content, page_start=1, page_end=1))
        if parent is not None:
            nodes[parent].children.append(i)
        return i

    root = add(NodeType.ROOT, None, "synthetic")
    topic_of: dict[int, int] = {}
    made = 0
    sec_no = 0
    while made < n_text:
        sec_no += 1
        sec = add(NodeType.TITLE, root, f"{sec_no} Section")
        for _ in range(int(rng.integers(0, 3))):  # intro paragraphs directly under the section
            if made < n_text:
                topic_of[add(NodeType.TEXT, sec, f"s{sec_no} p{made}")] = sec_no
                made += 1
        for sub_no in range(int(rng.integers(2, 6))):
            sub = add(NodeType.TITLE, sec, f"{sec_no}.{sub_no + 1} Subsection")
            targets = [sub]
            if rng.random() < 0.3:
                targets.append(add(NodeType.TITLE, sub, f"{sec_no}.{sub_no + 1}.1 Sub-subsection"))
            for parent in targets:
                for _ in range(int(rng.integers(3, 14))):
                    if made >= n_text:
                        break
                    r = rng.random()
                    if r < 0.06:
                        add(NodeType.TABLE, parent, "| a | b |")
                    elif r < 0.10:
                        add(NodeType.IMAGE, parent, "Figure")
                    elif r < 0.13:
                        add(NodeType.EQUATION, parent, "E = mc^2")
                    topic_of[add(NodeType.TEXT, parent, f"s{sec_no} p{made}")] = sec_no
                    made += 1
    tree = DocumentTree(doc_id="synthetic", title="synthetic", nodes=nodes)
    topics = rng.normal(size=(sec_no + 1, DIM))
    emb = rng.normal(size=(len(nodes), DIM)) * 0.8
    for i, t in topic_of.items():
        emb[i] += topics[t]
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return tree, emb.astype(np.float32)


def _timed(fn, repeat: int) -> tuple[float, float, object]:
    """Best wall time and best CPU time (all threads) over ``repeat`` runs, and the result."""
    best, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    return best, best_cpu, out


def _peak_mib(fn) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def bench_sec(n_text: int, k: int, repeat: int) -> list[dict]:
    tree, emb = synthetic_tree(n_text)
    ids = tree.text_node_ids()
    X = np.ascontiguousarray(emb[ids])
    texts = [tree.nodes[i].content for i in ids]
    parents = tree.parents()

    def full():
        S = sec_matrix(parents, X, ids, alpha=0.6)
        return top_k_anchor_pairs(S, k, texts=texts)

    def stream():
        return top_k_sec_pairs(parents, X, ids, k, alpha=0.6, texts=texts)

    rows = []
    for name, fn in (("sec_matrix + top_k_anchor_pairs", full), ("top_k_sec_pairs (streaming)", stream)):
        fn()  # warm-up
        secs, cpu, (pairs, _) = _timed(fn, repeat)
        rows.append(
            {
                "task": name,
                "size": f"|V|={len(tree)}, m={ids.size} text, k={k}",
                "seconds": round(secs, 4),
                "cpu_seconds": round(cpu, 4),
                "peak_mib": round(_peak_mib(fn), 1),
                "detail": f"{pairs.shape[0]} pairs",
            }
        )
    return rows


def bench_pckmeans(n: int, K: int, n_cons: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(K, DIM)).astype(np.float32)
    truth = rng.integers(0, K, n)
    X = centers[truth] + rng.normal(scale=1.5, size=(n, DIM)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    # constraints from the ground-truth topics (as an LLM would label anchor pairs)
    a = rng.integers(0, n, 4 * n_cons)
    b = rng.integers(0, n, 4 * n_cons)
    ml = np.stack([a, b], 1)[(truth[a] == truth[b]) & (a != b)][:n_cons]
    if ml.shape[0] < n_cons:  # random pairs rarely share a topic: add same-topic pairs
        extra = []
        for t in rng.integers(0, K, n_cons - ml.shape[0]):
            members = np.flatnonzero(truth == t)
            extra.append(rng.choice(members, 2, replace=False))
        ml = np.concatenate([ml, np.array(extra)]) if extra else ml
    cl = np.stack([a, b], 1)[truth[a] != truth[b]][:n_cons]

    def run():
        return PCKMeans(n_clusters=K, w=1.0, random_state=0).fit(X, ml, cl)

    secs, cpu, model = _timed(run, 1)
    peak = _peak_mib(run)
    return {
        "task": "PCKMeans.fit",
        "size": f"{n} x {DIM}, K={K}, {ml.shape[0]} ML + {cl.shape[0]} CL",
        "seconds": round(secs, 3),
        "cpu_seconds": round(cpu, 3),
        "peak_mib": round(peak, 1),
        "detail": f"{model.n_iter_} iter, converged={model.converged_}, "
        f"violated ML/CL={model.n_violated_must_}/{model.n_violated_cannot_}, "
        f"{secs / max(model.n_iter_, 1) * 1000:.0f} ms/iter",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-text", type=int, default=2000, help="TEXT nodes of the synthetic tree")
    ap.add_argument("--k", type=int, default=20, help="anchor pairs")
    ap.add_argument("--pck-n", type=int, default=50000, help="PC-KMeans points")
    ap.add_argument("--K", type=int, default=50, help="PC-KMeans clusters")
    ap.add_argument("--constraints", type=int, default=500, help="must-links (and as many cannot-links)")
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats for SEC (best is reported)")
    ap.add_argument("--skip-pckmeans", action="store_true")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args(argv)

    rows = bench_sec(args.n_text, args.k, args.repeat)
    if not args.skip_pckmeans:
        rows.append(bench_pckmeans(args.pck_n, args.K, args.constraints))
    maxrss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    env = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "max_rss_mib": round(maxrss_mib, 1),
    }
    if args.json:
        print(json.dumps({"results": rows, "env": env}, indent=2))
        return 0
    w = max(len(r["task"]) for r in rows)
    ws = max(len(r["size"]) for r in rows)
    print(f"{'task':<{w}}  {'size':<{ws}}  {'wall s':>7}  {'CPU s':>7}  {'peak MiB':>8}  detail")
    for r in rows:
        print(
            f"{r['task']:<{w}}  {r['size']:<{ws}}  {r['seconds']:>7.3f}  {r['cpu_seconds']:>7.3f}  "
            f"{r['peak_mib']:>8.1f}  {r['detail']}"
        )
    print(f"env: {env}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
