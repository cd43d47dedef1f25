"""The seams of the engine as protocols, on the ground floor (no DocMaster imports
beyond the data model), so that every algorithm is annotated with what it needs:

* :class:`LLM` - the typed LLM tasks of both backends (DocMaster Sec. 2; SPEC F8);
* :class:`Embedder` - texts to unit vectors (all-MiniLM-L6-v2, 384-d, by default);
* :class:`CorpusReader` - what retrieval and evaluation read from a workspace;
* :class:`RunRecorder` - where filter and question runs are recorded;
* :class:`RunStore` - both (what filtering, QA and evaluation take as ``ws``);
* :class:`CandidateScorer` - where a filter's candidates are scored (this process or Ray).

:class:`~docmaster_core.store.workspace.Workspace` implements the last two; the backends in
:mod:`docmaster_core.llm` implement :class:`LLM`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from .model import Answer, Decision, DocumentTree, Evidence

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from .store.workspace import DocumentRecord

__all__ = ["LLM", "Embedder", "CorpusReader", "RunRecorder", "RunStore", "UsageLog", "CandidateScorer"]


@runtime_checkable
class UsageLog(Protocol):
    """Calls, tokens and cost of an LLM backend (``docmaster_core.llm.base.UsageTracker``)."""

    def record(self, task: str, doc_id: str | None, *, calls: int = 0, prompt_tokens: int = 0,
               completion_tokens: int = 0, cost: float | None = None, cached: bool = False) -> None:
        """Add one call (or cache hit) of ``task`` for ``doc_id``."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """``{"total": {...}, "by_task": {...}, "by_document": {...}}`` of counts so far."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised vectors.

    Attributes:
        dim: Vector size d (384 for all-MiniLM-L6-v2).
        name: Model name, stored with each document's vectors.
    """

    dim: int
    name: str

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Encode ``texts``; returns float32 array of shape (len(texts), dim), rows of unit norm.

        Raises:
            EmbeddingError: the model failed.
        """
        ...


@runtime_checkable
class CorpusReader(Protocol):
    """Read access to a workspace's documents, trees, node vectors and indexes."""

    path: Path

    def documents(self) -> list["DocumentRecord"]:
        """All documents, in the order they were added."""
        ...

    def document(self, ref: str) -> "DocumentRecord":
        """A document by doc_id, doc_id prefix, file name or path.

        Raises:
            WorkspaceError: no such document, or an ambiguous reference.
        """
        ...

    def load_tree(self, doc_id: str) -> DocumentTree:
        """The stored document tree."""
        ...

    def load_embeddings(self, doc_id: str, mmap: bool = True) -> np.ndarray:
        """(|V|, d) float32 node vectors, row i = node id i."""
        ...

    def load_index(self, doc_id: str, params: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        """A stored semantic index (JSON dict) for ``params``, the newest when None, or None."""
        ...

    def index_versions(self) -> list[tuple[str, str, float]]:
        """Every stored index as ``(doc_id, params_key, created_at)`` (Unix seconds)."""
        ...


@runtime_checkable
class RunRecorder(Protocol):
    """Where filter and question runs are recorded."""

    def save_run(self, kind: str, params: dict[str, Any], result: dict[str, Any]) -> int:
        """Store one run (``kind`` = ``"filter"`` or ``"ask"``); returns its run id."""
        ...


@runtime_checkable
class RunStore(CorpusReader, RunRecorder, Protocol):
    """A corpus that also records runs (what filtering, QA and evaluation need)."""


@runtime_checkable
class CandidateScorer(Protocol):
    """Where a filter's candidate documents get their exact evidence (stage two of a
    filter at scale), e.g. :class:`~docmaster_core.filtering.ray_scoring.RayCandidateScoring`.

    Attributes:
        where: Where it scores, as the run's ``params["scored_on"]`` says it
            (``"ray (2 workers)"``).
    """

    where: str

    def collect(self, retr: Any, condition: str, strategies: Sequence[str], top_k: int,
                view: Any) -> tuple[list, dict[str, list[np.ndarray]]]:
        """What :func:`~docmaster_core.filtering.run.collect_evidence` returns for the
        documents of ``view`` (the candidate view), in view order.

        Raises:
            RetrievalError: the scoring failed (one line naming the cause).
        """
        ...


@runtime_checkable
class LLM(Protocol):
    """The LLM facade every DocMaster component talks to.

    Attributes:
        backend_name: ``"offline"`` or the model name (e.g. ``"gpt-4o-mini"``); copied
            into ``Decision.backend`` / ``Answer.backend`` so results are labelled.
        is_offline: True for the embedded extractive backend (no server, no key).
        max_concurrency: Requests the backend serves in parallel (1 offline).
        usage: Calls, tokens and cost per task and document (:class:`UsageLog`).
    """

    backend_name: str
    is_offline: bool
    max_concurrency: int
    usage: UsageLog

    def check_ready(self) -> None:
        """Cheap check that the backend can work at all (no request sent).

        Raises:
            ConfigError: e.g. no API key for api.openai.com.
        """
        ...

    def check_reachable(self) -> None:
        """Check that the backend's server can be reached (a TCP probe at most; no-op offline).

        Raises:
            LLMUnreachable: the endpoint refuses connections or cannot be resolved.
        """
        ...

    def summarize(self, text: str, *, doc_id: str | None = None, max_words: int = 50) -> str:
        """Summary of one node's content in at most ``max_words`` words (non-empty for non-empty text)."""
        ...

    def summarize_many(self, texts: list[str], *, doc_id: str | None = None, max_words: int = 50) -> list[str]:
        """:meth:`summarize` of each text (batched or on ``max_concurrency`` threads), order kept."""
        ...

    def summarize_section(
        self, title: str, child_summaries: list[str], *, doc_id: str | None = None, max_words: int = 80
    ) -> str:
        """Summary of a section composed from its children's summaries (bottom-up, SPEC F2)."""
        ...

    def summarize_section_many(
        self, items: list[tuple[str, list[str]]], *, doc_id: str | None = None, max_words: int = 80
    ) -> list[str]:
        """:meth:`summarize_section` of each ``(title, child_summaries)``, order kept."""
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
