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
from .plain import WHAT_CLUSTERS, WHAT_GRAPH
from .sidebar import render_backend_badge, render_sidebar

__all__ = ["page_header", "WHAT", "WHAT_LEAD", "hide_previous_view"]

#: Starts every page's line of :data:`WHAT`.
WHAT_LEAD = "**What am I looking at?** "


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


#: One line per page: what the user is looking at, in plain words (issue 36).
WHAT = {
    "Upload": "Add PDFs to the collection: each is split into a tree of sections, paragraphs, tables and "
              "formulas, and indexed for search.",
    "Tree explorer": "One document as its tree: sections with their paragraphs, tables and formulas (a node is one "
                     "of them; its type says which); pick a node to see its text, its page and its summary.",
    "Hyper-edge graph": WHAT_GRAPH,
    "Semantic clusters": WHAT_CLUSTERS,
    "Filter": "Keep the documents that meet a condition: each gets a score from its best passages, you see why, "
              "and you can check them yourself (Review). A and B are the same filter with two settings side by "
              "side (A: the defaults), to see what a setting changes. One condition a run: for a second condition, "
              "run it next (each run is saved). Chat answers from all documents unless you choose \"documents kept by "
              "the last filter run\" there (A's result of the newest run).",
    "Chat": "Ask questions about the documents; every answer quotes and cites the passages it comes from.",
}


def page_header(title: str) -> None:
    """Start a page: make sure state and sidebar exist, draw the title, the line saying
    what the page shows ("What am I looking at?", :data:`WHAT`) and the active LLM backend label ("LLM: offline
    (extractive)" ...)."""
    if not st.session_state.get(state.ROUTER_ACTIVE):
        if _legacy_pages_mode():
            st.rerun()  # run again through app.py, which routes to this same page
        state.init_state()
        render_sidebar()
    st.title(title)
    if title in WHAT:
        st.caption(WHAT_LEAD + WHAT[title])
    render_backend_badge()


#: Hides the elements a rerun has not drawn yet (Streamlit marks them ``data-stale``) instead of fading
#: them, while an element of the current run carries the marker class (:func:`hide_previous_view`). A style
#: given to ``st.html`` stays on the page for the session, so the rule is tied to the marker, which goes.
HIDE_STALE = ("<style>body:has([data-testid='stElementContainer']:not([data-stale='true']) .dm-hide-previous-view) "
              "[data-stale='true']{display:none !important;}</style>")
HIDE_MARKER = "<span class='dm-hide-previous-view'></span>"


def hide_previous_view(view: object, key: str):
    """While another view is computed (a new scope, another document), hide what the page
    showed of the previous one, so its numbers and chart do not stand under the new view's
    heading (a newcomer read the one-document metrics as the collection's for a few seconds,
    issue 36); when the same view is redrawn (a slider moved) the previous drawing stays,
    faded, as usual. Call it first on the page, before anything slow, with the view read
    from the widgets' session state (it holds the new choice when the rerun starts).

    Args:
        view: What identifies the view (hashable, e.g. ``("document", doc_id)``).
        key: Session-state key remembering the view drawn last.

    Returns:
        The placeholder holding the marker: call its ``empty()`` once the view is drawn.
    """
    st.html(HIDE_STALE)
    last = st.session_state.get(key)
    slot = st.empty()
    if last is not None and last != view:
        slot.html(HIDE_MARKER)
    st.session_state[key] = view
    return slot
