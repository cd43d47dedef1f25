"""The settings panel drawn in the sidebar of every page.

Shows the active workspace and the active LLM backend (clearly labelled, e.g.
"LLM: offline (extractive)"), and lets the user switch between the embedded offline
backend and an OpenAI-compatible endpoint (base URL and model). The API key is read
from the environment or ``st.secrets`` only: the panel says whether one was found,
never what it is, and never stores it.
"""
from __future__ import annotations

import streamlit as st

from . import state
from .resources import api_key_available, backend_label, default_model
from .text import md_escape

__all__ = ["render_sidebar", "render_backend_badge"]

_W_BACKEND = "w_sidebar_backend"
_W_MODEL = "w_sidebar_model"
_W_BASE_URL = "w_sidebar_base_url"

_BACKENDS = {"offline": "Offline (extractive, no key)", "openai": "OpenAI-compatible endpoint"}


def _copy(widget_key: str, state_key: str) -> None:
    state.put(state_key, st.session_state[widget_key])


def render_backend_badge() -> None:
    """One caption line naming the active LLM backend (used on every page)."""
    st.caption(md_escape(backend_label()))


def render_sidebar() -> None:
    """Draw the workspace line and the LLM settings panel in ``st.sidebar``."""
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
