"""App tests of the demo path (issue 17): no stale labels after a document switch, the
collapsible tree, the filter results (row click, differences, kept only), clickable
citations, the readable graph and one must-link count, the example collection and stable
cluster colours. Same fixtures as ``test_app.py`` (a small workspace ingested through the
Upload page).
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ui.filtering import doc_match, evidence_list  # noqa: E402
from ui.plain import SAME_LABEL as MUST_PAIRS_LABEL  # noqa: E402
from ui.indexing import HE_LINKS_LABEL  # noqa: E402
from ui.plain import GROUPS_LABEL, TOPICS_LABEL  # noqa: E402
from support.app import APP, TIMEOUT, collection_table, doc_key, open_app, page_texts, run_app  # noqa: E402,F401


def _widget_texts(at: AppTest) -> list[str]:
    """Every label, option and caption a user sees on the page (widgets included), except the
    document picker's options (they name every document, by title, to choose from)."""
    out = page_texts(at)
    for sb in list(at.selectbox) + list(at.multiselect):
        out += [str(sb.label), *([] if str(sb.key or "").endswith("_doc") else map(str, sb.options))]
    for df in at.dataframe:
        out += [str(v) for v in df.value.astype(str).to_numpy().ravel()]
    return out

def test_switching_documents_leaves_no_stale_label(app_uploaded, app_env):
    """Tree explorer and hyper-edge graph: after switching document, no widget shows the
    previous document's section, node or hyper-edge label, and a node-type filter set on
    one document does not carry over to the next."""
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(app_env["ws"], create=False)
    titles = {d.doc_id: ws.load_tree(d.doc_id) for d in ws.documents()}
    at = open_app("pages/tree.py")
    doc_a = at.selectbox(key="w_tree_doc").value
    doc_b = next(d for d in titles if d != doc_a)
    words_a = {titles[doc_a].title} | {n.content for n in titles[doc_a].nodes if n.type.value == "TITLE"} - \
        {n.content for n in titles[doc_b].nodes} - {titles[doc_b].title}
    node_box = at.selectbox(key=doc_key(at, "w_tree_node"))
    node_box.select(node_box.options[-1])
    run_app(at)
    at.button_group(key=doc_key(at, "w_tree_types")).set_value(["TABLE"])
    run_app(at)
    assert any("nodes match" in c.value for c in at.caption)
    # the picker names each document by its title too (a newcomer looked contracts up by title)
    assert any(o.startswith(titles[doc_b].title[:40]) for o in at.selectbox(key="w_tree_doc").options)
    at.selectbox(key="w_tree_doc").set_value(doc_b)
    run_app(at)
    assert at.session_state["dm_doc_id"] == doc_b
    seen = " ".join(_widget_texts(at))
    stale = [w for w in words_a if w and w in seen]
    assert not stale, stale
    # the node box and the outline are the new document's, its type filter untouched
    box = at.selectbox(key=f"w_tree_node_{doc_b}")
    assert box.value == 0 and titles[doc_b].title in box.options[0]
    assert set(at.button_group(key=f"w_tree_types_{doc_b}").value) == {"TITLE", "TEXT", "TABLE", "IMAGE", "EQUATION"}
    assert any(f"of {len(titles[doc_b].nodes)} nodes visible" in c.value for c in at.caption)
    # back to A: its own choices come back
    at.selectbox(key="w_tree_doc").set_value(doc_a)
    run_app(at)
    assert at.button_group(key=f"w_tree_types_{doc_a}").value == ["TABLE"]

    at.switch_page("pages/hyperedges.py")
    run_app(at)
    assert at.session_state["w_he_doc"] == doc_a
    he_a = at.selectbox(key=f"w_he_select_{doc_a}")
    he_a.select(he_a.options[-1])
    run_app(at)
    labels_a = set(at.selectbox(key=f"w_he_select_{doc_a}").options)
    at.selectbox(key="w_he_doc").set_value(doc_b)
    run_app(at)
    he_b = at.selectbox(key=f"w_he_select_{doc_b}")
    assert he_b.options and not (set(he_b.options) & labels_a)
    assert not any(sb.key == f"w_he_select_{doc_a}" for sb in at.selectbox)
    assert any(m.value.startswith("**Group ") for m in at.markdown)

