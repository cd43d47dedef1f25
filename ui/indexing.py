"""Semantic-index access for the hyper-edge graph and the semantic-cluster pages.

A PC-KMeans run for one (workspace, document, alpha, k, K, w, LLM backend) is built
by the engine (:meth:`docmaster_core.pipeline.DocMaster.build_index`: the document's
stored hyper-edges reused, stored in the background for a slider change) and memoised
here with ``st.cache_data``; going back to a previous slider position is instant. Source: DocMaster (arXiv 2607.08539) Sec. 2.3,
Eq. (1)-(2); PC-KMeans after Basu, Banerjee and Mooney (2004).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import streamlit as st

from . import state
from .cluster_colors import match_clusters
from .graph import hyperedge_vectors
from .plain import LINKS_HELP, LINKS_LABEL

__all__ = [
    "index_params",
    "restore_from_address",
    "keep_in_address",
    "load_document_index",
    "build_document_index",
    "has_index",
    "stored_index_docs",
    "wait_for_saves",
    "cluster_run",
    "collection_run",
    "anchor_rows",
    "HE_LINKS_LABEL",
    "HE_LINKS_HELP",
    "top_links",
    "document_topic_names",
    "shown_index",
    "section_titles",
    "topic_numbers",
]


#: The Semantic clusters page's settings kept in its address, with their slider ranges.
_ADDRESS_KEYS = {"alpha": (float, 0.0, 1.0), "k": (int, 0, 100), "K": (int, 1, 30), "w": (float, 0.0, 10.0)}
_ADDRESS_READ = "dm_cluster_address_read"


def restore_from_address() -> None:
    """Once per browser session, take alpha, k, K, w and the scope from the page's address
    (``?alpha=0.7&k=20&K=12&w=1&scope=collection``, written by :func:`keep_in_address`), so a
    reload keeps what the user chose (a newcomer reloaded and found K back at 8). Values
    that are not numbers, or lie outside the sliders' ranges, are ignored."""
    if st.session_state.get(_ADDRESS_READ):
        return
    st.session_state[_ADDRESS_READ] = True
    qp = st.query_params
    got: dict[str, Any] = {}
    for key, (kind, lo, hi) in _ADDRESS_KEYS.items():
        try:
            v = kind(float(qp[key])) if key in qp else None
        except (TypeError, ValueError, OverflowError):  # "abc", "nan" for K, "inf"
            v = None
        if v is not None and lo <= v <= hi:
            got[key] = v
    if got:
        state.put(state.INDEX_PARAMS, {**index_params(), **got})
    if qp.get("scope") in ("document", "collection"):
        state.put(state.CLUSTER_MODE, qp["scope"])


def keep_in_address(params: dict[str, Any], scope: str) -> None:
    """Write the page's settings into its address (see :func:`restore_from_address`)."""
    want = {"alpha": f"{float(params['alpha']):g}", "k": str(int(params["k"])), "K": str(int(params["K"])),
            "w": f"{float(params['w']):g}", "scope": scope}
    if {k: st.query_params.get(k) for k in want} != want:
        st.query_params.update(want)


def index_params() -> dict[str, Any]:
    """The session's index hyperparameters ``{"alpha", "k", "K", "w"}``."""
    p = dict(state.default_index_params())
    p.update(state.get(state.INDEX_PARAMS) or {})
    return {"alpha": float(p["alpha"]), "k": int(p["k"]), "K": int(p["K"]), "w": float(p["w"])}


@st.cache_data(max_entries=64, show_spinner=False)
def _stored_index(_dm: Any, workspace: str, doc_id: str, params_key: tuple, saved_at: float):
    return _dm.load_index(doc_id, dict(params_key))


