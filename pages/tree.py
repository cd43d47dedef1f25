"""Tree explorer: a document's tree as a collapsible outline (sections expand and
collapse, a click opens a node); a node's content, summary, embedding and page region.

The outline grid starts a few rows above the chosen node, highlighted, so its row is
seen without scrolling (the page says so; "Show the whole tree" shows every row), and
its rows wrap so headings are shown whole."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from docmaster_core.errors import WorkspaceError
from ui import state
from ui.render import render_node_content, render_page_image, section_line, vector_bars
from ui.layout import page_header
from ui.text import md_escape
from ui.tree_view import (
    CARET_CLOSED,
    CARET_OPEN,
    CHOSEN_MARK,
    EVIDENCE_MARK,
    GRID_HEIGHT,
    TYPE_ICON,
    WINDOW_BEFORE,
    WRAP_ROW_HEIGHT,
    expand_to,
    outline_window,
    row_label,
    sections_with_children,
    toggle,
    visible_rows,
    window_note,
)
from ui.widgets import choose_document, load_tree_cached, node_label, open_docmaster_or_stop, selected_rows

W_DOC = "w_tree_doc"
# per-document widget keys (state.doc_key): a document's widgets never show another's labels
W_TYPES = "w_tree_types"
W_SEARCH = "w_tree_search"
W_NODE = "w_tree_node"
W_TABLE = "w_tree_table"
W_ONLY_EV = "w_tree_only_evidence"
W_EXPAND_ALL = "w_tree_expand_all"
W_COLLAPSE_ALL = "w_tree_collapse_all"
W_TOGGLE = "w_tree_toggle"
W_WHOLE = "w_tree_whole"  # "Show the whole tree" / "Start at #N" above the outline
W_FULLVEC = "w_tree_full_vector"
K_TYPES_BY_DOC = "dm_tree_types_by_doc"  # dict[doc_id, list of node types shown]
ALL_TYPES = ["TITLE", "TEXT", "TABLE", "IMAGE", "EQUATION"]

page_header("Tree explorer")
dm = open_docmaster_or_stop()
rec = choose_document(dm, W_DOC)
if rec is None:
    st.stop()

try:
    tree = load_tree_cached(str(dm.path), rec.doc_id, rec.added_at)
except WorkspaceError as e:
    st.error(md_escape(str(e)))
    st.stop()

doc = rec.doc_id
n_nodes = len(tree.nodes)
highlight = set((state.get(state.HIGHLIGHT) or {}).get(doc, []))
counts = tree.count_by_type()
st.caption(
    md_escape(
        f"{rec.title or rec.file_name} · {rec.n_pages} pages · {n_nodes} nodes · "
        + ", ".join(f"{k} {v}" for k, v in counts.items() if v and k != "ROOT")
        + f" · parser {rec.parser}"
    )
)
ss = st.session_state
k_types, k_search, k_node, k_only = (state.doc_key(k, doc) for k in (W_TYPES, W_SEARCH, W_NODE, W_ONLY_EV))
k_gen, k_rows = f"dm_tree_table_gen_{doc}", f"dm_tree_rows_{doc}"
k_whole = f"dm_tree_whole_for_{doc}"  # the node for which the whole tree was asked (until another is chosen)
expanded = set((state.get(state.TREE_EXPANDED) or {}).get(doc, [0]))
current = (state.get(state.NODE_BY_DOC) or {}).get(doc, 0)
if not isinstance(current, int) or not 0 <= current < n_nodes:
    current = 0

# a click in the outline table, read before the table is drawn again: it opens the row's
# node and, for a section, expands or collapses it. The table is then drawn under a new
# key, so its selection does not stick to a row that now holds another node.
gen = int(ss.get(k_gen, 0))
picked = selected_rows(ss.get(state.doc_key(W_TABLE, doc) + f"_{gen}"))
last_rows = ss.get(k_rows) or []
if picked and picked[0] < len(last_rows) and 0 <= last_rows[picked[0]] < n_nodes:
    current = int(last_rows[picked[0]])
    if tree.nodes[current].children:
        expanded = toggle(expanded, current)
    ss[k_node] = current
    gen += 1
    ss[k_gen] = gen
elif isinstance(ss.get(k_node), int) and ss[k_node] != current and 0 <= ss[k_node] < n_nodes:
    current = ss[k_node]  # chosen in the node box: open the branch that leads to it
    expanded = expand_to(tree, expanded, current)

# the outline gets the larger share (a newcomer saw 9 of 121 rows, headings wrapped in a narrow column); the
# page image on the right still fits its width
left, right = st.columns([11, 9], gap="medium")

# ------------------------------------------------------------------ outline (left)
with left:
    types_by_doc = dict(ss.get(K_TYPES_BY_DOC) or {})  # survives the widget's removal on a document switch
    state.seed_widget(k_types, types_by_doc.get(doc, ALL_TYPES))
    types = st.pills("Node types", ALL_TYPES, selection_mode="multi", key=k_types) or []
    types_by_doc[doc] = list(types)
    ss[K_TYPES_BY_DOC] = types_by_doc
    query = st.text_input("Search text", key=k_search, placeholder="word or phrase in content or summary")
    only_ev = False
    if highlight:
        only_ev = st.toggle(f"Only filter evidence {EVIDENCE_MARK}", key=k_only, help=f"{len(highlight)} evidence nodes of the last filter run")
    q = (query or "").strip().lower()
    filtering = bool(q) or only_ev or set(types) != set(ALL_TYPES)
    keep = None
    if filtering:
        wanted = set(types)
        keep = {
            n.id
            for n in tree.nodes
            if n.type.value in wanted
            and (not q or q in (n.content or "").lower() or q in (n.summary or "").lower())
            and (not only_ev or n.id in highlight)
        }

    b1 = b2 = b3 = st.container(horizontal=True)  # buttons side by side, sized to their labels
    # a newcomer asked why these were greyed out: say it on the button
    why_off = ("A search or a node-type choice shows every matching node with its sections already open; clear it "
               "to expand or collapse by hand." if filtering else None)
    if b1.button("Expand all", key=state.doc_key(W_EXPAND_ALL, doc), icon=":material/unfold_more:", disabled=filtering,
                 help=why_off):
        expanded = set(sections_with_children(tree))
    if b2.button("Collapse all", key=state.doc_key(W_COLLAPSE_ALL, doc), icon=":material/unfold_less:",
                 disabled=filtering, help=why_off):
        expanded = {0}
    if tree.nodes[current].children and current != 0:
        is_open = current in expanded
        if b3.button(("Collapse" if is_open else "Expand") + f" #{current}", key=state.doc_key(W_TOGGLE, doc),
                     icon=":material/unfold_less:" if is_open else ":material/unfold_more:", disabled=filtering):
            expanded = toggle(expanded, current)

    rows = visible_rows(tree, expanded, keep)
    open_now = set(expanded) | {0} if keep is None else set(rows)
    # the grid cannot be scrolled from here and opens at its top: it starts a few rows
    # above the chosen node (the rows above are hidden until "Show the whole tree")
    whole = ss.get(k_whole) == current
    win = outline_window(rows, current, whole=whole)
    shown = rows[win.start:]
    ss[k_rows] = shown
    bar = st.container(horizontal=True, vertical_alignment="center")
    note = window_note(win, current, whole)
    if note:
        bar.caption(note)
    if win.hidden_above:
        bar.button("Show the whole tree", key=state.doc_key(W_WHOLE, doc), icon=":material/vertical_align_top:",
                   on_click=lambda: ss.update({k_whole: current}),
                   help="Show the outline from its first row; choosing another node starts at it again")
    elif whole and win.pos is not None and win.pos > WINDOW_BEFORE:
        bar.button(f"Start at #{current}", key=state.doc_key(W_WHOLE, doc), icon=":material/my_location:",
                   on_click=lambda: ss.pop(k_whole, None), help="Start the outline at the chosen node again")
    frame = pd.DataFrame(
        {
            " ": [CHOSEN_MARK if i == current else (EVIDENCE_MARK if i in highlight else "") for i in shown],
            "page": [tree.nodes[i].page_start for i in shown],  # before the outline: never pushed out of view
            "outline": [row_label(tree, i, i in open_now) for i in shown],
        }
    )
    grid = frame
    if win.pos is not None:  # the chosen node's row, highlighted (a colour, not a selection: a click opens a node)
        grid = frame.style.set_properties(subset=pd.IndexSlice[[win.pos], :], **{"background-color": "rgba(255, 189, 69, 0.35)"})
    # the legend above the grid, whole (in the column header it was cut); the chosen row's mark is
    # no caret, so it never reads as "closed" beside an open section's ▼
    st.caption(f"{CHOSEN_MARK} chosen node · {EVIDENCE_MARK} evidence of the last filter run · {CARET_CLOSED} closed · "
               f"{CARET_OPEN} open · " + " · ".join(f"{v} {k.lower()}" for k, v in TYPE_ICON.items()))
    st.dataframe(
        grid,
        key=state.doc_key(W_TABLE, doc) + f"_{gen}",
        on_select="rerun",
        selection_mode=["single-row", "single-cell"],  # a click on the row's text opens it too
        hide_index=True,
        height=min(GRID_HEIGHT, 40 + WRAP_ROW_HEIGHT * len(shown)),
        row_height=WRAP_ROW_HEIGHT,  # tall enough that Streamlit wraps the text: whole headings
        width="stretch",
        column_config={
            " ": st.column_config.TextColumn(" ", width=28, help=f"{CHOSEN_MARK} chosen node (highlighted) · {EVIDENCE_MARK} evidence of the last filter run"),
            "outline": st.column_config.TextColumn(
                "outline", width=360,
                help="Rows wrap so headings are shown whole; long paragraphs are cut (the node's panel shows all)"),
            "page": st.column_config.NumberColumn("page", width=48),
        },
    )
    if keep is not None:
        st.caption(f"{len(keep)} of {n_nodes} nodes match (shown with their sections) · tick the box at the left of "
                   "a row to open it")
        if not keep:
            st.warning("No node matches these filters.")
    else:
        st.caption(f"{len(rows)} of {n_nodes} nodes visible · tick the box at the left of a row to open it; for a section it also "
                   "expands or collapses it")

    options = list(range(n_nodes)) if keep is None else sorted(keep | {current})
    ss[k_node] = current
    node_id = st.selectbox("Node", options, key=k_node, format_func=lambda i: node_label(tree, i, 90))
    by_doc = dict(state.get(state.NODE_BY_DOC) or {})
    by_doc[doc] = node_id
    state.put(state.NODE_BY_DOC, by_doc)
    exp_by_doc = dict(state.get(state.TREE_EXPANDED) or {})
    exp_by_doc[doc] = sorted(expanded)
    state.put(state.TREE_EXPANDED, exp_by_doc)

# ------------------------------------------------------------------ node detail (right)
node = tree.nodes[node_id]
with right:
    st.subheader(f"{node.type.value} #{node.id}" + (f"  {EVIDENCE_MARK} filter evidence" if node.id in highlight else ""))
    pages = f"p. {node.page_start}" + (f"–{node.page_end}" if node.page_end != node.page_start else "")
    st.caption(md_escape(f"{pages} · depth {node.depth} · {section_line(node.section_path)}"))
    # lazy tabs: only the open tab's content is computed and sent to the browser (the page
    # image and the embedding panel, drawn hidden, slowed the page's first paint)
    tab_content, tab_page, tab_emb = st.tabs(["Content & summary", "Page region", "Embedding"],
                                             key=f"w_tree_tabs_{rec.doc_id}", on_change="rerun")

    if tab_content.open:
        with tab_content:
            render_node_content(node)
            st.markdown("**Summary**")
            if node.summary:
                st.markdown(md_escape(node.summary))
            else:
                st.caption("(no summary stored)")
            if node.children:
                st.caption(f"{len(node.children)} children: " + md_escape(", ".join(f"#{c}" for c in node.children[:40])))

    if tab_page.open:
        with tab_page:
            by_page: dict[int, list] = {}
            for b in node.bboxes:
                by_page.setdefault(int(b[0]), []).append(tuple(b[1:5]))
            page_opts = sorted(by_page) or [max(1, node.page_start)]
            page = page_opts[0]
            if len(page_opts) > 1:
                page = st.radio("Page", page_opts, horizontal=True, key=f"w_tree_page_{rec.doc_id}_{node.id}")
            cap = f"{rec.file_name} · page {page} · node #{node.id}"
            if len(by_page.get(page, [])) > 1:  # a newcomer asked what the red, blue and green boxes meant
                st.caption("Each box is one piece of this node on the page (a paragraph over several blocks, a "
                           "table's parts); the colours only tell the pieces apart.")

            @st.dialog(f"Page {page}", width="large")
            def _zoom() -> None:
                render_page_image(rec.source_path, page, by_page.get(page, []), caption=cap, zoom=2.5)

            if st.button("Zoom", key=f"w_tree_zoom_{rec.doc_id}_{node.id}", icon=":material/zoom_in:",
                         help="Open the page at full width"):
                _zoom()
            render_page_image(rec.source_path, page, by_page.get(page, []), caption=cap)

    if tab_emb.open:
        with tab_emb:
            try:
                emb = dm.embeddings(rec.doc_id, mmap=True)
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
                    st.caption(f"cosine to parent #{node.parent}: {float(v @ np.asarray(emb[node.parent])):.3f} "
                               "(1 = the same meaning; around 0.3 loosely related, below 0.1 unrelated)")
                # a picture, not a chart: the page loads no charting library for it
                st.image(vector_bars(v), caption=f"the {v.shape[0]} components (blue > 0, red < 0; "
                         f"scaled to the largest, {float(np.abs(v).max()):.3f})", width="stretch")
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
                    # the cosine stays in view beside a long node label
                    column_config={"node": st.column_config.TextColumn("node", width="large"),
                                   "cosine": st.column_config.NumberColumn("cosine", format="%.3f", width="small")},
                )
                if st.toggle("Show the full vector", key=W_FULLVEC):
                    st.code(json.dumps([round(float(x), 6) for x in v]), language="json", wrap_lines=True)
                    st.download_button(
                        "Download vector (JSON)",
                        json.dumps({"doc_id": rec.doc_id, "node_id": node.id, "vector": [float(x) for x in v]}),
                        file_name=f"{rec.doc_id}_node{node.id}.json",
                        mime="application/json",
                    )