def test_tree_expand_and_collapse(app_uploaded):
    """The outline is a collapsible tree: a click on a section row opens the node and
    expands it (its children appear, full titles, type icons), a second click collapses
    it; Expand all / Collapse all open and close every section."""
    from ui.tree_view import CARET_CLOSED, CARET_OPEN

    at = open_app("pages/tree.py")
    doc = at.session_state["dm_doc_id"]

    def outline():
        df = next(d for d in at.dataframe if d.key and d.key.startswith(f"w_tree_table_{doc}"))
        return df, list(df.value["outline"])

    at.button(key=f"w_tree_collapse_all_{doc}").click()
    run_app(at)
    df, rows = outline()
    first = rows[0]
    assert CARET_OPEN in first and "▣" in first  # the root, open
    sections = [i for i, r in enumerate(rows) if CARET_CLOSED in r]
    assert sections, rows  # top-level sections, closed
    i = sections[0]
    n_closed = len(rows)
    at.session_state[df.key] = {"selection": {"rows": [i], "columns": [], "cells": []}}  # a click on row i
    run_app(at)
    df, rows = outline()
    assert len(rows) > n_closed and CARET_OPEN in rows[i]
    node = at.session_state[f"w_tree_node_{doc}"]
    assert f"#{node} " in rows[i] and any(f"#{node}" in s.value for s in at.subheader)
    assert rows[i + 1].count("\u2003") > rows[i].count("\u2003")  # a child, indented deeper
    assert any(icon in r for r in rows[i + 1:] for icon in ("¶", "▦", "∑", "▨", "§"))
    at.session_state[df.key] = {"selection": {"rows": [i], "columns": [], "cells": []}}  # click it again
    run_app(at)
    _, rows = outline()
    assert len(rows) == n_closed and CARET_CLOSED in rows[i]
    at.button(key=f"w_tree_expand_all_{doc}").click()
    run_app(at)
    _, rows = outline()
    assert len(rows) == len(at.selectbox(key=f"w_tree_node_{doc}").options)  # every node visible
    assert not any(CARET_CLOSED in r for r in rows)
    # the section toggle button beside the outline collapses the open node
    at.button(key=f"w_tree_toggle_{doc}").click()
    run_app(at)
    _, rows = outline()
    assert CARET_CLOSED in rows[i]
    # a click on the row's text (a cell, not the row's box) opens and expands it too
    df, rows = outline()
    at.session_state[df.key] = {"selection": {"rows": [], "columns": [], "cells": [[i, "outline"]]}}
    run_app(at)
    _, rows = outline()
    assert CARET_OPEN in rows[i]

def test_graph_readable_default_and_one_must_link_count(app_uploaded):
    """The graph draws the top few links per hyper-edge (a slider sets how many) with a
    legend, and the Clusters page and the graph count must-links the same way, under
    the same labels."""
    at = open_app("pages/hyperedges.py")
    doc = at.session_state["dm_doc_id"]
    graph = {m.label: int(m.value) for m in at.metric}
    assert {HE_LINKS_LABEL, MUST_PAIRS_LABEL} <= set(graph)
    assert any(m.value.startswith("**Legend**") for m in at.markdown)

    def drawn():
        line = next(c.value for c in at.caption if "links between groups drawn" in c.value)
        n, total = re.match(r"(\d+) of (\d+)", line).groups()
        return int(n), int(total)

    assert at.slider(key="w_he_top_links").value == 2
    # the links between groups are drawn as arcs: without "enabled", the browser drew them straight, one over
    # another along the column of groups (a newcomer saw "one vertical line"; checked in Chromium)
    graph_args = json.loads(json.loads(at.get("component_instance")[0].proto.json_args)["data"])
    dashed = [e for e in graph_args["edges"] if e.get("dashes")]
    assert all(e["smooth"]["enabled"] and e["smooth"]["type"] == "curvedCW" for e in dashed)
    n2, total = drawn()
    assert len(dashed) == n2  # the caption counts the links drawn
    # the metric counts the groups with a link (a newcomer read "group links 14052" for 460 groups); the caption the links
    assert n2 <= total and (0 < graph[HE_LINKS_LABEL] <= graph[GROUPS_LABEL] if total else graph[HE_LINKS_LABEL] == 0)
    at.slider(key="w_he_top_links").set_value(0)
    run_app(at)
    assert drawn() == (0, total)
    at.slider(key="w_he_top_links").set_value(10)
    run_app(at)
    assert drawn()[0] >= n2
    at.switch_page("pages/clusters.py")
    run_app(at)
    assert at.session_state["dm_doc_id"] == doc and at.radio(key="w_clusters_mode").value == "document"
    clusters = {m.label: int(m.value) for m in at.metric}
    assert clusters[MUST_PAIRS_LABEL] == graph[MUST_PAIRS_LABEL]

def test_top_links_keeps_the_most_similar_partners():
    from types import SimpleNamespace

    from ui.indexing import top_links

    emb = np.eye(4, dtype=np.float32)
    emb[1] = [0.9, 0.1, 0, 0]
    emb[2] = [0.1, 0.9, 0, 0]
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    hes = [SimpleNamespace(id=i, node_ids=[i]) for i in range(4)]
    links = [(0, 1), (0, 2), (0, 3)]
    assert top_links(links, hes, emb, 1) == [(0, 1), (0, 2), (0, 3)]  # each partner keeps its only link
    assert top_links([(0, 1), (0, 2)], hes[:3], emb, 0) == []
    assert top_links(links, hes, emb, -1) == links
    hes2 = [SimpleNamespace(id=0, node_ids=[0]), SimpleNamespace(id=1, node_ids=[1]), SimpleNamespace(id=2, node_ids=[1])]
    assert set(top_links([(0, 1), (0, 2), (1, 2)], hes2, emb, 1)) == {(0, 1), (1, 2)} or \
        set(top_links([(0, 1), (0, 2), (1, 2)], hes2, emb, 1)) == {(0, 1), (0, 2), (1, 2)}

