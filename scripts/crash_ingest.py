#!/usr/bin/env python
"""Crash safety of the ingest (issue 7): ``kill -9`` it at random points, then check.

    python scripts/crash_ingest.py --kills 20 --seed 0 [--corpus ../shared/corpus/pdf --pdfs 5]
    python scripts/crash_ingest.py --kills 3 --generated --json        # no corpus needed

1. A handful of PDFs (``--pdfs`` small corpus PDFs, or PDFs generated with
   ``tests/support/pdf_factory.py``) are ingested once, uninterrupted, into a reference
   workspace; its wall time ``T`` (process start included) and each document's
   signature (node count and a hash of every node's type, parent and content) are kept.
2. Rounds: a fresh workspace; ``python -m docmaster_core ingest INPUT --workspace WS``
   is started and, after a random delay of ``U(min_frac, max_frac) * T`` seconds,
   killed with SIGKILL. While it runs, a reader in this process polls the workspace
   (``documents()``, ``load_tree``, ``load_embeddings`` every 50 ms) and records every
   document it saw committed, and any half document (node count, vector rows, ROOT).
   After each kill:

   * the workspace opens (``Workspace(ws, create=False)``), unless the process died
     before it created the database;
   * ``python -m docmaster_core check --workspace WS --json`` exits 0;
   * every document the reader saw committed before the kill is still there (no data
     lost), and every stored document matches its reference signature (nothing half
     written);

   then the same ingest is started again in the same workspace (it resumes: stored
   documents are skipped), possibly killed again. A run that ends by itself completes
   the round: all reference documents must be present with their signatures, each
   with a semantic index, ``check`` clean with no leftovers.
3. After ``--kills`` kills the current round is run to completion and verified.

With ``--trigger docs`` the kills are not at random times but right after each newly
committed document (plus up to 0.3 s), which lands them in the index step of that
document or the parse of the next one.

The embedder defaults to the model-free hashing embedder
(``DOCMASTER_EMBEDDING__MODEL=hashing``) so that a run costs minutes, not hours; pass
``--embedding all-MiniLM-L6-v2`` for the real model. The LLM is the offline default.
Exit status 1 when any check failed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "pdf"
sys.path.insert(0, str(REPO))

from docmaster_core.errors import DocMasterError  # noqa: E402
from docmaster_core.store.workspace import Workspace  # noqa: E402


# ----------------------------------------------------------------------------- inputs
def pick_corpus(corpus: Path, n: int, max_kb: int) -> list[Path]:
    """``n`` corpus PDFs of at most ``max_kb`` KiB, spread over the name-sorted list."""
    files = sorted(p for p in corpus.glob("*.pdf") if p.stat().st_size <= max_kb * 1024)
    if len(files) <= n:
        return files
    step = len(files) / n
    return [files[int(k * step)] for k in range(n)]


def generated_inputs(folder: Path, n: int) -> list[Path]:
    """Up to 5 small PDFs made with ``tests/support/pdf_factory.py``."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.pdf_factory import make_many_pages_pdf, make_paper_pdf, make_simple_pdf, make_two_column_pdf

    folder.mkdir(parents=True, exist_ok=True)
    makers = [
        lambda: make_paper_pdf(folder / "paper.pdf")["path"],
        lambda: make_two_column_pdf(folder / "two_column.pdf"),
        lambda: make_paper_pdf(folder / "paper_outline.pdf", with_outline=True)["path"],
        lambda: make_many_pages_pdf(folder / "pages.pdf", 6),
        lambda: make_simple_pdf(folder / "simple.pdf", "A simple page about crash safety. " * 12),
    ]
    return [m() for m in makers[: max(1, min(n, len(makers)))]]


# ----------------------------------------------------------------------------- workspace probes
def signatures(ws_dir: Path) -> dict[str, dict]:
    """``{sha256: {"doc_id", "file", "nodes", "hash"}}`` of the stored documents."""
    ws = Workspace(ws_dir, create=False)
    try:
        out = {}
        for d in ws.documents():
            t = ws.load_tree(d.doc_id)
            h = hashlib.sha256(json.dumps([[n.type.value, n.parent, n.content] for n in t.nodes]).encode()).hexdigest()
            out[d.sha256] = {"doc_id": d.doc_id, "file": d.file_name, "nodes": len(t.nodes), "hash": h}
        return out
    finally:
        ws.close()


def indexed_docs(ws_dir: Path) -> set[str]:
    con = sqlite3.connect(f"file:{ws_dir / 'workspace.sqlite'}?mode=ro", uri=True)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT doc_id FROM indexes")}
    finally:
        con.close()


