"""Question-answering evaluation built into the product (``docmaster eval qa``).

Cases are a TSV with a header and the columns ``file, question, key`` and, optionally,
``kind`` (default ``fact``), ``pages`` (when absent, a citation on any page counts) and
``split`` (e.g. ``tune`` / ``heldout``, reported separately); ``../shared/eval/qa_named_cuad.tsv``
is such a file.
``kind=unanswerable`` marks a question whose answer is not in the document; for the
others ``key`` is a string the answer's evidence must contain and ``pages`` the
1-based pages (``;``- or ``,``-separated) where it occurs.

Each question is asked over its one document (``docmaster ask QUESTION --docs FILE``), or,
with ``scope="all"``, over every document of the workspace (``docmaster ask QUESTION --all``:
the question must lead to its document by the names it holds). Measures, per kind and per
split:

- **key-on-page** (answerable): the answer was given (outcome ``answered``) and one of
  its citations points at a passage on a listed page whose text contains the key
  (case- and whitespace-insensitive: both sides lower-cased, all white space removed);
- **key-in-quote** (answerable, stricter): the same, but the key must occur in the
  citation's quoted sentence(s);
- **false decline** (answerable): the answer said the documents do not contain it;
- **decline rate** (unanswerable): the answer's outcome is ``not_found``;
- **right** (answerable): a citation *from the case's document* quotes the key (the
  measure of questions asked over the whole collection; equal to key-in-quote with the
  document checked);
- **whole sentences**: the answer's text neither starts nor ends in the middle of a
  sentence (:func:`whole_sentences`).

An answer without an ``outcome`` (an older answerer) counts as answered.
"""
from __future__ import annotations

import csv
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import RetrievalError, WorkspaceError

__all__ = ["QACase", "load_qa_cases", "key_match", "score_case", "eval_qa", "whole_sentences"]

UNANSWERABLE = "unanswerable"
_WS = re.compile(r"\s+")


@dataclass
class QACase:
    """One labelled question.

    Attributes:
        file: The document's file name in the workspace.
        question: The question.
        kind: ``fact``, ``table``, ``caption``, ... or ``unanswerable``.
        key: A string the answer's cited passage must contain ("" when unanswerable).
        pages: 1-based pages where ``key`` occurs.
        split: Optional label (``tune`` / ``heldout``), "" when absent.
    """

    file: str
    question: str
    kind: str
    key: str = ""
    pages: list[int] = field(default_factory=list)
    split: str = ""

    @property
    def answerable(self) -> bool:
        """False for ``kind=unanswerable``."""
        return self.kind != UNANSWERABLE


def load_qa_cases(path: str | os.PathLike) -> list[QACase]:
    """Read a cases TSV (see the module docstring).

    Raises:
        RetrievalError: the file is missing, lacks a column, or an answerable row has
            no key or no valid page.
    """
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        raise RetrievalError(f"cannot read QA cases {path}: {e}") from e
    need = {"file", "question", "key"}
    if not rows or not need <= set(rows[0]):
        raise RetrievalError(f"{path}: a QA cases TSV needs the columns {', '.join(sorted(need))}")
    out = []
    for i, r in enumerate(rows, start=2):
        kind = (r.get("kind") or "fact").strip().lower()
        key = (r.get("key") or "").strip()
        pages = []
        for p in re.split(r"[;,\s]+", (r.get("pages") or "").strip()):
            if p:
                if not p.isdigit() or int(p) < 1:
                    raise RetrievalError(f"{path}:{i}: page {p!r} is not a 1-based page number")
                pages.append(int(p))
        if kind != UNANSWERABLE and (not key or ("pages" in rows[0] and not pages)):
            raise RetrievalError(f"{path}:{i}: an answerable question needs a key and its pages")
        q = " ".join((r.get("question") or "").split())
        if not q or not (r.get("file") or "").strip():
            raise RetrievalError(f"{path}:{i}: file and question must not be empty")
        out.append(QACase(r["file"].strip(), q, kind, key, pages, (r.get("split") or "").strip()))
    return out


def _squash(text: str) -> str:
    return _WS.sub("", text or "").lower()


def key_match(key: str, text: str) -> bool:
    """True when ``key`` occurs in ``text`` ignoring case and all white space."""
    k = _squash(key)
    return bool(k) and k in _squash(text)


def whole_sentences(text: str, passages: dict[str, str] | None = None) -> bool:
    """True when an answer's text neither starts nor ends inside a sentence: with its
    citation markers (``[E3]``) removed, no quoted unit between them is prose cut out of
    its sentence (:func:`~docmaster_core.text.words.is_cut_prose`; table rows, form fields
    and formulas are not prose and are not counted).

    Args:
        text: The answer's text.
        passages: ``{evidence id: passage text}``; when given, a unit that ends the
            passage its marker names, starts like a sentence and ends in a name or number
            (a paragraph whose source omits the final stop,
            :func:`~docmaster_core.text.words.ends_its_paragraph`) is not cut.
    """
    from ..text.words import ends_its_paragraph, is_cut_prose

    pieces = re.split(r"\s*\[(E\d+)\]", text or "")
    for k in range(0, len(pieces), 2):
        p = pieces[k].strip().split("\n")[-1].strip()  # a document's name on the line above is no quote
        if not p or not is_cut_prose(p):
            continue
        eid = pieces[k + 1] if k + 1 < len(pieces) else None
        if passages and eid in passages and ends_its_paragraph(p, passages[eid]):
            continue
        return False
    return True


