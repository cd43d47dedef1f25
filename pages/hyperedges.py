"""Hyper-edge graph: TEXT nodes grouped by hyper-edges inside their sections, and the
must-link relations that connect hyper-edges across sections (DocMaster Sec. 2.3). Boxes and
dots are coloured by topic; the legend lists every colour drawn (:func:`ui.graph.legend_topics`)."""
from __future__ import annotations

import html

import pandas as pd
import streamlit as st
from streamlit_agraph import Config, Edge, Node, agraph

from docmaster_core.errors import DocMasterError
from docmaster_core.index.hyperedges import hyperedge_roles
from ui import state
from ui.indexing import (
    HE_LINKS_HELP,
    HE_LINKS_LABEL,
    build_document_index,
    document_topic_names,
    index_params,
    load_document_index,
    shown_index,
    top_links,
)
from ui.graph import (
    COLOURS_NOTE,
    GOOD_FOR_GRAPH,
    MAX_GRAPH_HEIGHT,
    READABLE_HYPEREDGES,
    default_hyperedge,
    group_names,
    hyperedge_vectors,
    labelled_hyperedges,
    legend_topics,
    needs_overview,
    overview_layout,
    parent_section,
    readable_section,
    section_counts,
    short_heading,
    strongest_partners,
    topic_colour,
    tree_positions,
)
from ui.plain import (
    GRAPH_LEGEND,
    GROUPS_HELP,
    GROUPS_LABEL,
    LINK_TITLE,
    PASSAGES_HELP,
    PASSAGES_LABEL,
    SAME_HELP,
    SAME_LABEL,
    TOPICS_HELP,
    TOPICS_LABEL,
    group_label,
    group_option,
    settings_line,
    topic_label,
    topic_words,
)
from ui.render import render_page_image, section_line
from ui.layout import page_header
from ui.text import md_escape, plural, shorten
from ui.widgets import choose_document, load_tree_cached, open_docmaster_or_stop

W_DOC = "w_he_doc"
W_HE = "w_he_select"
W_PASSAGES = "w_he_passages"
W_SECTIONS = "w_he_sections"
W_VIEW = "w_he_view"  # "section" | "cluster" | "all"
W_SCOPE_SECTION = "w_he_scope_section"
W_SCOPE_CLUSTER = "w_he_scope_cluster"
W_FOLLOW = "w_he_follow"  # True: the next run draws the section of the selected group
W_TOPLINKS = "w_he_top_links"  # shared by all documents: how many links per hyper-edge to draw
DEFAULT_TOP_LINKS = 2
PARTNERS_LISTED = 5  # must-linked hyper-edges listed for the selected one (the most similar)


page_header("Hyper-edge graph")
st.caption(GOOD_FOR_GRAPH)
dm = open_docmaster_or_stop()
rec = choose_document(dm, W_DOC)
if rec is None:
    st.stop()
tree = load_tree_cached(str(dm.path), rec.doc_id, rec.added_at)
# this document's widget keys: switching documents draws new widgets, no stale labels
W_HE, W_PASSAGES, W_VIEW, W_SCOPE_SECTION, W_SCOPE_CLUSTER, W_FOLLOW = (
    state.doc_key(k, rec.doc_id) for k in (W_HE, W_PASSAGES, W_VIEW, W_SCOPE_SECTION, W_SCOPE_CLUSTER, W_FOLLOW))
params = index_params()
st.caption(settings_line(params))
idx = load_document_index(dm, rec.doc_id, params)
if idx is None:
    st.info("No semantic index is stored for this document and these parameters yet: its passages are not "
            "grouped yet.")
    if st.button("Build the index now", type="primary", icon=":material/build:", key="w_he_build"):
        try:
            with st.spinner("Checking pairs of similar passages, finding topics and grouping passages ..."):
                build_document_index(dm, rec.doc_id, params)
        except DocMasterError as e:
            st.error(md_escape(f"Index build failed: {e}"))
            st.stop()
        st.rerun()
    st.stop()

