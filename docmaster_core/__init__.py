"""DocMaster core engine: hierarchical, structure-aware document analysis.

Importing this package is cheap: heavy libraries (PyMuPDF, torch, faiss, openai)
load inside the adapters that need them. The engine never imports streamlit.

Typical use::

    from . import DocMaster
    dm = DocMaster("my-workspace")
    dm.ingest(["papers/"])
"""
from __future__ import annotations

from .config import Settings, get_settings
from .errors import (
    ConfigError,
    DocMasterError,
    EmbeddingError,
    IndexBuildError,
    LLMBudgetExceeded,
    LLMError,
    LLMContextError,
    LLMResponseError,
    LLMUnreachable,
    ParseError,
    RetrievalError,
    WorkspaceError,
    WorkspaceLockedError,
)
from .model import Answer, Citation, Decision, DocumentTree, Element, Evidence, HyperEdge, Node, NodeType, ParsedDocument

__version__ = "0.1.0"

__all__ = [
    # the facade, its settings and its workspace
    "DocMaster",
    "FilterOptions",
    "Settings",
    "get_settings",
    "Workspace",
    "IndexParams",
    # the data model
    "Answer",
    "Citation",
    "Decision",
    "DocumentTree",
    "Element",
    "Evidence",
    "HyperEdge",
    "Node",
    "NodeType",
    "ParsedDocument",
    # the seams
    "LLM",
    "Embedder",
    "CorpusReader",
    "RunRecorder",
    # errors
    "DocMasterError",
    "ConfigError",
    "ParseError",
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

_LAZY = {
    "DocMaster": ("pipeline", "DocMaster"),
    "FilterOptions": ("filtering.options", "FilterOptions"),
    "Workspace": ("store", "Workspace"),
    "IndexParams": ("index.params", "IndexParams"),
    "LLM": ("protocols", "LLM"),
    "Embedder": ("protocols", "Embedder"),
    "CorpusReader": ("protocols", "CorpusReader"),
    "RunRecorder": ("protocols", "RunRecorder"),
}


def __getattr__(name: str):  # lazy: keep `import docmaster_core` light
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module 'docmaster_core' has no attribute {name!r}")
