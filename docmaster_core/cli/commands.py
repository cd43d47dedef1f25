"""``docmaster`` command line (also ``python -m docmaster_core``).

Every command takes ``--workspace DIR`` and ``--json`` where it prints results.
Exit codes: 0 success, 1 nothing done / failure, 2 usage error, 3 workspace locked.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .common import (
    apply_retrieval_overrides,
    clean_line,
    open_docmaster,
    print_json,
)
from .eval import cmd_eval_checked
from .review import add_review_arguments, add_review_parser, review_line, review_options
from ..errors import DocMasterError, WorkspaceLockedError

__all__ = ["main", "build_parser"]


def _positive_int(v: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {v!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


# ---------------------------------------------------------------------- commands
def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    dm = open_docmaster(args, create=True)
    bar = None
    show = not args.json and not args.quiet

    def progress(ev):
        nonlocal bar
        if not show:
            return
        if bar is None:
            bar = tqdm(total=max(ev.total, 1), unit="doc", dynamic_ncols=True, file=sys.stderr)
        bar.set_description_str(f"{clean_line(Path(ev.file).name)[:40]} [{ev.stage}]")
        if ev.stage in ("done", "skipped", "failed"):
            bar.update(1)
            if ev.stage == "failed":
                bar.write(f"FAILED  {clean_line(ev.message)}", file=sys.stderr)

    results = dm.ingest(args.paths, on_progress=progress, build_index=not args.no_index,
                        summaries=not args.no_summaries, executor=args.executor, ray_address=args.ray_address)
    if bar is not None:
        bar.close()
    n_ok = sum(r.status == "ingested" for r in results)
    n_skip = sum(r.status == "skipped" for r in results)
    n_fail = sum(r.status == "failed" for r in results)
    if args.json:
        print_json({"ingested": n_ok, "skipped": n_skip, "failed": n_fail, "results": [r.to_dict() for r in results]})
    else:
        for r in results:
            name = clean_line(Path(r.file).name)
            if r.status == "failed":
                print(f"failed   {clean_line(r.reason)}")
            elif not args.quiet:
                c = r.counts
                print(f"{r.status:8} {name}  pages={r.pages} nodes={r.nodes} "
                      f"title={c.get('TITLE', 0)} text={c.get('TEXT', 0)} table={c.get('TABLE', 0)} "
                      f"image={c.get('IMAGE', 0)} equation={c.get('EQUATION', 0)}"
                      + (f"  ({r.reason})" if r.reason else ""))
        print(f"{n_ok} ingested, {n_skip} already present, {n_fail} failed")
    if n_ok + n_skip == 0:
        if not args.json:
            print("error: no document was ingested", file=sys.stderr)
        return 1
    gaps = [r for r in results if r.llm_gaps]
    if gaps:
        if not args.json:
            n_sum = sum("summaries" in r.llm_gaps for r in gaps)
            n_idx = sum("index" in r.llm_gaps for r in gaps)
            ws = clean_line(str(dm.ws.path))
            print(f"incomplete: the LLM failed for {len(gaps)} document(s): {n_sum} have fallback summaries, "
                  f"{n_idx} no semantic index; when the LLM works, run: docmaster index -w {ws} --summaries")
        return 4
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    docs = dm.ws.documents()
    fails = dm.ws.failures()
    if args.json:
        print_json({"documents": [d.to_dict() for d in docs], "failures": fails})
        return 0
    if not docs:
        print("no documents")
    for d in docs:
        c = d.counts
        print(f"{d.doc_id}  {clean_line(d.file_name)[:60]:60} pages={d.n_pages:4} nodes={d.n_nodes:5} "
              f"TITLE={c.get('TITLE', 0)} TEXT={c.get('TEXT', 0)} TABLE={c.get('TABLE', 0)} "
              f"IMAGE={c.get('IMAGE', 0)} EQUATION={c.get('EQUATION', 0)}")
    for f in fails:
        print(f"failed  {clean_line(f['reason'])}")
    print(f"{len(docs)} documents, {sum(d.n_pages for d in docs)} pages")
    return 0


def cmd_tree(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    rec = dm.ws.document(args.doc)
    tree = dm.ws.load_tree(rec.doc_id)
    if args.json:
        d = tree.to_nested()
        d["doc_id"] = tree.doc_id
        d["file"] = rec.file_name
        print_json(d)
        return 0
    for n in tree.nodes:
        if n.type.value in ("ROOT", "TITLE") or args.all:
            label = tree.title if n.type.value == "ROOT" else n.content
            print(f"{'  ' * n.depth}[{n.type.value} #{n.id} p{n.page_start}] {clean_line(label)[:100]}")
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    over = {k: getattr(args, k) for k in ("alpha", "k", "K", "w") if getattr(args, k) is not None}
    if args.sec_sign:
        over["sec_sign"] = args.sec_sign
    if args.summaries:
        failed = dm.resummarize()
        bad = sum(1 for v in failed.values() if v)
        if not args.json:
            print(f"summarised {len(failed)} document(s) again; {bad} still have fallback summaries")
    stats = dm.index(force=args.force, **over)
    docs = {d.doc_id: d.file_name for d in dm.ws.documents()}
    if args.collection:
        coll = dm.index_collection(**over)
        stats_c = coll
    else:
        stats_c = None
    layouts = None
    if args.layouts:  # the cluster view's 2-D UMAP layouts, computed now (the app does it in the background)
        n_q = dm.ensure_layouts()
        done = dm.wait_for_layouts(timeout=3600)
        layouts = {"queued": n_q, "done": bool(done), "enabled": bool(dm.settings.ui_umap)}
    if args.json:
        print_json({"params": dm.index_params(**over).as_dict(),
                     "documents": [{"doc_id": k, "file": docs.get(k, ""), **v} for k, v in stats.items()],
                     "collection": stats_c, "layouts": layouts})
        return 0
    if layouts is not None:
        print(f"2-D layouts: {layouts['queued']} computed" if layouts["enabled"]
              else "2-D layouts: UMAP is off (DOCMASTER_UI_UMAP=off), none computed")
    for k, v in stats.items():
        print(f"{clean_line(docs.get(k, k))[:50]:50} " + " ".join(f"{a}={b}" for a, b in v.items()))
    if stats_c:
        print("collection: " + " ".join(f"{a}={b}" for a, b in stats_c.items()))
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    from ..llm.cache import usage_report

    dm = open_docmaster(args)
    rep = usage_report(dm.ws.path)
    if args.json:
        print_json(rep)
        return 0
    print(json.dumps(rep, indent=2, default=str))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    ws = dm.ws
    removed: list[str] = []
    rebuilt: list[str] = []
    compacted = 0
    if args.repair:
        with ws.writing(what="check --repair"):
            removed = ws.repair()
            rebuilt = dm.repair_vectors()
            compacted = ws.compact_indexes()
        if not args.json:
            for r in removed:
                print(f"removed {r}")
            for r in rebuilt:
                print(f"repaired: {clean_line(r)}")
            if compacted:
                print(f"rewrote {compacted} stored indexes with their arrays in binary "
                      "(VACUUM workspace.sqlite to return the space)")
            if not removed and not rebuilt and not compacted:
                print("nothing to repair")
    problems = ws.check(leftovers=False)
    leftovers = ws.leftovers()
    docs = ws.documents()
    if args.json:
        print_json({"ok": not problems, "documents": len(docs), "problems": problems, "leftovers": leftovers,
                     "removed": removed, "repaired": rebuilt, "indexes_rewritten": compacted})
    else:
        for p in problems:
            hint = ""
            if "vector file" in p and not args.repair:
                hint = " (run 'docmaster check --repair' to re-embed it from the stored tree)"
            print(f"problem: {clean_line(p)}{hint}")
        for p in leftovers:
            print(f"note: {clean_line(p)} (an interrupted write; harmless, --repair removes it)")
        print(f"{'ok' if not problems else 'NOT OK'}: {len(docs)} documents, {len(problems)} problems")
    return 0 if not problems else 1


def cmd_rm(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    removed = dm.remove(args.docs)
    left = len(dm.documents())
    if args.json:
        print_json({"removed": [{"doc_id": r.doc_id, "file": r.file_name} for r in removed], "documents": left})
        return 0
    for r in removed:
        print(f"removed  {r.doc_id}  {clean_line(r.file_name)}")
    print(f"{len(removed)} removed, {left} document{'s' * (left != 1)} left")
    return 0


# ---------------------------------------------------------------------- filter, ask, eval (SPEC F6, F7)
_MARK = {True: "yes", False: "no", None: "?"}


def cmd_filter(args: argparse.Namespace) -> int:
    from ..filtering.options import FilterOptions

    dm = open_docmaster(args)
    if args.compare:
        a, b = args.compare
        runs = {i: r for i in (a, b) if (r := dm.ws.run(i)) is not None and r["kind"] == "filter"}
        if a not in runs or b not in runs:
            print(f"error: no filter run {a if a not in runs else b} in this workspace", file=sys.stderr)
            return 1
        cmp = dm.compare_runs(runs[a], runs[b])
        known = {d.doc_id for d in dm.documents()}
        cmp["removed"] = sorted({d["doc_id"] for k in ("only_a", "only_b", "both") for d in cmp[k]} - known)
        if args.json:
            print_json(cmp)
            return 0
        print(f"run {a} vs run {b}: agreement {cmp['agreement']:.2%}")
        for k, (va, vb) in cmp["params_changed"].items():
            print(f"  {k}: {clean_line(str(va))[:60]} -> {clean_line(str(vb))[:60]}")
        for label, key in (("only in run %d" % a, "only_a"), ("only in run %d" % b, "only_b"), ("in both", "both")):
            print(f"{label}: {len(cmp[key])}")
            for d in cmp[key]:
                print(f"    {clean_line(d['file'])}" + (" (removed from the workspace since)"
                                                       if d["doc_id"] not in known else ""))
        return 0
    if not args.condition:
        print("error: give a CONDITION (or --compare RUN_A RUN_B)", file=sys.stderr)
        return 2
    apply_retrieval_overrides(args, dm)
    strategies = ["tree", "semantic", "hyperedge", "combined"]
    if args.with_flat or args.strategy == "flat":
        strategies.append("flat")
    opts = FilterOptions(strategy=args.strategy, strategies=tuple(strategies), top_k=args.top_k,
                         decider=args.decider, save=not args.no_save, **review_options(args))
    run = dm.filter(args.condition, opts)
    warnings = list(getattr(run, "warnings", []) or [])
    decisions = [dec for d in run.documents for dec in d.decisions.values()]
    nothing_decided = bool(decisions) and all(dec.decision is None for dec in decisions)
    if args.json:
        out = run.to_dict(text_chars=None if args.full_text else 400)
        out["warnings"] = warnings
        print_json(out)
        if nothing_decided:
            print(f"error: {_undecided_message(decisions)}", file=sys.stderr)
            return 1
        return 0
    for w in warnings:
        print(f"warning: {clean_line(w)}", file=sys.stderr)
    if nothing_decided:
        print(f"error: {_undecided_message(decisions)}", file=sys.stderr)
        return 1
    strats = run.strategies
    print(f"condition: {clean_line(run.condition)}")
    print(f"decider: {run.backend}   strategy: {run.strategy}   top-k: {run.params['top_k']}")
    head = "  ".join(f"{s[:9]:>9}" for s in strats)
    print(f"{'rank':>4} {'score':>6}  {'file':50} {head}   (ranked by {run.strategy} evidence score; documents "
          "whose passages are too weakly similar rank last)")
    cut = run.cuts.get(run.strategy)
    if cut is not None and cut.none_meets:
        print("No document of this collection meets this condition: none holds a passage close in meaning to it or "
              "uses its distinctive words, so nothing is kept (the closest documents are marked uncertain, '?').")

    def rank_of(d):
        dec = d.decisions.get(run.strategy)
        return dec.rank if dec is not None and dec.rank is not None else len(run.documents) + 1

    drawn = False
    n_out = run.not_candidates()
    for d in sorted(run.documents, key=rank_of):
        dec = d.decisions.get(run.strategy)
        if dec is not None and dec.decided_by == "not-a-candidate":
            continue  # counted below, not listed one by one
        if cut is not None and not drawn and rank_of(d) > cut.kept:
            print(f"{'':4} {'':6}  ---- cut at evidence score {cut.threshold:.2f} ({cut.rule}): "
                  f"{cut.kept} of {cut.of} above ----")
            drawn = True
        cells = "  ".join(f"{_MARK[d.decision(s)] + ('?' if _is_uncertain(d, s) else ''):>9}" for s in strats)
        rank = f"{dec.rank:>4}" if dec is not None and dec.rank is not None else f"{'':>4}"
        sc = f"{dec.evidence_score:>6.2f}" if dec is not None and dec.evidence_score is not None else f"{'':>6}"
        print(f"{rank} {sc}  {clean_line(d.file_name)[:50]:50} {cells}")
        if dec is not None and (args.verbose or dec.decision or dec.decided_by == "user"):  # your answers say so
            print(f"    {run.strategy}: {clean_line(dec.rationale or dec.error or '')[:260]}")
            ev = {e.evidence_id: e for e in d.evidence.get(run.strategy, [])}
            cites = [f"{i} p.{ev[i].page}" + (f" [{clean_line(' > '.join(ev[i].section_path))[:50]}]" if ev[i].section_path else "")
                     for i in dec.evidence_ids if i in ev]
            if cites:
                print(f"    evidence: {'; '.join(cites)}")
    if n_out:
        c = run.candidates
        print(f"{n_out} of {len(run.documents)} documents were not candidates (not among the {c.get('pool_docs')} best "
              f"of the dense ({c.get('index')}) or BM25 collection index for the condition or its parts): decided no "
              f"without exact scoring and not listed; {c.get('candidates')} candidates were scored")
    m = run.matches()
    decs = [d.decisions.get(run.strategy) for d in run.documents]
    unc_kept = sum(1 for x in decs if x is not None and x.decision is True and x.uncertain)
    unc_dropped = sum(1 for x in decs if x is not None and x.decision is False and x.uncertain)
    line = f"{len(m)} of {len(run.documents)} documents match ({run.strategy})"
    if unc_kept or unc_dropped:  # one count: the uncertain ones on each side of the cut
        band = run.cuts[run.strategy].to_dict() if run.strategy in run.cuts else {}
        scores = (f" {band['sure_no']:g} and {band['sure_yes']:g}" if band.get("sure_yes") is not None else "")
        line += (f": {len(m) - unc_kept} sure and {unc_kept} uncertain kept, {unc_dropped} uncertain dropped "
                 f"(uncertain: between the sure-no and sure-yes evidence scores{scores}, marked yes? / no?; check "
                 "these, e.g. with docmaster review)")
    print(line)
    print("by strategy: " + ", ".join(f"{s} {len(run.matches(s))}" for s in strats))
    print("tokens: " + ", ".join(f"{s} {t}" for s, t in run.tokens.items()))
    und = run.undecided()
    if und:
        print(f"undecided (error or budget): {len(und)}")
    if run.user_answers:
        print(f"{run.user_answers} documents decided by your stored answers (docmaster review, the Filter page's Review)")
    if run.review:
        print(review_line(run.review))
    if run.review and run.usage:
        print(f"LLM requests sent: {run.usage.get('calls', 0)} (answered from the cache: {run.usage.get('cached', 0)})")
    t = run.timings
    print(f"time: retrieval {t['embed_retrieve']:.3f} s"
          + (f" (candidates {t['candidates']:.3f} s)" if "candidates" in t else "")
          + f", decisions {t['decide']:.3f} s"
          + (f"; saved as run {run.run_id}" if run.run_id is not None else ""))
    return 0


def _is_uncertain(doc, strategy: str) -> bool:
    dec = doc.decisions.get(strategy)
    return bool(dec is not None and dec.uncertain)


def _undecided_message(decisions) -> str:
    first = next((d.error for d in decisions if d.error), "") or "no reason given"
    return f"no document could be decided ({len(decisions)} decisions failed); first error: {clean_line(first)[:300]}"


def cmd_ask(args: argparse.Namespace) -> int:
    dm = open_docmaster(args)
    apply_retrieval_overrides(args, dm)
    res = dm.ask(args.question, docs=args.docs, top_k=args.top_k, deep=args.deep, save=not args.no_save,
                 all_docs=args.all, follow=dm.last_routed() if args.follow_up else None)
    if args.json:
        print_json(res.to_dict())
        return 0 if not res.answer.error else 1
    scope = res.to_dict()["scope"]
    print(f"answering from: {clean_line(scope)}", file=sys.stderr)
    for w in res.warnings:
        print(f"warning: {clean_line(w)}", file=sys.stderr)
    if res.answer.error:
        print(f"error: {clean_line(res.answer.error)}", file=sys.stderr)
        return 1
    print(res.answer.text)
    print()
    if res.sub_queries and len(res.sub_queries) > 1:
        print("sub-queries: " + " | ".join(clean_line(q) for q in res.sub_queries[1:]))
    if res.answer.closest:
        print("closest passages (they do not answer the question):")
    for c in list(res.answer.citations) + list(res.answer.closest):
        sec = " > ".join(c.section_path)
        print(f"[{c.evidence_id}] {clean_line(c.file)} p.{c.page}" + (f" \u00a7 {clean_line(sec)[:60]}" if sec else "")
              + f" (node {c.node_id}): \"{clean_line(c.quote)[:300]}\"" + ("" if c.supports else " (does not answer)"))
    n_from = len(res.evidence_doc_ids)
    searched = f" of {len(res.doc_ids)} searched" if len(res.doc_ids) != n_from else ""
    print(f"({len(res.evidence)} passage{'s' * (len(res.evidence) != 1)} from {n_from} "
          f"document{'s' * (n_from != 1)}{searched}, {res.doc_source}; backend {res.answer.backend}; "
          f"outcome {res.answer.outcome.replace('_', ' ')})")
    if res.named_outside:
        print(f"note: the question names {', '.join(clean_line(f) for f in res.named_outside[:3])}, which "
              f"{'is' if len(res.named_outside) == 1 else 'are'} not among the documents searched ({clean_line(scope)}); "
              f"to answer from {'it' if len(res.named_outside) == 1 else 'them'}: docmaster ask QUESTION -w "
              f"{clean_line(str(dm.ws.path))} --all", file=sys.stderr)
    if res.answer.outcome == "not_found" and res.doc_source == "named":
        print(f"note: only {clean_line(scope)} {'was' if len(res.doc_ids) == 1 else 'were'} searched, because the "
              f"question names {'it' if len(res.doc_ids) == 1 else 'them'} ({', '.join(res.named[:4])}); to search "
              "every document, ask without the names", file=sys.stderr)
    elif res.answer.outcome == "not_found" and res.doc_source == "follow-up":
        print(f"note: only {clean_line(scope)} {'was' if len(res.doc_ids) == 1 else 'were'} searched, because the "
              "question refers back to the last one; to search every document, ask without --follow-up",
              file=sys.stderr)
    elif res.answer.outcome == "not_found" and len(res.doc_ids) < res.n_workspace:
        n_other = res.n_workspace - len(res.doc_ids)
        print(f"note: only {clean_line(scope)} {'was' if len(res.doc_ids) == 1 else 'were'} searched; the other "
              f"{n_other} document{'s were' if n_other != 1 else ' was'} not. Search them all with: "
              f"docmaster ask QUESTION -w {clean_line(str(dm.ws.path))} --all", file=sys.stderr)
    return 0


def _add_retrieval_parsers(sub, common) -> None:
    """Register ``filter``, ``review``, ``ask`` and ``eval``."""
    def knobs(sp):
        sp.add_argument("--top-k", dest="top_k", type=int, help="evidence items per strategy and document, >= 1 (default 8)")
        sp.add_argument("--gamma", type=float, help="depth decay in s(v,q) = w_type * cos * gamma^depth")
        sp.add_argument("--w-title", dest="w_title", type=float, help="type weight of TITLE nodes (default 1.5)")
        sp.add_argument("--w-text", dest="w_text", type=float, help="type weight of TEXT nodes (default 1.0)")
        sp.add_argument("--w-table", dest="w_table", type=float, help="type weight of TABLE nodes (default 0.8)")

    strategies = ["tree", "semantic", "hyperedge", "combined", "flat"]
    sp = sub.add_parser("filter", help="decide, for every document, whether it satisfies a condition")
    sp.add_argument("condition", nargs="?", help="natural-language condition")
    common(sp)
    knobs(sp)
    sp.add_argument("--strategy", choices=strategies, default="combined", help="strategy whose decision is the match (default combined)")
    sp.add_argument("--with-flat", dest="with_flat", action="store_true", help="also decide with the flat-chunk baseline")
    sp.add_argument("--decider", choices=["auto", "llm", "calibrated"], default="auto",
                    help="auto: calibrated offline rule for the offline backend, LLM otherwise")
    sp.add_argument("--verbose", "-v", action="store_true", help="print rationale and evidence for every document")
    sp.add_argument("--full-text", dest="full_text", action="store_true", help="JSON: full evidence texts")
    sp.add_argument("--no-save", dest="no_save", action="store_true", help="do not save the run in the workspace")
    sp.add_argument("--compare", nargs=2, type=int, metavar=("RUN_A", "RUN_B"), help="compare two saved filter runs")
    add_review_arguments(sp)
    sp.set_defaults(func=cmd_filter)
    add_review_parser(sub, common)

    sp = sub.add_parser("ask", help="answer a question over the filtered documents, with citations")
    sp.add_argument("question", help="the question")
    common(sp)
    knobs(sp)
    which = sp.add_mutually_exclusive_group()
    which.add_argument("--docs", nargs="+", help="documents (file names or doc ids); default: last filter run's matches")
    which.add_argument("--all", action="store_true",
                       help="answer from all documents of the workspace (default: the last filter run's matches)")
    sp.add_argument("--deep", action="store_true", help="query decomposition and iterative retrieval")
    sp.add_argument("--no-save", dest="no_save", action="store_true", help="do not save the run in the workspace")
    sp.add_argument("--follow-up", dest="follow_up", action="store_true",
                    help="a follow-up of the last question asked here: when it refers back (\"it\", \"this "
                         "agreement\") and names no document, answer from the documents the last question named")
    sp.set_defaults(func=cmd_ask)

    sp = sub.add_parser("eval", help="evaluate filtering (P/R/F1) or retrieval (evidence-page recall@k)")
    sp.add_argument("what", choices=["filter", "retrieval", "calibrate", "qa", "evidence"],
                    help="filter P/R/F1, retrieval recall@k, calibrate the offline decider on some conditions, "
                         "qa (key-on-page and decline rates of ask), or evidence (share of labelled matches whose "
                         "gold passage is inside each strategy's filter evidence)")
    common(sp)
    knobs(sp)
    sp.add_argument("--cases", nargs="+", help="filter: TSV(s) with columns file, condition, label; "
                    "qa: TSV(s) with columns file, question, key and optionally kind, pages, split")
    sp.add_argument("--deep", action="store_true", help="qa: ask in deep mode")
    sp.add_argument("--over", choices=["file", "all"], default="file",
                    help="qa: ask each question over its own document (file, default) or over every document (all: "
                         "the question must name its document)")
    sp.add_argument("--conditions", nargs="+",
                    help="filter: TSV(s) condition<TAB>text, one per --cases file (else the condition column is the text)")
    sp.add_argument("--strategy", nargs="+", choices=strategies + ["keyword"], help="strategies to evaluate (default all five)")
    sp.add_argument("--clauses", help="evidence: TSV file, condition, clause of gold passages (default: the "
                    "cases' evidence column, one key sentence per match: a lower bound)")
    sp.add_argument("--calibrate-on", dest="calibrate_on", nargs="+", metavar="KEY",
                    help="calibrate: condition keys to choose the rule on (default 1st, 3rd, ... condition)")
    sp.add_argument("--decider", choices=["auto", "llm", "calibrated"], default="auto", help="filter decider")
    sp.add_argument("--bench", choices=["mmlongbench", "financebench"], help="retrieval: benchmark")
    sp.add_argument("--bench-dir", dest="bench_dir", help="retrieval: benchmark folder (default ../shared/corpus/bench)")
    sp.add_argument("--k", type=int, default=5, help="retrieval: pages predicted per question (default 5)")
    sp.set_defaults(func=cmd_eval_checked)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``docmaster`` command."""
    p = argparse.ArgumentParser(prog="docmaster", description="DocMaster: structure-aware document analysis.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp, llm=True):
        sp.add_argument("--workspace", "-w", required=True, help="workspace directory")
        sp.add_argument("--json", action="store_true", help="print JSON")
        if llm:
            sp.add_argument("--llm", choices=["offline", "openai"], help="LLM backend (default: offline)")
            sp.add_argument("--model", help="model name for the OpenAI-compatible backend")
            sp.add_argument("--base-url", dest="base_url", help="OpenAI-compatible endpoint base URL")
            sp.add_argument("--max-calls", dest="max_calls", type=int, help="per-run budget of LLM calls")

    sp = sub.add_parser("ingest", help="parse, summarise, embed and index PDFs (files or folders)")
    sp.add_argument("paths", nargs="+", help="PDF files, folders, or MinerU *_content_list.json files")
    common(sp)
    sp.add_argument("--parser", choices=["auto", "fast", "pymupdf", "layout", "mineru"],
                    help="parser backend (default auto = fast + the layout model on pages with missed formulas/tables; fast = heuristic PyMuPDF only, alias pymupdf; layout = PyMuPDF layout model on every page)")
    sp.add_argument("--page-limit", dest="page_limit", type=_positive_int, metavar="N",
                    help="refuse documents with more than N pages (default 2000; env DOCMASTER_PARSING__PAGE_LIMIT)")
    sp.add_argument("--no-index", action="store_true", help="skip the semantic index step")
    sp.add_argument("--no-summaries", action="store_true", help="skip node summaries")
    sp.add_argument("--quiet", "-q", action="store_true", help="only print failures and the total")
    sp.add_argument("--executor", choices=["local", "ray"],
                    help="where parsing and embedding run: local (default) or ray (tasks and actors on a Ray "
                         "cluster; env DOCMASTER_INGEST__EXECUTOR)")
    sp.add_argument("--ray-address", dest="ray_address", metavar="auto|HOST:PORT",
                    help="ray: connect to a running cluster (default: start a local Ray instance for the run; "
                         "env DOCMASTER_INGEST__RAY_ADDRESS)")
    sp.set_defaults(func=cmd_ingest)

    sp = sub.add_parser("docs", help="list the documents of a workspace")
    common(sp, llm=False)
    sp.set_defaults(func=cmd_docs)

    sp = sub.add_parser("tree", help="show a document tree")
    sp.add_argument("doc", help="file name, path or doc_id")
    common(sp, llm=False)
    sp.add_argument("--all", action="store_true", help="also list content nodes (text mode)")
    sp.set_defaults(func=cmd_tree)

    sp = sub.add_parser("index", help="build the semantic index (SEC, PC-KMeans, hyper-edges)")
    common(sp)
    sp.add_argument("--alpha", type=float, help="SEC alpha (Eq. 1), default 0.6")
    sp.add_argument("--k", type=int, help="anchor pairs per document")
    sp.add_argument("--K", type=int, help="PC-KMeans clusters per document")
    sp.add_argument("--w", type=float, help="PC-KMeans constraint penalty weight")
    sp.add_argument("--sec-sign", dest="sec_sign", choices=["printed", "prose"], help="SEC sign convention")
    sp.add_argument("--force", action="store_true", help="rebuild even if stored for these parameters")
    sp.add_argument("--summaries", action="store_true",
                    help="first summarise every document again with the LLM (after an ingest whose LLM calls failed)")
    sp.add_argument("--collection", action="store_true", help="also build the collection-level index")
    sp.add_argument("--layouts", action="store_true",
                    help="also compute the documents' 2-D UMAP layouts for the app's cluster view (once per document)")
    sp.set_defaults(func=cmd_index)

    sp = sub.add_parser("usage", help="LLM calls and tokens per task and per document")
    common(sp, llm=False)
    sp.set_defaults(func=cmd_usage)

    sp = sub.add_parser("check", help="integrity check of a workspace")
    common(sp, llm=False)
    sp.add_argument("--repair", action="store_true",
                    help="remove leftovers of interrupted writes and re-embed missing vector files from the stored trees")
    sp.set_defaults(func=cmd_check)

    sp = sub.add_parser("rm", help="remove documents from a workspace (nodes, vectors, indexes)")
    sp.add_argument("docs", nargs="+", metavar="FILE_OR_DOC_ID", help="file names, paths or doc ids")
    common(sp, llm=False)
    sp.set_defaults(func=cmd_rm)

    _add_retrieval_parsers(sub, common)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    for opt, name in (("top_k", "--top-k"), ("k", "--k")):
        v = getattr(args, opt, None)
        if v is not None and args.command in ("filter", "ask", "eval") and v < 1:
            print(f"error: {name} must be >= 1", file=sys.stderr)
            return 2
    try:
        return int(args.func(args) or 0)
    except WorkspaceLockedError as e:
        print(f"error: {clean_line(e)}", file=sys.stderr)
        return 3
    except DocMasterError as e:
        print(f"error: {clean_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
