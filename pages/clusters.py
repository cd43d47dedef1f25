"""Semantic clusters ("topics"): UMAP (PCA until UMAP is ready) of TEXT nodes coloured by PC-KMeans
cluster, with sliders for alpha, k, K, w (DocMaster Eq. 1-2) that rebuild the clustering. The
reference list is in no topic (label -1, :func:`ui.indexing.shown_index`)
and not drawn; the labels' words are in :mod:`ui.plain`."""
from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from docmaster_core.errors import DocMasterError
from ui import state
from ui.cluster_chart import cluster_chart
from ui.indexing import (anchor_rows, cluster_run, collection_run, index_params, keep_in_address, restore_from_address,
                         section_titles, shown_index, topic_numbers)
from ui.plain import (
    BETTER_TOPICS,
    CHECKED_COLUMN_HELP,
    CHECKED_HELP,
    CHECKED_TITLE,
    DIFFERENT_HELP,
    DIFFERENT_LABEL,
    GOOD_FOR_CLUSTERS,
    NOT_FOLLOWED_HELP,
    NOT_FOLLOWED_LABEL,
    SAME_HELP,
    SAME_LABEL,
    SLIDERS,
    checked_pair_rows,
    collection_topics_line,
    PASSAGES_HELP,
    PASSAGES_LABEL,
    TOPIC_RE,
    TOPICS_LABEL,
    topic_label,
)
from ui.projection import (
    SHOWN_METHOD,
    UMAP_READY,
    collection_layout,
    document_layout,
    pca_2d,
    shown_method,
    status_line,
    umap_banner,
)
from ui.layout import hide_previous_view, page_header
from ui.text import md_escape, shorten
from ui.widgets import choose_document, documents_or_stop, load_tree_cached, open_docmaster_or_stop

W_MODE = "w_clusters_mode"
W_DOC = "w_clusters_doc"
W_ALPHA, W_K, W_KK, W_W = "w_clusters_alpha", "w_clusters_k", "w_clusters_K", "w_clusters_w"


@st.cache_data(max_entries=32, show_spinner=False)
def _hover_columns(key: str, _files: list, _sections: list, _texts: list) -> dict[str, list[str]]:
    """Shortened hover texts of the projected nodes (plain text: the chart's tooltip
    escapes it), memoised by the projection key (they do not depend on alpha, k, K, w)."""
    return {
        "file": [shorten(f, 40) for f in _files],
        "section": [shorten(s, 60) for s in _sections],
        "passage": [shorten(t, 350) for t in _texts],
    }


def _store_params() -> None:
    state.put(
        state.INDEX_PARAMS,
        {
            "alpha": float(st.session_state[W_ALPHA]),
            "k": int(st.session_state[W_K]),
            "K": int(st.session_state[W_KK]),
            "w": float(st.session_state[W_W]),
        },
    )


# the previous scope's or document's numbers are hidden, not faded, while the new view is computed
_view = ("collection",) if st.session_state.get(W_MODE) == "collection" else ("document", st.session_state.get(W_DOC))
stale_guard = hide_previous_view(_view, "dm_clusters_view")
page_header("Semantic clusters")
st.caption(GOOD_FOR_CLUSTERS)
dm = open_docmaster_or_stop()
docs = documents_or_stop(dm)

restore_from_address()  # a reload keeps the settings: the page's address carries them
params = index_params()
with st.container(border=True):
    c_mode, c_K, c_k, c_w, c_a = st.columns([2, 2, 2, 2, 2])
    with c_mode:
        state.seed_widget(W_MODE, state.get(state.CLUSTER_MODE, "document"))
        mode = st.radio("Scope", ["document", "collection"], key=W_MODE, horizontal=True,
                        format_func={"document": "one document", "collection": "whole collection"}.get,
                        help="Topics of one document's passages, or of every document's passages together. "
                             "Reference lists are in no topic; over the collection, short lines, cover pages' lines "
                             "and text repeated across documents are left out too.")
        state.put(state.CLUSTER_MODE, mode)
    with c_K:
        state.seed_widget(W_KK, params["K"])
        st.slider(SLIDERS["K"][0], 1, 30, step=1, key=W_KK, on_change=_store_params, help=SLIDERS["K"][1])
    with c_k:
        state.seed_widget(W_K, params["k"])
        st.slider(SLIDERS["k"][0], 0, 100, step=1, key=W_K, on_change=_store_params, help=SLIDERS["k"][1])
    with c_w:
        state.seed_widget(W_W, params["w"])
        st.slider(SLIDERS["w"][0], 0.0, 10.0, step=0.25, key=W_W, on_change=_store_params, help=SLIDERS["w"][1])
    with c_a:
        state.seed_widget(W_ALPHA, params["alpha"])
        st.slider(SLIDERS["alpha"][0], 0.0, 1.0, step=0.05, key=W_ALPHA, on_change=_store_params,
                  help=SLIDERS["alpha"][1])
    d = state.default_index_params()
    # which slider to move; where the settings apply, and for how long (a newcomer reloaded and could not tell
    # whether a change held)
    st.caption(BETTER_TOPICS)
    st.caption(f"These settings shape the topics here and the groups of the Hyper-edge graph (the Filter sets its "
               f"own in each configuration, under \"How passages are grouped\"). They hold for this browser session, "
               f"and a reload of this page keeps them (its address carries them); a new session starts at "
               f"{int(d['K'])} topics, {int(d['k'])} pairs checked, strictness {d['w']:g}, pairs alike in meaning "
               f"{d['alpha']:g}.")