def load_document_index(dm: Any, doc_id: str, params: dict[str, Any]):
    """The stored :class:`~docmaster_core.index.builder.DocumentIndex` for ``params``,
    or None when it was not built yet (no LLM call, no build). Memoised by the stored
    index's version (one query on the index table per call; the JSON is parsed once)."""
    key = dm.index_params(params).key()
    saved = [t for d, k, t in dm.index_versions() if d == doc_id and k == key]
    if not saved:
        return None
    return _stored_index(dm, str(dm.path), doc_id, tuple(sorted(params.items())), float(max(saved)))


def has_index(dm: Any, doc_id: str, params: dict[str, Any]) -> bool:
    """True when an index of ``doc_id`` for ``params`` is stored (the index is not read)."""
    return dm.has_index(doc_id, params)


def stored_index_docs(dm: Any, params: dict[str, Any]) -> set[str]:
    """The doc ids with a stored index for ``params`` (alpha, k, K, w; the rest from the settings)."""
    return dm.indexed_documents(params)


def build_document_index(dm: Any, doc_id: str, params: dict[str, Any]) -> dict[str, Any]:
    """Build (or reuse) and store the index for ``params`` (the engine's re-index policy,
    :meth:`~docmaster_core.pipeline.DocMaster.build_index`); returns its stats dict.

    Raises:
        WorkspaceLockedError: another process is writing the workspace.
        IndexBuildError: the LLM broke the labelling/grouping protocol.
    """
    dm.wait_for_saves()
    return dm.build_index(doc_id, params).stats


def wait_for_saves(dm: Any, timeout: float = 60.0) -> None:
    """Wait until the facade's background index saves have finished."""
    dm.wait_for_saves(timeout)


@st.cache_data(max_entries=256, show_spinner=False)
def cluster_run(_dm: Any, workspace: str, doc_id: str, added_at: float, alpha: float, k: int, K: int, w: float,
                backend: str):
    """A document's PC-KMeans run for these hyperparameters (built and stored when missing).

    The leading-underscore facade is not hashed; ``workspace``, ``doc_id``,
    ``added_at`` (re-ingest), the four hyperparameters and the LLM ``backend`` key
    the cache. A stored index is read back; a missing one is built with the stored
    hyper-edges reused and returned at once, its storage in the workspace running in
    the background (``DocMaster.build_index(..., background_save=True)``).

    Returns:
        :class:`~docmaster_core.index.builder.DocumentIndex` (a private copy).

    Raises:
        WorkspaceLockedError, IndexBuildError: as :func:`build_document_index`.
    """
    return _dm.build_index(doc_id, {"alpha": alpha, "k": k, "K": K, "w": w}, background_save=True)


@st.cache_data(max_entries=32, show_spinner=False)
def collection_run(_dm: Any, workspace: str, docs_key: tuple, alpha: float, k: int, K: int, w: float, backend: str):
    """Whole-collection clustering: every document's TEXT nodes re-clustered together
    with the union of the per-document must-link / cannot-link anchor pairs.

    The per-document indices are built first (see :func:`cluster_run`); then
    ``dm.index_collection`` builds and stores the collection level (no extra LLM call),
    read back with ``dm.load_collection_index``.

    Args:
        docs_key: ``((doc_id, added_at), ...)`` of the documents, in order.

    Returns:
        ``{"doc_ids": list[str], "node_doc": (N,) int64, "node_ids": (N,) int64,
        "labels": (N,) int64, "stats": dict, "documents": {doc_id: DocumentIndex}}``.
    """
    params = {"alpha": alpha, "k": k, "K": K, "w": w}
    doc_ids = [d for d, _ in docs_key]
    added = dict(docs_key)
    # per-document indices first (hyper-edge groupings reused), memoised per slider position
    for d in doc_ids:
        cluster_run(_dm, workspace, d, added[d], alpha, k, K, w, backend)
    _dm.wait_for_saves()
    _dm.index_collection(params=params)  # under the workspace's write lock; reuses the per-document indices
    coll = _dm.load_collection_index(params=params)
    return {
        "doc_ids": list(coll.doc_ids),
        "node_doc": np.asarray(coll.node_doc, dtype=np.int64),
        "node_ids": np.asarray(coll.node_ids, dtype=np.int64),
        "labels": np.asarray(coll.labels, dtype=np.int64),
        "stats": dict(coll.stats),
        "documents": dict(coll.documents),
    }


