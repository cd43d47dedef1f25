"""One rooted exception hierarchy for DocMaster.

Every error the engine raises on purpose derives from :class:`DocMasterError`, so
callers (the CLI, the app) can catch one type and show ``str(err)`` as a one-line
reason.
"""
from __future__ import annotations

__all__ = [
    "DocMasterError",
    "ConfigError",
    "ParseError",
    "EncryptedPDFError",
    "EmptyDocumentError",
    "WorkspaceError",
    "WorkspaceLockedError",
    "EmbeddingError",
    "LLMError",
    "LLMBudgetExceeded",
    "LLMResponseError",
    "LLMUnreachable",
    "LLMContextError",
    "IndexBuildError",
    "RetrievalError",
]


class DocMasterError(Exception):
    """Base class of every DocMaster error; ``str(err)`` is a one-line reason."""


class ConfigError(DocMasterError):
    """Settings are invalid or a required optional component is missing."""


class ParseError(DocMasterError):
    """A document could not be parsed (unreadable, truncated, not a PDF, ...)."""


class EncryptedPDFError(ParseError):
    """The PDF is encrypted with a non-empty password."""


class EmptyDocumentError(ParseError):
    """The document has no extractable text layer (e.g. a scan without OCR)."""


class WorkspaceError(DocMasterError):
    """The workspace on disk is missing, corrupt, or of an unknown schema version."""


class WorkspaceLockedError(WorkspaceError):
    """Another process holds the workspace's write lock."""


class EmbeddingError(DocMasterError):
    """The embedding model could not be loaded or failed to encode."""


class LLMError(DocMasterError):
    """An LLM call failed after its retries."""


class LLMBudgetExceeded(LLMError):
    """The per-run budget (calls or tokens) is spent; no further call was made."""


class LLMResponseError(LLMError):
    """The LLM's answer could not be parsed into the task's schema, even after repair."""


class LLMUnreachable(LLMError):
    """The LLM endpoint cannot be reached at all (connection refused, DNS failure,
    network unreachable); not retried, and the run stops instead of failing per item."""


class LLMContextError(LLMError):
    """A prompt does not fit the model's context window: the server refused it (its
    message names the window), or even the best passage alone is over the configured
    ``llm.context_tokens``. Not retried; ``context_tokens`` holds the window when known."""

    def __init__(self, message: str, context_tokens: int | None = None):
        super().__init__(message)
        self.context_tokens = context_tokens


class IndexBuildError(DocMasterError):
    """The semantic index (SEC, PC-KMeans, hyper-edges) could not be built."""


class RetrievalError(DocMasterError):
    """Retrieval, filtering or question answering failed."""