params = index_params()
keep_in_address(params, mode)
backend = dm.llm.backend_name
ws = str(dm.path)

if mode == "document":
    rec = choose_document(dm, W_DOC)
    tree = load_tree_cached(ws, rec.doc_id, rec.added_at)
    try:
        with st.spinner(f"Finding {params['K']} topics ..."):
            idx = cluster_run(dm, ws, rec.doc_id, rec.added_at, params["alpha"], params["k"], params["K"],
                              params["w"], backend)
        idx = shown_index(dm, idx, tree)  # the reference list in no topic
    except DocMasterError as e:
        st.error(md_escape(f"Could not find the topics: {e}"))
        st.stop()
    ids = idx.text_node_ids[idx.labels >= 0]  # the reference list is in no topic
    if ids.size == 0:
        st.warning("This document has no passages of running text to group into topics.")
        st.stop()
    emb = np.asarray(dm.embeddings(rec.doc_id))[ids]
    labels = idx.labels[idx.labels >= 0]
    texts = [tree.nodes[int(i)].content for i in ids]
    pages = [tree.nodes[int(i)].page_start for i in ids]
    paths = [tree.nodes[int(i)].section_path for i in ids]
    sections = [" › ".join(p[-2:]) for p in paths]
    files = [rec.file_name] * ids.size
    doc_of = [rec.doc_id] * int(ids.size)
    key = f"doc|{ws}|{rec.doc_id}|{rec.added_at}|{int(ids.size)}"
    stats = idx.stats
    try:
        lay = document_layout(dm, ws, rec.doc_id, rec.added_at)
    except DocMasterError as e:
        lay = None
        layout_error = str(e)
else:
    docs_key = tuple((d.doc_id, d.added_at) for d in docs)
    try:
        # "complete" only once the documents' trees are read too: a newcomer saw "Topics over 15 documents" above
        # the one-document numbers for ~10 s while they loaded
        with st.status(f"Finding topics over {len(docs)} documents ...", expanded=False) as status:
            coll = collection_run(dm, ws, docs_key, params["alpha"], params["k"], params["K"], params["w"], backend)
            by_id = {d.doc_id: d for d in docs}
            trees = {d: load_tree_cached(ws, d, by_id[d].added_at) for d in coll["doc_ids"]}
            # the collection clustering leaves the reference list out itself (index.builder._kept_passages; a
            # clustering stored by an older rule is rebuilt: COLLECTION_BOILERPLATE_VERSION); the documents' own
            # indexes, for their anchor pairs below, as shown
            docs_idx = {d: shown_index(dm, coll["documents"][d], trees[d]) for d in coll["doc_ids"]}
            status.update(label=f"Topics over {len(docs)} documents", state="complete")
    except DocMasterError as e:
        st.error(md_escape(f"Could not find the collection's topics: {e}"))
        st.stop()
    ids = coll["node_ids"]
    if ids.size == 0:
        st.warning("The collection has no passages of running text to group into topics.")
        st.stop()
    labels = coll["labels"]
    doc_of = [coll["doc_ids"][int(j)] for j in coll["node_doc"]]
    emb_parts = []
    for d in coll["doc_ids"]:
        sel = ids[np.asarray([x == d for x in doc_of])]
        emb_parts.append(np.asarray(dm.embeddings(d))[sel])
    emb = np.concatenate(emb_parts)
    texts = [trees[d].nodes[int(i)].content for d, i in zip(doc_of, ids)]
    pages = [trees[d].nodes[int(i)].page_start for d, i in zip(doc_of, ids)]
    paths = [trees[d].nodes[int(i)].section_path for d, i in zip(doc_of, ids)]
    sections = [" › ".join(p[-2:]) for p in paths]
    files = [by_id[d].file_name for d in doc_of]
    key = f"collection|{ws}|{docs_key}|{int(ids.size)}"
    stats = coll["stats"]
    try:
        lay = collection_layout(dm, list(coll["doc_ids"]))
    except DocMasterError as e:
        lay = None
        layout_error = str(e)


