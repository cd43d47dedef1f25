"""A collapsible document tree drawn with native Streamlit elements.

Streamlit does not allow nested expanders, and a tree of 1,158 nodes drawn as one
widget per node takes seconds. The tree is therefore *flattened*: the visible nodes
(those whose ancestors are all expanded) are one row each of a single ``st.dataframe``
(virtualised, so a large document draws as fast as a small one), indented by depth,
with a caret (► collapsed, ▼ expanded) on nodes that have children, a node-type icon
and the full heading text. Clicking a row (its text or its box) opens that node;
clicking a row with children also expands or collapses it. Which sections are expanded is kept per
document in session state (:data:`ui.state.TREE_EXPANDED`), so switching documents
and back restores the view.

``st.dataframe`` cannot be scrolled from Python, and a new table (drawn after every
click) opens at its top. So that the chosen node's row is seen without scrolling, the
grid starts a few rows above it (:func:`outline_window`); the rows above are hidden
until the user asks for the whole tree, and :func:`window_note` says so in plain words.
Rows wrap (:data:`WRAP_ROW_HEIGHT`), so a long heading is shown whole, not cut at the
edge of the grid.

The pure functions (:func:`visible_rows`, :func:`ancestors`, :func:`row_label`,
:func:`toggle`, :func:`outline_window`, :func:`window_note`) take a
:class:`~docmaster_core.model.DocumentTree` or node ids and have no Streamlit dependency.
"""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Sequence

from .text import one_line, shorten

__all__ = [
    "TYPE_ICON",
    "CARET_OPEN",
    "CARET_CLOSED",
    "ancestors",
    "visible_rows",
    "row_label",
    "toggle",
    "expand_to",
    "sections_with_children",
    "OutlineWindow",
    "outline_window",
    "window_note",
    "WINDOW_BEFORE",
    "GRID_HEIGHT",
    "WRAP_ROW_HEIGHT",
    "EVIDENCE_MARK",
    "CHOSEN_MARK",
]

#: node type -> icon shown in the outline (also in the column help text)
TYPE_ICON = {"ROOT": "▣", "TITLE": "§", "TEXT": "¶", "TABLE": "▦", "IMAGE": "▨", "EQUATION": "∑"}
#: carets of sections with children: full-size triangles (the small ▸ / ▾ were hard to see)
CARET_OPEN, CARET_CLOSED = "▼", "►"
_INDENT = "\u2003"  # em space: kept by the table (plain spaces are collapsed by the grid)
_TEXT_CHARS = 64  # a paragraph's outline text (about three wrapped lines); headings are shown whole
#: mark of a filter-evidence node in the outline's first column. Not ★: in Chromium a ★
#: anywhere in the grid stops the wrapping of every row (checked on the CUAD workspace)
EVIDENCE_MARK = "◆"
#: Mark of the chosen node's row (an arrow, not a triangle: a caret says open / closed).
CHOSEN_MARK = "→"
#: rows of context drawn above the chosen node's row when the grid starts at it
WINDOW_BEFORE = 3
#: row height (px) of the outline grid: Streamlit wraps cell text only in rows taller
#: than 4rem (64 px); 66 px holds three lines, enough for the longest contract headings
WRAP_ROW_HEIGHT = 66
#: Height (px) of the outline grid at most: 13 wrapped rows (it was 620 px, 9 rows, which a newcomer found too few)
GRID_HEIGHT = 40 + 13 * WRAP_ROW_HEIGHT


def ancestors(tree: Any, node_id: int) -> list[int]:
    """Ids of the ancestors of ``node_id``, root first (empty for the root).

    Raises:
        IndexError: ``node_id`` is not a node of ``tree``.
    """
    out = []
    cur = tree.nodes[node_id].parent
    while cur is not None:
        out.append(cur)
        cur = tree.nodes[cur].parent
    return out[::-1]


def sections_with_children(tree: Any) -> list[int]:
    """Ids of the nodes that have children (ROOT and TITLE nodes with content)."""
    return [n.id for n in tree.nodes if n.children]


def visible_rows(tree: Any, expanded: Iterable[int], keep: set[int] | None = None) -> list[int]:
    """Node ids shown by the outline, in reading (pre-)order.

    Args:
        tree: The document tree.
        expanded: Ids of expanded nodes; the children of a node are shown only when
            it and all its ancestors are expanded. ROOT counts as expanded always.
        keep: When given (a search or type filter is active), only these nodes and
            their ancestors are shown, with every branch leading to them open.

    Returns:
        List of node ids, ROOT first. A tree of n nodes takes O(n).
    """
    if keep is not None:
        shown = set()
        for i in keep:
            if 0 <= i < len(tree.nodes):
                shown.add(i)
                shown.update(ancestors(tree, i))
        shown.add(0)
        return [i for i in tree.subtree(0) if i in shown]
    open_ = set(expanded) | {0}
    out, stack = [], [0]
    while stack:
        i = stack.pop()
        out.append(i)
        if i in open_:
            stack.extend(reversed(tree.nodes[i].children))
    return out


