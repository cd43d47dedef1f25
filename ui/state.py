"""The session-state keys of the DocMaster app, owned by this one module.

Every page reads and writes per-user state through the names below, never through
string literals, so a key is defined once. Values live in ``st.session_state``
(per browser session); nothing here is shared between users and nothing is written
to disk. The LLM API key is *never* put in session state.

Widget keys (prefixed ``w_``) belong to Streamlit widgets and are removed by
Streamlit when the widget is not drawn in a run (e.g. after a page switch). Values
that must survive page switches are therefore kept under separate, non-widget keys
and copied into a widget's key before it is drawn (:func:`seed_widget`).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import streamlit as st

__all__ = [
    "allowed_root",
    "WORKSPACE",
    "WORKSPACE_ERROR",
    "LLM_BACKEND",
    "LLM_MODEL",
    "LLM_BASE_URL",
    "DOC_ID",
    "NODE_BY_DOC",
    "TREE_EXPANDED",
    "INDEX_PARAMS",
    "CLUSTER_MODE",
    "HYPEREDGE_BY_DOC",
    "HYPEREDGE_CLICK",
    "FILTER_CONDITION",
    "FILTER_CONFIGS",
    "FILTER_RUNS",
    "FILTER_DOC",
    "HIGHLIGHT",
    "CHAT_HISTORY",
    "CHAT_DOCS",
    "CHAT_SCOPE",
    "CHAT_PENDING",
    "REMOVE_PENDING",
    "REMOVE_NOTICE",
    "INGEST_RESULTS",
    "ROUTER_ACTIVE",
    "init_state",
    "get",
    "put",
    "seed_widget",
    "doc_key",
    "default_index_params",
]

# ---------------------------------------------------------------- persistent keys
WORKSPACE = "dm_workspace"            #: str, resolved workspace directory
WORKSPACE_ERROR = "dm_workspace_error"  #: str | None, why the typed workspace was refused
LLM_BACKEND = "dm_llm_backend"        #: "offline" | "openai"
LLM_MODEL = "dm_llm_model"            #: model name for the OpenAI-compatible backend
LLM_BASE_URL = "dm_llm_base_url"      #: endpoint base URL ("" = settings / env default)
DOC_ID = "dm_doc_id"                  #: str | None, the document chosen on any page
NODE_BY_DOC = "dm_node_by_doc"        #: dict[doc_id, node id] selected in the tree explorer
TREE_EXPANDED = "dm_tree_expanded"    #: dict[doc_id, list[node id]] sections open in the tree explorer
INDEX_PARAMS = "dm_index_params"      #: dict alpha, k, K, w used by graph and cluster pages
CLUSTER_MODE = "dm_cluster_mode"      #: "document" | "collection"
HYPEREDGE_BY_DOC = "dm_hyperedge_by_doc"  #: dict[doc_id, hyper-edge id]
HYPEREDGE_CLICK = "dm_hyperedge_click"    #: last graph click value seen (str | None)
FILTER_CONDITION = "dm_filter_condition"  #: str, the natural-language condition
FILTER_CONFIGS = "dm_filter_configs"      #: dict["A"|"B", config dict]
FILTER_RUNS = "dm_filter_runs"            #: dict["A"|"B", FilterRun.to_dict()]
FILTER_DOC = "dm_filter_doc"              #: doc_id whose evidence is shown
HIGHLIGHT = "dm_highlight"                #: dict[doc_id, list[node id]] of filter evidence
CHAT_HISTORY = "dm_chat_history"          #: list of {"role", "text", "citations", "backend"}
CHAT_DOCS = "dm_chat_docs"                #: list[doc_id] the chat is restricted to
CHAT_SCOPE = "dm_chat_scope"              #: "all" | "filter" | "chosen": which documents the chat answers from
CHAT_PENDING = "dm_chat_pending"          #: str | None, a question to ask on the next run ("Search all documents")
REMOVE_PENDING = "dm_remove_pending"      #: list[doc_id] the Upload page asks to confirm removing
REMOVE_NOTICE = "dm_remove_notice"        #: dict {"ok": bool, "text": str, "gen": int} of the last removal
INGEST_RESULTS = "dm_ingest_results"      #: list[IngestResult.to_dict()] of the last upload
ROUTER_ACTIVE = "dm_router_active"        #: True once app.py has routed a run of this session


def default_index_params() -> dict[str, Any]:
    """The index hyperparameters from settings (DocMaster Eq. 1-2 defaults).

    Returns:
        ``{"alpha": float, "k": int, "K": int, "w": float}``.
    """
    from docmaster_core.config import get_settings

    s = get_settings().index
    return {"alpha": s.alpha, "k": s.k, "K": s.K, "w": s.w}


def _defaults() -> dict[str, Any]:
    from docmaster_core.config import get_settings

    s = get_settings()
    return {
        WORKSPACE: s.workspace or str(allowed_root() / "workspace"),
        WORKSPACE_ERROR: None,
        LLM_BACKEND: s.llm.backend,
        LLM_MODEL: s.llm.model,
        LLM_BASE_URL: s.llm.base_url or "",
        DOC_ID: None,
        NODE_BY_DOC: {},
        TREE_EXPANDED: {},
        INDEX_PARAMS: default_index_params(),
        CLUSTER_MODE: "document",
        HYPEREDGE_BY_DOC: {},
        HYPEREDGE_CLICK: None,
        FILTER_CONDITION: "",
        FILTER_CONFIGS: {},
        FILTER_RUNS: {},
        FILTER_DOC: None,
        HIGHLIGHT: {},
        CHAT_HISTORY: [],
        CHAT_DOCS: [],
        CHAT_SCOPE: "all",
        CHAT_PENDING: None,
        REMOVE_PENDING: [],
        REMOVE_NOTICE: {"ok": True, "text": "", "gen": 0},
        INGEST_RESULTS: [],
    }


def init_state() -> None:
    """Fill missing keys with their defaults (called once per run by ``app.py``)."""
    ss = st.session_state
    for k, v in _defaults().items():
        if k not in ss:
            ss[k] = v


def get(key: str, default: Any = None) -> Any:
    """``st.session_state[key]`` or ``default`` when unset."""
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    """Set ``st.session_state[key] = value``."""
    st.session_state[key] = value


def doc_key(widget_key: str, doc_id: str) -> str:
    """The key of a widget that belongs to one document (``f"{widget_key}_{doc_id}"``).

    Widgets whose options or labels come from a document (section, node, hyper-edge,
    node-type filter) are keyed by their document, so switching documents draws a new
    widget instead of re-using the previous document's one and its stale label.
    """
    return f"{widget_key}_{doc_id}"


def seed_widget(widget_key: str, value: Any) -> None:
    """Give a widget its persistent value before it is drawn.

    Only seeds when the widget has no state yet (first draw, or after Streamlit
    removed it on a page switch), so the widget is created without a default and
    no "default value and session state" warning appears.
    """
    if widget_key not in st.session_state:
        st.session_state[widget_key] = value


def allowed_root() -> Path:
    """The directory under which workspaces may live.

    ``settings.workspace_root`` (env ``DOCMASTER_WORKSPACE_ROOT``), default the current
    working directory; resolved (symlinks followed).
    """
    from docmaster_core.config import get_settings

    return Path(get_settings().workspace_root or os.getcwd()).expanduser().resolve()
