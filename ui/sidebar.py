"""The settings panel drawn in the sidebar of every page.

Shows the active workspace and the active LLM backend (clearly labelled, e.g.
"LLM: offline (extractive)"), and lets the user switch between the embedded offline
backend and an OpenAI-compatible endpoint (base URL and model). The API key is read
from the environment or ``st.secrets`` only: the panel says whether one was found,
never what it is, and never stores it.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from docmaster_core.errors import DocMasterError

from . import state
from .resources import allowed_root, api_key_available, backend_label, default_model, resolve_workspace
from .text import md_escape

__all__ = ["render_sidebar", "render_backend_badge", "workspace_from_address", "workspace_into_address"]

_W_BACKEND = "w_sidebar_backend"
_W_MODEL = "w_sidebar_model"
_W_BASE_URL = "w_sidebar_base_url"

_BACKENDS = {"offline": "Offline (extractive, no key)", "openai": "OpenAI-compatible endpoint"}


def _copy(widget_key: str, state_key: str) -> None:
    state.put(state_key, st.session_state[widget_key])


def render_backend_badge() -> None:
    """One caption line naming the active LLM backend (used on every page)."""
    st.caption(md_escape(backend_label()))


_ADDRESS_KEY = "workspace"  # ?workspace=NAME: the workspace folder, relative to the allowed root
_ADDRESS_READ = "dm_workspace_address_read"


def workspace_from_address() -> None:
    """Once per browser session, open the workspace the page's address names
    (``?workspace=research``, written by :func:`workspace_into_address`), so a reload keeps
    the workspace the user chose (a newcomer reloaded and every page said the workspace was
    empty). A folder outside the allowed root or without a workspace in it is ignored."""
    if st.session_state.get(_ADDRESS_READ):
        return
    st.session_state[_ADDRESS_READ] = True
    name = st.query_params.get(_ADDRESS_KEY)
    if not name:
        return
    try:
        path = resolve_workspace(name)
    except (DocMasterError, OSError, ValueError):  # outside the root, a NUL character: the default workspace stays
        return
    if (path / "workspace.sqlite").is_file():
        state.put(state.WORKSPACE, str(path))


def workspace_into_address() -> None:
    """Write the session's workspace into the page's address (relative to the allowed root)."""
    ws = str(state.get(state.WORKSPACE, "") or "")
    if not ws:
        return
    try:
        name = str(Path(ws).resolve().relative_to(allowed_root().resolve()))
    except ValueError:
        name = ws
    if st.query_params.get(_ADDRESS_KEY) != name:
        st.query_params[_ADDRESS_KEY] = name


def render_sidebar() -> None:
    """Draw the workspace line and the LLM settings panel in ``st.sidebar``; the workspace is
    read from and kept in the page's address (:func:`workspace_from_address`)."""
    workspace_from_address()
    workspace_into_address()
    with st.sidebar:
        st.markdown("**Workspace**")
        st.caption(md_escape(str(state.get(state.WORKSPACE, ""))) + "  \n(switch on the Upload page)")
        st.markdown("**LLM backend**")
        state.seed_widget(_W_BACKEND, state.get(state.LLM_BACKEND, "offline"))
        st.radio(
            "Backend",
            list(_BACKENDS),
            format_func=_BACKENDS.get,
            key=_W_BACKEND,
            on_change=_copy,
            args=(_W_BACKEND, state.LLM_BACKEND),
            label_visibility="collapsed",
        )
        if state.get(state.LLM_BACKEND) == "openai":
            state.seed_widget(_W_BASE_URL, state.get(state.LLM_BASE_URL, ""))
            st.text_input(
                "Base URL",
                key=_W_BASE_URL,
                placeholder="https://api.openai.com/v1 or http://localhost:11434/v1",
                help="Any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, LM Studio). "
                "Empty = OPENAI_BASE_URL or the OpenAI default.",
                on_change=_copy,
                args=(_W_BASE_URL, state.LLM_BASE_URL),
            )
            state.seed_widget(_W_MODEL, state.get(state.LLM_MODEL, "") or default_model())
            st.text_input("Model", key=_W_MODEL, on_change=_copy, args=(_W_MODEL, state.LLM_MODEL))
            if api_key_available():
                st.caption("API key: found in the environment / secrets (not shown).")
            else:
                st.warning(
                    "No API key found. Set OPENAI_API_KEY in the environment or in "
                    ".streamlit/secrets.toml; a local server may not need one.",
                    icon=":material/key_off:",
                )
        st.divider()
        st.info(md_escape(backend_label()), icon=":material/smart_toy:")