def score_case(case: QACase, result: dict[str, Any]) -> dict[str, Any]:
    """Score one ``ask`` result (its ``to_dict()``) against a case.

    Returns:
        ``{"declined", "key_on_page", "key_in_quote", "right", "whole", "cited_pages",
        "from_file"}``; the key flags and ``right`` are None for an unanswerable case.
        A citation counts only when it comes from the case's document (by file name) and,
        when the case lists pages, lies on one of them.
    """
    ans = result.get("answer", {})
    declined = ans.get("outcome", "answered") == "not_found"
    ev = {e["evidence_id"]: e for e in result.get("evidence", [])}
    files = {e["evidence_id"]: e.get("file") or "" for e in result.get("evidence", [])}
    pages = set(case.pages)
    want = os.path.basename(case.file)
    on_page = in_quote = False
    cited, from_file = [], False
    for c in ans.get("citations", []):
        cited.append(c.get("page"))
        f = os.path.basename(c.get("file") or files.get(c.get("evidence_id"), ""))
        if declined or (f and f != want) or (pages and c.get("page") not in pages):
            continue
        from_file = True
        text = ev.get(c.get("evidence_id"), {}).get("text", "")
        if key_match(case.key, text):
            on_page = True
        if key_match(case.key, c.get("quote", "")):
            in_quote = True
    whole = whole_sentences(ans.get("text", ""), {k: v.get("text", "") for k, v in ev.items()}) if not declined \
        else True
    if not case.answerable:
        return {"declined": declined, "key_on_page": None, "key_in_quote": None, "right": None, "whole": whole,
                "cited_pages": cited, "from_file": from_file}
    return {"declined": declined, "key_on_page": on_page, "key_in_quote": in_quote, "right": in_quote,
            "whole": whole, "cited_pages": cited, "from_file": from_file}


def _summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["kind"] != UNANSWERABLE]
    una = [r for r in rows if r["kind"] == UNANSWERABLE]

    def rate(xs, k):
        return round(float(np.mean([bool(x[k]) for x in xs])), 4) if xs else None

    return {"answerable": len(ans), "unanswerable": len(una), "key_on_page": rate(ans, "key_on_page"),
            "key_in_quote": rate(ans, "key_in_quote"), "false_decline": rate(ans, "declined"),
            "decline": rate(una, "declined"), "right": rate(ans, "right"), "whole": rate(rows, "whole")}


def eval_qa(ws, ask_fn, cases: Sequence[QACase]) -> dict[str, Any]:
    """Ask every case and score it.

    Args:
        ws: The workspace (to map file names to documents).
        ask_fn: ``ask_fn(question, doc_id) -> QAResult`` (e.g. a bound
            :meth:`~docmaster_core.pipeline.DocMaster.ask` with ``save=False`` over that
            document, or over every document for questions that name theirs).
        cases: From :func:`load_qa_cases`.

    Returns:
        ``{"cases": [per-case rows], "overall": summary, "by_kind": {kind: summary},
        "by_split": {split: summary}, "by_split_kind": {split: {kind: summary}},
        "missing_files": [...], "latency": {"mean", "max"}}``; a summary holds the
        counts and the rates ``key_on_page``, ``key_in_quote``, ``false_decline``
        (answerable) and ``decline`` (unanswerable), None where a group is empty.

    Raises:
        RetrievalError: no case's document is in the workspace.
    """
    by_name = {}
    for d in ws.documents():
        by_name[d.file_name] = d.doc_id
    rows, missing, lat = [], [], []
    for c in cases:
        doc_id = by_name.get(c.file) or by_name.get(os.path.basename(c.file))
        if doc_id is None:
            try:
                doc_id = ws.document(c.file).doc_id
            except WorkspaceError:
                missing.append(c.file)
                continue
        t0 = time.perf_counter()
        res = ask_fn(c.question, doc_id).to_dict()
        lat.append(time.perf_counter() - t0)
        s = score_case(c, res)
        first = (res["answer"].get("citations") or [{}])[0]
        rows.append({"file": c.file, "question": c.question, "kind": c.kind, "split": c.split, "key": c.key,
                     "pages": c.pages, **s, "outcome": res["answer"].get("outcome", "answered"),
                     "scope": res.get("scope", ""), "named": res.get("named", []),
                     "first_quote": first.get("quote", ""), "answer": res["answer"].get("text", ""),
                     "verdict": res.get("verdict", {})})
    if not rows:
        raise RetrievalError("none of the cases' documents is in the workspace")
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    splits = list(dict.fromkeys(r["split"] for r in rows if r["split"]))
    return {
        "cases": rows,
        "overall": _summary(rows),
        "by_kind": {k: _summary([r for r in rows if r["kind"] == k]) for k in kinds},
        "by_split": {s: _summary([r for r in rows if r["split"] == s]) for s in splits},
        "by_split_kind": {s: {k: _summary([r for r in rows if r["split"] == s and r["kind"] == k]) for k in kinds}
                          for s in splits},
        "missing_files": sorted(set(missing)),
        "latency": {"mean": round(float(np.mean(lat)), 4), "max": round(float(np.max(lat)), 4)},
    }
