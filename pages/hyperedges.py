"""Hyper-edge graph: TEXT nodes grouped by hyper-edges inside their sections, and the
must-link relations that connect hyper-edges across sections (DocMaster Sec. 2.3)."""
from __future__ import annotations

import html

import pandas as pd
import streamlit as st
from streamlit_agraph import Config, Edge, Node, agraph

from docmaster_core.errors import DocMasterError
from docmaster_core.index.hyperedges import unlinked_hyperedges
from ui import state
from ui.indexing import (
    HE_LINKS_HELP,
    HE_LINKS_LABEL,
    MUST_PAIRS_HELP,
    MUST_PAIRS_LABEL,
    build_document_index,
    index_params,
    load_document_index,
    top_links,
)
from ui.render import render_page_image, section_line
from ui.layout import page_header
from ui.text import md_escape, shorten
from ui.widgets import choose_document, load_tree_cached, open_docmaster_or_stop

W_DOC = "w_he_doc"
W_HE = "w_he_select"
W_PASSAGES = "w_he_passages"
W_SECTIONS = "w_he_sections"
W_TOPLINKS = "w_he_top_links"  # shared by all documents: how many links per hyper-edge to draw
DEFAULT_TOP_LINKS = 2
PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c",
           "#4f46e5", "#0d9488", "#9333ea", "#ca8a04", "#e11d48", "#059669"]
MAX_DRAWN = 250


def _color(cluster: int) -> str:
    return "#9ca3af" if cluster < 0 else PALETTE[cluster % len(PALETTE)]


page_header("Hyper-edge graph")
dm = open_docmaster_or_stop()
rec = choose_document(dm, W_DOC)
if rec is None:
    st.stop()
tree = load_tree_cached(str(dm.path), rec.doc_id, rec.added_at)
# this document's widget keys: switching documents draws new widgets, no stale labels
W_HE, W_PASSAGES, W_SECTIONS = (state.doc_key(k, rec.doc_id) for k in (W_HE, W_PASSAGES, W_SECTIONS))
params = index_params()
st.caption(
    f"Index parameters: alpha={params['alpha']}, k={params['k']}, K={params['K']}, w={params['w']} "
    "(change them on the Semantic clusters page)."
)
idx = load_document_index(dm, rec.doc_id, params)
if idx is None:
    st.info("No semantic index is stored for this document and these parameters yet.")
    if st.button("Build the index now", type="primary", icon=":material/build:", key="w_he_build"):
        try:
            with st.spinner("SEC anchor pairs, LLM labels, PC-KMeans and hyper-edges ..."):
                build_document_index(dm, rec.doc_id, params)
        except DocMasterError as e:
            st.error(md_escape(f"Index build failed: {e}"))
            st.stop()
        st.rerun()
    st.stop()

hes = idx.hyperedges
if not hes:
    st.warning("This document has no hyper-edges (no TEXT nodes).")
    st.stop()
# front and back matter get no links (the engine's rule; also applied to indexes stored before it)
_unlinked = unlinked_hyperedges(tree, hes)
links = [(a, b) for a, b in map(lambda r: tuple(map(int, r)), idx.hyperedge_links.tolist())
         if a not in _unlinked and b not in _unlinked]
label_of = idx.label_of()
he_by_id = {h.id: h for h in hes}
he_of_node = {n: h.id for h in hes for n in h.node_ids}

s = idx.stats
m = st.columns(6)
m[0].metric("hyper-edges", len(hes))
m[1].metric("sections", len({h.section_id for h in hes}))
m[2].metric("TEXT nodes", int(s.get("text_nodes", len(he_of_node))))
m[3].metric(HE_LINKS_LABEL, len(links), help=HE_LINKS_HELP)
m[4].metric(MUST_PAIRS_LABEL, int(s.get("must", 0)), help=MUST_PAIRS_HELP)
m[5].metric("clusters", int(s.get("clusters", 0)))

# ---------------------------------------------------------------- which part to draw
section_ids = sorted({h.section_id for h in hes})
if len(hes) > MAX_DRAWN:
    first, total = [], 0
    for sid in section_ids:
        n_he = sum(h.section_id == sid for h in hes)
        if total + n_he > MAX_DRAWN and first:
            break
        first.append(sid)
        total += n_he
    if st.session_state.get(W_SECTIONS) is None or not set(st.session_state[W_SECTIONS]) <= set(section_ids):
        st.session_state[W_SECTIONS] = first
    chosen = st.multiselect(
        f"Sections to draw ({len(hes)} hyper-edges in all; drawing many at once is slow)",
        section_ids,
        key=W_SECTIONS,
        format_func=lambda i: shorten(tree.title if i == 0 else tree.nodes[i].content, 60),
    )
    drawn_sections = set(chosen)
