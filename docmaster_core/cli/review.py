"""The review on the command line (issue 33): ``docmaster filter --review`` (the LLM as the
oracle) and ``docmaster review "CONDITION"`` (the user, or a labels file, as the oracle).

See :mod:`docmaster_core.filtering.review` for the method. The importance-sampling
cascade's options (``--cascade``, ``--precision-target``, ``--sample-budget``,
``--cascade-seed``) still parse: ``--cascade`` and ``--cascade-seed`` mean ``--review`` and
``--review-seed`` (with a note), the other two stop with a message naming what replaced them.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from ..errors import DocMasterError
from .common import clean_line, open_docmaster, print_json

__all__ = ["add_review_arguments", "review_options", "review_line", "add_review_parser", "cmd_review"]


def _targets(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--recall-target", dest="recall_target", type=float, default=0.9,
                    help="recall the review certifies, relative to the oracle's answers (default 0.9)")
    sp.add_argument("--delta", type=float, default=0.1,
                    help="the certified recall holds with probability >= 1 - delta (default 0.1)")
    sp.add_argument("--review-seed", dest="review_seed", type=int, default=0,
                    help="seed of the stopping tests' random samples")


def add_review_arguments(sp: argparse.ArgumentParser) -> None:
    """Add ``--review``, its targets, ``--decide`` and the cascade's old options to ``filter`` (the
    review stops, not certified, at the LLM layer's ``--max-calls``)."""
    sp.add_argument("--review", action="store_true",
                    help="LLM decider: ask the LLM in rank order until a stopping test certifies the recall target; "
                         "documents not reached are decided no")
    _targets(sp)
    sp.add_argument("--decide", choices=["per-strategy", "combined-only"],
                    help="LLM decider: one call per strategy (default without --review) or one per document on the "
                         "combined evidence (default with --review)")
    old = sp.add_argument_group("replaced by the review (kept so old commands explain themselves)")
    old.add_argument("--cascade", action="store_true", help="now --review")
    old.add_argument("--precision-target", dest="precision_target", type=float, help="no longer used")
    old.add_argument("--sample-budget", dest="sample_budget", type=int, help="now --max-calls")
    old.add_argument("--cascade-seed", dest="cascade_seed", type=int, help="now --review-seed")


def review_options(args: argparse.Namespace) -> dict:
    """``dm.filter`` options of ``--review`` and ``--decide``.

    Raises:
        RetrievalError: ``--review`` with the calibrated decider, a target out of range,
            or an option of the old cascade that has no counterpart.
    """
    from ..errors import RetrievalError
    from ..filtering.options import RENAMED, review_options as options

    if args.precision_target is not None:
        raise RetrievalError(f"--precision-target: {RENAMED['precision']}")
    if args.sample_budget is not None:
        raise RetrievalError(f"--sample-budget: {RENAMED['sample_budget']}")
    review = bool(args.review or args.cascade)
    if args.cascade:
        print("note: --cascade is now --review: the LLM is asked in rank order until the recall target is certified",
              file=sys.stderr)
    seed = args.cascade_seed if args.cascade_seed is not None else args.review_seed
    return options(review=review, decide=args.decide, decider=args.decider, recall=args.recall_target,
                   delta=args.delta, max_calls=getattr(args, "max_calls", None), seed=seed)


def review_line(rep: dict) -> str:
    """One line on the LLM review of a filter run: what was asked and what it promises."""
    return (f"review: the LLM checked {rep['llm_asked']} of {rep['documents']} documents"
            + (f" ({rep['user_answers']} answered by you)" if rep.get("user_answers") else "")
            + f", {rep['matches']} match; {rep['promise']}")


# ---------------------------------------------------------------------- docmaster review
def add_review_parser(sub, common) -> None:
    """Register ``docmaster review``."""
    sp = sub.add_parser("review", help="answer, document by document, whether a condition holds, until the recall "
                                       "target is certified (your answers are kept in the workspace)")
    sp.add_argument("condition", help="natural-language condition")
    common(sp)
    _targets(sp)
    sp.add_argument("--labels", help="answer from this TSV instead of the terminal (columns file, label; a condition "
                                     "column, when present, must hold the condition's text or --condition-id)")
    sp.add_argument("--condition-id", dest="condition_id", default="C1",
                    help="the condition's id in --labels and in --export (default C1)")
    sp.add_argument("--export", help="write your answers as a cases TSV (and a conditions TSV beside it) that "
                                     "`docmaster eval filter` reads, and ask nothing")
    sp.add_argument("--set", dest="set_answers", action="append", default=[], metavar="DOC=ANSWER",
                    help="store or change one answer and ask nothing: DOC is a file name or doc id, ANSWER is "
                         "match, no or remove (repeatable)")
    sp.add_argument("--status", action="store_true", help="print where the review stands and ask nothing")
    sp.set_defaults(func=cmd_review)