idx = shown_index(dm, idx, tree)  # the reference list in no topic and no anchor pair
hes = idx.hyperedges
if not hes:
    st.warning("This document has no groups of passages (no paragraphs of running text).")
    st.stop()
# front and back matter get no links (the engine's rule; also applied to indexes stored before it)
roles = hyperedge_roles(tree, hes)
_unlinked = {i for i, r in roles.items() if r in ("front", "back")}
links = [(a, b) for a, b in map(lambda r: tuple(map(int, r)), idx.hyperedge_links.tolist())
         if a not in _unlinked and b not in _unlinked]
label_of = idx.label_of()
he_by_id = {h.id: h for h in hes}
he_of_node = {n: h.id for h in hes for n in h.node_ids}

s = idx.stats
# counted as the Clusters page counts them (a newcomer saw 100 passages and 7 topics there, 144 and 8 here):
# the reference list is in no topic
in_topic = idx.labels >= 0
n_out = int(idx.labels.size - in_topic.sum())
out_note = f" {n_out} passages of the reference list are in no topic (as on the Clusters page)." if n_out else ""
m = st.columns(6)
m[0].metric(GROUPS_LABEL, len(hes), help=GROUPS_HELP)
m[1].metric("sections", len({h.section_id for h in hes}))
m[2].metric(PASSAGES_LABEL, int(in_topic.sum()), help=PASSAGES_HELP + out_note)
m[3].metric(HE_LINKS_LABEL, len({g for ab in links for g in ab}), help=HE_LINKS_HELP.format(links=len(links)))
m[4].metric(SAME_LABEL, int(s.get("must", 0)), help=SAME_HELP)
m[5].metric(TOPICS_LABEL, len(set(idx.labels[in_topic].tolist())), help=TOPICS_HELP + out_note)
topic_names = document_topic_names(dm, idx, tree)


def _topic(c: int) -> str:
    """``party, agreement``: the document's cluster c in words. No number: the Semantic clusters
    page numbers its topics to follow them across slider moves, so the same topic may carry
    another number there (a newcomer compared "topic 3" here with "Topic 2" there)."""
    if c < 0:
        return "no topic"
    words = topic_names.get(c)
    return topic_words(words, 2) if words else f"topic {c} (no telling words)"

# ---------------------------------------------------------------- selection and which part to draw
# Resolve the selected hyper-edge *before* drawing: the graph component has no key, so
# Streamlit identifies it by its arguments. Were the highlight to change between the first
# run and the run a click triggers, the click would land on a new component (value None,
# new layout) and be lost. The first selection is the most connected body hyper-edge.
_remembered = (state.get(state.HYPEREDGE_BY_DOC) or {}).get(rec.doc_id)
if st.session_state.get(W_HE) not in he_by_id:
    st.session_state[W_HE] = _remembered if _remembered in he_by_id else default_hyperedge(hes, roles, links)
selected_he = st.session_state[W_HE]

counts = section_counts(tree, hes)
section_ids = sorted(s_ for s_ in counts)
clusters_all = sorted({h.cluster for h in hes})
large = len(hes) > READABLE_HYPEREDGES


def _section_name(i: int) -> str:
    title = tree.title or rec.file_name if i == 0 else tree.nodes[i].content
    return shorten(("Whole document: " if i == 0 else "") + (title or "(untitled)"), 60) + f" ({counts.get(i, 0)} groups)"


def _widen() -> None:
    cur = st.session_state.get(W_SCOPE_SECTION)
    up = parent_section(tree, cur, counts) if cur in counts else None
    st.session_state[W_SCOPE_SECTION] = 0 if up is None else up


state.seed_widget(W_VIEW, "section" if large else "all")
v1, v2, v3 = st.columns([2, 4, 1], vertical_alignment="bottom")
with v1:
    view = st.radio("Draw", ["section", "cluster", "all"], key=W_VIEW, horizontal=True,
                    format_func={"section": "one section", "cluster": "one topic", "all": "whole document"}.get,
                    help=f"{len(hes)} groups of passages (hyper-edges) in all; about {READABLE_HYPEREDGES} fit the "
                         "frame at a readable size.")