def row_label(tree: Any, node_id: int, expanded: Iterable[int] | bool, text_chars: int = _TEXT_CHARS) -> str:
    """The outline text of a row: depth indentation, caret (▼ open / ► closed, none
    for leaves), type icon, node id and the text (headings whole, paragraphs cut at
    ``text_chars`` characters). ``expanded`` is the set of open ids or, for one row,
    whether this row is open."""
    n = tree.nodes[node_id]
    if isinstance(expanded, bool):
        is_open = expanded
    else:
        is_open = node_id == 0 or node_id in set(expanded)
    caret = (f"{CARET_OPEN} " if is_open else f"{CARET_CLOSED} ") if n.children else _INDENT + _INDENT
    t = n.type.value
    if t == "ROOT":
        text = one_line(tree.title) or "(document)"
    elif t == "TITLE":
        text = one_line(n.content) or "(untitled section)"
    else:
        text = n.content
        if not text and t == "IMAGE":
            text = (n.extra or {}).get("caption", "") or "(image)"
        text = shorten(text, text_chars) or "(empty)"
    pad = _INDENT * max(0, n.depth)
    return f"{pad}{caret}{TYPE_ICON.get(t, '?')} #{n.id} {text}"


def toggle(expanded: Iterable[int], node_id: int) -> set[int]:
    """The expanded set with ``node_id`` flipped (ROOT stays open)."""
    out = set(expanded)
    if node_id in out:
        out.discard(node_id)
    elif node_id != 0:
        out.add(node_id)
    return out


def expand_to(tree: Any, expanded: Iterable[int], node_id: int) -> set[int]:
    """The expanded set with every ancestor of ``node_id`` opened (so it is visible)."""
    return set(expanded) | set(ancestors(tree, node_id))


class OutlineWindow(NamedTuple):
    """Which rows of the outline the grid shows: ``rows[start:]``.

    Attributes:
        start: Index in the visible rows of the grid's first row (0: from the top).
        pos: Index of the chosen node's row in the grid (``rows[start:]``), or None
            when the chosen node is not among the rows (e.g. a search hides it).
        hidden_above: Rows left out above the grid (equal to ``start``).
        total: All visible rows, shown or not.
    """

    start: int
    pos: int | None
    hidden_above: int
    total: int


def outline_window(rows: Sequence[int], chosen: int, before: int = WINDOW_BEFORE, whole: bool = False) -> OutlineWindow:
    """Where the outline grid starts so the chosen node's row is seen without scrolling.

    The grid shows ``rows[start:]``: it starts ``before`` rows above the chosen node
    (so its section heading or previous siblings give context) and runs to the end of
    the outline. When the chosen row is within ``before`` rows of the top, or
    ``whole`` is true, or the chosen node is not among ``rows``, nothing is hidden.

    Args:
        rows: The visible node ids in outline order (:func:`visible_rows`).
        chosen: The chosen node id.
        before: Rows of context kept above the chosen row (negative counts as 0).
        whole: Show the whole outline from the top (the user asked for it).

    Returns:
        The :class:`OutlineWindow`; ``pos`` is where to highlight the chosen row.
    """
    rows = list(rows)
    try:
        idx = rows.index(chosen)
    except ValueError:
        return OutlineWindow(0, None, 0, len(rows))
    start = 0 if whole else max(0, idx - max(0, before))
    return OutlineWindow(start, idx - start, start, len(rows))


def window_note(win: OutlineWindow, chosen: int, whole: bool = False) -> str:
    """One plain sentence that says which part of the outline the grid shows.

    Empty when the grid simply shows every row from the top and the chosen row is
    among the first rows (there is nothing to explain).
    """
    if win.pos is None:
        return ""
    if win.hidden_above:
        shown = ("one row" if win.pos == 1 else f"{win.pos} rows") + " above " if win.pos else "at "
        hidden = "the first row of the tree is" if win.hidden_above == 1 else \
            f"the first {win.hidden_above} rows of the tree are"
        return (f"The outline starts {shown}node #{chosen}, the one you chose (highlighted), so you see it "
                f"without scrolling; {hidden} hidden.")
    if whole and win.pos > WINDOW_BEFORE:
        return (f"The whole tree is shown from the top; the chosen node #{chosen} (highlighted) is row "
                f"{win.pos + 1} of {win.total}.")
    return ""