def _read_labels(path: str, condition: str, cid: str, files: dict[str, str]) -> dict[str, bool]:
    """``{doc_id: label}`` from a labels TSV (``file``, ``label``, optional ``condition``).

    Raises:
        RetrievalError: the file lacks the columns.
    """
    from ..errors import RetrievalError

    out: dict[str, bool] = {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.DictReader(f, delimiter="\t")
        if not rows.fieldnames or not {"file", "label"} <= set(rows.fieldnames):
            raise RetrievalError(f"{path}: a labels file needs the columns file and label (tab-separated)")
        key = " ".join(condition.split()).lower()
        for r in rows:
            c = (r.get("condition") or "").strip()
            if c and c != cid and " ".join(c.split()).lower() != key:
                continue
            doc = files.get(r["file"]) or files.get(Path(r["file"]).name)
            if doc is not None and str(r["label"]).strip() in ("0", "1"):
                out[doc] = str(r["label"]).strip() == "1"
    return out


#: What the terminal accepts as an answer (whole words only: "maybe" is no answer).
_ANSWERS = {"m": True, "match": True, "y": True, "yes": True, "n": False, "no": False, "no match": False}


def _set_answers(dm, condition: str, items: list[str]) -> int:
    """Store ``DOC=match|no|remove`` answers given with ``--set``.

    Raises:
        ValueError: an item is not ``DOC=ANSWER`` or its answer is not match, no or remove.
        DocMasterError: an unknown document (nothing is stored).
    """
    values = {"match": True, "yes": True, "no": False, "no match": False, "remove": None}
    out: dict[str, bool | None] = {}
    for item in items:
        ref, sep, ans = item.rpartition("=")
        ans = " ".join(ans.lower().split())
        if not sep or not ref or ans not in values:
            raise ValueError(f"--set {item!r}: write DOC=match, DOC=no or DOC=remove")
        out[dm.document(ref.strip()).doc_id] = values[ans]
    return dm.answer(condition, out)


def _show(run_docs: dict, doc_id: str, rv, n: int) -> None:
    d = run_docs[doc_id]
    dec = (d.get("decisions") or {}).get("combined") or {}
    where = ("a random check of the documents not yet read" if rv.checking()
             else f"rank {dec.get('rank', '?')} of {n} by evidence")
    print(f"\n{clean_line(d['file'])}  ({where})")
    for e in (d.get("evidence") or {}).get("combined", [])[:3]:
        sec = " > ".join(e.get("section_path") or [])
        print(f"  p.{e.get('page')}" + (f" [{clean_line(sec)[:60]}]" if sec else "") + f": {clean_line(e['text'])[:300]}")


def cmd_review(args: argparse.Namespace) -> int:
    import numpy as np

    from ..filtering.results import run_evidence_nodes, run_ranking
    from ..filtering.review import Feedback, ReviewTargets, run_review

    dm = open_docmaster(args)
    try:
        targets = ReviewTargets(recall=args.recall_target, delta=args.delta, seed=args.review_seed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run = dm.filter(args.condition, strategies=("combined",), decider="calibrated", save=False).to_dict(text_chars=600)
    ranking = run_ranking(run)
    evidence = run_evidence_nodes(run)
    docs = {d["doc_id"]: d for d in run["documents"]}
    if args.labels:
        files = {d["file"]: d["doc_id"] for d in run["documents"]}
        labels = _read_labels(args.labels, args.condition, args.condition_id, files)
        known = dm.answers(args.condition)

        def ask(idx):
            got = {ranking[i]: labels.get(ranking[i]) for i in idx.tolist()}
            dm.answer(args.condition, {k: v for k, v in got.items() if v is not None}, source="labels")
            return np.array([float("nan") if got[ranking[i]] is None else float(got[ranking[i]])
                             for i in idx.tolist()])

        pre = np.array([float(known[d][0]) if d in known else float("nan") for d in ranking])
        run_review(np.arange(len(ranking)), targets, ask, known=pre, chunk=1,
                   feedback=Feedback.from_evidence(dm.retriever().view, ranking, evidence))
        kept_own = [d for d, v in labels.items() if d in known and known[d][0] != v]
        if kept_own:
            print(f"note: {len(kept_own)} label(s) of {args.labels} differ from answers stored before and were not "
                  "used; change those with --set DOC=match|no", file=sys.stderr)
    if args.set_answers:
        try:
            changed = _set_answers(dm, args.condition, args.set_answers)
        except (ValueError, DocMasterError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"stored {changed} answer(s)", file=sys.stderr)
    skipped: list[str] = []
    asking = not (args.labels or args.status or args.export or args.set_answers)
    while asking:
        rv = dm.review(args.condition, ranking, targets, skipped, evidence)
        if rv.state.done or not rv.pending_ids():
            break
        print(f"\n{rv.state.promise('your')}")
        doc = rv.pending_ids()[0]
        _show(docs, doc, rv, len(ranking))
        try:
            a = " ".join(input("[m]atch  [n]o match  [s]kip  [q]uit > ").lower().split())
        except EOFError:
            break
        if a in ("q", "quit"):
            break
        if a in ("s", "skip"):
            skipped.append(doc)
        elif a in _ANSWERS:
            dm.answer(args.condition, {doc: _ANSWERS[a]})
        else:
            print("answer m (match), n (no match), s (skip) or q (quit)")
    rv = dm.review(args.condition, ranking, targets, skipped, evidence)
    if args.export:
        out = Path(args.export)
        out.write_text(dm.export_answers(args.condition, args.condition_id), encoding="utf-8")
        conds = out.with_name(out.stem + "_conditions.tsv")
        conds.write_text(f"condition\ttext\n{args.condition_id}\t{' '.join(args.condition.split())}\n",
                         encoding="utf-8")
        print(f"wrote {out} and {conds}; evaluate with: docmaster eval filter --cases {out} --conditions {conds} "
              f"-w {args.workspace}", file=sys.stderr)
    if args.json:
        print_json({**rv.state.to_dict(), "promise": rv.state.promise("your"), "matches": rv.match_ids(),
                    "pending": rv.pending_ids()})
        return 0
    yes = len(rv.match_ids())
    print(f"\n{rv.state.answered} answered ({yes} match, {rv.state.answered - yes} no match); "
          f"{yes} of {len(ranking)} documents match; {rv.state.promise('your')}")
    for d in rv.match_ids():
        print(f"  {clean_line(docs[d]['file'])}")
    return 0
