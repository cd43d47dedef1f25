"""2-D coordinates for the semantic-cluster page, from the engine's stored layouts.

The UMAP layout of a document's TEXT nodes is computed once per document version by
the engine's background worker (:mod:`docmaster_core.index.layout`), queued when a
document is ingested through the app and, for documents ingested before, when the app
opens the workspace (:func:`queue_missing_layouts`). The page never waits for it: until
it is stored the facade returns PCA coordinates with the status ``"computing"``, and the
page says so. Once the page has drawn a view in PCA it keeps PCA for that view until the
user presses the switch button (:func:`shown_method`), so the chart never changes by
itself.
"""
from __future__ import annotations

import threading
from typing import Any

import streamlit as st

from docmaster_core.index.layout import pca_2d

from . import state

__all__ = ["pca_2d", "document_layout", "collection_layout", "queue_missing_layouts", "shown_method",
           "SHOWN_METHOD", "status_line", "umap_banner", "UMAP_READY"]

#: session key: {layout name: "PCA" | "UMAP"}, the method a view was last drawn with
SHOWN_METHOD = "dm_cluster_shown_method"

_QUEUED: set[str] = set()
_QUEUED_LOCK = threading.Lock()


def queue_missing_layouts(dm: Any, doc_ids: list[str] | None = None) -> None:
    """Queue the missing UMAP layouts (all documents, or ``doc_ids``) in a daemon
    thread (reading 88 trees takes a moment); once per workspace and server process for
    the whole workspace. Failures (read-only workspace) are left for the page to report."""
    key = f"{dm.path}|{','.join(doc_ids) if doc_ids is not None else '*'}"
    with _QUEUED_LOCK:
        if doc_ids is None and key in _QUEUED:
            return
        _QUEUED.add(key)

    def _run() -> None:
        try:
            dm.ensure_layouts(doc_ids)
        except Exception:  # noqa: BLE001 - best effort; the cluster page queues its own document again
            pass

    threading.Thread(target=_run, name="docmaster-layouts", daemon=True).start()


@st.cache_data(max_entries=256, show_spinner=False)
def _ready_document_layout(_dm: Any, workspace: str, doc_id: str, added_at: float) -> dict[str, Any] | None:
    lay = _dm.layout(doc_id)
    if lay.status not in ("ready", "too few points", "disabled"):
        return None  # not cached: asked again on the next run
    return {"coords": lay.coords, "node_ids": lay.node_ids, "doc_ids": lay.doc_ids, "method": lay.method,
            "status": lay.status, "name": lay.name}


def document_layout(dm: Any, workspace: str, doc_id: str, added_at: float) -> dict[str, Any]:
    """The document's layout: ``{"coords" float32 (n, 2), "node_ids" (n,) int64,
    "doc_ids", "method" "UMAP" | "PCA", "status", "name"}`` (see
    :class:`~docmaster_core.index.layout.Layout2D`); a stored one is memoised."""
    got = _ready_document_layout(dm, workspace, doc_id, added_at)
    if got is not None:
        return got
    lay = dm.layout(doc_id)
    return {"coords": lay.coords, "node_ids": lay.node_ids, "doc_ids": lay.doc_ids, "method": lay.method,
            "status": lay.status, "name": lay.name}


@st.cache_data(max_entries=16, show_spinner=False)
def _ready_collection_layout(_dm: Any, workspace: str, docs_key: tuple) -> dict[str, Any] | None:
    lay = _dm.collection_layout([d for d, _ in docs_key])
    if lay.status not in ("ready", "too few points", "disabled"):
        return None
    return {"coords": lay.coords, "node_ids": lay.node_ids, "doc_ids": lay.doc_ids, "method": lay.method,
            "status": lay.status, "name": lay.name}


def collection_layout(dm: Any, doc_ids: list[str]) -> dict[str, Any]:
    """The layout of the TEXT nodes of ``doc_ids`` (rows in that order), as
    :func:`document_layout` (a stored one is memoised by the documents' versions)."""
    docs_key = tuple((d, float(dm.document(d).added_at or 0.0)) for d in doc_ids)
    got = _ready_collection_layout(dm, str(dm.path), docs_key)
    if got is not None:
        return got
    lay = dm.collection_layout(doc_ids)
    return {"coords": lay.coords, "node_ids": lay.node_ids, "doc_ids": lay.doc_ids, "method": lay.method,
            "status": lay.status, "name": lay.name}


def shown_method(layout: dict[str, Any], switch: bool = False) -> str:
    """The method to draw this view with: ``layout["method"]``, except that a view this
    session drew in PCA stays PCA after its UMAP layout became ready, until the user
    presses the switch (``switch=True``), so the chart never changes by itself."""
    shown = dict(state.get(SHOWN_METHOD) or {})
    name, avail = layout["name"], layout["method"]
    if switch and avail == "UMAP":
        shown[name] = "UMAP"
    method = "PCA" if avail == "UMAP" and shown.get(name) == "PCA" else avail
    shown[name] = method
    state.put(SHOWN_METHOD, shown)
    return method


def status_line(status: str) -> str:
    """What the page says under a PCA chart, by layout status."""
    if status == "computing":
        return ("UMAP layout not ready yet: it is being computed in the background (queued when the document was "
                "ingested or the workspace opened; the first one compiles, from 30 s to about a minute and a half on "
                "a 2-core machine). This is the PCA view. While you look at it the chart stays as it is: when UMAP "
                "is ready a button here switches to it, and a view opened after that (another number of topics, a "
                "later visit) starts on UMAP.")
    if status.startswith("failed"):
        return f"UMAP layout could not be computed ({status[8:]}); this is the PCA view."
    if status == "too few points":
        return "Too few TEXT nodes for UMAP; this is the PCA view."
    if status == "disabled":
        return "UMAP is off (DOCMASTER_UI_UMAP=off); this is the PCA view."
    return ""


#: The banner shown once a view drawn in PCA has its UMAP layout (with a switch button).
UMAP_READY = "The UMAP layout of this view is ready. The chart stays on PCA until you switch."


def umap_banner(status: str) -> str:
    """Which one banner the waiting chart shows for a layout status: ``"ready"`` (the
    switch), ``"waiting"`` (not ready yet: computing, or not queued yet) or ``"other"`` (failed, too
    few points, off: a caption); never two at once."""
    if status == "ready":
        return "ready"
    return "waiting" if status in ("computing", "absent") else "other"
