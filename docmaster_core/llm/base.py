"""The LLM layer's shared parts: usage accounting and text helpers. The :class:`LLM`
protocol itself lives in :mod:`docmaster_core.protocols` (re-exported here).

Every LLM use in DocMaster goes through :class:`LLM`, so each task (summaries,
anchor-pair labels, paragraph grouping, filter decisions, answers) runs on either
backend: the OpenAI-compatible client (:mod:`docmaster_core.llm.openai_backend`) or
the embedded offline default (:mod:`docmaster_core.llm.offline`).

Source: DocMaster (arXiv 2607.08539) Sec. 2 uses GPT-4o mini for node summaries,
must-link / cannot-link labels of SEC anchor pairs, hyper-edge grouping and the
final filter decision; SPEC F8 adds the offline default, caching, retries and usage.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ..protocols import LLM

__all__ = [
    "LLM",
    "TASKS",
    "UsageCounts",
    "UsageTracker",
    "normalize_ws",
    "count_words",
    "truncate_words",
    "split_sentences",
]

#: The typed tasks of the facade (also the ``task`` column of the usage log).
TASKS = (
    "summarize",
    "summarize_section",
    "label_pairs",
    "group_paragraphs",
    "decide",
    "answer",
    "answer_stream",
)


@dataclass
class UsageCounts:
    """Aggregated usage of one task, document or model.

    Attributes:
        calls: HTTP requests sent (retries and repair requests included).
        prompt_tokens: Prompt tokens reported by the server.
        completion_tokens: Completion tokens reported by the server.
        cost: Estimated cost in US dollars for calls whose model price is known.
        cached: Task invocations answered from the response cache (0 calls).
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached: int = 0

    @property
    def total_tokens(self) -> int:
        """prompt_tokens + completion_tokens."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, calls: int, prompt_tokens: int, completion_tokens: int, cost: float | None, cached: bool) -> None:
        """Accumulate one usage record."""
        self.calls += int(calls)
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)
        self.cost += float(cost or 0.0)
        self.cached += int(bool(cached))

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost": round(self.cost, 6),
            "cached": self.cached,
        }


@dataclass
class UsageTracker:
    """Thread-safe in-memory usage of one LLM instance (one run), per task and per document."""

    total: UsageCounts = field(default_factory=UsageCounts)
    by_task: dict[str, UsageCounts] = field(default_factory=dict)
    by_document: dict[str, UsageCounts] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(
        self,
        task: str,
        doc_id: str | None,
        *,
        calls: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cost: float | None = None,
        cached: bool = False,
    ) -> None:
        """Add one record to the total, its task and its document (``"-"`` when None)."""
        with self._lock:
            for bucket in (
                self.total,
                self.by_task.setdefault(task, UsageCounts()),
                self.by_document.setdefault(doc_id or "-", UsageCounts()),
            ):
                bucket.add(calls, prompt_tokens, completion_tokens, cost, cached)

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready copy: ``{"total": {...}, "by_task": {...}, "by_document": {...}}``."""
        with self._lock:
            return {
                "total": self.total.to_dict(),
                "by_task": {k: v.to_dict() for k, v in sorted(self.by_task.items())},
                "by_document": {k: v.to_dict() for k, v in sorted(self.by_document.items())},
            }


# --------------------------------------------------------------------------------------
# Text helpers shared by both backends
# --------------------------------------------------------------------------------------

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
