"""Per-page setup shared by every page: state, sidebar fallback, title and backend label.

Pages normally run inside ``app.py`` (``st.navigation``), which initialises the session
state and draws the sidebar settings panel. Streamlit still runs a file of a ``pages/``
folder *directly* on the first request of a fresh server for a deep link (e.g.
``/clusters``): its legacy multipage handling of a ``pages/`` folder applies until some
run has called ``st.navigation``. :func:`page_header` detects a session that has not
been through the router (``app.py`` sets ``state.ROUTER_ACTIVE``), switches the legacy
handling off and reruns, so ``app.py`` routes to the same page; should the rerun not be
possible it initialises the state and draws the sidebar itself.
(Renaming the folder, e.g. to ``app_pages/``, avoids the legacy handling altogether.)
"""
from __future__ import annotations

import streamlit as st

from . import state
from .sidebar import render_backend_badge, render_sidebar

__all__ = ["page_header"]


def _legacy_pages_mode() -> bool:
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - streamlit internals moved
        return False
    if PagesManager.uses_pages_directory:
        # what st.navigation itself does: disable the legacy pages/ folder handling
        PagesManager.uses_pages_directory = False
        return True
    return False


def page_header(title: str) -> None:
    """Start a page: make sure state and sidebar exist, draw the title and the
    active LLM backend label ("LLM: offline (extractive)" ...)."""
    if not st.session_state.get(state.ROUTER_ACTIVE):
        if _legacy_pages_mode():
            st.rerun()  # run again through app.py, which routes to this same page
        state.init_state()
        render_sidebar()
    st.title(title)
    render_backend_badge()
