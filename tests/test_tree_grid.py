"""The Tree explorer's outline grid (issue 36, item 5): the grid starts at the chosen
node so its row is seen without scrolling (``st.dataframe`` cannot be scrolled from
Python), the page says so in plain words, and headings are shown whole.

Pure functions of ``ui/tree_view.py`` on a real tree built by the engine; no Streamlit
session, no model.
"""
from __future__ import annotations

import pytest

from docmaster_core.model import Element, NodeType, ParsedDocument
from docmaster_core.tree.build import build_tree
from ui.tree_view import (
    EVIDENCE_MARK,
    WINDOW_BEFORE,
    WRAP_ROW_HEIGHT,
    expand_to,
    outline_window,
    row_label,
    visible_rows,
    window_note,
)

T, X = NodeType.TITLE, NodeType.TEXT
PARA = "This paragraph is long enough to stand on its own as a paragraph of contract text, and longer still. "
LONG_HEADING = ("15.1 DISCLAIMER OF WARRANTIES. EXCEPT AS EXPRESSLY SET FORTH IN THIS AGREEMENT, VERTICALNET "
                "HEREBY DISCLAIMS ALL WARRANTIES, EXPRESS, IMPLIED OR")


def _tree():
    """A contract-like tree: three numbered sections of several paragraphs each, the
    last under a 144-character heading (the longest heading of the CUAD workspace)."""
    spec = [(T, "1. DEFINITIONS", 1, 1)] + [(X, f"1.{k} {PARA}", 1) for k in range(1, 9)]
    spec += [(T, "2. TERM AND TERMINATION", 2, 1)] + [(X, f"2.{k} {PARA}", 2) for k in range(1, 9)]
    spec += [(T, LONG_HEADING, 3, 1)] + [(X, f"3.{k} {PARA}", 3) for k in range(1, 4)]
    els = [Element(type=t, text=text, page=page, bbox=(10.0, 10.0 * k, 100.0, 10.0 * k + 8), order=k,
                   level=s[3] if len(s) > 3 else None)
           for k, s in enumerate(spec) for t, text, page in [s[:3]]]
    tree = build_tree(ParsedDocument(path="/x/contract.pdf", title="Co-Branding Agreement", n_pages=3,
                                     elements=els, parser="test"), "contract")
    tree.validate()
    return tree


@pytest.fixture(scope="module")
def tree():
    return _tree()


def _section(tree, starts: str) -> int:
    return next(n.id for n in tree.nodes if n.type == T and n.content.startswith(starts))


def test_grid_starts_a_few_rows_above_a_chosen_node_deep_in_the_outline(tree):
    rows = visible_rows(tree, [n.id for n in tree.nodes if n.children])  # everything open
    chosen = tree.nodes[_section(tree, "2. TERM")].children[6]  # paragraph 2.7, row 17 of 24
    idx = rows.index(chosen)
    assert idx > 12  # far below the rows a 620-px grid shows at first
    win = outline_window(rows, chosen)
    shown = rows[win.start:]
    assert win.start == idx - WINDOW_BEFORE == win.hidden_above
    assert win.pos == WINDOW_BEFORE and shown[win.pos] == chosen  # the 4th row of the grid: seen at once
    assert shown == rows[idx - WINDOW_BEFORE:]  # the rest of the outline follows, nothing else is cut
    assert win.total == len(rows)


def test_evidence_in_a_collapsed_section_is_opened_and_shown_at_the_top(tree):
    """The Filter page's "Show evidence in the tree explorer": the sections leading to
    the evidence are expanded and the grid starts at it, not at the document's top."""
    evidence = tree.nodes[_section(tree, "15.1")].children[2]
    collapsed = visible_rows(tree, {0})
    assert evidence not in collapsed
    rows = visible_rows(tree, expand_to(tree, {0}, evidence))
    win = outline_window(rows, evidence)
    assert rows[win.start:][win.pos] == evidence and win.pos <= WINDOW_BEFORE
    assert win.hidden_above == rows.index(evidence) - WINDOW_BEFORE > 0


def test_near_the_top_whole_tree_and_hidden_node_hide_nothing(tree):
    rows = visible_rows(tree, [n.id for n in tree.nodes if n.children])
    first_para = tree.nodes[_section(tree, "1. DEF")].children[0]
    near = outline_window(rows, first_para)  # row 2: nothing to hide above it
    assert (near.start, near.pos, near.hidden_above) == (0, rows.index(first_para), 0)
    assert window_note(near, first_para) == ""

    deep = rows[-1]
    whole = outline_window(rows, deep, whole=True)  # "Show the whole tree"
    assert (whole.start, whole.pos, whole.hidden_above) == (0, len(rows) - 1, 0)

    collapsed = visible_rows(tree, {0})
    gone = outline_window(collapsed, deep)  # a search or a collapse hides the chosen node
    assert (gone.start, gone.pos, gone.hidden_above, gone.total) == (0, None, 0, len(collapsed))
    assert window_note(gone, deep) == ""
    assert outline_window(rows, deep, before=-5).start == len(rows) - 1  # no negative context


def test_the_note_says_in_plain_words_what_the_grid_shows(tree):
    rows = visible_rows(tree, [n.id for n in tree.nodes if n.children])
    chosen = rows[20]
    note = window_note(outline_window(rows, chosen), chosen)
    # the grid shows WINDOW_BEFORE rows of context above the chosen row, and the note says so
    assert f"starts {WINDOW_BEFORE} rows above node #{chosen}" in note and "the one you chose (highlighted)" in note
    assert f"the first {20 - WINDOW_BEFORE} rows of the tree are hidden" in note
    one = window_note(outline_window(rows, rows[WINDOW_BEFORE + 1]), rows[WINDOW_BEFORE + 1])
    assert one.endswith("; the first row of the tree is hidden.")
    top = window_note(outline_window(rows, chosen, before=0), chosen)
    assert f"starts at node #{chosen}" in top
    whole = window_note(outline_window(rows, chosen, whole=True), chosen, whole=True)
    assert f"chosen node #{chosen} (highlighted) is row 21 of {len(rows)}" in whole
    assert "whole tree is shown from the top" in whole


def test_outline_rows_show_headings_whole_and_wrap(tree):
    sec = _section(tree, "15.1")
    label = row_label(tree, sec, True)
    assert label.endswith(LONG_HEADING) and "…" not in label  # the 144-character heading, whole
    para = row_label(tree, tree.nodes[sec].children[0], False)
    assert para.endswith("…") and len(para.split(" ", 2)[2]) <= 64  # paragraphs cut to about three lines
    assert WRAP_ROW_HEIGHT > 64  # Streamlit wraps cell text only in rows taller than 4rem
    assert EVIDENCE_MARK != "★"  # a ★ in the grid stops Chromium's grid from wrapping any row