def _switch_to_umap(layout: dict) -> None:
    shown = dict(state.get(SHOWN_METHOD) or {})
    shown[layout["name"]] = "UMAP"
    state.put(SHOWN_METHOD, shown)


# the engine's stored layout (UMAP), or PCA while it is computed in the background; rows
# aligned to the clustering's points by (document, node)
row_of = {}
if lay is not None:
    row_of = {(d, int(n)): r for r, (d, n) in enumerate(zip(lay["doc_ids"], lay["node_ids"].tolist()))}
point_rows = [row_of.get((d, int(i))) for d, i in zip(doc_of, ids)]
if lay is None or any(r is None for r in point_rows):
    coords, method, umap_state = pca_2d(emb), "PCA", ("failed: " + layout_error if lay is None
                                                       else "failed: the stored layout does not match the nodes")
    held = False
else:
    method = shown_method(lay)
    umap_state = lay["status"]
    held = method == "PCA" and lay["method"] == "UMAP"  # drawn in PCA before: kept until the user switches
    coords = lay["coords"][np.asarray(point_rows, dtype=np.int64)] if method == lay["method"] else pca_2d(emb)

# names and colours follow the clusters' content across slider moves: new clusters are
# matched to the previous drawing's by member overlap, and kept over a reload (ui.indexing.topic_numbers)
point_keys = [int(i) for i in ids] if mode == "document" else list(zip(doc_of, (int(i) for i in ids)))
view_name = f"document:{rec.doc_id}" if mode == "document" else "collection"
stable = topic_numbers(dm, view_name, f"dm_cluster_names_{view_name}", params, point_keys, labels)
n_drawn = len(set(stable.values()))
# each cluster named by its most distinctive terms (class-based TF-IDF) and its size
drawn = [stable[int(c)] for c in labels]
terms_key = (key, hash(tuple(drawn)))
if st.session_state.get("dm_cluster_terms", (None,))[0] != terms_key:
    st.session_state["dm_cluster_terms"] = (terms_key, dm.name_clusters(texts, drawn, doc_ids=list(doc_of),
                                                                       sections=section_titles(paths)))
terms = st.session_state["dm_cluster_terms"][1]
n_members = {c: drawn.count(c) for c in set(drawn)}


def cluster_title(c: int) -> str:
    """``Topic 3 · termination, notice, terminate (41)``."""
    return topic_label(c, terms.get(c), n_members.get(c, 0))


m = st.columns(5)
left_out = int(stats.get("boilerplate_left_out", 0)) if mode == "collection" else int(stats.get("left_out", 0))
m[0].metric(PASSAGES_LABEL, int(ids.size),
            help=PASSAGES_HELP + ((f" {left_out} short, cover-page, repeated or reference-list passages are left out "
                                   "of the collection's topics." if mode == "collection" else
                                   f" {left_out} passages of the reference list are in no topic.") if left_out else ""))
m[1].metric(TOPICS_LABEL, n_drawn,
            help=f"Topics drawn in the chart ({params['K']} asked, K; PC-KMeans can leave clusters empty).")
m[2].metric(SAME_LABEL, int(stats.get("must", 0)), help=SAME_HELP)
m[3].metric(DIFFERENT_LABEL, int(stats.get("cannot", 0)), help=DIFFERENT_HELP)
m[4].metric(NOT_FOLLOWED_LABEL, int(stats.get("violated_must", 0)) + int(stats.get("violated_cannot", 0)),
            help=NOT_FOLLOWED_HELP)
if mode == "collection":
    st.caption(collection_topics_line(stats))
n_must, n_cannot = int(stats.get("must", 0)), int(stats.get("cannot", 0))
n_violated = int(stats.get("violated_must", 0)) + int(stats.get("violated_cannot", 0))
if n_must + n_cannot == 0:
    st.caption(f"'{SLIDERS['w'][0]}' changes nothing here: no pair is checked ({params['k']} pairs to check). "
               f"Raise '{SLIDERS['k'][0]}' to check some.")
