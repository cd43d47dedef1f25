"""Small shared widgets and cached data loaders used by several pages."""
from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from docmaster_core.errors import DocMasterError

from . import state
from .resources import current_docmaster
from .text import md_escape, shorten

__all__ = ["open_docmaster_or_stop", "documents_or_stop", "choose_document", "document_label", "load_tree_cached", "load_embeddings_cached",
           "node_label", "selected_rows", "open_in_tree"]

_TYPE_ICON = {"ROOT": "▣", "TITLE": "§", "TEXT": "¶", "TABLE": "▦", "IMAGE": "▨", "EQUATION": "∑"}


def open_docmaster_or_stop():
    """The session's DocMaster facade; shows an error and stops the page when the
    workspace cannot be opened."""
    try:
        dm = current_docmaster()
    except DocMasterError as e:
        st.error(md_escape(f"Cannot open the workspace: {e}. Choose another folder on the Upload page."))
        st.stop()
    from .projection import queue_missing_layouts

    queue_missing_layouts(dm)  # once per workspace: the cluster view's UMAP layouts, in the background
    return dm


def _no_documents_hint() -> None:
    st.info("No documents in this workspace yet: upload PDFs on the Upload page.")
    st.page_link("pages/upload.py", label="Go to Upload", icon=":material/upload_file:")


def documents_or_stop(dm: Any) -> list:
    """The workspace's :class:`~docmaster_core.store.workspace.DocumentRecord` list; when it is
    empty, shows a hint to upload and stops the page."""
    docs = dm.documents()
    if not docs:
        _no_documents_hint()
        st.stop()
    return docs


def document_label(rec: Any) -> str:
    """A document as the pickers list it: its own title (a newcomer looked contracts up by their
    title, which showed only once a document was chosen), then its file name, pages and nodes:
    ``"JOINT SUPPLY AND MARKETING AGREEMENT · cuad-147_vertex…pdf (15 p., 133 nodes)"``; the file
    name alone when the title is missing or is the file name."""
    name = f"{shorten(rec.file_name, 60)}  ({rec.n_pages} p., {rec.n_nodes} nodes)"
    title = " ".join((rec.title or "").split())
    if not title or title.lower() in rec.file_name.lower():
        return name
    return f"{shorten(title, 60)} · {name}"


def choose_document(dm: Any, widget_key: str, label: str = "Document"):
    """A document selectbox bound to the session's current document.

    Returns:
        The chosen :class:`~docmaster_core.store.workspace.DocumentRecord`, or None (with a hint
        to upload) when the workspace is empty.
    """
    docs = dm.documents()
    if not docs:
        _no_documents_hint()
        return None
    by_id = {d.doc_id: d for d in docs}
    ids = list(by_id)
    cur = state.get(state.DOC_ID)
    if cur not in by_id:
        cur = ids[0]
    if st.session_state.get(widget_key) not in by_id:
        st.session_state[widget_key] = cur
    sel = st.selectbox(
        label,
        ids,
        key=widget_key,
        format_func=lambda i: document_label(by_id[i]),
        help="Type a few letters of the file name or of the document's title to find it.",
    )
    state.put(state.DOC_ID, sel)
    return by_id[sel]


@st.cache_resource(max_entries=32, show_spinner=False)
def load_tree_cached(workspace: str, doc_id: str, added_at: float):
    """The stored document tree (shared, read-only: do not mutate).

    ``added_at`` keys the cache so a re-ingested document is reloaded.
    """
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(workspace, create=False)
    try:
        return ws.load_tree(doc_id)
    finally:
        ws.close()


def load_embeddings_cached(dm: Any, doc_id: str) -> np.ndarray:
    """Node embeddings of a document: float32 (|V|, 384), read-only memory map."""
    return dm.embeddings(doc_id, mmap=True)


def node_label(tree: Any, node_id: int, width: int = 70, indent: bool = True) -> str:
    """One-line outline label of a node: indentation by depth, a type glyph, the
    node id and the start of its text."""
    n = tree.nodes[node_id]
    text = tree.title if n.type.value == "ROOT" else n.content
    if not text and n.type.value == "IMAGE":
        text = (n.extra or {}).get("caption", "") or "(image)"
    pad = "· " * max(0, n.depth - 1) if indent else ""
    return f"{pad}{_TYPE_ICON.get(n.type.value, '?')} #{n.id} {shorten(text, width) or '(empty)'}"


def selected_rows(widget_value: Any) -> list[int]:
    """Row positions selected in an ``st.dataframe(on_select=...)``: its return value
    or its session-state value (attribute or dict form); ``[]`` when none. A selected
    cell (``selection_mode`` with ``"single-cell"``: a click on a row's text) selects
    its row."""
    if widget_value is None:
        return []
    sel = getattr(widget_value, "selection", None)
    if sel is None and isinstance(widget_value, dict):
        sel = widget_value.get("selection")
    rows = getattr(sel, "rows", None)
    if rows is None and isinstance(sel, dict):
        rows = sel.get("rows")
    cells = getattr(sel, "cells", None)
    if cells is None and isinstance(sel, dict):
        cells = sel.get("cells")
    out = [int(r) for r in (rows or [])]
    out += [int(c[0]) for c in (cells or []) if c and int(c[0]) not in out]
    return out


def open_in_tree(dm: Any, rec: Any, node_ids: list) -> int | None:
    """Prepare the Tree explorer to open document ``rec`` at its first node of
    ``node_ids`` (e.g. a filter's evidence): the document becomes current, the node is
    opened and the sections leading to it are expanded. Call before
    ``st.switch_page("pages/tree.py")``.

    Returns:
        The node id opened, or None when ``node_ids`` holds no node of the document.
    """
    from .tree_view import expand_to

    state.put(state.DOC_ID, rec.doc_id)
    tree = load_tree_cached(str(dm.path), rec.doc_id, rec.added_at)
    nid = next((int(i) for i in node_ids if isinstance(i, int) and 0 <= i < len(tree.nodes)), None)
    if nid is None:
        return None
    state.put(state.NODE_BY_DOC, {**(state.get(state.NODE_BY_DOC) or {}), rec.doc_id: nid})
    exp = (state.get(state.TREE_EXPANDED) or {}).get(rec.doc_id, [0])
    state.put(state.TREE_EXPANDED, {**(state.get(state.TREE_EXPANDED) or {}),
                                    rec.doc_id: sorted(expand_to(tree, exp, nid))})
    st.session_state.pop(state.doc_key("w_tree_node", rec.doc_id), None)
    return nid