def _crafted_runs(app_env, keep_a: int, keep_b: int, ids: tuple[int, int] = (9001, 9002)) -> dict:
    """Two runs (as the engine writes them) over the app_uploaded documents: A keeps the first ``keep_a``
    documents (by file name), B the first ``keep_b``; one evidence passage (a TEXT node
    with its box) per document."""
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(app_env["ws"], create=False)
    docs = sorted(ws.documents(), key=lambda d: d.file_name)

    def ev(d):
        n = next(n for n in ws.load_tree(d.doc_id).nodes if n.type.value == "TEXT" and n.bboxes)
        b = n.bboxes[0]
        return {"evidence_id": "C1", "doc_id": d.doc_id, "node_id": n.id, "strategy": "combined", "score": 0.6,
                "text": n.content, "page": int(b[0]), "bbox": list(b[1:5]), "section_path": n.section_path,
                "node_type": "TEXT"}

    def run(rid, kept):
        return ({
            "run_id": rid, "strategy": "combined", "condition": "crafted", "backend": "offline-calibrated",
            "cuts": {"combined": {"rule": "best_fraction", "threshold": 1.0, "kept": kept, "of": len(docs), "best": 5.0}},
            "documents": [{"doc_id": d.doc_id, "file": d.file_name, "evidence": {"combined": [ev(d)]},
                           "decisions": {"combined": {"decision": r <= kept, "rationale": f"why {d.file_name}",
                                                      "tokens": 0, "evidence_score": 5.0 - r, "rank": r}}}
                          for r, d in enumerate(docs, 1)]})

    return {"A": run(ids[0], keep_a), "B": run(ids[1], keep_b)}, docs


def test_filter_differences_table_lists_only_differences(app_uploaded, app_env):
    runs, docs = _crafted_runs(app_env, 1, 2)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_filter_runs"] = runs
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    assert any("Differences between A and B: 1 document" in s.value for s in at.subheader)
    diff = [df.value for df in at.dataframe if "A match" in df.value.columns]
    assert len(diff) == 1 and list(diff[0]["file"]) == [docs[1].file_name]
    # each document also by its title (a newcomer could not tell contracts apart by "cuad-039_emmiscommu…")
    assert list(diff[0]["title"]) == [docs[1].title] and docs[1].title
    # kept first, and "kept only" hides the others
    table_a = next(df for df in at.dataframe if df.key == "w_filter_table_A_9001_0")
    assert list(table_a.value["kept"]) == ["✓ yes", "✗ no"]
    at.toggle(key="w_filter_kept_only").set_value(True)
    run_app(at)
    table_a = next(df for df in at.dataframe if df.key == "w_filter_table_A_9001_1")
    assert list(table_a.value["file"]) == [docs[0].file_name]
    # the same runs in both configurations: no differences, no table
    at.session_state["dm_filter_runs"] = {"A": runs["A"], "B": {**runs["A"], "run_id": 9003}}
    run_app(at)
    assert any("0 document(s)" in s.value for s in at.subheader)
    assert not [df for df in at.dataframe if "A match" in df.value.columns]