elif n_violated == 0:
    st.caption(f"'{SLIDERS['w'][0]}' has nothing to act on at {params['w']:g}: the topics already follow all "
               f"{n_must} pairs checked 'same topic' and {n_cannot} checked 'different topics', so a stricter "
               "setting changes nothing" + (" (no pair was checked 'different topics')." if n_cannot == 0 else "."))

frame = pd.DataFrame(
    {
        "x": coords[:, 0],
        "y": coords[:, 1],
        "cluster": [f"Topic {stable[int(c)]}" for c in labels],
        "node": [int(i) for i in ids],
        "page": pages,
        **_hover_columns(key, files, sections, texts),
    }
)
def _num(c: str) -> int:
    """The topic number of a frame cell ``Topic 3``."""
    return int(TOPIC_RE.match(c).group(1))


order = sorted(frame["cluster"].unique(), key=_num)
frame["topic"] = frame["cluster"].map({c: cluster_title(_num(c)) for c in order})
fig = cluster_chart(frame.drop(columns=["cluster"]), [(_num(c), cluster_title(_num(c))) for c in order],
                    f"{int(ids.size)} passages, similar ones close together ({method} map)",
                    show_file=mode == "collection")
if held:
    st.info(UMAP_READY)
    st.button("Switch to the UMAP layout", key="w_clusters_to_umap", on_click=_switch_to_umap, args=(lay,),
              icon=":material/scatter_plot:")
elif method == "PCA":
    if umap_state == "computing":
        _name = lay["name"]

        # one banner, inside the fragment: "not ready yet" is replaced by "ready ... Switch"
        # when the layout is stored (both were shown at once before, issue 36)
        @st.fragment(run_every=3)
        def _wait_for_umap() -> None:
            now = dm.layout_status(_name)
            banner = umap_banner(now)
            if banner == "ready":
                st.info(UMAP_READY)
                if st.button("Switch to the UMAP layout", key="w_clusters_to_umap_f", icon=":material/scatter_plot:"):
                    _switch_to_umap(lay)
                    st.rerun()
            elif banner == "waiting":
                st.info(status_line("computing"), icon=":material/hourglass_top:")
            else:
                st.caption(md_escape(status_line(now)))

        _wait_for_umap()
    else:
        st.caption(md_escape(status_line(umap_state)))

st.altair_chart(fig, width="stretch", key="w_clusters_chart")
sizes = frame.groupby("cluster", sort=False).size().reindex(order)
with st.expander("Topics: size and typical passages"):
    st.caption("Each topic's three passages closest to its centre (the mean of its passages' embeddings).")
    typical = dm.representative_passages(emb, drawn, 3)
    rows = []
    for c in order:
        sel = typical.get(_num(c), [])
        rows.append({"topic": c, "telling words": ", ".join(terms.get(_num(c)) or []), "passages": int(sizes[c]),
                     "typical passages": " | ".join(shorten(texts[i], 90) for i in sel)})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

st.subheader(CHECKED_TITLE, help=CHECKED_HELP)
if mode == "document":
    rows = anchor_rows(idx, tree)
else:
    rows = []
    for d in coll["doc_ids"]:
        for r in anchor_rows(docs_idx[d], trees[d]):
            rows.append({"file": shorten(by_id[d].file_name, 40), **r})
if rows:
    who = ("the offline backend (no model: same topic when the two passages are similar enough)"
           if backend == "offline" else "the LLM")
    st.caption(f"The pairs of passages most alike in meaning and place in the document (reference lists left out), "
               f"each checked by {who}: same topic or different topics. The topics follow a check unless "
               f"'{SLIDERS['w'][0]}' lets the passages' meaning outweigh it.")
    df = pd.DataFrame(checked_pair_rows(rows))
    st.dataframe(
        df.style.map(lambda v: "color: #15803d" if v == "same topic" else
                     ("color: #b91c1c" if v == "different topics" else ""), subset=["checked as"]),
        hide_index=True,
        width="stretch",
        column_config={**{k: st.column_config.Column(help=v) for k, v in CHECKED_COLUMN_HELP.items()},
                       "pair score": st.column_config.NumberColumn(help=CHECKED_COLUMN_HELP["pair score"],
                                                                   format="%.3f")},
    )
else:
    st.info(f"No pairs checked ('{SLIDERS['k'][0]}' is 0, or there are fewer than two passages).")
stale_guard.empty()  # this view is drawn: a slider move keeps it on screen, faded, while it is redrawn
