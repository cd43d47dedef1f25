"""DocMaster core engine: hierarchical, structure-aware document analysis.

Importing this package is cheap: heavy libraries (PyMuPDF, torch, faiss, openai)
load inside the adapters that need them. The engine never imports streamlit.

Typical use::

    from docmaster_core import DocMaster
    dm = DocMaster("my-workspace")
    dm.ingest(["papers/"])
"""
from __future__ import annotations

from .config import Settings, get_settings
from .errors import DocMasterError
from .model import Answer, Citation, Decision, DocumentTree, Element, Evidence, HyperEdge, Node, NodeType, ParsedDocument

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "Citation",
    "Decision",
    "DocMaster",
    "DocMasterError",
    "DocumentTree",
    "Element",
    "Evidence",
    "HyperEdge",
    "Node",
    "NodeType",
    "ParsedDocument",
    "Settings",
    "Workspace",
    "get_settings",
]


def __getattr__(name: str):  # lazy: keep `import docmaster_core` light
    if name == "DocMaster":
        from .pipeline import DocMaster

        return DocMaster
    if name == "Workspace":
        from .store import Workspace

        return Workspace
    raise AttributeError(name)