class Reader(threading.Thread):
    """Polls a workspace while it is being written; records committed doc_ids and
    any inconsistent (half) document it observes."""

    def __init__(self, ws_dir: Path, period: float = 0.05):
        super().__init__(daemon=True)
        self.ws_dir, self.period = ws_dir, period
        self.seen: set[str] = set()
        self.observations = 0
        self.half: list[str] = []
        self.errors: list[str] = []
        self._stop_evt = threading.Event()

    def stop(self) -> None:
        self._stop_evt.set()
        self.join(timeout=30)

    def run(self) -> None:
        ws = None
        while not self._stop_evt.is_set():
            try:
                if ws is None:
                    if not (self.ws_dir / "workspace.sqlite").exists():
                        time.sleep(self.period)
                        continue
                    ws = Workspace(self.ws_dir, create=False)
                for d in ws.documents():
                    t = ws.load_tree(d.doc_id)
                    e = ws.load_embeddings(d.doc_id)
                    ok = (len(t.nodes) == d.n_nodes == e.shape[0] and t.nodes[0].type.value == "ROOT"
                          and all(n.parent is None or n.parent < n.id for n in t.nodes))
                    if not ok:
                        self.half.append(f"{d.file_name}: {len(t.nodes)} nodes, {e.shape[0]} vectors, {d.n_nodes} expected")
                    self.seen.add(d.doc_id)
                self.observations += 1
            except (DocMasterError, sqlite3.Error, OSError, ValueError) as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            time.sleep(self.period)
        if ws is not None:
            ws.close()


def run_check(ws_dir: Path, env: dict) -> tuple[int, dict]:
    p = subprocess.run([sys.executable, "-m", "docmaster_core", "check", "--workspace", str(ws_dir), "--json"],
                       capture_output=True, text=True, env=env, cwd=str(REPO), timeout=300)
    try:
        rep = json.loads(p.stdout)
    except json.JSONDecodeError:
        rep = {"ok": False, "problems": [p.stderr.strip()[-300:]]}
    return p.returncode, rep


def ingest_cmd(inp: Path, ws_dir: Path) -> list[str]:
    return [sys.executable, "-m", "docmaster_core", "ingest", str(inp), "--workspace", str(ws_dir), "--json", "-q"]


# ----------------------------------------------------------------------------- main loop
def run_check_in_process(ws_dir: Path, env: dict) -> tuple[int, dict]:
    """``docmaster check --json`` through :func:`docmaster_core.cli.commands.main` in this process."""
    import contextlib
    import io

    from docmaster_core import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = cli.main(["check", "--workspace", str(ws_dir), "--json"])
    return rc, json.loads(buf.getvalue())


def reference_in_process(inp: Path, ref_ws: Path, embedding: str) -> dict:
    """The reference ingest through :class:`DocMaster` in this process (same settings as
    the CLI runs); returns ``{"failed": n}``."""
    from docmaster_core.config import get_settings
    from docmaster_core.pipeline import DocMaster

    st = get_settings(llm={"backend": "offline"}, parsing={"parser": "pymupdf"}, embedding={"model": embedding})
    dm = DocMaster(ref_ws, st)
    try:
        res = dm.ingest([inp])
    finally:
        dm.ws.close()
    return {"failed": sum(r.status == "failed" for r in res)}