else:
    drawn_sections = set(section_ids)
drawn = [h for h in hes if h.section_id in drawn_sections]
n_passages = sum(len(h.node_ids) for h in drawn)
c_pass, c_links = st.columns([1, 2], vertical_alignment="bottom")
with c_pass:
    state.seed_widget(W_PASSAGES, n_passages <= 60)
    show_passages = st.toggle("Show passages", key=W_PASSAGES, help=f"{n_passages} TEXT nodes in the drawn sections")
with c_links:
    state.seed_widget(W_TOPLINKS, DEFAULT_TOP_LINKS)
    per_edge = st.slider("Links drawn per hyper-edge (its most similar partners)", 0, 10, key=W_TOPLINKS,
                         help="A hyper-edge can share its cluster with dozens of others; drawing every link makes "
                         "dense clumps. 10 draws every link of most documents.")
try:
    emb = dm.embeddings(rec.doc_id, mmap=True)
except DocMasterError:
    emb = None
drawn_links = top_links(links, hes, emb, per_edge) if emb is not None else links

# ---------------------------------------------------------------- graph
nodes: list[Node] = []
edges: list[Edge] = []
seen: set[str] = set()


def _add(node: Node) -> None:
    if node.id not in seen:
        seen.add(node.id)
        nodes.append(node)


def _add_section_chain(sid: int) -> None:
    cur = sid
    while cur is not None:
        n = tree.nodes[cur]
        title = tree.title if cur == 0 else n.content
        _add(Node(id=f"s:{cur}", label=shorten(title or "(document)", 28), title=html.escape(shorten(title, 200)),
                  shape="box", color="#e5e7eb", font={"size": 13}, size=14))
        parent = n.parent
        if parent is not None:
            eid = f"s:{parent}->s:{cur}"
            if eid not in seen:
                seen.add(eid)
                edges.append(Edge(source=f"s:{parent}", target=f"s:{cur}", color="#9ca3af", width=1))
        cur = parent


# Resolve the selected hyper-edge *before* drawing: the graph component has no key, so
# Streamlit identifies it by its arguments. Were the highlight to change between the first
# run and the run a click triggers, the click would land on a new component (value None,
# new layout) and be lost.
_remembered = (state.get(state.HYPEREDGE_BY_DOC) or {}).get(rec.doc_id)
if st.session_state.get(W_HE) not in he_by_id:
    st.session_state[W_HE] = _remembered if _remembered in he_by_id else hes[0].id
selected_he = st.session_state[W_HE]
for h in drawn:
    _add_section_chain(h.section_id)
    chosen_style = {"borderWidth": 4, "color": {"background": _color(h.cluster), "border": "#111827"}} \
        if h.id == selected_he else {"color": _color(h.cluster)}
    _add(Node(id=f"h:{h.id}", label=f"H{h.id}", title=html.escape(shorten(h.summary, 300)), shape="diamond",
              size=12 + 3 * min(len(h.node_ids), 6), **chosen_style))
    edges.append(Edge(source=f"s:{h.section_id}", target=f"h:{h.id}", color="#9ca3af", width=1))
    if show_passages:
        for nid in h.node_ids:
            n = tree.nodes[nid]
            _add(Node(id=f"t:{nid}", label=f"#{nid}", title=html.escape(shorten(n.content, 300)), shape="dot",
                      color=_color(label_of.get(nid, -1)), size=7, font={"size": 10}))
            edges.append(Edge(source=f"h:{h.id}", target=f"t:{nid}", color=_color(h.cluster), width=1))
drawn_ids = {h.id for h in drawn}
for a, b in drawn_links:
    if a in drawn_ids and b in drawn_ids:
        edges.append(Edge(source=f"h:{a}", target=f"h:{b}", color="#ef4444", width=2, dashes=True,
                          title="must-link (same PC-KMeans cluster, different sections)"))

