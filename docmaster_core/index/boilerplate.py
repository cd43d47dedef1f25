"""Boilerplate passages kept out of the collection clustering (issue 36).

Clustering every TEXT node of a collection together groups what the embeddings find
alike. Passages that say nothing about a document's subject are alike in the wrong way:
a signature line ("Its: Chief Administrative Officer"), a cover-page line ("Amendment
N° 1 Global Maintenance Agreement"), "[Signature page follows]", a running footer or a
notice printed on every document of a filing. They gather in clusters of their own, or
pull a cluster's name towards the parties' names, so a contract collection's clusters
stop being clause topics. This module says which passages to leave out, by rules that
know no document:

``short``
    fewer than ``min_words`` words (a word: two letters or more, any script; each CJK
    character counts as a word): signature blocks, party and title lines, page labels,
    exhibit lists' entries;
``repeated``
    the same text (case, digits, punctuation and spacing ignored) in ``min_docs`` or more
    documents, or ``min_repeats`` or more times in one: running headers and footers,
    redaction notices, filing stamps, a form's fixed sentences;
``front`` / ``back``
    with ``roles`` given, passages before a document's first heading (cover page, title
    block, preamble naming the parties) or under references / acknowledgements, as
    :func:`docmaster_core.tree.roles.path_role` reads the headings. Off by default;
``signature``
    with ``signature`` given, passages the parser tagged as a signature block
    (:func:`docmaster_core.parsing.pdf.clauses.mark_signature_blocks`: "IN WITNESS WHEREOF,
    the parties have executed ...", "By: ... Name: ... Title: ..."), however long.

The passages stay in their documents (tree, search, filter and the per-document index
see them); only the collection clustering leaves them out.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Hashable, Sequence

import numpy as np

from ..text.words import letters_key

__all__ = ["boilerplate_reasons", "passage_key", "word_count", "REASONS"]

#: Reason codes, "" for a passage that is kept.
REASONS = ("short", "repeated", "front", "back", "signature")

_WORD = re.compile(r"[^\W\d_]{2,}")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def word_count(text: str) -> int:
    """Words of ``text``: runs of two letters or more (any script), each CJK character
    counted as one word."""
    text = text or ""
    cjk = len(_CJK.findall(text))
    return len(_WORD.findall(_CJK.sub(" ", text))) + cjk


def passage_key(text: str) -> str:
    """The text as compared for repeats: lower case, letters only, single spaces
    ("Page 3 of 10" and "Page 4 of 10" share the key ``page of``;
    :func:`~docmaster_core.text.words.letters_key`)."""
    return letters_key(text)


def boilerplate_reasons(texts: Sequence[str], groups: Sequence[Hashable], *, min_words: int = 8,
                        min_docs: int = 2, min_repeats: int = 3,
                        roles: Sequence[str] | None = None, signature: Sequence[bool] | None = None) -> np.ndarray:
    """Why each passage is boilerplate, or ``""`` when it is kept.

    Args:
        texts: The passages, length n.
        groups: The document of each passage (any hashable ids), length n.
        min_words: A passage of fewer words is ``short`` (0 turns the rule off).
        min_docs: A text found in this many documents or more is ``repeated`` (0: off).
            With fewer documents than ``min_docs`` in all, the rule is off.
        min_repeats: A text found this many times or more in one document is
            ``repeated`` (0: off).
        roles: Optional role of each passage's section (``"front"``, ``"back"``, ...);
            front and back matter are left out when given.
        signature: Optional flag of each passage: the parser tagged it as part of a
            signature block; such passages are left out when given.

    Returns:
        An object array of n reason strings (first rule that applies, in the order
        short, repeated, front, back, signature).

    Raises:
        ValueError: ``groups``, ``roles`` or ``signature`` differ in length from ``texts``.
    """
    n = len(texts)
    if len(groups) != n:
        raise ValueError(f"{len(groups)} document ids for {n} passages")
    if roles is not None and len(roles) != n:
        raise ValueError(f"{len(roles)} roles for {n} passages")
    if signature is not None and len(signature) != n:
        raise ValueError(f"{len(signature)} signature flags for {n} passages")
    out = np.full(n, "", dtype=object)
    keys = [passage_key(t) for t in texts]
    docs_of: dict[str, set] = defaultdict(set)
    per_doc: Counter = Counter()
    for k, g in zip(keys, groups):
        if k:
            docs_of[k].add(g)
            per_doc[(k, g)] += 1
    n_docs = len(set(groups))
    for i, (t, k, g) in enumerate(zip(texts, keys, groups)):
        if min_words > 0 and word_count(t) < min_words:
            out[i] = "short"
        elif k and ((min_docs > 0 and n_docs >= min_docs and len(docs_of[k]) >= min_docs)
                    or (min_repeats > 0 and per_doc[(k, g)] >= min_repeats)):
            out[i] = "repeated"
        elif roles is not None and roles[i] in ("front", "back"):
            out[i] = roles[i]
        elif signature is not None and signature[i]:
            out[i] = "signature"
    return out