def test_filter_row_click_opens_that_documents_evidence(app_uploaded, app_env):
    """A click on a row of a result table opens that document's evidence (its passage,
    the page image with the box) and "Show evidence in the tree explorer" opens the
    evidence node there, highlighted."""
    runs, docs = _crafted_runs(app_env, 1, 1)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_filter_runs"] = runs
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    assert at.selectbox(key="w_filter_doc").value == docs[0].doc_id  # the kept document opens first
    at.session_state["w_filter_table_B_9002_0"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    run_app(at)
    assert at.selectbox(key="w_filter_doc").value == docs[1].doc_id and at.radio(key="w_filter_which").value == "B"
    texts = page_texts(at)
    assert f"{docs[1].file_name}: rejected by all (combined)" in texts
    assert f"all (combined): why {docs[1].file_name}" in texts
    ev = evidence_list(runs["B"]["documents"][1])[0]
    assert any(ev["text"][:40] in t for t in texts) and len(at.image) == 1
    assert at.selectbox(key="w_filter_page").value == ev["page"]
    at.button(key="w_filter_to_tree").click()
    run_app(at)
    assert at.session_state["dm_doc_id"] == docs[1].doc_id
    assert at.session_state[f"w_tree_node_{docs[1].doc_id}"] == ev["node_id"]
    outline = next(df for df in at.dataframe if df.key and df.key.startswith("w_tree_table_")).value
    row = outline[outline["outline"].str.contains(f"#{ev['node_id']} ", regex=False)]
    assert list(row[" "]) == ["→"]
    assert any(f"#{ev['node_id']}" in s.value for s in at.subheader)

def test_filter_tables_show_each_strategy_in_one_compact_cell(app_uploaded, app_env):
    """Issue 24: the per-strategy columns were cut off in the side-by-side tables; each
    table now has one short ``strategies`` cell per document (T/S/H/C/F with ✓/✗)."""
    runs, docs = _crafted_runs(app_env, 1, 2)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_filter_runs"] = runs
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    table_a = next(df for df in at.dataframe if df.key == "w_filter_table_A_9001_0").value
    assert list(table_a.columns) == ["rank", "score", "kept", "file", "strategies", "title", "certainty", "rationale"]
    assert list(table_a["strategies"]) == ["1 of 1", "0 of 1"]
    diff = next(df.value for df in at.dataframe if "A match" in df.value.columns)
    assert list(diff.columns) == ["file", "title", "A match", "B match", "A strategies", "B strategies"]
    assert list(diff["A strategies"]) == ["all ✗ no"] and list(diff["B strategies"]) == ["all ✓ yes"]


def test_filter_evidence_panel_follows_the_current_run(app_uploaded, app_env):
    """Issue 24: after a new run the evidence panel opens the new run's best document,
    not the document (and configuration) picked in the previous run."""
    runs, docs = _crafted_runs(app_env, 1, 2)
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.session_state["dm_filter_runs"] = runs
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    at.session_state["w_filter_table_B_9002_0"] = {"selection": {"rows": [1], "columns": [], "cells": []}}
    run_app(at)
    assert at.selectbox(key="w_filter_doc").value == docs[1].doc_id and at.radio(key="w_filter_which").value == "B"
    at.switch_page("pages/tree.py")  # a page switch keeps the pick: the runs are the same
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    assert at.selectbox(key="w_filter_doc").value == docs[1].doc_id
    new_runs, _ = _crafted_runs(app_env, 1, 1, ids=(9011, 9012))  # a new run of A and B
    at.session_state["dm_filter_runs"] = new_runs
    run_app(at)
    assert at.selectbox(key="w_filter_doc").value == docs[0].doc_id and at.radio(key="w_filter_which").value == "A"
    assert f"{docs[0].file_name}: kept by all (combined)" in page_texts(at)


def test_filter_configuration_b_survives_a_reload(app_uploaded, app_env):
    """Issue 24: configuration B's settings are kept in the workspace, so a reload (a new
    browser session) shows them; A keeps its own."""
    from docmaster_core.store.workspace import Workspace

    at = open_app("pages/filter.py")
    a_top_k = at.slider(key="w_filter_A_top_k").value
    ws = Workspace(app_env["ws"], create=False)
    assert ws.load_preference("filter_config_B") is None  # opening the page writes nothing
    try:
        at.slider(key="w_filter_B_top_k").set_value(7)
        run_app(at)
        at.slider(key="w_filter_B_gamma").set_value(0.45)
        run_app(at)
        at.multiselect(key="w_filter_B_strategies").set_value(["semantic", "combined"])
        run_app(at)
        again = open_app("pages/filter.py")  # a reload: a new session
        assert again.slider(key="w_filter_B_top_k").value == 7
        assert again.slider(key="w_filter_B_gamma").value == pytest.approx(0.45)
        assert again.multiselect(key="w_filter_B_strategies").value == ["semantic", "combined"]
        assert again.slider(key="w_filter_A_top_k").value == a_top_k
    finally:  # the other tests of this workspace start from the defaults
        ws.save_preference("filter_config_B", {})


def test_chat_citation_links_contiguous_numbers_and_scope(app_uploaded, app_env):
    """Each [E1] marker of an answer links to its citation's anchor, the numbers are
    contiguous in first-use order, and "Open a source" shows the passage with its page;
    "documents I choose" starts empty; "the last filter" is the last saved run."""
    from docmaster_core import cli
    from docmaster_core.store.workspace import Workspace

    if not Workspace(app_env["ws"], create=False).runs("filter"):  # run alone: save one filter run
        assert cli.main(["filter", "The paper evaluates retrieval on question answering benchmarks.",
                         "--workspace", str(app_env["ws"]), "--json"]) == 0
    at = open_app("pages/chat.py")
    saved = Workspace(app_env["ws"], create=False).runs("filter")
    scope = at.radio(key="w_chat_scope")
    assert scope.value == "all"  # the default, even after a filter run
    n_kept = len(saved[0]["result"]["matches"])
    # the option says how many and which condition (a newcomer who ran four filters asked which run)
    assert any(o.startswith(f"documents kept by the last filter run ({n_kept}; \"") for o in scope.options), scope.options
    scope.set_value("filter")
    run_app(at)
    texts = page_texts(at)
    assert not any("the this" in t for t in texts)
    if n_kept:
        # the caption says which run: configuration A or B of the Filter page, or the command line
        made_by = saved[0]["params"].get("app_configuration")
        where = f"(configuration {made_by} of the Filter page" if made_by else "(from the command line or a script)"
        assert any(t.startswith(f"Filter run #{saved[0]['run_id']} {where}") and ", condition" in t for t in texts)
        assert any(t.startswith(f"Answering from: the {n_kept} ") and
                   f"kept by filter run {saved[0]['run_id']}" in t for t in texts)
    at.radio(key="w_chat_scope").set_value("chosen")
    run_app(at)
    assert at.multiselect(key="w_chat_docs").value == []  # starts empty
    assert "Answering from: no document chosen yet" in page_texts(at)
    at.radio(key="w_chat_scope").set_value("all")
    run_app(at)
    at.chat_input(key="w_chat_input").set_value("Which benchmarks are used to evaluate retrieval accuracy?")
    run_app(at)
    hist = at.session_state["dm_chat_history"]
    turn = len(hist) - 1
    answer = next(m.value for m in at.chat_message[turn].markdown)
    linked = re.findall(r"\[\\\[(E\d+)\\\]\]\(#(cite-\d+-e\d+)\)", answer)
    assert linked, answer
    first_use = list(dict.fromkeys(e for e, _ in linked))
    assert first_use == [f"E{i}" for i in range(1, len(first_use) + 1)]  # contiguous, in first-use order
    for e, anchor in linked:
        assert anchor == f"cite-{turn}-{e.lower()}"
    anchors = [h.proto.body for h in at.get("html")]
    assert all(any(f'id="{a}"' in body for body in anchors) for _, a in linked)
    lines = [c.value for c in at.chat_message[turn].caption if c.value.startswith("\\[E")]
    assert [re.match(r"\\\[(E\d+)", x).group(1) for x in lines][: len(first_use)] == first_use
    assert all(re.sub(r"\\(.)", r"\1", x).split(" · ")[0].split("] ", 1)[1] in {c["file"] for c in hist[turn]["citations"]}
               for x in lines)  # whole file names, not cut
    at.button_group(key=f"w_chat_source_{turn}").set_value("E1")
    run_app(at)
    assert len(at.image) == 1  # the cited page with the passage's box
    cited = {c["evidence_id"]: c for c in hist[turn]["citations"]}
    from ui.citations import renumber

    _, shown = renumber(hist[turn]["text"], hist[turn]["citations"])
    e1 = shown[0]
    assert " ".join(e1["text"].split())[:40] in " ".join(" ".join(page_texts(at)).split())
    assert cited[e1["source_id"]]["page"] == e1["page"]

def test_renumber_citations_contiguous():
    from ui.citations import linked_answer, renumber

    cites = [{"evidence_id": i, "page": n} for n, i in enumerate(["E1", "E2", "E7", "E9"], 1)]
    text, out = renumber("A [E7] and [E1], again [E7]; then [E2]. Unknown [E5].", cites)
    assert text == "A [E1] and [E2], again [E1]; then [E3]. Unknown [E5]."
    assert [(c["evidence_id"], c["source_id"], c["page"]) for c in out] == \
        [("E1", "E7", 3), ("E2", "E1", 1), ("E3", "E2", 2), ("E4", "E9", 4)]
    md = linked_answer(text, 2, {"E1", "E2", "E3"})
    assert "[\\[E1\\]](#cite-2-e1)" in md and "\\[E5\\]" in md and "(#cite-2-e5)" not in md
    # a passage cited once per page (it runs onto the next page) is one citation, both pages named
    from ui.citations import _citation_line

    two = [{"evidence_id": "E2", "page": 1, "quote": "We build it."},
           {"evidence_id": "E2", "page": 2, "quote": "It has 10,000."}]
    _, out = renumber("It has 10,000 [E2].", two)
    assert len(out) == 1 and out[0]["pages"] == [1, 2] and out[0]["page"] == 1
    assert out[0]["quote"] == "We build it. It has 10,000."
    assert " · pp. 1, 2 · " in _citation_line({**out[0], "file": "a.pdf"})

def test_example_collection_shows_something_on_every_page(app_env, monkeypatch):
    """"Load an example collection" on an empty workspace writes the three generated
    PDFs, ingests them with progress and every page then has something to show: a tree
    with tables, figures and equations, hyper-edges, clusters, a filter with its
    suggested condition that keeps the paper, and a cited chat answer."""
    from docmaster_core.examples import EXAMPLE_CONDITION, EXAMPLE_FILES, EXAMPLE_QUESTION

    monkeypatch.setenv("DOCMASTER_WORKSPACE", str(app_env["root"] / "examples_ws"))
    at = open_app("pages/upload.py")
    at.button(key="w_upload_examples").click()
    run_app(at)
    coll = collection_table(at)
    assert sorted(coll["file"]) == sorted(EXAMPLE_FILES) and set(coll["status"]) == {"indexed"}
    assert (coll["tables"] >= 1).all() and (coll["images"] >= 1).all() and (coll["titles"] >= 4).all()
    assert "Sparse Attention for Long Document Retrieval" in set(coll["title"])
    assert any("Examples loaded" in s.value for s in at.success)
    at.switch_page("pages/tree.py")
    run_app(at)
    assert any(" of " in c.value and "nodes visible" in c.value for c in at.caption)
    at.switch_page("pages/hyperedges.py")
    run_app(at)
    assert any(m.label == GROUPS_LABEL and int(m.value) >= 1 for m in at.metric)
    at.switch_page("pages/clusters.py")
    run_app(at)
    assert any(m.label == TOPICS_LABEL and int(m.value) >= 1 for m in at.metric)
    at.switch_page("pages/filter.py")
    run_app(at)
    assert at.text_area(key="w_filter_condition").value == EXAMPLE_CONDITION
    at.button(key="w_filter_run").click()
    run_app(at)
    run_a = at.session_state["dm_filter_runs"]["A"]
    kept = {d["file"] for d in run_a["documents"] if doc_match(run_a, d)}
    assert "example_paper_sparse_attention.pdf" in kept and "example_report_regional_energy.pdf" not in kept
    at.switch_page("pages/chat.py")
    run_app(at)
    # the example hint's question, asked right after the example filter, with the default
    # scope: answered from the manual (the filter kept only the paper)
    assert at.radio(key="w_chat_scope").value == "all"
    assert "Answering from: all 3 documents" in page_texts(at)
    at.chat_input(key="w_chat_input").set_value(EXAMPLE_QUESTION)
    run_app(at)
    answer = at.session_state["dm_chat_history"][-1]
    assert answer["outcome"] == "answered" and answer["scope_label"] == "all 3 documents"
    assert answer["citations"] and answer["citations"][0]["file"] == "example_manual_water_filter.pdf"
    assert "six months" in answer["text"]

def test_cluster_colours_follow_their_group():
    """After a re-clustering that renumbers the clusters, each group keeps its colour; a
    new group gets a colour no kept group uses."""
    from ui.cluster_colors import match_colors

    keys = list(range(9))
    first = match_colors(None, keys, [0, 0, 0, 1, 1, 1, 2, 2, 2], 5)
    assert first == {0: 0, 1: 1, 2: 2}
    prev = {k: first[lab] for k, lab in zip(keys, [0, 0, 0, 1, 1, 1, 2, 2, 2])}
    # the same groups renumbered (2 -> 0, 0 -> 1, 1 -> 2), one node moved, and a new cluster 3
    now = match_colors(prev, keys, [1, 1, 1, 2, 2, 3, 0, 0, 0], 5)
    assert now[1] == 0 and now[2] == 1 and now[0] == 2
    assert now[3] not in (0, 1, 2)
    assert match_colors(prev, keys, [0] * 9, 5) == {0: 0}  # merged: the tie goes to one colour


def test_cluster_chart_colours_topics_by_stable_id_and_keeps_text_plain():
    """The clusters scatter: a topic's colour is its stable id's (so it survives a redraw
    that drops another topic), the legend lists the topics in the given order, the hover
    carries the passage text as it is (Vega's tooltip escapes it; the page never marks it
    up), the file only in collection scope, and the chart is SVG (points readable) up to 2,000
    points, a canvas past them."""
    import pandas as pd

    from ui.cluster_chart import PALETTE, cluster_chart

    assert len(set(PALETTE)) == len(PALETTE) == 24
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 1.0, 0.5], "topic": ["Topic 3 · a (2)", "Topic 3 · a (2)",
                          "Topic 7 · b (1)"], "node": [4, 5, 9], "page": [1, 1, 2], "file": ["f.pdf"] * 3,
                          "section": ["1 Intro"] * 3, "passage": ["<b>x</b> & y", "z", "w"]})
    spec = cluster_chart(frame, [(3, "Topic 3 · a (2)"), (7, "Topic 7 · b (1)")], "3 passages", show_file=False).to_dict()
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domain"] == ["Topic 3 · a (2)", "Topic 7 · b (1)"] and scale["range"] == [PALETTE[3], PALETTE[7]]
    tips = [t["field"] for t in spec["encoding"]["tooltip"]]
    assert tips == ["topic", "node", "page", "section", "passage"]
    rows = next(iter(spec["datasets"].values()))
    assert rows[0]["passage"] == "<b>x</b> & y"
    assert spec["usermeta"]["embedOptions"]["renderer"] == "svg"
    many = pd.concat([frame] * 700, ignore_index=True)  # 2,100 points: a canvas
    assert cluster_chart(many, [(3, "Topic 3 · a (2)"), (7, "Topic 7 · b (1)")], "t", False).to_dict()[
        "usermeta"]["embedOptions"]["renderer"] == "canvas"
    both = cluster_chart(frame, [(3, "Topic 3 · a (2)"), (7, "Topic 7 · b (1)")], "t", show_file=True).to_dict()
    assert "file" in [t["field"] for t in both["encoding"]["tooltip"]]
    assert cluster_chart(frame, [(27, "Topic 3 · a (2)")], "t", False).to_dict()["encoding"]["color"]["scale"][
        "range"] == [PALETTE[27 % 24]]