left, right = st.columns([3, 2], gap="large")
with left:
    n_drawn = sum(a in drawn_ids and b in drawn_ids for a, b in drawn_links)
    st.markdown("**Legend** · ▭ grey box: section · ◆ diamond: hyper-edge, coloured by its PC-KMeans cluster · "
                "● dot: passage · red dashed line: hyper-edge link (same cluster, different sections). "
                "Click a diamond to inspect it.")
    used = sorted({h.cluster for h in drawn})
    st.caption(f"{n_drawn} of {len(links)} hyper-edge links drawn (the top {per_edge} per hyper-edge).")
    with st.expander(f"Cluster colours ({len(used)} clusters drawn)"):
        legend = pd.DataFrame({"cluster": [f"C{c}" for c in used],
                               "hyper-edges": [sum(h.cluster == c for h in drawn) for c in used],
                               "colour": ["" for _ in used]})
        st.dataframe(legend.style.apply(lambda col: [f"background-color: {_color(c)}" for c in used], subset=["colour"]),
                     hide_index=True, width="content")
    config = Config(width=900, height=620, directed=True, physics=True, hierarchical=False)
    config.width = "100%"  # fill the column instead of a fixed pixel width
    # options where vis-network expects them: no arrows, physics settles, one layout per graph
    config.edges = {"arrows": {"to": {"enabled": False}}}
    config.physics["minVelocity"] = 2
    config.layout["randomSeed"] = 7  # same graph -> same layout after every rerun
    del config.groups
    clicked = agraph(nodes=nodes, edges=edges, config=config)

# a click on the graph selects a hyper-edge (a passage selects its hyper-edge)
if clicked and clicked != state.get(state.HYPEREDGE_CLICK):
    state.put(state.HYPEREDGE_CLICK, clicked)
    kind, _, raw = str(clicked).partition(":")
    target = None
    if kind == "h" and raw.isdigit():
        target = int(raw)
    elif kind == "t" and raw.isdigit():
        target = he_of_node.get(int(raw))
    elif kind == "s" and raw.isdigit():
        target = next((h.id for h in hes if h.section_id == int(raw)), None)
    if target is not None and target in he_by_id and target != st.session_state.get(W_HE):
        st.session_state[W_HE] = target
        st.rerun()  # redraw with the new highlight (same layout: fixed random seed)

with right:
    he_id = st.selectbox(
        "Hyper-edge",
        [h.id for h in hes],
        key=W_HE,
        format_func=lambda i: f"H{i} · C{he_by_id[i].cluster} · {len(he_by_id[i].node_ids)} passages · "
        + shorten(he_by_id[i].summary, 60),
    )
    by_doc = dict(state.get(state.HYPEREDGE_BY_DOC) or {})
    by_doc[rec.doc_id] = he_id
    state.put(state.HYPEREDGE_BY_DOC, by_doc)
    h = he_by_id[he_id]
    sec = tree.nodes[h.section_id]
    st.markdown(f"**H{h.id}** · cluster C{h.cluster} · {len(h.node_ids)} passages")
    st.caption(md_escape("Section: " + section_line(sec.section_path if h.section_id else [tree.title or rec.file_name])))
    st.markdown("**Summary**")
    st.markdown(md_escape(h.summary or "(no summary)"))
    partners = sorted({b if a == he_id else a for a, b in links if he_id in (a, b)})
    if partners:
        st.markdown("**Must-linked hyper-edges (other sections)**")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "hyper-edge": f"H{p}",
                        "section": shorten(section_line(tree.nodes[he_by_id[p].section_id].section_path), 50),
                        "summary": shorten(he_by_id[p].summary, 90),
                    }
                    for p in partners
                ]
            ),
            hide_index=True,
            width="stretch",
        )
    else:
        st.caption("No must-links to other sections.")
    st.markdown("**Member passages**")
    for nid in h.node_ids:
        n = tree.nodes[nid]
        with st.expander(md_escape(f"#{nid} · p. {n.page_start} · C{label_of.get(nid, -1)} · {shorten(n.content, 60)}")):
            st.markdown(md_escape(n.content))
    if h.node_ids:
        first = tree.nodes[h.node_ids[0]]
        page = first.page_start
        boxes = [b[1:5] for nid in h.node_ids for b in tree.nodes[nid].bboxes if int(b[0]) == page]
        with st.expander(f"Page {page} with the members' regions"):
            render_page_image(rec.source_path, page, boxes, caption=f"{rec.file_name} · page {page} · H{h.id}")
