"""Does the evidence hold what decides? Gold-passage recall of the filter's evidence (issue 32).

Every decider of a filter run (the offline rule, an LLM, the review loop) and chat's
answers read the passages a strategy hands over, so the share of labelled matches whose
*gold passage* lies inside those passages caps what any decider can get right. For each
labelled match ``(document, condition)`` with gold passages ``G`` (the clauses lawyers
marked, ``../shared/eval/filter_clauses_cuad.tsv``, or the cases' one ``evidence``
sentence, a lower bound), and the evidence ``E`` a strategy gives for that document::

    found(E, G) = max over g in G of  |shingles(g) & shingles(E)| / |shingles(g)|  >= coverage

where ``shingles`` are the word 4-grams of the lower-cased, alphanumeric tokens (so
hyphenation, line breaks and page furniture inside the PDF text do not matter; a gold
passage shorter than four words is one shingle). ``coverage`` = 0.5: half a clause is
enough to decide from; the figure at 0.8 is reported beside it.

The report gives, per strategy, the recall (matches found / matches), per condition, and
the mean characters of evidence per document (over every document of the run, not only
the matches): more text finds more, so the two are read together.
"""
from __future__ import annotations

import csv
import os
import re
import time
from collections import defaultdict
from typing import Any, Mapping, Sequence

from ..errors import RetrievalError
from ..text.words import SHINGLE, shingles

__all__ = ["load_gold_passages", "shingles", "normalised", "coverage", "eval_evidence", "SHINGLE"]

_WORD = re.compile(r"[a-z0-9]+")


def normalised(text: str) -> str:
    """``text`` as its lower-cased alphanumeric tokens joined by single spaces."""
    return " ".join(_WORD.findall((text or "").lower()))


def coverage(gold: str, evidence_shingles: set[int], evidence_text: str = "") -> float:
    """Share of ``gold``'s shingles present in the evidence (0 for an empty gold passage).

    A gold passage shorter than :data:`SHINGLE` words counts 1 when its words occur in a
    row in ``evidence_text`` (:func:`normalised` evidence), else 0."""
    words = normalised(gold)
    if not words:
        return 0.0
    if len(words.split()) < SHINGLE:
        return float(f" {words} " in f" {evidence_text} ")
    g = shingles(gold)
    return len(g & evidence_shingles) / len(g)


def load_gold_passages(path: str | os.PathLike) -> dict[tuple[str, str], list[str]]:
    """Gold passages per ``(file, condition)`` from a TSV with columns ``file, condition``
    and ``clause`` (the clauses file) or ``evidence`` (a cases file: rows labelled 1 with
    a non-empty evidence quote).

    Raises:
        RetrievalError: the file cannot be read or lacks the columns.
    """
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        raise RetrievalError(f"cannot read {path}: {e.strerror or e}") from e
    if not rows:
        return {}
    col = "clause" if "clause" in rows[0] else "evidence" if "evidence" in rows[0] else None
    if col is None or not {"file", "condition"} <= set(rows[0]):
        raise RetrievalError(f"{path}: needs the columns file, condition and clause (or evidence)")
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rows:
        if "label" in r and (r.get("label") or "").strip() != "1":
            continue
        text = " ".join((r.get(col) or "").split())
        if text:
            out[(r["file"].strip(), r["condition"].strip())].append(text)
    return dict(out)


def eval_evidence(dm, texts: Mapping[str, str], gold: Mapping[tuple[str, str], list[str]], *,
                  strategies: Sequence[str] = ("combined", "tree", "semantic", "keyword", "hyperedge", "flat"),
                  top_k: int | None = None, thresholds: Sequence[float] = (0.5, 0.8)) -> dict[str, Any]:
    """Gold-passage recall of each strategy's filter evidence (module docstring).

    Args:
        dm: The :class:`~docmaster_core.pipeline.DocMaster` facade (its retriever and settings).
        texts: ``{condition id: condition text}``.
        gold: ``{(file name, condition id): [gold passage, ...]}`` for the labelled matches.
        strategies: Strategies whose evidence is measured.
        top_k: Evidence items per strategy (default ``settings.retrieval.top_k``).
        thresholds: Coverage levels reported; the first is the headline.

    Returns:
        ``{"strategies", "thresholds", "matches", "missing_files", "recall": {strategy:
        {threshold: share}}, "chars_per_doc": {strategy: mean characters}, "conditions":
        {cid: {"matches": n, strategy: share at the first threshold}}, "misses": {strategy:
        [[file, cid], ...]}, "seconds"}``.

    Raises:
        RetrievalError: none of the labelled files is in the workspace.
    """
    from ..filtering.run import collect_evidence, condition_query

    retr = dm.retriever()
    view = retr.view
    by_file = {dv.file_name: dv.doc_id for dv in view.docs}
    wanted = [(f, c) for (f, c) in gold if c in texts]
    missing = sorted({f for f, _ in wanted if f not in by_file})
    pairs = [(f, c) for f, c in wanted if f in by_file]
    if not pairs:
        raise RetrievalError("none of the labelled files is in the workspace")
    k = top_k if top_k is not None else retr.settings.top_k
    th = [float(t) for t in thresholds]
    found = {s: {t: 0 for t in th} for s in strategies}
    chars = {s: [] for s in strategies}
    per_cond: dict[str, dict[str, Any]] = {}
    misses: dict[str, list[list[str]]] = {s: [] for s in strategies}
    t0 = time.perf_counter()
    for cid in dict.fromkeys(c for _, c in pairs):
        cond = condition_query(texts[cid])
        docs, _ = collect_evidence(retr, cond, list(strategies), k, view=view)
        ev_by_doc = {r.doc_id: r for r in docs}
        mine = [f for f, c in pairs if c == cid]
        pc = per_cond.setdefault(cid, {"matches": len(mine)})
        for s in strategies:
            chars[s] += [sum(len(e.text) for e in r.evidence.get(s, [])) for r in docs]
            hit = 0
            for f in mine:
                r = ev_by_doc.get(by_file[f])
                evs = r.evidence.get(s, []) if r else []
                sh = set().union(*(shingles(e.text) for e in evs))
                norm = " | ".join(normalised(e.text) for e in evs)
                cov = max((coverage(g, sh, norm) for g in gold[(f, cid)]), default=0.0)
                for t in th:
                    found[s][t] += cov >= t
                if cov >= th[0]:
                    hit += 1
                else:
                    misses[s].append([f, cid])
            pc[s] = hit / len(mine)
    n = len(pairs)
    return {
        "strategies": list(strategies), "thresholds": th, "matches": n, "top_k": k,
        "missing_files": missing,
        "recall": {s: {str(t): found[s][t] / n for t in th} for s in strategies},
        "chars_per_doc": {s: (sum(chars[s]) / len(chars[s]) if chars[s] else 0.0) for s in strategies},
        "conditions": per_cond,
        "misses": misses,
        "seconds": time.perf_counter() - t0,
    }
