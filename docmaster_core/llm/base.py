"""The LLM layer's shared parts: the task names and usage accounting. The :class:`LLM`
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

import threading
from dataclasses import dataclass, field
from typing import Any

from ..protocols import LLM

__all__ = [
    "LLM",
    "TASKS",
    "UsageCounts",
    "UsageTracker",
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
