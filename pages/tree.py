"""Tree explorer: a document's tree as a scoped outline; a node's content, summary,
embedding and page region."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from docmaster_core.errors import WorkspaceError
from ui import state
from ui.render import render_node_content, render_page_image, section_line
from ui.layout import page_header
from ui.text import md_escape
from ui.widgets import choose_document, load_tree_cached, node_label, open_docmaster_or_stop

W_DOC = "w_tree_doc"
W_SECTION = "w_tree_section"
W_TYPES = "w_tree_types"
W_SEARCH = "w_tree_search"
W_NODE = "w_tree_node"
W_TABLE = "w_tree_table"
W_ONLY_EV = "w_tree_only_evidence"
W_FULLVEC = "w_tree_full_vector"
ALL_TYPES = ["TITLE", "TEXT", "TABLE", "IMAGE", "EQUATION"]

page_header("Tree explorer")
dm = open_docmaster_or_stop()
rec = choose_document(dm, W_DOC)
if rec is None:
    st.stop()

try:
    tree = load_tree_cached(str(dm.ws.path), rec.doc_id, rec.added_at)
except WorkspaceError as e:
    st.error(md_escape(str(e)))
    st.stop()

n_nodes = len(tree.nodes)
highlight = set((state.get(state.HIGHLIGHT) or {}).get(rec.doc_id, []))
counts = tree.count_by_type()
st.caption(
    md_escape(
        f"{rec.title or rec.file_name} · {rec.n_pages} pages · {n_nodes} nodes · "
        + ", ".join(f"{k} {v}" for k, v in counts.items() if v and k != "ROOT")
        + f" · parser {rec.parser}"
    )
)

left, right = st.columns([1, 1], gap="large")

# ------------------------------------------------------------------ outline (left)
with left:
    sections = [0] + [n.id for n in tree.nodes if n.type.value == "TITLE"]
    sizes = {s: len(tree.subtree(s)) - 1 for s in sections}
    if st.session_state.get(W_SECTION) not in sizes:
        st.session_state[W_SECTION] = 0
    section = st.selectbox(
        "Section (expand one branch of the tree)",
        sections,
        key=W_SECTION,
        format_func=lambda s: ("▣ whole document" if s == 0 else node_label(tree, s, 60)) + f"  [{sizes[s]}]",
        help="Choosing a section shows its subtree only; this keeps very large trees usable.",
    )
    state.seed_widget(W_TYPES, ALL_TYPES)
    types = st.pills("Node types", ALL_TYPES, selection_mode="multi", key=W_TYPES) or []
    query = st.text_input("Search text", key=W_SEARCH, placeholder="word or phrase in content or summary")
    only_ev = False
    if highlight:
        only_ev = st.toggle("Only filter evidence ★", key=W_ONLY_EV, help=f"{len(highlight)} evidence nodes of the last filter run")

    ids = tree.subtree(section)
    wanted = set(types) | {"ROOT"}
    q = (query or "").strip().lower()
    shown = [
        i
        for i in ids
        if tree.nodes[i].type.value in wanted
        and (not q or q in (tree.nodes[i].content or "").lower() or q in (tree.nodes[i].summary or "").lower())
        and (not only_ev or i in highlight)
    ]
    if not shown:
        st.warning("No node matches these filters.")
        st.stop()

    def _pick_from_table() -> None:
        sel = st.session_state[W_TABLE].selection.rows
        if sel:
            st.session_state[W_NODE] = shown_ids[sel[0]]

    shown_ids = shown
    frame = pd.DataFrame(
        {
            "★": ["★" if i in highlight else "" for i in shown],
            "page": [tree.nodes[i].page_start for i in shown],
            "node": [node_label(tree, i, 90) for i in shown],
        }
    )
    st.dataframe(
        frame,
        key=W_TABLE,
        on_select=_pick_from_table,
        selection_mode="single-row",
        hide_index=True,
        height=420,
        width="stretch",
        column_config={
            "★": st.column_config.TextColumn("★", width=28, help="evidence of the last filter run"),
            "page": st.column_config.NumberColumn("p.", width=40),
            "node": st.column_config.TextColumn("outline  (§ title · ¶ text · ▦ table · ▨ image · ∑ equation)",
                                                width="large"),
        },
    )
    st.caption(f"{len(shown)} of {n_nodes} nodes shown · click a row or pick below")

    remembered = (state.get(state.NODE_BY_DOC) or {}).get(rec.doc_id)
    if st.session_state.get(W_NODE) not in shown:
        st.session_state[W_NODE] = remembered if remembered in shown else shown[0]
    node_id = st.selectbox("Node", shown, key=W_NODE, format_func=lambda i: node_label(tree, i, 90))
    by_doc = dict(state.get(state.NODE_BY_DOC) or {})
    by_doc[rec.doc_id] = node_id
    state.put(state.NODE_BY_DOC, by_doc)

# ------------------------------------------------------------------ node detail (right)
node = tree.nodes[node_id]
with right:
    st.subheader(f"{node.type.value} #{node.id}" + ("  ★ filter evidence" if node.id in highlight else ""))
    pages = f"p. {node.page_start}" + (f"–{node.page_end}" if node.page_end != node.page_start else "")
    st.caption(md_escape(f"{pages} · depth {node.depth} · {section_line(node.section_path)}"))
    tab_content, tab_page, tab_emb = st.tabs(["Content & summary", "Page region", "Embedding"])

    with tab_content:
        render_node_content(node)
        st.markdown("**Summary**")
        if node.summary:
            st.markdown(md_escape(node.summary))
        else:
            st.caption("(no summary stored)")
        if node.children:
            st.caption(f"{len(node.children)} children: " + md_escape(", ".join(f"#{c}" for c in node.children[:40])))

    with tab_page:
        by_page: dict[int, list] = {}
        for b in node.bboxes:
            by_page.setdefault(int(b[0]), []).append(tuple(b[1:5]))
        page_opts = sorted(by_page) or [max(1, node.page_start)]
        page = page_opts[0]
        if len(page_opts) > 1:
            page = st.radio("Page", page_opts, horizontal=True, key=f"w_tree_page_{rec.doc_id}_{node.id}")
        render_page_image(
            rec.source_path, page, by_page.get(page, []), caption=f"{rec.file_name} · page {page} · node #{node.id}"
        )

    with tab_emb:
        try:
            emb = dm.ws.load_embeddings(rec.doc_id, mmap=True)
        except WorkspaceError as e:
            st.warning(md_escape(str(e)))
        else:
            v = np.asarray(emb[node.id], dtype=np.float32)
            c = st.columns(4)
            c[0].metric("dimensions", v.shape[0])
            c[1].metric("L2 norm", f"{float(np.linalg.norm(v)):.3f}")
            c[2].metric("mean", f"{float(v.mean()):+.3f}")
            c[3].metric("std", f"{float(v.std()):.3f}")
            if node.parent is not None:
                st.caption(f"cosine to parent #{node.parent}: {float(v @ np.asarray(emb[node.parent])):.3f}")
            st.bar_chart(pd.DataFrame({"component": np.arange(v.shape[0]), "value": v}), x="component", y="value", height=180)
            sims = np.asarray(emb, dtype=np.float32) @ v
            sims[node.id] = -np.inf
            top = np.argsort(-sims)[:5]
            st.markdown("**Nearest nodes in this document (cosine)**")
            st.dataframe(
                pd.DataFrame(
                    {
                        "node": [node_label(tree, int(i), 70, indent=False) for i in top],
                        "cosine": [round(float(sims[i]), 3) for i in top],
                    }
                ),
                hide_index=True,
                width="stretch",
            )
            if st.toggle("Show the full vector", key=W_FULLVEC):
                st.code(json.dumps([round(float(x), 6) for x in v]), language="json", wrap_lines=True)
                st.download_button(
                    "Download vector (JSON)",
                    json.dumps({"doc_id": rec.doc_id, "node_id": node.id, "vector": [float(x) for x in v]}),
                    file_name=f"{rec.doc_id}_node{node.id}.json",
                    mime="application/json",
                )
