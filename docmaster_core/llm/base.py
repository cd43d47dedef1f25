"""The LLM facade: one protocol with typed tasks, usage accounting and text helpers.

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
from typing import Any, Iterator, Protocol, runtime_checkable

import numpy as np

from ..model import Answer, Decision, Evidence

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


@runtime_checkable
class LLM(Protocol):
    """The LLM facade every DocMaster component talks to.

    Attributes:
        backend_name: ``"offline"`` or the model name (e.g. ``"gpt-4o-mini"``); copied
            into ``Decision.backend`` / ``Answer.backend`` so results are labelled.
        is_offline: True for the embedded extractive backend (no server, no key).
    """

    backend_name: str
    is_offline: bool

    def summarize(self, text: str, *, doc_id: str | None = None, max_words: int = 50) -> str:
        """Summary of one node's content in at most ``max_words`` words (non-empty for non-empty text)."""
        ...

    def summarize_section(
        self, title: str, child_summaries: list[str], *, doc_id: str | None = None, max_words: int = 80
    ) -> str:
        """Summary of a section composed from its children's summaries (bottom-up, SPEC F2)."""
        ...

    def label_pairs(
        self,
        pairs: list[tuple[str, str]],
        *,
        cosines: np.ndarray | None = None,
        doc_id: str | None = None,
    ) -> list[bool]:
        """Label SEC anchor pairs: True = must-link, False = cannot-link (paper Sec. 2.3).

        Args:
            pairs: k pairs of node texts.
            cosines: Optional float array of shape (k,), the cosine of each pair's
                embeddings (used by the offline backend, ignored by chat models).

        Returns:
            k booleans. Costs at most k calls (batched; usually one call).
        """
        ...

    def group_paragraphs(
        self, texts: list[str], *, embeddings: np.ndarray | None = None, doc_id: str | None = None
    ) -> list[tuple[list[int], str]]:
        """Group a section's paragraphs into hyper-edges (paper Sec. 2.3).

        Args:
            texts: n paragraph texts of one section.
            embeddings: Optional float32 array of shape (n, d), unit rows.

        Returns:
            Groups ``(indices, summary)``: every index in ``range(n)`` appears in exactly
            one group, indices ascending; summaries of 30-50 words (shorter only when the
            members have fewer words).
        """
        ...

    def decide(self, condition: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Decision:
        """Boolean filter decision for one document (SPEC F6).

        ``evidence_ids`` is a subset of the given ids. On failure ``decision`` is
        ``None`` and ``error`` is set: a decision that was not made is never claimed.
        """
        ...

    def answer(self, question: str, evidence: list[Evidence], *, doc_id: str | None = None) -> Answer:
        """Answer with citations to the given evidence only (SPEC F7)."""
        ...

    def answer_stream(
        self, question: str, evidence: list[Evidence], *, doc_id: str | None = None
    ) -> Iterator[str]:
        """Stream the answer text in pieces (chat page); raises ``LLMError`` on failure."""
        ...


# --------------------------------------------------------------------------------------
# Usage accounting
# --------------------------------------------------------------------------------------


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
