"""Extractive text algorithms of the offline LLM backend: condition cores, extractive
(centrality) summaries, sentence joining and hashed lexical vectors. Pure functions of
text and sentence embeddings; :mod:`docmaster_core.llm.offline` puts them behind the
:class:`~docmaster_core.protocols.LLM` tasks.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..text.words import normalize_ws, truncate_words

__all__ = ["condition_core", "continues", "extractive_summary", "join_sentences", "lexical_vectors", "norm_key"]

_FRAMING = [
    re.compile(
        r"^(?:please\s+)?(?:(?:find|select|show|keep|return|list|give me|get)\s+)?(?:all\s+|any\s+)?(?:the\s+)?"
        r"(?:documents?|papers?|reports?|articles?|files?|manuals?)\s+(?:that|which|whose|where|in which)\s+",
        re.I,
    ),
    re.compile(r"^(?:does|do|is|are|did)\s+(?:the|this)\s+(?:documents?|papers?|reports?|articles?|manuals?)\s+", re.I),
    re.compile(r"^(?:(?:find|select|show|keep|list)\s+)?(?:documents?|papers?)\s+(?:about|on)\s+", re.I),
]


def condition_core(condition: str) -> str:
    """Strip request framing ("Find papers that ...", "Does the document ...?").

    Returns the condition's content phrase (never empty: falls back to the input).
    """
    c = normalize_ws(condition).rstrip("?.! ")
    for rx in _FRAMING:
        c2 = rx.sub("", c)
        if c2 != c and c2.strip():
            c = c2
    return c.strip() or normalize_ws(condition)


def extractive_summary(
    sentences: Sequence[str],
    emb: np.ndarray,
    max_words: int,
    *,
    min_words: int = 0,
    query: np.ndarray | None = None,
    query_weight: float = 0.5,
    redundancy: float = 0.95,
    weights: np.ndarray | None = None,
    continued: Sequence[bool] | None = None,
) -> str:
    """Central sentences of a text, in reading order, bounded by ``max_words`` words.

    Centrality of sentence i is ``cos(e_i, c)`` with ``c`` the normalised mean of the
    sentence embeddings (optionally plus ``query_weight * query``, e.g. the section
    title). Sentences are taken greedily by centrality while they fit in
    ``max_words``; near-duplicates (cos > ``redundancy``), fragments of fewer than
    4 words and pieces that continue the one before (:func:`continues`: the second
    window of a sentence too long to keep whole, "distribute, publicly perform ...")
    are skipped unless nothing else is left, so a summary starts where a sentence
    does. When the result has fewer than ``min_words`` words, the best remaining
    sentences are added, cut to the words left. When no sentence fits, the most
    central one that starts a sentence is cut.

    Source: centroid-based extractive summarisation (Radev et al. 2004, "MEAD").

    Args:
        sentences: n sentences.
        emb: float32 array (n, d), unit rows.
        max_words: Upper bound on the words of the result (>= 1).
        min_words: Lower target (reached only when the text has enough words).
        query: Optional float32 array (d,), unit norm.
        weights: Optional float array (n,) of sentence weights in the centroid (e.g.
            1 / sentences-per-child so that every child counts equally); default uniform.
        continued: Optional bool (n,): piece i goes on with piece i - 1's sentence; default
            :func:`continues` over consecutive pieces (give it when the pieces come from
            several texts, whose first pieces continue nothing).

    Returns:
        The summary (sentences joined, each ending in punctuation); ``""`` for no
        sentences.
    """
    n = len(sentences)
    if n == 0:
        return ""
    emb = np.asarray(emb, dtype=np.float32)
    words = np.array([len(s.split()) for s in sentences], dtype=np.int64)
    w = np.ones(n, dtype=np.float32) if weights is None else np.asarray(weights, dtype=np.float32).reshape(n)
    c = (w[:, None] * emb).sum(axis=0)
    c /= np.linalg.norm(c) or 1.0
    if query is not None:
        c = c + query_weight * np.asarray(query, dtype=np.float32)
        c /= np.linalg.norm(c) or 1.0
    score = emb @ c
    order = np.argsort(-score, kind="stable")
    chosen: list[int] = []
    text_of: dict[int, str] = {}
    total = 0
    # fragments ("1.", "Why Retrieval?") and a long sentence's later windows only when nothing else fits
    later = (np.array([i > 0 and continues(sentences[i - 1], sentences[i]) for i in range(n)], dtype=bool)
             if continued is None else np.asarray(continued, dtype=bool).reshape(n))
    short = (words < 4) | later
    if short.all():
        short[:] = words < 4
        if short.all():
            short[:] = False
    for i in order:
        i = int(i)
        if total + words[i] > max_words or words[i] == 0 or short[i]:
            continue
        if chosen and float(np.max(emb[chosen] @ emb[i])) > redundancy:
            continue
        chosen.append(i)
        text_of[i] = sentences[i]
        total += int(words[i])
    if not chosen:  # the most central piece that starts a sentence, cut to fit
        return truncate_words(sentences[next((int(i) for i in order if not later[int(i)]), int(order[0]))], max_words)
    if total < min_words:
        for i in order:
            i = int(i)
            room = max_words - total
            if room <= 0 or total >= min_words:
                break
            # a later window only right after the piece it continues (else the summary starts inside a sentence)
            if i in text_of or words[i] == 0 or (later[i] and i - 1 not in text_of):
                continue
            take = int(min(words[i], room))
            text_of[i] = truncate_words(sentences[i], take)
            chosen.append(i)
            total += take
    return join_sentences([text_of[i] for i in sorted(chosen)])


def continues(previous: str, piece: str) -> bool:
    """True when ``piece``, the piece after ``previous`` in one text split by
    :func:`~docmaster_core.text.words.split_sentences`, goes on with the sentence ``previous``
    left open: that splitter ends a sentence only at ``.``, ``!`` or ``?`` (a closing quote or
    bracket aside) or a blank line, so a piece ending otherwise was cut for length, and the next
    one is its later window ("distribute, publicly perform ...", "Party's rights or interest ...")."""
    prev = (previous or "").rstrip().rstrip("\"')]\u201d\u2019")
    return bool(prev) and bool((piece or "").strip()) and prev[-1] not in ".!?"


_KEY_RE = re.compile(r"[^0-9a-z]+")


def norm_key(text: str) -> str:
    """Lower-case alphanumeric words joined by single spaces (duplicate-sentence key)."""
    return " ".join(_KEY_RE.sub(" ", (text or "").lower()).split())


def join_sentences(sentences: Sequence[str]) -> str:
    """Join sentences with spaces, ending each unterminated one with a period.

    Keeps extracted pieces from running into each other ("... Retriever p(y|x) ...").
    """
    parts = [normalize_ws(s) for s in sentences]
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return parts[0] if parts else ""
    return " ".join(p if p[-1] in ".!?:;\"')]" else p + "." for p in parts)


_LEX_STOP = frozenset(
    "a an the and or of to in on for with by from as at is are was were be been being this that these those "
    "it its we our they their he she his her them you your i not no can may might will would should could "
    "has have had do does did than then there here which who whom what when where why how also such into "
    "over under between both each more most other some any all only very same so too just about".split()
)


def lexical_vectors(texts: Sequence[str], dim: int = 4096) -> np.ndarray:
    """Hashed bag-of-words sentence vectors for extractive summaries (no model).

    Tokens are lower-cased words of >= 2 characters minus stop words, hashed (CRC32)
    into ``dim`` buckets with sublinear term frequency ``1 + log tf``; rows are
    L2-normalised, then scaled by ``min(1, n_tokens / 8)`` so that fragments with few
    content words (table rows, labels) do not win centrality over prose (an
    all-stop-word sentence gives a zero row). Tokens must start with a letter, so
    bare numbers are ignored. Centrality over these
    vectors is the classic lexical-centrality summariser (LexRank-style) and costs
    microseconds per sentence, so offline summaries add almost nothing to ingest,
    whose floor is the neural embedding of the node texts.

    Returns:
        float32 array (len(texts), dim).
    """
    import re
    import zlib

    out = np.zeros((len(texts), dim), dtype=np.float32)
    n_tok = np.zeros(len(texts), dtype=np.float32)
    for i, t in enumerate(texts):
        counts: dict[int, int] = {}
        for tok in re.findall(r"[a-z][a-z0-9\-]+", (t or "").lower()):
            if tok in _LEX_STOP:
                continue
            h = zlib.crc32(tok.encode()) % dim
            counts[h] = counts.get(h, 0) + 1
        if counts:
            idx = np.fromiter(counts.keys(), dtype=np.int64)
            tf = np.fromiter(counts.values(), dtype=np.float32)
            out[i, idx] = 1.0 + np.log(tf)
            n_tok[i] = float(tf.sum())
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return out / norms * np.minimum(1.0, n_tok / 8.0)[:, None]