with v2:
    if view == "section":
        # a click on a group drawn beside the section (one of the selected group's partners) brings its section
        if st.session_state.get(W_SCOPE_SECTION) not in counts or st.session_state.pop(W_FOLLOW, False):
            st.session_state[W_SCOPE_SECTION] = readable_section(tree, hes, selected_he)
        scope_sid = st.selectbox("Section (with its subsections)", section_ids, key=W_SCOPE_SECTION,
                                 format_func=_section_name)
    elif view == "cluster":
        if st.session_state.get(W_SCOPE_CLUSTER) not in clusters_all:
            st.session_state[W_SCOPE_CLUSTER] = he_by_id[selected_he].cluster
        scope_cluster = st.selectbox("Topic", clusters_all, key=W_SCOPE_CLUSTER,
                                     format_func=lambda c: f"{topic_label(c, topic_names.get(c))} "
                                     f"· {sum(h.cluster == c for h in hes)} groups",
                                     help="The groups whose passages share this topic (PC-KMeans cluster).")
with v3:
    if view == "section":
        st.button("Widen", key=state.doc_key("w_he_widen", rec.doc_id), on_click=_widen, icon=":material/zoom_out:",
                  disabled=st.session_state.get(W_SCOPE_SECTION) == 0,
                  help="Draw the enclosing section (the whole document at the top)")
if view == "section":
    def _under(sid: int, top: int) -> bool:
        cur = sid
        while cur is not None:
            if cur == top:
                return True
            cur = tree.nodes[cur].parent
        return False

    drawn = [h for h in hes if _under(int(h.section_id), scope_sid)]
elif view == "cluster":
    drawn = [h for h in hes if h.cluster == scope_cluster]
else:
    drawn = list(hes)
n_passages = sum(len(h.node_ids) for h in drawn)
c_pass, c_links = st.columns([1, 2], vertical_alignment="bottom")
with c_pass:
    state.seed_widget(W_PASSAGES, n_passages <= 15)
    show_passages = st.toggle("Show passages", key=W_PASSAGES, help=f"{n_passages} passages (TEXT nodes) in the "
                              "drawn part, as dots under their group")
with c_links:
    state.seed_widget(W_TOPLINKS, DEFAULT_TOP_LINKS)
    per_edge = st.slider("Links drawn per group (to its most similar groups)", 0, 10, key=W_TOPLINKS,
                         help="A group can share its topic with dozens of others; drawing every link makes "
                         "dense clumps. 10 draws every link of most documents (must-links between hyper-edges, "
                         "ranked by the cosine of their passages' mean embeddings).")
try:
    emb = dm.embeddings(rec.doc_id, mmap=True)
except DocMasterError:
    emb = None
drawn_links = top_links(links, hes, emb, per_edge) if emb is not None else links


def _partners(he_id: int) -> tuple[list[tuple[int, float | None]], int]:
    """The selected group's strongest few must-links (cosine of the members' mean embeddings, as the
    drawn links), not all, and how many more it has."""
    mine = [he_by_id[i] for i in sorted({p for a, b in links if he_id in (a, b) for p in (a, b)})]
    if emb is not None:
        vectors = hyperedge_vectors(mine, emb)
    else:  # the summaries' embeddings (one row per hyper-edge, in id order)
        vectors = {x.id: idx.hyperedge_embeddings[x.id] for x in mine if x.id < len(idx.hyperedge_embeddings)}
    return strongest_partners(he_id, links, vectors, PARTNERS_LISTED)


# one section is drawn with the groups of other sections most like its selected group, and their links:
# what the page is about (a newcomer's default view said "0 of 64 links between groups drawn")
brought: list[int] = []
n_partners = 0
in_scope = {h.id for h in drawn}  # the chosen section's or topic's own groups
if view == "section" and selected_he in in_scope and per_edge > 0:
    partners = [p for p, _sim in _partners(selected_he)[0]]
    n_partners = len(partners)
    brought = [p for p in partners if p not in in_scope]
    drawn += [he_by_id[p] for p in brought]
    drawn_links = list(drawn_links) + [(selected_he, p) for p in brought
                                       if (selected_he, p) not in drawn_links and (p, selected_he) not in drawn_links]

