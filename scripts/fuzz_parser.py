#!/usr/bin/env python
"""Fuzz the PDF parser with randomly corrupted copies of real PDFs (issue 7).

    python scripts/fuzz_parser.py --cases 500 --seed 0 [--corpus ../shared/corpus/pdf]
    python scripts/fuzz_parser.py --cases 15 --seed 7 --generated --json   # no corpus needed

Each case is a copy of a source PDF (a handful of corpus PDFs, or PDFs generated with
``tests/support/pdf_factory.py`` when the corpus is absent or ``--generated`` is given) with
1-3 seeded corruptions stacked: bit flips, random overwrites, truncation, deleted or
duplicated ranges, swapped PDF keywords (``obj``, ``stream``, ``xref`` ...), altered
numbers (object numbers, lengths, offsets), a smashed xref table, corrupted stream
data, zero-filled ranges, and splices of two files. Case ``i`` depends only on
``(seed, i)`` and the sources, so a run is reproducible.

The cases are parsed (``parse_document(parser="pymupdf")`` then ``build_tree``, as the
ingest does) in child processes, one per batch of ``--batch`` cases. A child writes
"start"/"end" records per case; the parent watches them, so a child that dies
(segfault, abort, out-of-memory kill under ``--mem-limit-mb``) is counted as a
**crash** of the case in flight, and a case running longer than ``--case-timeout``
seconds is killed and counted as a **hang**; the batch then goes on in a new child.

Outcomes per case: ``ok`` (parsed), ``reported`` (a
:class:`~docmaster_core.errors.DocMasterError` subclass, the intended failure mode;
its message must be one line naming the file, else it is also counted as
``unclear_messages``), ``raw`` (any other exception leaking out: a bug), ``crash``,
``hang``. Exit status 1 when any raw error, crash or hang occurred.

The detection itself can be checked with ``DOCMASTER_FUZZ_SELFTEST="crash=3,hang=5"``
in the environment: the child then kills itself with SIGSEGV at case 3 and sleeps
forever at case 5.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "pdf"

KEYWORDS = [b"obj", b"endobj", b"stream", b"endstream", b"xref", b"trailer", b"startxref", b"/Length",
            b"/Root", b"/Pages", b"/Kids", b"/Type", b"/Page", b"/Font", b"/Filter", b"/FlateDecode",
            b"%%EOF", b" R", b"<<", b">>", b"[", b"]", b"/Count", b"/Contents", b"/Resources", b"/ObjStm"]
_NUM = re.compile(rb"\d+")


# ----------------------------------------------------------------------------- mutations
def _bitflips(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    for _ in range(rng.randint(1, 50)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return b


def _overwrite(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    i = rng.randrange(len(b))
    n = min(rng.randint(1, 4096), len(b) - i)
    b[i:i + n] = rng.randbytes(n)
    return b


def _truncate(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    return b[: rng.randint(1, max(1, len(b) - 1))]


def _delete(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    i = rng.randrange(len(b))
    del b[i:i + rng.randint(1, 20000)]
    return b or bytearray(b"%")


def _duplicate(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    i, j = rng.randrange(len(b)), rng.randrange(len(b))
    b[i:i] = b[j:j + rng.randint(1, 5000)]
    return b


def _keywords(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    for _ in range(rng.randint(1, 12)):
        kw = rng.choice(KEYWORDS)
        pos = b.find(kw, rng.randrange(len(b)))
        if pos < 0:
            pos = b.find(kw)
        if pos >= 0:
            b[pos:pos + len(kw)] = rng.choice(KEYWORDS)
    return b


def _numbers(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    start = rng.randrange(len(b))
    window = bytes(b[start:start + 200_000])
    found = list(_NUM.finditer(window))
    if not found:
        return _bitflips(b, rng, other)
    out = bytearray(b[:start])
    pos = 0
    chosen = set(rng.sample(range(len(found)), min(len(found), rng.randint(1, 40))))
    for k, m in enumerate(found):
        out += window[pos:m.start()]
        if k in chosen:
            out += str(rng.choice([0, 1, 2, -1, 65535, 2**31, 99999999999, int(m.group()) + rng.randint(-3, 3)])).encode()
        else:
            out += m.group()
        pos = m.end()
    out += window[pos:] + b[start + len(window):]
    return out


def _xref(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    data = bytes(b)
    data = re.sub(rb"\n\d{10} \d{5} [nf]", lambda m: b"\n%010d 00000 n" % rng.randrange(len(data)) if rng.random() < 0.5
                  else m.group(0), data)
    m = None
    for m in re.finditer(rb"startxref\s+(\d+)", data):
        pass
    if m is not None:
        data = data[: m.start(1)] + str(rng.randrange(len(data) * 2)).encode() + data[m.end(1):]
    return bytearray(data)


def _streams(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    starts = [m.end() for m in re.finditer(rb"stream\r?\n", bytes(b))]
    if not starts:
        return _overwrite(b, rng, other)
    for s in rng.sample(starts, min(len(starts), rng.randint(1, 8))):
        for _ in range(rng.randint(1, 16)):
            i = s + rng.randrange(64)
            if i < len(b):
                b[i] = rng.randrange(256)
    return b


def _zero(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    i = rng.randrange(len(b))
    n = min(rng.randint(1, 65536), len(b) - i)
    b[i:i + n] = bytes(n)
    return b


def _splice(b: bytearray, rng: random.Random, other: bytes) -> bytearray:
    return b[: rng.randrange(1, len(b) + 1)] + bytearray(other[rng.randrange(len(other)):])


MUTATIONS = {
    "bitflips": _bitflips, "overwrite": _overwrite, "truncate": _truncate, "delete": _delete,
    "duplicate": _duplicate, "keywords": _keywords, "numbers": _numbers, "xref": _xref,
    "streams": _streams, "zero": _zero, "splice": _splice,
}


def make_case(i: int, seed: int, sources: list[tuple[str, bytes]]) -> tuple[bytes, dict]:
    """The bytes of case ``i`` and its description (source name, mutations)."""
    rng = random.Random(f"docmaster-fuzz:{seed}:{i}")
    name, data = sources[rng.randrange(len(sources))]
    other = sources[rng.randrange(len(sources))][1]
    b = bytearray(data)
    ops = [rng.choice(sorted(MUTATIONS)) for _ in range(rng.choice([1, 1, 2, 3]))]
    for op in ops:
        b = MUTATIONS[op](b, rng, other)
        if not b:
            b = bytearray(b"%")
    return bytes(b), {"case": i, "source": name, "mutations": ops}


def pick_sources(corpus: Path, n: int, max_mb: float) -> list[Path]:
    """Up to ``n`` corpus PDFs of at most ``max_mb`` MiB, spread over the sorted list."""
    files = sorted(p for p in corpus.glob("*.pdf") if p.stat().st_size <= max_mb * 2**20)
    if len(files) <= n:
        return files
    step = len(files) / n
    return [files[int(k * step)] for k in range(n)]


def generated_sources(folder: Path) -> list[Path]:
    """Small PDFs made with ``tests/support/pdf_factory.py`` (no corpus needed)."""
    sys.path.insert(0, str(REPO / "tests"))
    from support.pdf_factory import make_many_pages_pdf, make_paper_pdf, make_two_column_pdf

    folder.mkdir(parents=True, exist_ok=True)
    return [make_paper_pdf(folder / "paper.pdf")["path"],
            make_paper_pdf(folder / "paper_outline.pdf", with_outline=True)["path"],
            make_two_column_pdf(folder / "two_column.pdf"),
            make_many_pages_pdf(folder / "pages.pdf", 12)]


# ----------------------------------------------------------------------------- child
def child(list_file: str, results_file: str, mem_limit_mb: int) -> int:
    """Parse the cases listed in ``list_file``; append start/end records to ``results_file``."""
    if mem_limit_mb > 0:
        import resource

        lim = mem_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    sys.path.insert(0, str(REPO))
    import pymupdf

    from docmaster_core.config import ParsingSettings
    from docmaster_core.errors import DocMasterError
    from docmaster_core.parsing import parse_document
    from docmaster_core.tree.build import build_tree

    pymupdf.TOOLS.mupdf_display_errors(False)
    pymupdf.TOOLS.mupdf_display_warnings(False)
    st = ParsingSettings(parser="pymupdf")
    cases = json.loads(Path(list_file).read_text())
    # self-test of the crash/hang detection: DOCMASTER_FUZZ_SELFTEST="crash=3,hang=5"
    selftest = dict(kv.split("=") for kv in os.environ.get("DOCMASTER_FUZZ_SELFTEST", "").split(",") if "=" in kv)
    with open(results_file, "a", buffering=1) as out:
        for c in cases:
            out.write(json.dumps({"event": "start", "case": c["case"]}) + "\n")
            out.flush()
            if str(c["case"]) == selftest.get("crash"):
                os.kill(os.getpid(), signal.SIGSEGV)
            if str(c["case"]) == selftest.get("hang"):
                time.sleep(10**6)
            t0 = time.perf_counter()
            rec = {"event": "end", "case": c["case"]}
            try:
                parsed = parse_document(c["path"], settings=st, parser="pymupdf")
                tree = build_tree(parsed, "fuzz", st)
                rec.update(outcome="ok", nodes=len(tree.nodes), pages=parsed.n_pages)
            except DocMasterError as e:
                msg = str(e)
                rec.update(outcome="reported", error=type(e).__name__, message=msg[:300],
                           clear="\n" not in msg and Path(c["path"]).name in msg)
            except Exception as e:  # noqa: BLE001 - this is what the fuzzer hunts for
                import traceback

                rec.update(outcome="raw", error=type(e).__name__, message=str(e)[:300],
                           trace=traceback.format_exc(limit=-4)[-1500:])
            rec["seconds"] = round(time.perf_counter() - t0, 3)
            out.write(json.dumps(rec) + "\n")
            out.flush()
    return 0


# ----------------------------------------------------------------------------- parent
def _read_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    recs = []
    for line in path.read_text().splitlines():
        try:
            recs.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a crash
            pass
    return recs


def run_batch(cases: list[dict], work: Path, bidx: int, case_timeout: float, mem_limit_mb: int) -> dict[int, dict]:
    """Run one batch in child processes; returns ``{case: end record}`` including
    synthesised crash/hang records."""
    done: dict[int, dict] = {}
    attempt = 0
    remaining = list(cases)
    while remaining:
        attempt += 1
        lst = work / f"batch{bidx:03d}_{attempt}.json"
        res = work / f"batch{bidx:03d}_{attempt}.jsonl"
        lst.write_text(json.dumps(remaining))
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(lst), "--results", str(res),
                                 "--mem-limit-mb", str(mem_limit_mb)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(REPO))
        current, started = None, time.monotonic()
        hung = False
        while True:
            rc = proc.poll()
            recs = _read_records(res)
            starts = [r["case"] for r in recs if r["event"] == "start"]
            ends = {r["case"]: r for r in recs if r["event"] == "end"}
            last = starts[-1] if starts else None
            if last != current:
                current, started = last, time.monotonic()
            if rc is not None:
                break
            if current is not None and current not in ends and time.monotonic() - started > case_timeout:
                proc.kill()
                proc.wait()
                hung = True
                break
            time.sleep(0.05)
        err = (proc.stderr.read() or b"").decode("utf-8", "replace")[-800:] if proc.stderr else ""
        recs = _read_records(res)
        ends = {r["case"]: r for r in recs if r["event"] == "end"}
        starts = [r["case"] for r in recs if r["event"] == "start"]
        done.update(ends)
        in_flight = [c for c in starts if c not in ends]
        if in_flight:
            c = in_flight[-1]
            if hung:
                done[c] = {"event": "end", "case": c, "outcome": "hang", "seconds": case_timeout}
            else:
                sig = -proc.returncode if proc.returncode and proc.returncode < 0 else None
                done[c] = {"event": "end", "case": c, "outcome": "crash", "returncode": proc.returncode,
                           "signal": signal.Signals(sig).name if sig else None, "stderr": err}
        elif proc.returncode != 0 and not ends:
            raise RuntimeError(f"fuzz child failed before its first case (rc {proc.returncode}): {err}")
        remaining = [c for c in remaining if c["case"] not in done]
    return done


def _reason_kind(message: str) -> str:
    """The kind of a reported error: its message without the file name, details in
    parentheses and numbers (``"case_0001.pdf: 12 pages, over ..."`` -> ``"N pages, over ..."``)."""
    m = message.split(": ", 1)[-1]
    m = re.sub(r"\s*\(.*", "", m)
    return re.sub(r"\d+", "N", m).strip()[:70]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=500, help="number of corrupted files (default 500)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the corruptions (default 0)")
    ap.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="folder of source PDFs (default ../shared/corpus/pdf)")
    ap.add_argument("--sources", type=int, default=8, help="corpus PDFs used as sources (default 8)")
    ap.add_argument("--max-source-mb", type=float, default=1.5, help="largest source PDF in MiB (default 1.5)")
    ap.add_argument("--generated", action="store_true", help="use generated PDFs as sources, not the corpus")
    ap.add_argument("--batch", type=int, default=25, help="cases per child process (default 25)")
    ap.add_argument("--case-timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    ap.add_argument("--mem-limit-mb", type=int, default=4096, help="address-space limit of a child (0 = none)")
    ap.add_argument("--workdir", help="where case files go (default: a temporary folder, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the case files")
    ap.add_argument("--json", action="store_true", help="print the report as JSON only")
    ap.add_argument("--out", help="also write the JSON report to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.results, args.mem_limit_mb)

    t_all = time.perf_counter()
    own_tmp = args.workdir is None
    work = Path(args.workdir or tempfile.mkdtemp(prefix="docmaster-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = Path(args.corpus)
    if args.generated or not corpus.is_dir() or not any(corpus.glob("*.pdf")):
        src_paths = generated_sources(work / "sources")
        kind = "generated"
    else:
        src_paths = pick_sources(corpus, args.sources, args.max_source_mb)
        kind = "corpus"
    sources = [(p.name, p.read_bytes()) for p in src_paths]
    case_dir = work / "cases"
    case_dir.mkdir(exist_ok=True)
    meta: dict[int, dict] = {}
    for i in range(args.cases):
        data, info = make_case(i, args.seed, sources)
        p = case_dir / f"case_{i:04d}.pdf"
        p.write_bytes(data)
        info["path"] = str(p)
        info["bytes"] = len(data)
        meta[i] = info
    results: dict[int, dict] = {}
    ids = sorted(meta)
    for b, start in enumerate(range(0, len(ids), args.batch)):
        batch = [meta[i] for i in ids[start:start + args.batch]]
        results.update(run_batch(batch, work, b, args.case_timeout, args.mem_limit_mb))
        if not args.json:
            c = Counter(r["outcome"] for r in results.values())
            print(f"[{len(results)}/{len(ids)}] " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())),
                  file=sys.stderr, flush=True)

    outcomes = Counter(r["outcome"] for r in results.values())
    by_outcome = Counter(r.get("error", r["outcome"]) if r["outcome"] == "reported" else r["outcome"]
                         for r in results.values())
    by_mutation: dict[str, Counter] = {}
    for i, r in results.items():
        for op in set(meta[i]["mutations"]):
            by_mutation.setdefault(op, Counter())[r["outcome"]] += 1
    secs = [r.get("seconds", 0.0) for r in results.values()]
    bad = [{**{k: meta[i][k] for k in ("case", "source", "mutations")}, **{k: v for k, v in r.items() if k != "event"}}
           for i, r in sorted(results.items()) if r["outcome"] in ("raw", "crash", "hang")]
    reasons = Counter(_reason_kind(r.get("message", "")) for r in results.values() if r["outcome"] == "reported")
    unclear = [{"case": i, "message": r.get("message")} for i, r in sorted(results.items())
               if r["outcome"] == "reported" and not r.get("clear", True)]
    report = {
        "cases": len(results),
        "seed": args.seed,
        "sources": kind,
        "source_files": [n for n, _ in sources],
        "ok": outcomes.get("ok", 0),
        "reported": outcomes.get("reported", 0),
        "raw_errors": outcomes.get("raw", 0),
        "crashes": outcomes.get("crash", 0),
        "hangs": outcomes.get("hang", 0),
        "unclear_messages": len(unclear),
        "by_outcome": dict(sorted(by_outcome.items())),
        "reported_reasons": dict(reasons.most_common()),
        "by_mutation": {k: dict(v) for k, v in sorted(by_mutation.items())},
        "seconds_max": round(max(secs), 3) if secs else 0.0,
        "seconds_mean": round(sum(secs) / len(secs), 3) if secs else 0.0,
        "wall_seconds": round(time.perf_counter() - t_all, 1),
        "batch": args.batch,
        "case_timeout": args.case_timeout,
        "failures": bad,
        "unclear": unclear[:20],
    }
    if own_tmp and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.json:
        print(text)
    else:
        print(f"{report['cases']} cases (seed {args.seed}, {kind} sources: {', '.join(report['source_files'])})")
        print(f"  parsed ok: {report['ok']}   reported errors: {report['reported']}   raw errors: {report['raw_errors']}"
              f"   crashes: {report['crashes']}   hangs: {report['hangs']}   unclear messages: {report['unclear_messages']}")
        print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in report["by_outcome"].items()))
        print("  reported as: " + "; ".join(f"{k} ({v})" for k, v in report["reported_reasons"].items()))
        print(f"  seconds per case: mean {report['seconds_mean']}, max {report['seconds_max']}; wall {report['wall_seconds']} s")
        for f in bad[:20]:
            print(f"  BUG case {f['case']} ({f['source']}, {'+'.join(f['mutations'])}): {f['outcome']} "
                  f"{f.get('error', '')} {f.get('message', '') or f.get('signal', '') or ''}")
    return 1 if (report["raw_errors"] or report["crashes"] or report["hangs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
