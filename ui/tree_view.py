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

The pure functions (:func:`visible_rows`, :func:`ancestors`, :func:`row_label`,
:func:`toggle`) take a :class:`~docmaster_core.model.DocumentTree` and node ids and
have no Streamlit dependency.
"""
from __future__ import annotations

from typing import Any, Iterable

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
]

#: node type -> icon shown in the outline (also in the column help text)
TYPE_ICON = {"ROOT": "▣", "TITLE": "§", "TEXT": "¶", "TABLE": "▦", "IMAGE": "▨", "EQUATION": "∑"}
#: carets of sections with children: full-size triangles (the small ▸ / ▾ were hard to see)
CARET_OPEN, CARET_CLOSED = "▼", "►"
_INDENT = "\u2003"  # em space: kept by the table (plain spaces are collapsed by the grid)
_TEXT_CHARS = 140  # a paragraph's outline text; headings are shown whole


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