# ---------------------------------------------------------------- graph
nodes: list[Node] = []
edges: list[Edge] = []
seen: set[str] = set()


def _add(node: Node) -> None:
    if node.id not in seen:
        seen.add(node.id)
        nodes.append(node)


# fixed positions (ui.graph.tree_positions): the browser draws at once, without a physics
# simulation settling after the page has finished, and no two labels share a row. A part too
# large for one readable row per hyper-edge (the whole document) is drawn as an overview
# (ui.graph.overview_layout): top-level sections and the largest groups named, the rest
# readable when zoomed in, and on hover
pos = tree_positions(tree, drawn, show_passages)
drawn_ids = {h.id for h in drawn}
overview = needs_overview(sum(1 for k in pos if k.startswith(("h:", "t:"))), MAX_GRAPH_HEIGHT)
names = group_names(tree, hes) if overview else {}
look = overview_layout(tree, drawn, names=names, roles=roles, selected=selected_he,
                       show_passages=show_passages, height=MAX_GRAPH_HEIGHT) if overview else {}
if overview:
    pos = {k: (p.x, p.y) for k, p in look.items()}
    labelled = {h.id for h in drawn if look[f"h:{h.id}"].readable}
else:
    labelled = labelled_hyperedges(drawn, [ab for ab in drawn_links if ab[0] in drawn_ids and ab[1] in drawn_ids],
                                   selected_he)


def _at(nid: str) -> dict:
    x, y = pos.get(nid, (0.0, 0.0))
    return {"x": x, "y": y}


def _text(nid: str, label: str, font: dict) -> dict:
    """A node's label and font: the overview's (sized to its row) or the plain view's."""
    if nid not in look:
        return {"label": label, "font": font}
    p = look[nid]
    return {"label": p.label, "font": {**font, "size": p.font}, "margin": p.margin}


def _add_section_chain(sid: int) -> None:
    cur = sid
    while cur is not None:
        n = tree.nodes[cur]
        title = tree.title if cur == 0 else n.content
        _add(Node(id=f"s:{cur}", title=html.escape(shorten(title, 200)), shape="box", color="#e5e7eb", size=14,
                  **_text(f"s:{cur}", short_heading(title or "(document)", 22), {"size": 13}), **_at(f"s:{cur}")))
        parent = n.parent
        if parent is not None:
            eid = f"s:{parent}->s:{cur}"
            if eid not in seen:
                seen.add(eid)
                edges.append(Edge(source=f"s:{parent}", target=f"s:{cur}", color="#9ca3af", width=1))
        cur = parent


for h in drawn:
    _add_section_chain(h.section_id)
    chosen_style = {"borderWidth": 2 if overview else 4,
                    "color": {"background": topic_colour(h.cluster), "border": "#111827"}} \
        if h.id == selected_he else {"color": topic_colour(h.cluster)}
    name = f" · {names[h.id]}" if names.get(h.id) else ""
    _add(Node(id=f"h:{h.id}", title=html.escape(f"{group_label(h.id)}{name} · topic: {_topic(h.cluster)} · "
                                                 + shorten(h.summary, 300)),
              shape="box", size=12, **_text(f"h:{h.id}", f"G{h.id}" if h.id in labelled else " ",
                                            {"size": 13, "color": "#ffffff"}),
              **chosen_style, **_at(f"h:{h.id}")))
    edges.append(Edge(source=f"s:{h.section_id}", target=f"h:{h.id}", color="#9ca3af", width=1))
    if show_passages:
        for nid in h.node_ids:
            n = tree.nodes[nid]
            dot = look.get(f"t:{nid}")
            _add(Node(id=f"t:{nid}", label=f"#{nid}", title=html.escape(f"passage #{nid} · topic: "
                                                                        f"{_topic(label_of.get(nid, -1))} · "
                                                                        + shorten(n.content, 300)), shape="dot",
                      color=topic_colour(label_of.get(nid, -1)), size=dot.size if dot else 6,
                      font={"size": dot.font if dot else 10}, **_at(f"t:{nid}")))
            edges.append(Edge(source=f"h:{h.id}", target=f"t:{nid}", color=topic_colour(h.cluster), width=1))