def anchor_rows(idx: Any, tree: Any, width: int = 90) -> list[dict[str, Any]]:
    """The anchor pairs of a document index as table rows.

    Returns:
        ``[{"node a", "node b", "SEC", "label" ("must-link" | "cannot-link"),
        "same cluster", "text a", "text b"}]`` by decreasing SEC.
    """
    from .text import shorten

    lab = idx.label_of()
    rows = []
    for (a, b), s, m in zip(idx.anchor_pairs.tolist(), idx.anchor_scores.tolist(), idx.anchor_labels.tolist()):
        rows.append(
            {
                "node a": int(a),
                "node b": int(b),
                "SEC": round(float(s), 4),
                "label": "must-link" if m else "cannot-link",
                "same cluster": lab.get(int(a)) == lab.get(int(b)),
                "text a": shorten(tree.nodes[int(a)].content, width),
                "text b": shorten(tree.nodes[int(b)].content, width),
            }
        )
    return rows


#: The must-links between hyper-edges, labelled the same on the Clusters and Hyper-edge graph
#: pages (plain words first, issue 36; the paper's names in the help).
HE_LINKS_LABEL = LINKS_LABEL
HE_LINKS_HELP = LINKS_HELP


@st.cache_resource(max_entries=512, show_spinner=False)
def _shown_index(key: tuple, _idx: Any, _tree: Any) -> Any:
    from docmaster_core.index.builder import leave_out_back_matter

    return leave_out_back_matter(_idx, _tree)


def shown_index(dm: Any, idx: Any, tree: Any) -> Any:
    """A document's index as the pages show it: its reference list in no topic and no anchor
    pair (:func:`docmaster_core.index.builder.leave_out_back_matter`), memoised by the
    document, the index parameters and its labels (the rule reads every passage: ~1 s over
    the 88-PDF collection, once, not on every rerun of a page)."""
    key = (str(dm.path), tree.doc_id, len(tree.nodes), idx.text_node_ids.size,
           tuple(sorted((str(k), str(v)) for k, v in (idx.params or {}).items())), hash(idx.labels.tobytes()))
    return _shown_index(key, idx, tree)


@st.cache_data(max_entries=64, show_spinner=False)
def _topic_names(_dm: Any, _texts: list, _labels: list, _sections: list, key: tuple) -> dict[int, list[str]]:
    return _dm.name_clusters(_texts, _labels, sections=_sections)


def section_titles(section_paths: Iterable[Sequence[str]]) -> list[str]:
    """Each passage's innermost heading ("" for none), to name a topic of names by its section."""
    return [str(p[-1]) if p else "" for p in section_paths]


def document_topic_names(dm: Any, idx: Any, tree: Any) -> dict[int, list[str]]:
    """The most telling words of each cluster ("topic") of one document's index
    (class-based TF-IDF over its passages, :meth:`DocMaster.name_clusters`, a one-passage
    topic of names by its section), memoised by the document, the index parameters and its
    labels. Passages in no topic (-1, the reference list) are skipped."""
    ids = [int(i) for i in idx.text_node_ids.tolist()]
    labels = [int(c) for c in idx.labels.tolist()]
    key = (str(dm.path), tree.doc_id, len(ids), tuple(sorted((str(k), str(v)) for k, v in (idx.params or {}).items())),
           hash(tuple(labels)))
    return _topic_names(dm, [tree.nodes[i].content or "" for i in ids], labels,
                        section_titles(tree.nodes[i].section_path for i in ids), key)


#: Workspace preference prefix of the topic numbers last drawn on the Semantic clusters page, per view.
TOPIC_NUMBERS_PREFERENCE = "topic_numbers:"


