"""The LLM layer (SPEC F8): one facade, two backends, a response cache and usage log.

``make_llm(settings.llm, cache_dir=workspace_dir)`` returns the configured backend:
the embedded offline default (:class:`OfflineLLM`, no server, no key) or an
OpenAI-compatible endpoint (:class:`OpenAILLM`). Both implement :class:`LLM`.
``summarize_tree`` fills the summaries of a document tree bottom-up (SPEC F2).

Importing this package does not import ``openai``, ``torch`` or ``sklearn``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import LLMSettings
from ..errors import ConfigError
from .base import LLM, TASKS, UsageCounts, UsageTracker
from .cache import CACHE_FILENAME, LLMCache, usage_report
from .offline import OfflineLLM
from .openai_backend import OpenAILLM, estimate_cost
from ..tree.summaries import summarize_tree

__all__ = [
    "LLM",
    "TASKS",
    "UsageCounts",
    "UsageTracker",
    "LLMCache",
    "CACHE_FILENAME",
    "usage_report",
    "OfflineLLM",
    "OpenAILLM",
    "estimate_cost",
    "make_llm",
    "summarize_tree",
]


def make_llm(settings: LLMSettings, *, cache_dir: Path | str | None, embedder: Any = None, **options: Any) -> LLM:
    """Build the LLM backend named by ``settings.backend``.

    Args:
        settings: The ``llm`` section of the settings tree.
        cache_dir: Workspace directory for ``llm_cache.sqlite`` (response cache and
            usage log); ``None`` = no persistence.
        embedder: Sentence embedder for the offline backend; ``None`` =
            :func:`docmaster_core.embedding.embedders.get_embedder` on first use.
        **options: Backend-specific keyword arguments: for ``offline``
            ``decide_threshold``, ``pair_threshold``, ``group_distance``,
            ``answer_min_cos``; for ``openai`` ``backoff_base``, ``backoff_max`` (seconds),
            ``seed``.

    Returns:
        An :class:`OfflineLLM` or :class:`OpenAILLM`.

    Raises:
        ConfigError: for an unknown backend or unknown options.
        WorkspaceError: when the cache cannot be opened.
    """
    cache = LLMCache(cache_dir) if cache_dir is not None else None
    try:
        if settings.backend == "offline":
            return OfflineLLM(embedder, cache=cache, **options)
        if settings.backend == "openai":
            return OpenAILLM(settings, cache=cache, **options)
    except TypeError as e:
        raise ConfigError(f"invalid option for the {settings.backend} LLM backend: {e}") from e
    raise ConfigError(f"unknown LLM backend {settings.backend!r} (use 'offline' or 'openai')")