for a, b in drawn_links:
    if a in drawn_ids and b in drawn_ids:
        edges.append(Edge(source=f"h:{a}", target=f"h:{b}", color="#ef4444", width=2, dashes=True,
                          smooth={"enabled": True, "type": "curvedCW", "roundness": 0.35},
                          title=LINK_TITLE))

left, right = st.columns([2, 1], gap="large")
with left:
    n_drawn = sum(a in drawn_ids and b in drawn_ids for a, b in drawn_links)
    st.markdown(GRAPH_LEGEND)
    st.caption(f"{n_drawn} of {len(links)} links between groups drawn (the top {per_edge} per group"
               + (f", and {len(brought)} of the selected {group_label(selected_he)}'s {n_partners} most similar groups "
                  "of other sections listed on the right, drawn beside this section"
                  + (f"; the other {n_partners - len(brought)} are drawn in it" if n_partners > len(brought)
                     else "") if brought else "") + ")."
               + (" Links join groups of different sections: draw one topic or the whole document to see them."
                  if n_drawn == 0 and links and view == "section" else ""))
    n_named_secs = sum(1 for k, p in look.items() if k.startswith("s:") and p.readable)
    st.caption(f"Groups drawn: {len(drawn)} of {len(hes)}"
               + (f" (overview: {n_named_secs} sections and {len(labelled)} groups named, the largest and the "
                  "selected one; zoom in or hover for the others)." if overview else
                  f" ({len(labelled)} labelled, the most connected; hover for the others)."
                  if len(labelled) < len(drawn) else ".")
               + ("" if selected_he in drawn_ids else f" The selected {group_label(selected_he)} is outside the "
                                                           "drawn part.")
               + " A group's box reads G and its number (G3), its section's heading and, when the section holds several "
                 "groups, after \u00b7 the word that sets this group apart from the others (its topic, the colour, "
                 "is shared with groups of other sections).")
    # every colour drawn: the groups' boxes and, when shown, the passages' own dots (the legend listed the
    # boxes' topics only, "1 topics drawn" above dots of three colours)
    shown = legend_topics(drawn, label_of, show_passages)
    with st.expander(f"Topic colours ({len(shown)} drawn)"):
        st.caption(COLOURS_NOTE)
        legend = pd.DataFrame({"topic": [topic_label(r["topic"], topic_names.get(r["topic"])) for r in shown],
                               "groups": [r["groups"] for r in shown],
                               **({"passages": [r["passages"] for r in shown]} if show_passages else {}),
                               "colour": ["" for _ in shown]})
        st.dataframe(legend.style.apply(lambda col: [f"background-color: {topic_colour(r['topic'])}" for r in shown],
                                        subset=["colour"]),
                     hide_index=True, width="content")
    height = MAX_GRAPH_HEIGHT if overview else \
        int(min(MAX_GRAPH_HEIGHT, max(360, 60 + 34 * max(1, sum(1 for k in pos if k.startswith(("h:", "t:")))))))
    config = Config(width=900, height=height, directed=True, physics=False, hierarchical=False)
    config.width = "100%"  # fill the column instead of a fixed pixel width
    # no arrows; positions are fixed (no physics), the view fits them
    config.edges = {"arrows": {"to": {"enabled": False}}}
    config.physics["stabilization"] = {"enabled": False}
    config.interaction = {"hover": True, "tooltipDelay": 150}
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
        st.session_state[W_FOLLOW] = target not in in_scope
        st.rerun()  # redraw with the new highlight (same layout: fixed random seed)