def test_chat_scope_defaults_to_all_and_persists_across_pages(app_uploaded, app_env):
    """Issue 24: the chat answers from all documents unless the user chooses otherwise,
    says so above the chat input, and keeps the choice for the session when the user
    leaves the Chat page and comes back."""
    from docmaster_core import cli
    from docmaster_core.store.workspace import Workspace

    ws = Workspace(app_env["ws"], create=False)
    if not ws.runs("filter"):  # a saved filter run, so that "the last filter" exists
        assert cli.main(["filter", "The paper evaluates retrieval on question answering benchmarks.",
                         "--workspace", str(app_env["ws"]), "--json"]) == 0
    run = ws.runs("filter")[0]
    n_docs = len(ws.documents())
    at = open_app("pages/chat.py")
    assert at.radio(key="w_chat_scope").value == "all" and at.session_state["dm_chat_scope"] == "all"
    assert f"Answering from: all {n_docs} documents" in page_texts(at)
    at.radio(key="w_chat_scope").set_value("filter")
    run_app(at)
    for page in ("pages/upload.py", "pages/tree.py"):
        at.switch_page(page)
        run_app(at)
        at.switch_page("pages/chat.py")
        run_app(at)
        assert at.radio(key="w_chat_scope").value == "filter", page
        assert any(t.startswith("Answering from: ") and f"kept by filter run {run['run_id']}" in t
                   or t == f"Answering from: no document: filter run {run['run_id']} kept none"
                   for t in page_texts(at)), page
    at.radio(key="w_chat_scope").set_value("all")
    run_app(at)
    at.switch_page("pages/filter.py")
    run_app(at)
    at.switch_page("pages/chat.py")
    run_app(at)
    assert at.radio(key="w_chat_scope").value == "all"
    assert f"Answering from: all {n_docs} documents" in page_texts(at)


