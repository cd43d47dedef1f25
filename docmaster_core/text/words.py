"""Text helpers shared by every stage: whitespace, word counts and sentence splitting
(used by tree summaries, the LLM backends, evidence scoring and answers)."""
from __future__ import annotations

import re

__all__ = ["normalize_ws", "count_words", "truncate_words", "split_sentences"]

_WS = re.compile(r"\s+")
# Abbreviations after which a period does not end a sentence.
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|vs|cf|Fig|Figs|Eq|Eqs|Sec|Secs|Tab|No|Dr|Mr|Mrs|Ms|Prof|approx|resp|incl|al)\.|\b[A-Z]\.)$"
)
_SPLIT = re.compile(r"([.!?][\"')\]]?)\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n")


def normalize_ws(text: str | None) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _WS.sub(" ", text or "").strip()


def count_words(text: str | None) -> int:
    """Number of whitespace-separated words."""
    return len((text or "").split())


def truncate_words(text: str | None, max_words: int) -> str:
    """The first ``max_words`` words of ``text`` (whitespace normalised).

    Raises:
        ValueError: when ``max_words`` < 1.
    """
    if max_words < 1:
        raise ValueError("max_words must be >= 1")
    words = (text or "").split()
    return " ".join(words[:max_words])


def split_sentences(text: str | None, max_words: int = 60) -> list[str]:
    """Split text into sentences for extractive summaries and evidence scoring.

    Splits after ``.``, ``!`` or ``?`` followed by a capital letter, digit or
    opening bracket, and at blank lines; does not split after common abbreviations
    ("e.g.", "et al.", "Fig.", single initials). Pieces longer than ``max_words`` words
    (tables, run-on extraction) are cut into windows of ``max_words`` words.

    Returns:
        Non-empty, whitespace-normalised sentences in reading order.
    """
    raw = (text or "").strip()
    if not raw:
        return []
    pieces: list[str] = []
    start = 0
    for m in _SPLIT.finditer(raw):
        if m.group(1) is None:  # blank line
            pieces.append(raw[start : m.start()])
            start = m.end()
            continue
        sent = raw[start : m.end(1)]
        if m.group(1).startswith(".") and _ABBREV.search(sent[-16:].rstrip("\"')]")):
            continue
        pieces.append(sent)
        start = m.end()
    pieces.append(raw[start:])
    out: list[str] = []
    for p in pieces:
        s = normalize_ws(p)
        if not s:
            continue
        words = s.split()
        if len(words) <= max_words:
            out.append(s)
        else:
            out.extend(" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words))
    return out