def topic_numbers(dm: Any, view: str, session_key: str, params: dict[str, Any], point_keys: list,
                  labels: Sequence[int]) -> dict[int, int]:
    """The number shown for each PC-KMeans cluster ("Topic 3", its colour), kept across slider
    moves and page reloads.

    Within a browser session the new clusters are matched to the previous drawing's by member
    overlap (:func:`ui.cluster_colors.match_clusters`). The numbers drawn last are also saved in
    the workspace (a preference per ``view``: ``{params, n, ids}``, K entries), so a reload, which
    starts a new session, draws the same numbers when it draws the same clustering (same
    ``params`` and the same number of points: the stored index is read back); a newcomer saw
    topic numbers and colours change on a reload after moving a slider.

    Args:
        dm: The facade (:class:`~docmaster_core.pipeline.DocMaster`).
        view: ``"document:<doc_id>"`` or ``"collection"``.
        session_key: ``st.session_state`` key of the previous drawing's ``{point key: number}``.
        params: ``{"alpha", "k", "K", "w"}`` of this drawing.
        point_keys: One hashable key per point (node id, or ``(doc_id, node id)``); kept in the
            session only.
        labels: Cluster label per point (same length as ``point_keys``).

    Returns:
        ``{label: number >= 0}``, distinct numbers.
    """
    labs = [int(c) for c in labels]
    pkey = [float(params["alpha"]), int(params["k"]), int(params["K"]), float(params["w"])]
    prev = st.session_state.get(session_key)
    saved_key = session_key + "_saved"  # what the workspace holds, so an unchanged drawing writes nothing
    saved = st.session_state.get(saved_key) if prev else dm.preference(TOPIC_NUMBERS_PREFERENCE + view)
    stable = None
    if isinstance(saved, dict) and saved.get("params") == pkey and saved.get("n") == len(labs):
        try:
            got = {int(c): int(i) for c, i in saved.get("ids", [])}
        except (TypeError, ValueError):
            got = {}
        if set(got) == set(labs) and len(set(got.values())) == len(got):
            stable = got
    if stable is None:
        stable = match_clusters(prev, point_keys, labs)
    st.session_state[session_key] = {k: stable[c] for k, c in zip(point_keys, labs)}
    want = {"params": pkey, "n": len(labs), "ids": sorted([c, i] for c, i in stable.items())}
    if saved != want:
        dm.save_preference(TOPIC_NUMBERS_PREFERENCE + view, want)  # False on a read-only workspace: session only
    st.session_state[saved_key] = want
    return stable


def top_links(links: list[tuple[int, int]], hyperedges: list, emb: Any, per_edge: int) -> list[tuple[int, int]]:
    """The strongest hyper-edge links: for every hyper-edge its ``per_edge`` links to the
    most similar partners (cosine of the mean embeddings of the members), union over
    hyper-edges, in the order of ``links``.

    Args:
        links: ``(a, b)`` hyper-edge id pairs.
        hyperedges: Hyper-edges with ``id`` and ``node_ids``.
        emb: float32 (|V|, d) node embeddings of the document (unit rows).
        per_edge: Links kept per hyper-edge (0 = none; a negative value keeps all).

    Returns:
        A sublist of ``links``.
    """
    if per_edge < 0 or not links:
        return list(links)
    if per_edge == 0:
        return []
    cent = hyperedge_vectors(hyperedges, emb)
    sim = {(a, b): float(cent[a] @ cent[b]) if a in cent and b in cent else 0.0 for a, b in links}
    by_edge: dict[int, list[tuple[float, tuple[int, int]]]] = {}
    for ab, c in sim.items():
        for x in ab:
            by_edge.setdefault(x, []).append((c, ab))
    keep = set()
    for x, lst in by_edge.items():
        keep.update(ab for _, ab in sorted(lst, key=lambda t: -t[0])[:per_edge])
    return [ab for ab in links if ab in keep]
