"""Candidate passages for an answer: the combined strategy's nodes per document, best
first, and the removal of passages that repeat another passage of the same document.
Used by :mod:`.ask` (evidence, deep mode) and :mod:`.answering` (passage selection)."""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..retrieval.retriever import Retriever

__all__ = ["combined_candidates", "dedupe_candidates"]


def combined_candidates(retr: Retriever, q: str | np.ndarray, doc_ids: Sequence[str], per_doc: int, view
                ) -> tuple[list[tuple[float, int, int, str]], np.ndarray]:
    """Combined candidates ``(cosine, doc index, node id, strategies)`` best first, and the query vector."""
    res = retr.rank(q, ["combined"], doc_ids=doc_ids, top_k=per_doc, view=view)
    out = []
    for di, (ids, _) in res.ranked["combined"].items():
        who = res.combined_strategies.get(di, [])
        for r, nid in enumerate(ids.tolist()):
            out.append((float(res.cos[view.docs[di].start + nid]), di, int(nid), who[r] if r < len(who) else "combined"))
    refs = {(di, int(n)) for di, (ids, _) in res.ranked["combined"].items()
            for n, w in zip(ids.tolist(), res.combined_strategies.get(di, [])) if "reference" in w}
    # elements the question names explicitly come first, then by cosine
    out.sort(key=lambda t: ((t[1], t[2]) not in refs, -t[0], t[1], t[2]))
    return out, res.q


_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def _norm(text: str) -> str:
    """Lower-case alphanumeric words joined by single spaces (for duplicate tests)."""
    return " ".join(_NON_ALNUM.sub(" ", (text or "").lower()).split())


def _passage_texts(view, di: int, nid: int) -> tuple[str, str]:
    """``(full, body)`` normalised texts of a passage; ``body`` drops a first line that
    is the node's own section heading (a TITLE node's heading above its summary)."""
    from ..retrieval.corpus import evidence_text

    tree = view.docs[di].tree
    text = evidence_text(tree, nid)
    full = _norm(text)
    head, _, rest = text.partition("\n")
    sp = tree.nodes[nid].section_path
    if rest.strip() and sp and _norm(head) == _norm(sp[-1]):
        return full, _norm(rest)
    return full, full


def dedupe_candidates(cands: Sequence[tuple[float, int, int, str]], view, limit: int,
                      min_chars: int = 20) -> list[tuple[float, int, int, str]]:
    """Drop passages that repeat another passage of the same document.

    A candidate whose body (text without its own section heading, see above; at least
    ``min_chars`` characters) occurs inside an already chosen passage is dropped; when
    an already chosen passage's body occurs inside the candidate (e.g. a section TITLE
    whose extractive summary is the candidate paragraph), the candidate replaces it in
    place. A heading + summary passage always gives way to the paragraph it repeats.
    Comparison is on lower-cased alphanumeric words.

    Args:
        cands: ``(cosine, doc index, node id, strategies)`` best first.
        view: The :class:`~docmaster_core.retrieval.corpus.CorpusView`.
        limit: Passages to keep.

    Returns:
        At most ``limit`` candidates, order kept.
    """
    chosen: list[tuple[tuple[float, int, int, str], str, str]] = []
    for cand in cands:
        if len(chosen) >= limit:
            break
        full, body = _passage_texts(view, cand[1], cand[2])
        dup = False
        for j, (oc, ofull, obody) in enumerate(chosen):
            if oc[1] != cand[1]:
                continue
            # a heading + summary passage gives way to the paragraph it repeats
            if obody != ofull and body == full and len(obody) >= min_chars and obody in full:
                chosen[j] = (cand, full, body)
                dup = True
                break
            if len(body) >= min_chars and body in ofull:
                dup = True
                break
            if len(obody) >= min_chars and obody in full:
                chosen[j] = (cand, full, body)
                dup = True
                break
        if not dup:
            chosen.append((cand, full, body))
    # a replacement may have made two chosen passages identical: keep the first
    out, keys = [], set()
    for cand, _, _ in chosen:
        if (cand[1], cand[2]) not in keys:
            keys.add((cand[1], cand[2]))
            out.append(cand)
    return out
