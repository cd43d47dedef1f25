"""``docmaster eval``: filter P/R/F1 and LOCO F1, offline-rule calibration, evidence-page
recall@k on benchmarks, and question answering (key-on-page, decline rates)."""
from __future__ import annotations

import argparse
import sys

from .common import apply_retrieval_overrides, clean_line, open_docmaster, print_json
from ..errors import RetrievalError

__all__ = ["cmd_eval", "cmd_eval_checked"]


def _load_cases(ev, args: argparse.Namespace):
    """Labelled cases and condition texts from one or more ``--cases`` / ``--conditions`` pairs."""
    cases_files = args.cases or []
    cond_files = args.conditions or [None] * len(cases_files)
    if not cases_files:
        raise RetrievalError("eval filter needs --cases FILE (and --conditions FILE)")
    if len(cond_files) != len(cases_files):
        raise RetrievalError(f"give one --conditions file per --cases file ({len(cases_files)} cases, "
                             f"{len(cond_files)} conditions)")
    cases, texts = [], {}
    for cf, tf in zip(cases_files, cond_files):
        c, t = ev.load_filter_cases(cf, tf)
        dup = sorted(set(t) & set(texts))
        if dup:
            raise RetrievalError(f"condition id {dup[0]!r} appears in two condition files")
        cases += c
        texts.update(t)
    return cases, texts


def cmd_eval(args: argparse.Namespace) -> int:
    from ..evaluation import harness as ev

    dm = open_docmaster(args)
    apply_retrieval_overrides(args, dm)
    strategies = args.strategy or list(ev.EVAL_STRATEGIES)
    if args.what == "filter":
        cases, texts = _load_cases(ev, args)
        res = dm.eval_filter(cases, texts, strategies=strategies, top_k=args.top_k, decider=args.decider)
        if args.json:
            print_json(res)
            return 0
        print(f"{'condition':10} {'n':>3} {'pos':>3}  " + "  ".join(f"{s[:9]:>9}" for s in strategies) + "   (F1)")
        for key, c in res["conditions"].items():
            print(f"{clean_line(key)[:10]:10} {c['n']:>3} {c['positives']:>3}  "
                  + "  ".join(f"{c[s]['f1']:>9.3f}" for s in strategies))
        n_ws = len(dm.documents())
        partial = [k for k, c in res["conditions"].items() if c["n"] < n_ws]
        if partial:
            print(f"note: {len(partial)} condition(s) label fewer than the workspace's {n_ws} documents; each is "
                  "evaluated on its labelled documents only (n)")
        for m in ("precision", "recall", "f1", "ap", "best_f1", "uncertain_share", "f1_uncertain_kept",
                  "f1_uncertain_dropped"):
            print(f"{'macro ' + m:26}  " + "  ".join(f"{res['macro'][s][m]:>9.3f}" for s in strategies))
        print(f"{'keep everything':26}  " + "  ".join(f"{res['keep_all']['macro_f1']:>9.3f}" for _ in strategies)
              + "   (macro-F1 of deciding every document yes: the floor a rule must beat)")
        for band, b in res["bands"].items():
            print(f"{'F1 prevalence ' + band:26}  " + "  ".join(f"{b[s]:>9.3f}" for s in strategies)
                  + f"   (keep everything {b['keep_all']:.3f}; {len(b['conditions'])} conditions)")
        for h, ks in res["halves"].items():
            if not ks:  # an empty half has no F1 to show
                continue
            print(f"{'F1 half ' + h:26}  " + "  ".join(f"{res['macro_half'][h][s]:>9.3f}" for s in strategies)
                  + f"   ({', '.join(ks)})")
        if res.get("loco"):
            lo = res["loco"]
            print(f"{'LOCO f1':26}  " + "  ".join(f"{lo['macro'][s]:>9.3f}" for s in strategies)
                  + "   (cut parameters chosen on the other conditions)")
            print("cut parameters chosen per fold: " + "; ".join(f"{k} ({n}x)" for k, n in lo["chosen_counts"].items()))
            if "combined" in strategies:
                gaps = [f"{k} {g['combined']['kept']}/{g['combined']['best_kept']}" for k, g in lo["cut_gap"].items()]
                print("combined: kept by the cut / by the best cut: " + ", ".join(gaps))
        if res["missing_files"]:
            print(f"{len(res['missing_files'])} labelled files are not in the workspace")
        lat = res["latency"]
        print(f"retrieval latency per condition: mean {lat['embed_retrieve_mean']:.3f} s, max {lat['embed_retrieve_max']:.3f} s;"
              f" decisions mean {lat['decide_mean']:.3f} s")
        return 0
    if args.what == "qa":
        return _cmd_eval_qa(args, dm)
    if args.what == "evidence":
        return _cmd_eval_evidence(args, dm)
    if args.what == "calibrate":
        cases, texts = _load_cases(ev, args)
        keys = list(texts)
        on = args.calibrate_on or keys[0::2]
        res = dm.calibrate_filter(cases, texts, calibrate_on=on, strategies=strategies, top_k=args.top_k)
        if args.json:
            print_json(res)
            return 0
        print("chosen on " + ", ".join(res["calibrate_on"]) + ": "
              + ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}" for k, v in res["best"].items()))
        print(f"{'strategy':10} {'calibration':>12} {'held-out':>10} {'all':>8}   (macro-F1)")
        for s in strategies:
            f = res["f1"][s]
            print(f"{s:10} {f['calibration']:12.3f} {f['held_out']:10.3f} {f['all']:8.3f}")
        return 0
    res = dm.eval_retrieval(args.bench, k=args.k, strategies=strategies, root=args.bench_dir)
    if args.json:
        print_json(res)
        return 0
    print(f"{args.bench}: {res['questions']} answerable questions over {res['documents']} documents "
          f"({res['skipped_questions']} questions skipped: document not in the workspace)")
    for s in strategies:
        print(f"  {s:10} recall@{args.k} = {res['recall'][s]:.3f}   hit@{args.k} = {res['hit'][s]:.3f}")
    return 0


