"""What the hyper-edge graph page draws: which hyper-edge is selected first, which part of
a large document is drawn (one section or one cluster at a time), and where each node
goes (a fixed left-to-right tree layout computed here, so the browser draws at once
with no physics simulation and labels never overlap).

Pure functions over a :class:`~docmaster_core.model.DocumentTree` and hyper-edges
(objects with ``id``, ``section_id``, ``node_ids``, ``cluster``); no Streamlit.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

__all__ = [
    "READABLE_HYPEREDGES",
    "NON_BODY_ROLES",
    "default_hyperedge",
    "section_counts",
    "readable_section",
    "parent_section",
    "tree_positions",
    "labelled_hyperedges",
]

#: Hyper-edges a view shows by default: about as many as fit the frame at a readable size.
READABLE_HYPEREDGES = 18
#: Section roles never selected first (front matter, references, appendices).
NON_BODY_ROLES = ("front", "back", "appendix")


def default_hyperedge(hyperedges: Sequence[Any], roles: dict[int, str], links: Iterable[tuple[int, int]]) -> int:
    """The hyper-edge selected when a document opens: the most connected body
    hyper-edge (most hyper-edge links, then most passages, then the first), never one
    in front matter, references or an appendix unless there is nothing else.

    Args:
        hyperedges: The document's hyper-edges (non-empty).
        roles: ``{hyper-edge id: section role}``
            (:func:`docmaster_core.index.hyperedges.hyperedge_roles`).
        links: ``(a, b)`` hyper-edge links.

    Returns:
        A hyper-edge id.
    """
    degree: dict[int, int] = {}
    for a, b in links:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    body = [h for h in hyperedges if roles.get(h.id, "body") not in NON_BODY_ROLES] or list(hyperedges)
    best = max(body, key=lambda h: (degree.get(h.id, 0), len(h.node_ids), -h.id))
    return int(best.id)


def _section_chain(tree: Any, sid: int) -> list[int]:
    out, cur = [], sid
    while cur is not None:
        out.append(cur)
        cur = tree.nodes[cur].parent
    return out  # sid first, ROOT last


def section_counts(tree: Any, hyperedges: Sequence[Any]) -> dict[int, int]:
    """``{section node id: hyper-edges in it and its subsections}`` (ROOT = 0 counts all)."""
    out: dict[int, int] = {}
    for h in hyperedges:
        for s in _section_chain(tree, int(h.section_id)):
            out[s] = out.get(s, 0) + 1
    return out


def readable_section(tree: Any, hyperedges: Sequence[Any], he_id: int, cap: int = READABLE_HYPEREDGES) -> int:
    """The widest section around hyper-edge ``he_id`` that holds at most ``cap``
    hyper-edges (its own section when even that holds more; ROOT = 0 when the whole
    document fits)."""
    counts = section_counts(tree, hyperedges)
    h = next(x for x in hyperedges if x.id == he_id)
    chain = _section_chain(tree, int(h.section_id))
    best = chain[0]
    for s in chain:
        if counts.get(s, 0) <= cap:
            best = s
        else:
            break
    return best


def parent_section(tree: Any, sid: int, counts: dict[int, int]) -> int | None:
    """The nearest ancestor of section ``sid`` holding more hyper-edges than it (what
    "Widen" shows), or None at ROOT."""
    cur = tree.nodes[sid].parent if sid else None
    while cur is not None:
        if counts.get(cur, 0) > counts.get(sid, 0):
            return cur
        cur = tree.nodes[cur].parent
    return None


def labelled_hyperedges(hyperedges: Sequence[Any], links: Iterable[tuple[int, int]], selected: int,
                        cap: int = 40) -> set[int]:
    """The hyper-edges that get a text label: all when at most ``cap`` are drawn, else the
    ``cap`` most connected and the selected one (the others show theirs on hover)."""
    if len(hyperedges) <= cap:
        return {h.id for h in hyperedges}
    degree: dict[int, int] = {}
    for a, b in links:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    top = sorted(hyperedges, key=lambda h: (-degree.get(h.id, 0), -len(h.node_ids), h.id))[:cap]
    return {h.id for h in top} | {selected}


def tree_positions(tree: Any, hyperedges: Sequence[Any], show_passages: bool, *, col: float = 170.0,
                   row: float = 34.0, passage_row: float = 20.0) -> dict[str, tuple[float, float]]:
    """Fixed positions of the graph's nodes, left to right: sections by depth in columns,
    the hyper-edges in the next column, their passages (when shown) in the last; every
    leaf has its own row and a parent sits at the middle of its children's rows, so no
    two nodes of a column share a row (labels never overlap).

    Args:
        tree: The document tree.
        hyperedges: The hyper-edges drawn.
        show_passages: Place the members' passage nodes too.
        col, row, passage_row: Column width and row heights (vis-network pixels).

    Returns:
        ``{graph node id: (x, y)}`` with ids ``s:<section>``, ``h:<hyper-edge>``, ``t:<node>``.
    """
    by_section: dict[int, list[Any]] = {}
    for h in hyperedges:
        by_section.setdefault(int(h.section_id), []).append(h)
    # the sections on the way to a drawn hyper-edge, with their drawn children in reading order
    kids: dict[int, list[int]] = {}
    needed: set[int] = set()
    for sid in by_section:
        chain = _section_chain(tree, sid)
        needed.update(chain)
    for s in needed:
        p = tree.nodes[s].parent
        if p is not None:
            kids.setdefault(p, [])
    for s in sorted(needed):
        p = tree.nodes[s].parent
        if p is not None and s not in kids[p]:
            kids[p].append(s)
    order = {nid: i for i, nid in enumerate(tree.subtree(0))}
    for p in kids:
        kids[p].sort(key=lambda x: order.get(x, x))
    root = min(needed, key=lambda s: tree.nodes[s].depth) if needed else 0
    depth_of = {s: tree.nodes[s].depth - tree.nodes[root].depth for s in needed}
    he_col = (max(depth_of.values()) + 1) if depth_of else 1
    pos: dict[str, tuple[float, float]] = {}
    y = [0.0]

    def place_he(h: Any) -> float:
        if show_passages and h.node_ids:
            ys = []
            for nid in h.node_ids:
                pos[f"t:{nid}"] = ((he_col + 1) * col, y[0])
                ys.append(y[0])
                y[0] += passage_row
            y[0] += row - passage_row
            yc = (ys[0] + ys[-1]) / 2
        else:
            yc = y[0]
            y[0] += row
        pos[f"h:{h.id}"] = (he_col * col, yc)
        return yc

    def place_section(s: int) -> float:
        ys = [place_he(h) for h in sorted(by_section.get(s, []), key=lambda h: h.id)]
        ys += [place_section(c) for c in kids.get(s, [])]
        yc = (min(ys) + max(ys)) / 2 if ys else y[0]
        pos[f"s:{s}"] = (depth_of.get(s, 0) * col, yc)
        return yc

    place_section(root)
    # sections above the drawn root (the chain to ROOT) share its row
    for s in _section_chain(tree, root)[1:]:
        pos[f"s:{s}"] = (-(tree.nodes[root].depth - tree.nodes[s].depth) * col, pos[f"s:{root}"][1])
    return pos