def run(kills: int = 20, seed: int = 0, *, inputs: list[Path], workdir: Path, embedding: str = "hashing",
        min_frac: float = 0.02, max_frac: float = 1.0, trigger: str = "time", in_process: bool = False,
        log=None) -> dict:
    """Run the crash experiment; returns the report dict (see the module docstring).

    Args:
        kills: Number of SIGKILLs.
        seed: Seed of the kill delays.
        inputs: PDFs to ingest.
        workdir: Working folder (input copy, reference and round workspaces).
        embedding: ``DOCMASTER_EMBEDDING__MODEL`` of the ingest runs.
        min_frac, max_frac: With ``trigger="time"``, the kill comes after
            ``U(min_frac, max_frac) * T`` seconds (T = reference wall time).
        trigger: ``"time"`` (random delays) or ``"docs"``: kill each run as soon as the
            reader sees one more document committed than at its start, plus ``U(0, 0.3)``
            seconds (so kills land right after commits: in the index step or the next parse).
        in_process: Reference ingest, ``check`` and the final completing rerun in this
            process (faster; used by the tests); the killed ingests are always subprocesses.
    """
    say = log or (lambda msg: None)
    check = run_check_in_process if in_process else run_check
    rng = random.Random(f"docmaster-crash:{seed}")
    inp = workdir / "input"
    inp.mkdir(parents=True, exist_ok=True)
    for p in inputs:
        shutil.copy(p, inp / p.name)
    env = dict(os.environ, PYTHONPATH=str(REPO), DOCMASTER_EMBEDDING__MODEL=embedding,
               DOCMASTER_LLM__BACKEND="offline", DOCMASTER_PARSING__PARSER="pymupdf")

    t0 = time.perf_counter()
    ref_ws = workdir / "reference"
    if in_process:
        ref_out = reference_in_process(inp, ref_ws, embedding)
    else:
        ref = subprocess.run(ingest_cmd(inp, ref_ws), capture_output=True, text=True, env=env, cwd=str(REPO),
                             timeout=3600)
        if ref.returncode != 0:
            raise RuntimeError(f"reference ingest failed: {ref.stderr[-1000:]}")
        ref_out = json.loads(ref.stdout)
    t_ref = time.perf_counter() - t0
    ref_sig = signatures(ref_ws)
    say(f"reference: {len(ref_sig)} documents ingested, {ref_out['failed']} failed, {t_ref:.1f} s")

    report: dict = {"kills": 0, "seed": seed, "embedding": embedding, "inputs": [p.name for p in inputs],
                    "reference_documents": len(ref_sig), "reference_failed": ref_out["failed"],
                    "reference_seconds": round(t_ref, 2), "rounds": 0, "rounds_completed": 0,
                    "runs_finished_unkilled": 0, "check_failures": 0, "open_failures": 0, "documents_lost": 0,
                    "half_documents": 0, "signature_mismatches": 0, "leftovers_after_kills": 0,
                    "killed_before_database": 0, "reader_observations": 0, "reader_errors": 0,
                    "final_incomplete": 0, "final_unindexed": 0, "final_leftovers": 0, "events": []}

    def verify_after_kill(ws_dir: Path, seen: set[str]) -> dict:
        ev: dict = {}
        if not (ws_dir / "workspace.sqlite").exists():
            report["killed_before_database"] += 1
            ev["database"] = False
            return ev
        try:
            Workspace(ws_dir, create=False).close()
        except DocMasterError as exc:
            report["open_failures"] += 1
            ev["open_error"] = str(exc)
            return ev
        rc, chk = check(ws_dir, env)
        ev["check_ok"] = rc == 0 and chk.get("ok", False)
        ev["leftovers"] = len(chk.get("leftovers", []))
        report["leftovers_after_kills"] += ev["leftovers"]
        if not ev["check_ok"]:
            report["check_failures"] += 1
            ev["problems"] = chk.get("problems")
        sig = signatures(ws_dir)
        ids = {s["doc_id"] for s in sig.values()}
        lost = sorted(seen - ids)
        bad = [s["file"] for sha, s in sig.items() if ref_sig.get(sha, {}).get("hash") != s["hash"]]
        report["documents_lost"] += len(lost)
        report["signature_mismatches"] += len(bad)
        ev.update(documents=len(sig), seen_before_kill=len(seen), lost=lost, mismatched=bad)
        return ev

    def verify_final(ws_dir: Path) -> dict:
        sig = signatures(ws_dir)
        missing = sorted(set(ref_sig) - set(sig))
        bad = [s["file"] for sha, s in sig.items() if ref_sig.get(sha, {}).get("hash") != s["hash"]]
        unindexed = {s["doc_id"] for s in sig.values()} - indexed_docs(ws_dir)
        rc, chk = check(ws_dir, env)
        report["final_incomplete"] += len(missing)
        report["signature_mismatches"] += len(bad)
        report["final_unindexed"] += len(unindexed)
        report["final_leftovers"] += len(chk.get("leftovers", []))
        if not (rc == 0 and chk.get("ok")):
            report["check_failures"] += 1
        return {"final": True, "documents": len(sig), "missing": missing, "mismatched": bad,
                "unindexed": sorted(unindexed), "check_ok": rc == 0 and chk.get("ok", False),
                "leftovers": chk.get("leftovers", [])}

    rnd = 0
    ws_dir = None
    while True:
        if ws_dir is None:
            rnd += 1
            report["rounds"] = rnd
            ws_dir = workdir / f"ws_{rnd:02d}"
        must_finish = report["kills"] >= kills
        reader = Reader(ws_dir)
        reader.start()
        t_start = time.perf_counter()
        if must_finish and in_process:
            # the completing rerun through the same pipeline in this process (saves the
            # start-up cost of a subprocess); killed runs are always subprocesses
            reference_in_process(inp, ws_dir, embedding)
            reader.stop()
            report["reader_observations"] += reader.observations
            report["reader_errors"] += len(reader.errors)
            report["half_documents"] += len(reader.half)
            report["runs_finished_unkilled"] += 1
            ev = {"round": rnd, **verify_final(ws_dir)}
            report["events"].append(ev)
            report["rounds_completed"] += 1
            break
        proc = subprocess.Popen(ingest_cmd(inp, ws_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=str(REPO))
        killed = False
        if must_finish:
            proc.wait()
        elif trigger == "docs":
            n0 = len(signatures(ws_dir)) if (ws_dir / "workspace.sqlite").exists() else 0
            while proc.poll() is None and len(reader.seen) <= n0:
                time.sleep(0.02)
            if proc.poll() is None:
                time.sleep(rng.uniform(0.0, 0.3))
        else:
            try:
                proc.wait(timeout=rng.uniform(min_frac, max_frac) * t_ref)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            seen_before = set(reader.seen)  # committed and visible before the kill
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            killed = True
        out, err = proc.communicate()
        reader.stop()
        report["reader_observations"] += reader.observations
        report["reader_errors"] += len(reader.errors)
        report["half_documents"] += len(reader.half)
        if killed:
            report["kills"] += 1
            ev = {"round": rnd, "kill": report["kills"], "after_seconds": round(time.perf_counter() - t_start, 2)}
            ev.update(verify_after_kill(ws_dir, seen_before))
            if reader.half:
                ev["half_seen_by_reader"] = reader.half[:5]
            report["events"].append(ev)
            say(f"kill {report['kills']}/{kills} (round {rnd}) after {ev['after_seconds']} s: "
                f"{ev.get('documents', 0)} docs stored, check {'ok' if ev.get('check_ok', True) else 'FAILED'}, "
                f"lost {len(ev.get('lost', []))}, leftovers {ev.get('leftovers', 0)}")
            continue
        # the run ended by itself
        if proc.returncode != 0:
            report["events"].append({"round": rnd, "error": f"ingest exited {proc.returncode}: {err.decode()[-500:]}"})
            report["check_failures"] += 1
        else:
            report["runs_finished_unkilled"] += 1
        ev = {"round": rnd, **verify_final(ws_dir)}
        report["events"].append(ev)
        report["rounds_completed"] += 1
        say(f"round {rnd} completed: {ev['documents']}/{len(ref_sig)} docs, missing {len(ev['missing'])}, "
            f"unindexed {len(ev['unindexed'])}, check {'ok' if ev['check_ok'] else 'FAILED'}")
        ws_dir = None
        if must_finish:
            break
    report["wall_seconds"] = round(time.perf_counter() - t0, 1)
    report["ok"] = not any(report[k] for k in ("check_failures", "open_failures", "documents_lost", "half_documents",
                                                 "signature_mismatches", "final_incomplete", "final_unindexed",
                                                 "final_leftovers"))
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=20, help="number of SIGKILLs (default 20)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="folder of PDFs (default ../shared/corpus/pdf)")
    ap.add_argument("--pdfs", type=int, default=5, help="how many PDFs to ingest (default 5)")
    ap.add_argument("--max-kb", type=int, default=400, help="largest corpus PDF used, KiB (default 400)")
    ap.add_argument("--generated", action="store_true", help="use generated PDFs, not the corpus")
    ap.add_argument("--embedding", default="hashing", help="DOCMASTER_EMBEDDING__MODEL for the ingest (default hashing)")
    ap.add_argument("--min-frac", type=float, default=0.02, help="earliest kill, as a fraction of the reference time")
    ap.add_argument("--max-frac", type=float, default=1.0, help="latest kill, as a fraction of the reference time")
    ap.add_argument("--trigger", choices=["time", "docs"], default="time",
                    help="time: random delays (default); docs: right after each new committed document")
    ap.add_argument("--workdir", help="working folder (default: a temporary folder, removed afterwards)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON only")
    ap.add_argument("--out", help="also write the JSON report to this file")
    args = ap.parse_args(argv)

    own = args.workdir is None
    work = Path(args.workdir or tempfile.mkdtemp(prefix="docmaster-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = Path(args.corpus)
    if args.generated or not corpus.is_dir():
        inputs = generated_inputs(work / "generated", args.pdfs)
    else:
        inputs = pick_corpus(corpus, args.pdfs, args.max_kb) or generated_inputs(work / "generated", args.pdfs)
    log = None if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    try:
        rep = run(args.kills, args.seed, inputs=inputs, workdir=work, embedding=args.embedding,
                  min_frac=args.min_frac, max_frac=args.max_frac, trigger=args.trigger, log=log)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(rep, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.json:
        print(text)
    else:
        print(f"{rep['kills']} kills over {rep['rounds']} rounds ({rep['rounds_completed']} completed) on "
              f"{len(rep['inputs'])} PDFs, reference {rep['reference_seconds']} s, wall {rep['wall_seconds']} s")
        for k in ("check_failures", "open_failures", "documents_lost", "half_documents", "signature_mismatches",
                  "final_incomplete", "final_unindexed", "final_leftovers", "leftovers_after_kills",
                  "killed_before_database", "reader_observations", "reader_errors"):
            print(f"  {k}: {rep[k]}")
        print("OK" if rep["ok"] else "FAILED")
    return 0 if rep["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