def _cmd_eval_qa(args: argparse.Namespace, dm) -> int:
    """``eval qa``: ask every case over its document; key-on-page and decline rates per kind."""
    from ..evaluation import qa as qa_eval

    cases = [c for f in args.cases for c in qa_eval.load_qa_cases(f)]
    over_all = getattr(args, "over", "file") == "all"

    def ask_one(question, doc_id):
        if over_all:  # the question must lead to its document by the names it holds
            return dm.ask(question, all_docs=True, top_k=args.top_k, deep=args.deep, save=False)
        return dm.ask(question, docs=[doc_id], top_k=args.top_k, deep=args.deep, save=False)

    res = qa_eval.eval_qa(dm.ws, ask_one, cases)
    if args.json:
        print_json(res)
        return 0

    def fmt(v):
        return "    -" if v is None else f"{v:5.2f}"

    def table(title, groups):
        print(title)
        print(f"  {'kind':16} {'n':>3}  {'key-on-page':>11} {'key-in-quote':>12} {'false-decline':>13} {'decline':>8}"
              f" {'whole-sentences':>15}")
        for k, s in groups.items():
            n = s["answerable"] + s["unanswerable"]
            print(f"  {clean_line(k)[:16]:16} {n:>3}  {fmt(s['key_on_page']):>11} {fmt(s['key_in_quote']):>12} "
                  f"{fmt(s['false_decline']):>13} {fmt(s['decline']):>8} {fmt(s['whole']):>15}")

    table("all cases", {**res["by_kind"], "ALL": res["overall"]})
    for sp_name, kinds in res["by_split_kind"].items():
        table(f"split {sp_name}", {**kinds, "ALL": res["by_split"][sp_name]})
    if res["missing_files"]:
        print(f"{len(res['missing_files'])} case files are not in the workspace: "
              + ", ".join(clean_line(f) for f in res["missing_files"][:5]))
    if over_all:
        named = sum(bool(r["named"]) for r in res["cases"])
        print(f"asked over every document: right (a citation from the case's document quotes the key) "
              f"{fmt(res['overall']['right'])}; {named} of {len(res['cases'])} questions were routed to the "
              "documents they name")
    print(f"ask latency: mean {res['latency']['mean']:.3f} s, max {res['latency']['max']:.3f} s")
    return 0


def _cmd_eval_evidence(args: argparse.Namespace, dm) -> int:
    """``eval evidence``: gold passage inside each strategy's filter evidence, and characters per document."""
    from ..evaluation import evidence as ee
    from ..evaluation import harness as ev

    _, texts = _load_cases(ev, args)
    gold: dict = {}
    for f in ([args.clauses] if args.clauses else args.cases):
        for k, v in ee.load_gold_passages(f).items():
            gold.setdefault(k, []).extend(v)
    strategies = args.strategy or ["combined", "tree", "semantic", "keyword", "hyperedge", "flat"]
    res = ee.eval_evidence(dm, texts, gold, strategies=strategies, top_k=args.top_k)
    if args.json:
        print_json(res)
        return 0
    print(f"{res['matches']} labelled matches; gold passage inside the evidence (>= {res['thresholds'][0]:.0%} of its "
          f"word 4-grams), top-k {res['top_k']}")
    print(f"{'condition':10} {'n':>3}  " + "  ".join(f"{s[:9]:>9}" for s in strategies))
    for key, c in res["conditions"].items():
        print(f"{clean_line(key)[:10]:10} {c['matches']:>3}  " + "  ".join(f"{c[s]:>9.3f}" for s in strategies))
    for t in res["thresholds"]:
        print(f"{'all @' + format(t, 'g'):14}  " + "  ".join(f"{res['recall'][s][str(t)]:>9.3f}" for s in strategies))
    print(f"{'chars / doc':14}  " + "  ".join(f"{res['chars_per_doc'][s]:>9.0f}" for s in strategies))
    if res["missing_files"]:
        print(f"{len(res['missing_files'])} labelled files are not in the workspace")
    return 0


def cmd_eval_checked(args: argparse.Namespace) -> int:
    if args.what in ("filter", "calibrate", "qa", "evidence") and not args.cases:
        print(f"error: eval {args.what} needs --cases FILE.tsv", file=sys.stderr)
        return 2
    if args.what == "retrieval" and not args.bench:
        print("error: eval retrieval needs --bench mmlongbench|financebench", file=sys.stderr)
        return 2
    return cmd_eval(args)