with right:
    def _follow_selection() -> None:
        """A hyper-edge chosen here that is not drawn brings its section (or cluster) into view."""
        sel = st.session_state.get(W_HE)
        if sel not in he_by_id or sel in in_scope:
            return
        if view == "cluster":
            st.session_state[W_SCOPE_CLUSTER] = he_by_id[sel].cluster
        elif view == "section":
            st.session_state[W_SCOPE_SECTION] = readable_section(tree, hes, sel)

    he_id = st.selectbox(
        "Group of passages",
        [h.id for h in hes],
        key=W_HE,
        on_change=_follow_selection,
        format_func=lambda i: group_option(i, len(he_by_id[i].node_ids), _topic(he_by_id[i].cluster),
                                           he_by_id[i].summary),
        help="Passages of one section that belong together (a hyper-edge of the paper, Sec. 2.3).",
    )
    by_doc = dict(state.get(state.HYPEREDGE_BY_DOC) or {})
    by_doc[rec.doc_id] = he_id
    state.put(state.HYPEREDGE_BY_DOC, by_doc)
    h = he_by_id[he_id]
    sec = tree.nodes[h.section_id]
    st.markdown(f"**{group_label(h.id)}** · topic: {md_escape(_topic(h.cluster))} · {plural(len(h.node_ids), 'passage')}")
    st.caption(md_escape("Section: " + section_line(sec.section_path if h.section_id else [tree.title or rec.file_name])))
    st.markdown("**Summary**")
    st.markdown(md_escape(h.summary or "(no summary)"))
    strongest, more = _partners(he_id)
    if strongest:
        st.markdown("**Groups on the same topic in other sections**"
                    + (f" · the {len(strongest)} most similar of {len(strongest) + more}" if more else ""))
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "group": group_label(p),
                        "similarity": None if sim is None else round(sim, 2),
                        "section": shorten(section_line(tree.nodes[he_by_id[p].section_id].section_path), 50),
                        "summary": shorten(he_by_id[p].summary, 90),
                    }
                    for p, sim in strongest
                ]
            ),
            hide_index=True,
            width="stretch",
            column_config={"similarity": st.column_config.NumberColumn(
                help="Cosine of the two groups' mean passage embeddings (1 = the same meaning).")},
        )
        st.caption("Linked because their passages share a topic; the most similar first.",
                   help="In the paper's words: must-links between hyper-edges.")
        if more:
            st.caption(f"and {more} more (less similar; all on the topic {md_escape(_topic(h.cluster))}: draw *one "
                       "topic* to see them).")
    else:
        st.caption("No group of another section shares this topic.")
    st.markdown("**Member passages**")
    n_topics = len({label_of.get(nid, -1) for nid in h.node_ids})
    if n_topics > 1:  # a newcomer asked how a group can hold passages of different topics
        st.caption(f"The group's passages come from {n_topics} topics: a group gathers neighbouring passages of one "
                   "section that read alike, while topics are found over the whole collection, passage by passage. "
                   "The group's topic is the one most of its passages have.")
    for nid in h.node_ids:
        n = tree.nodes[nid]
        with st.expander(md_escape(f"#{nid} · p. {n.page_start} · topic: {_topic(label_of.get(nid, -1))} · "
                                   f"{shorten(n.content, 60)}")):
            st.markdown(md_escape(n.content))
    if h.node_ids:
        first = tree.nodes[h.node_ids[0]]
        page = first.page_start
        boxes = [b[1:5] for nid in h.node_ids for b in tree.nodes[nid].bboxes if int(b[0]) == page]
        # lazy: the page is rendered only when the expander is opened (drawn closed, it cost
        # ~0.9 s of the page's first run)
        region = st.expander(f"Page {page} with the members' regions", key=f"w_he_region_{rec.doc_id}",
                             on_change="rerun")
        if region.open:
            with region:
                render_page_image(rec.source_path, page, boxes, caption=f"{rec.file_name} · page {page} · "
                                                                       f"{group_label(h.id)}")