def test_chat_after_a_filter_that_kept_nothing_offers_every_document(app_uploaded, app_env):
    """A newcomer's last filter ("a cooking recipe") kept no contract: the Chat page's input
    was greyed out with the reason only at the top, and no way on to the other documents.
    The page now says why beside the input and offers "Search all N documents"."""
    from docmaster_core import cli
    from docmaster_core.store.workspace import Workspace

    assert cli.main(["filter", "The document is a cooking recipe with baking times for sourdough bread.",
                     "--workspace", str(app_env["ws"]), "--json"]) == 0
    ws = Workspace(app_env["ws"], create=False)
    run = ws.recent_runs("filter", 1)[0]
    assert run["result"]["matches"] == []  # nothing in the collection is a recipe
    n_docs = len(ws.documents())
    at = open_app("pages/chat.py")
    at.radio(key="w_chat_scope").set_value("filter")
    run_app(at)
    texts = page_texts(at)
    assert f"Answering from: no document: filter run {run['run_id']} kept none" in texts
    assert any(t.startswith(f"The last filter run (#{run['run_id']}) kept no document") for t in texts), texts
    assert at.chat_input(key="w_chat_input").disabled
    at.button(key="w_chat_scope_to_all").click()
    run_app(at)
    assert at.radio(key="w_chat_scope").value == "all" and at.session_state["dm_chat_scope"] == "all"
    assert not at.chat_input(key="w_chat_input").disabled
    assert f"Answering from: all {n_docs} documents" in " ".join(page_texts(at))
    assert not [b for b in at.button if b.key == "w_chat_scope_to_all"]
    assert at.session_state["dm_chat_pending"] is None  # nothing is asked by the switch itself


def test_narrowed_not_found_offers_all_then_examples_are_removed(app_env, monkeypatch):
    """Issue 24, the demo that does not trip: asked from the one document the example
    filter kept, the example question is not found; the answer lists its closest
    passages, says the other documents were not searched and "Search all 3 documents"
    answers it from the manual. Then the collection is curated on the Upload page: a
    ticked document is removed (after a confirmation), the Filter page marks it in the
    run it was decided in, and "Remove the example documents" empties the workspace,
    which ``docmaster check`` finds sound."""
    from docmaster_core import cli
    from docmaster_core.examples import EXAMPLE_FILES, EXAMPLE_QUESTION
    from docmaster_core.store.workspace import Workspace

    monkeypatch.setenv("DOCMASTER_WORKSPACE", str(app_env["root"] / "examples_ws"))
    at = open_app("pages/upload.py")
    at.button(key="w_upload_examples").click()  # ingests, or finds them already there
    run_app(at)
    assert sorted(collection_table(at)["file"]) == sorted(EXAMPLE_FILES)
    at.switch_page("pages/filter.py")
    run_app(at)
    at.button(key="w_filter_run").click()
    run_app(at)
    run_a = at.session_state["dm_filter_runs"]["A"]
    kept = [d["file"] for d in run_a["documents"] if doc_match(run_a, d)]
    assert kept == ["example_paper_sparse_attention.pdf"]

    at.switch_page("pages/chat.py")
    run_app(at)
    at.radio(key="w_chat_scope").set_value("filter")
    run_app(at)
    scope = f"the 1 of 3 documents kept by filter run {run_a['run_id']}"
    assert f"Answering from: {scope}" in page_texts(at)
    at.chat_input(key="w_chat_input").set_value(EXAMPLE_QUESTION)
    run_app(at)
    hist = at.session_state["dm_chat_history"]
    turn = len(hist) - 1
    msg = hist[turn]
    assert msg["outcome"] == "not_found" and not msg["citations"] and msg["closest"]
    assert msg["text"].startswith("The documents do not say")
    texts = page_texts(at)
    assert f"Only {scope} was searched; the other 2 documents were not." in " ".join(texts)
    assert "Closest passages (they do not answer the question):" in texts
    closest_lines = [t for t in texts if t.startswith("[E")]
    assert len(closest_lines) == len(msg["closest"]) >= 1
    assert all("example_paper_sparse_attention.pdf" in t for t in closest_lines)
    assert f"· {len(msg['closest'])} closest passage(s) · answered from {scope}" in " ".join(texts)
    at.button_group(key=f"w_chat_source_{turn}").set_value("E1")  # a closest passage opens with its page
    run_app(at)
    assert len(at.image) == 1
    at.button(key=f"w_chat_search_all_{turn}").click()
    run_app(at)
    hist = at.session_state["dm_chat_history"]
    assert len(hist) == turn + 3 and hist[-2] == {"role": "user", "text": EXAMPLE_QUESTION}
    answer = hist[-1]
    assert answer["outcome"] == "answered" and answer["scope_label"] == "all 3 documents"
    assert answer["citations"][0]["file"] == "example_manual_water_filter.pdf"
    assert at.radio(key="w_chat_scope").value == "all" and at.session_state["dm_chat_scope"] == "all"
    # the page says the scope was switched and stays so; the old answer no longer offers "Search all"
    assert any("switched by" in t and "Search all documents" in t for t in page_texts(at))
    assert not [b for b in at.button if b.key == f"w_chat_search_all_{turn}"]

    # curate: tick the paper in the collection table, remove it (asked first)
    at.switch_page("pages/upload.py")
    run_app(at)
    table = next(df for df in at.dataframe if df.key and df.key.startswith("w_upload_collection"))
    row = list(table.value["file"]).index("example_paper_sparse_attention.pdf")
    at.session_state[table.key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    run_app(at)
    at.button(key="w_upload_remove").click()
    run_app(at)
    assert any("Remove 1 document from the workspace: example_paper_sparse_attention.pdf?" in w.value
               .replace("\\", "") for w in at.warning)
    assert len(collection_table(at)) == 3  # nothing removed before the confirmation
    at.button(key="w_upload_remove_confirm").click()
    run_app(at)
    assert any("Removed 1 document: example_paper_sparse_attention.pdf" in s.value.replace("\\", "")
               for s in at.success)
    assert sorted(collection_table(at)["file"]) == sorted(f for f in EXAMPLE_FILES if "paper" not in f)
    # the run the paper was kept in still shows, the paper marked as removed
    at.switch_page("pages/filter.py")
    run_app(at)
    files = [f for df in at.dataframe if df.key and df.key.startswith("w_filter_table_A") for f in df.value["file"]]
    assert "example_paper_sparse_attention.pdf (removed)" in files
    at.switch_page("pages/chat.py")
    run_app(at)
    at.radio(key="w_chat_scope").set_value("filter")
    run_app(at)
    texts = page_texts(at)
    assert any(t.startswith("Answering from: no document: the documents filter run") and
               t.endswith("kept are no longer in the workspace") for t in texts), texts
    assert any(t.startswith("The documents the last filter run (#") and "have been removed" in t for t in texts)
    assert at.chat_input(key="w_chat_input").disabled

    at.switch_page("pages/upload.py")
    run_app(at)
    at.button(key="w_upload_remove_examples").click()
    run_app(at)
    assert not [df for df in at.dataframe if "doc_id" in df.value.columns]
    assert any("No documents yet" in i.value for i in at.info)
    # files chosen but not ingested yet (and while they are ingested): the empty collection says so, not "No
    # documents yet: drop PDFs above" (a newcomer read that under 14 of 15 files done)
    at.file_uploader(key="w_upload_files").set_value([("chosen.pdf", b"%PDF-1.4 not ingested", "application/pdf")])
    run_app(at)
    assert any("The collection is empty until the chosen file is ingested" in i.value for i in at.info)
    assert not any("No documents yet" in i.value for i in at.info)
    at.file_uploader(key="w_upload_files").set_value([])
    run_app(at)
    assert Workspace(app_env["root"] / "examples_ws", create=False).documents() == []
    assert cli.main(["check", "--workspace", str(app_env["root"] / "examples_ws")]) == 0
