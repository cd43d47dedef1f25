"""What the hyper-edge graph page draws: which hyper-edge is selected first, which part of
a large document is drawn (one section or one cluster at a time), and where each node
goes (a fixed left-to-right tree layout computed here, so the browser draws at once
with no physics simulation and labels never overlap).

A part too large for one readable row per hyper-edge (the whole document) is drawn as an
overview (:func:`overview_layout`): the top-level sections and the largest groups get a
readable label and a row tall enough for it, the rest get thin rows whose labels only
appear when zoomed in (the browser skips labels under about 4 screen pixels). A
hyper-edge's must-link list is cut to its strongest partners (:func:`strongest_partners`).

Colours: a group's box wears its topic (the majority of its passages'), a passage's dot its
own passage's topic, so the dots under one box can wear several colours;
:func:`legend_topics` lists every colour drawn (boxes, and dots when shown), grey "no
topic" included (passages in no topic: the reference list), so the legend and the drawing
agree (a newcomer saw "1 topics drawn" above dots of three colours).

Pure functions over a :class:`~docmaster_core.model.DocumentTree` and hyper-edges
(objects with ``id``, ``section_id``, ``node_ids``, ``cluster``); no Streamlit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ui.text import one_line

__all__ = [
    "READABLE_HYPEREDGES",
    "NON_BODY_ROLES",
    "default_hyperedge",
    "section_counts",
    "readable_section",
    "parent_section",
    "tree_positions",
    "labelled_hyperedges",
    "MAX_GRAPH_HEIGHT",
    "LABEL_FONT",
    "LABEL_LINE",
    "short_heading",
    "group_names",
    "needs_overview",
    "Placed",
    "overview_layout",
    "hyperedge_vectors",
    "strongest_partners",
    "TOPIC_PALETTE",
    "NO_TOPIC_COLOUR",
    "topic_colour",
    "legend_topics",
    "GOOD_FOR_GRAPH",
    "COLOURS_NOTE",
]

#: One colour per topic (``TOPIC_PALETTE[topic % len]``); grey for a passage or group in no topic.
TOPIC_PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c",
                 "#4f46e5", "#0d9488", "#9333ea", "#ca8a04", "#e11d48", "#059669"]
NO_TOPIC_COLOUR = "#9ca3af"

#: What the Hyper-edge graph page is good for, under its "What am I looking at?" line.
GOOD_FOR_GRAPH = ("**Good for:** seeing which sections of one document talk about the same thing: pick a group, "
                  "then follow its red dashed lines to the groups of other sections on its topic (where a paper's "
                  "method is evaluated, or every clause of a contract on payment). One document at a time: the "
                  "groups are built inside each document; topics across the whole collection are on the Semantic "
                  "clusters page (*whole collection*).")
#: Under the legend: why a box and the dots under it can differ.
COLOURS_NOTE = ("A group's box wears the topic most of its passages have; with *Show passages* on, each dot wears its "
                "own passage's topic, so the dots under one box can differ. Grey: no topic (passages left out of the "
                "topics, such as a reference list).")


def topic_colour(topic: int) -> str:
    """The colour of a topic in the graph (grey for -1, no topic)."""
    return NO_TOPIC_COLOUR if topic < 0 else TOPIC_PALETTE[int(topic) % len(TOPIC_PALETTE)]


def legend_topics(groups: Sequence[Any], label_of: Mapping[int, int], show_passages: bool) -> list[dict[str, int]]:
    """Every topic whose colour the graph draws, for its legend: the topics of the drawn
    groups' boxes, and with ``show_passages`` those of their passages' dots.

    Args:
        groups: The drawn hyper-edges (``cluster``, ``node_ids``).
        label_of: ``{passage node id: topic}`` (-1 or missing: no topic).
        show_passages: Whether the passages are drawn as dots.

    Returns:
        ``[{"topic", "groups", "passages"}]`` by topic (-1, no topic, first when drawn):
        how many boxes and dots wear its colour.
    """
    boxes: dict[int, int] = {}
    dots: dict[int, int] = {}
    for h in groups:
        boxes[int(h.cluster)] = boxes.get(int(h.cluster), 0) + 1
        if show_passages:
            for n in h.node_ids:
                c = int(label_of.get(int(n), -1))
                dots[c] = dots.get(c, 0) + 1
    return [{"topic": c, "groups": boxes.get(c, 0), "passages": dots.get(c, 0)} for c in sorted(set(boxes) | set(dots))]


#: Hyper-edges a view shows by default: about as many as fit the frame at a readable size.
READABLE_HYPEREDGES = 18
#: Section roles never selected first (front matter, references, appendices).
NON_BODY_ROLES = ("front", "back", "appendix")
#: The graph frame's greatest height (pixels).
MAX_GRAPH_HEIGHT = 720
#: Font size (pixels) of a readable label, and the row height such a label needs.
LABEL_FONT = 12.0
LABEL_LINE = 22.0
#: The browser fits a drawing into the frame with this margin factor (vis-network ``fit``).
_FIT_MARGIN = 1.1
#: Average width of a character, in font sizes (Arial, mixed case).
_CHAR_W = 0.5


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


def _drawn_sections(tree: Any, hyperedges: Sequence[Any]):
    """``(by_section, kids, root, depth_of)`` of the drawn part: the hyper-edges of each
    section, each needed section's drawn child sections in reading order, the shallowest
    needed section, and each needed section's depth below it."""
    by_section: dict[int, list[Any]] = {}
    for h in hyperedges:
        by_section.setdefault(int(h.section_id), []).append(h)
    # the sections on the way to a drawn hyper-edge, with their drawn children in reading order
    kids: dict[int, list[int]] = {}
    needed: set[int] = set()
    for sid in by_section:
        needed.update(_section_chain(tree, sid))
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
    return by_section, kids, root, depth_of


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
    by_section, kids, root, depth_of = _drawn_sections(tree, hyperedges)
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


# ---------------------------------------------------------------- labels of the overview

_NUMBERING = re.compile(r"^\s*(?:\(\w{1,4}\)|\d+(?:\.\d+)*\.?|[A-Za-z][.)]|[ivxlcdmIVXLCDM]{1,5}[.)])\s+(?=\S)")
_CUT_PUNCT = " ,;:-–—.(/&"


_SMALL_WORDS = frozenset("a an and as at by for from in into of on or the to via with vs".split())


def _title_case(s: str) -> str:
    """"THE EFFECTS OF WEAK" -> "The Effects of Weak" (small words lower case but the first
    and the last: "EXHIBIT A" -> "Exhibit A")."""
    words = s.lower().split(" ")
    last = len(words) - 1
    return " ".join(w if 0 < i < last and w in _SMALL_WORDS else w[:1].upper() + w[1:] for i, w in enumerate(words))


def short_heading(text: object, n: int = 22) -> str:
    """A heading cut to at most ``n`` characters at a word boundary, with its numbering
    kept ("2. Development, Delivery…"); an all-capitals heading is title-cased
    ("1 INTRODUCTION" -> "1 Introduction"). Whitespace is folded; ``"(untitled)"`` for
    an empty heading.

    Args:
        text: The heading (any object; ``str()`` of it).
        n: Most characters of the result, the ellipsis included (at least 4).

    Returns:
        The short heading.
    """
    n = max(4, int(n))
    s = one_line(text)
    if not s:
        return "(untitled)"
    if sum(c.isalpha() for c in s) > 3 and s.isupper():
        s = _title_case(s)
    if len(s) <= n:
        return s
    cut = s[: n - 1]
    if s[n - 1] != " ":  # the cut falls inside a word: end at the word before it
        space = cut.rfind(" ")
        if space >= n // 2:
            cut = cut[:space]
    words = cut.rstrip(_CUT_PUNCT).split(" ")
    while len(words) > 2 and words[-1].lower() in _SMALL_WORDS:  # not "Overfitting to…"
        words.pop()
    return " ".join(words).rstrip(_CUT_PUNCT) + "…"


def _unnumbered(heading: str) -> str:
    """The heading without its leading numbering ("(b) Bounty Fee" -> "Bounty Fee")."""
    s = one_line(heading)
    rest = _NUMBERING.sub("", s, count=1)
    return rest or s


def group_names(tree: Any, hyperedges: Sequence[Any], n: int = 30) -> dict[int, str]:
    """A short name for every hyper-edge, to label it in the graph without hovering.

    The name is its section's heading without numbering when the section holds no other
    hyper-edge ("Advice of Legal Counsel"); else that heading, cut, and the group's most
    telling word (class-based TF-IDF over the member passages,
    :func:`docmaster_core.index.cluster_names.cluster_names`, words the heading already
    has skipped): "Bounty Fee · shipped". A group directly under the document (front
    matter) is named by its two most telling words, or the first words of its summary.

    Args:
        tree: The document tree (member passages are ``tree.nodes[i].content``).
        hyperedges: All hyper-edges of the document (``id``, ``section_id``,
            ``node_ids``, ``summary``); the words are weighed against all of them.
        n: Most characters of a name.

    Returns:
        ``{hyper-edge id: name}`` (at most ``n`` characters each; may be ``""`` for a
        group with no text at all).
    """
    from docmaster_core.index.cluster_names import cluster_names

    texts = [tree.nodes[i].content or "" for h in hyperedges for i in h.node_ids]
    labels = [int(h.id) for h in hyperedges for _ in h.node_ids]
    terms = cluster_names(texts, labels, n_terms=2) if texts else {}
    per_section: dict[int, int] = {}
    for h in hyperedges:
        per_section[int(h.section_id)] = per_section.get(int(h.section_id), 0) + 1
    out: dict[int, str] = {}
    for h in hyperedges:
        sid = int(h.section_id)
        raw = _unnumbered(tree.nodes[sid].content) if sid else ""
        head = short_heading(raw, 200) if raw else ""
        words = [w for w in terms.get(int(h.id), []) if w.lower() not in head.lower()]
        if head and (per_section[sid] == 1 or not words):
            name = short_heading(head, n)
        elif head:
            # the heading whole with the best word that fits, else its first words with the best word
            word = next((w for w in words if len(head) + 3 + len(w) <= n), words[0][: n // 2])
            name = (head if len(head) + 3 + len(word) <= n else short_heading(head, n - 3 - len(word))) + " · " + word
        else:
            name = " ".join(words[:2]) if words else short_heading(h.summary or "", n) if one_line(h.summary) else ""
        out[int(h.id)] = name[:n]
    return out


# ---------------------------------------------------------------- the overview layout

def needs_overview(rows: int, height: int = MAX_GRAPH_HEIGHT, row: float = 34.0) -> bool:
    """True when ``rows`` rows of :func:`tree_positions` (drawn hyper-edges and passages)
    do not fit a frame of ``height`` pixels at a readable size (60 px for the frame's
    margins): the part is then drawn by :func:`overview_layout`."""
    return 60 + row * max(0, int(rows)) > height


@dataclass(frozen=True)
class Placed:
    """Where and how the overview draws one graph node.

    Attributes:
        x, y: Position (vis-network pixels; the overview is sized so the browser draws
            it at zoom 1, so these are screen pixels until the user zooms).
        label: The node's text (short heading, ``H<id> name``, ``#<node>``).
        font: Font size in pixels at zoom 1; the browser skips a label under about 4
            screen pixels, so a small one shows only when zoomed in.
        margin: Box margin in pixels (box shapes).
        size: Dot radius in pixels (passage dots; 0 for boxes).
    """

    x: float
    y: float
    label: str
    font: float
    margin: float = 3.0
    size: float = 0.0

    @property
    def readable(self) -> bool:
        """The label can be read without zooming (font of at least 9 px)."""
        return self.font >= 9.0


def overview_layout(tree: Any, hyperedges: Sequence[Any], *, names: Mapping[int, str] | None = None,
                    roles: Mapping[int, str] | None = None, selected: int | None = None,
                    show_passages: bool = False, height: float = MAX_GRAPH_HEIGHT, width: float = 600.0,
                    max_groups: int = 12) -> dict[str, Placed]:
    """Positions and labels of a part too large for one readable row per hyper-edge (the
    whole document): sections by depth in columns, hyper-edges in the next, passages (when
    shown) in the last, as :func:`tree_positions`, but sized to fit a ``width`` x
    ``height`` frame at zoom 1.

    Readable labels (font :data:`LABEL_FONT`, a row of :data:`LABEL_LINE`) go to the drawn
    root section and its top-level sections (the next level too while a level holds a
    single section; the largest ones when not all fit) and to the selected hyper-edge and
    the ``max_groups`` largest others (body groups before front matter, references and
    appendices; fewer when they do not fit). Every other node gets an equal thin row and a
    label scaled to it, drawn by the browser only when zoomed in; its hover text is the
    page's. A label never overlaps another: each sits in its own row band, and a column is
    as wide as its readable labels (the others are scaled to the column).

    Args:
        tree: The document tree.
        hyperedges: The hyper-edges drawn (``id``, ``section_id``, ``node_ids``).
        names: ``{hyper-edge id: short name}`` (:func:`group_names`; computed when None).
        roles: ``{hyper-edge id: section role}`` ("front", "back", ...); None: all body.
        selected: The selected hyper-edge: always labelled when drawn.
        show_passages: Place the members' passage nodes too.
        height, width: The frame in pixels (the width is a guess: the page's column).
        max_groups: Most hyper-edges labelled besides the selected one.

    Returns:
        ``{graph node id: Placed}`` with ids ``s:<section>``, ``h:<hyper-edge>``,
        ``t:<node>`` (the sections above the drawn root too); ``{}`` when nothing is drawn.
    """
    if not hyperedges:
        return {}
    by_section, kids, root, depth_of = _drawn_sections(tree, hyperedges)
    names = dict(names) if names is not None else group_names(tree, hyperedges)
    roles = roles or {}
    avail_h = height / _FIT_MARGIN - 4.0
    avail_w = width / _FIT_MARGIN - 4.0
    counts = section_counts(tree, hyperedges)
    order = {nid: i for i, nid in enumerate(tree.subtree(0))}

    # sections with a readable label: the root, its top-level sections (deeper while one)
    named_secs = {root}
    level = [root]
    fit_secs = max(1, int(avail_h * 0.9 // LABEL_LINE))
    while True:
        nxt = [c for s in level for c in kids.get(s, [])]
        if not nxt:
            break
        named_secs.update(sorted(nxt, key=lambda s: (-counts.get(s, 0), order.get(s, s)))[:fit_secs])
        if len(nxt) != 1:
            break
        level = nxt

    # hyper-edges with a readable label: the selected one, then the largest groups
    ranked = sorted(hyperedges, key=lambda h: (roles.get(h.id, "body") in NON_BODY_ROLES, -len(h.node_ids), h.id))
    ranked = [h for h in ranked if h.id == selected] + [h for h in ranked if h.id != selected]
    cap = max(0, min(int(max_groups) + any(h.id == selected for h in hyperedges), int(avail_h * 0.5 // LABEL_LINE)))
    named_he = [h.id for h in ranked[:cap]]

    def stack(u: float, named: set[int]) -> tuple[float, dict[str, float], dict[str, float]]:
        """Rows of height ``u`` (a readable label: LABEL_LINE): total height, centres, band heights."""
        y = 0.0
        ys: dict[str, float] = {}
        band: dict[str, float] = {}

        def place_he(h: Any) -> None:
            nonlocal y
            k = len(h.node_ids) if show_passages else 0
            hb = max(LABEL_LINE if h.id in named else u, k * u)
            for i, nid in enumerate(h.node_ids if k else []):
                ys[f"t:{nid}"] = y + (i + 0.5) * hb / k
                band[f"t:{nid}"] = hb / k
            ys[f"h:{h.id}"], band[f"h:{h.id}"] = y + hb / 2, hb
            y += hb

        def place_section(s: int) -> None:
            nonlocal y
            top, first = y, len(ys)
            for h in sorted(by_section.get(s, []), key=lambda h: h.id):
                place_he(h)
            for c in kids.get(s, []):
                place_section(c)
            if s in named_secs and y - top < LABEL_LINE:  # a readable label needs a taller band
                shift = (top + LABEL_LINE - y) / 2  # the members move to its middle
                for key in list(ys)[first:]:
                    ys[key] += shift
                y = top + LABEL_LINE
            ys[f"s:{s}"], band[f"s:{s}"] = (top + y) / 2, y - top

        place_section(root)
        return y, ys, band

    lo, hi = 0.2, 34.0
    while stack(lo, set(named_he))[0] > avail_h and len(named_he) > (1 if selected in named_he else 0):
        named_he.pop()  # the smallest labelled group gives its row back
    named = set(named_he)
    if stack(hi, named)[0] <= avail_h:
        lo = hi
    else:
        for _ in range(30):
            mid = (lo + hi) / 2
            if stack(mid, named)[0] <= avail_h:
                lo = mid
            else:
                hi = mid
    _, ys, band = stack(lo, named)

    # labels, then columns as wide as their readable labels
    above = _section_chain(tree, root)[1:]  # the sections above the drawn root (same row)

    def sec_label(s: int, n: int) -> str:
        return short_heading((tree.title or "Document") if s == 0 else tree.nodes[s].content, n)

    labels: dict[str, str] = {}
    col_of: dict[str, int] = {}
    for s in depth_of:
        labels[f"s:{s}"] = sec_label(s, 18 if s == root else 26)
        col_of[f"s:{s}"] = depth_of[s]
    for i, s in enumerate(above, start=1):
        labels[f"s:{s}"] = sec_label(s, 14)
        col_of[f"s:{s}"] = -i
        ys[f"s:{s}"], band[f"s:{s}"] = ys[f"s:{root}"], avail_h
    he_col = max(depth_of.values()) + 1
    for h in hyperedges:
        labels[f"h:{h.id}"] = f"G{h.id} {names.get(h.id, '')}".strip()
        col_of[f"h:{h.id}"] = he_col
        for nid in (h.node_ids if show_passages else []):
            labels[f"t:{nid}"] = f"#{nid}"
            col_of[f"t:{nid}"] = he_col + 1
    readable = {f"s:{s}" for s in named_secs} | {f"s:{s}" for s in above} | {f"h:{i}" for i in named}

    def text_w(label: str, font: float) -> float:
        return _CHAR_W * font * len(label)

    cols = sorted(set(col_of.values()))
    fixed: dict[int, float] = {}
    for k in readable:
        c = col_of[k]
        fixed[c] = max(fixed.get(c, 0.0), text_w(labels[k], LABEL_FONT) + 6.0)
    if show_passages:
        fixed[he_col + 1] = 30.0
    fixed.setdefault(he_col, 40.0)
    gap = 16.0
    flex = [c for c in cols if c not in fixed]
    rest = avail_w - sum(fixed.values()) - gap * (len(cols) - 1)
    flex_w = min(120.0, max(24.0, rest / len(flex))) if flex else 0.0
    col_w = {c: fixed.get(c, flex_w) for c in cols}
    x_of: dict[int, float] = {}
    left = 0.0
    for c in cols:
        x_of[c] = left + col_w[c] / 2
        left += col_w[c] + gap

    out: dict[str, Placed] = {}
    for k, label in labels.items():
        x, y, b, c = x_of[col_of[k]], ys[k], band[k], col_of[k]
        if k.startswith("t:"):
            out[k] = Placed(x, y, label, font=min(10.0, 0.55 * b), margin=0.0, size=max(0.5, min(6.0, 0.45 * b)))
        elif k in readable:
            out[k] = Placed(x, y, label, font=LABEL_FONT, margin=3.0)
        else:
            margin = min(3.0, max(1.0, 0.12 * b))  # at least 2 px high: a thin row stays visible
            fits_w = (col_w[c] - 2 * margin) / max(1.0, _CHAR_W * len(label))
            out[k] = Placed(x, y, label, font=max(0.5, min(LABEL_FONT, 0.55 * b, fits_w)), margin=margin)
    return out


# ---------------------------------------------------------------- the must-link list

def hyperedge_vectors(hyperedges: Sequence[Any], emb: Any) -> dict[int, Any]:
    """``{hyper-edge id: unit mean embedding of its member passages}`` (float32, (d,)),
    the vectors :func:`ui.indexing.top_links` ranks the drawn links by.

    Args:
        hyperedges: Hyper-edges with ``id`` and ``node_ids``.
        emb: float32 (|V|, d) node embeddings of the document (indexable by node id).

    Returns:
        One vector per hyper-edge with members.
    """
    import numpy as np

    out = {}
    for h in hyperedges:
        if h.node_ids:
            v = np.asarray(emb[list(h.node_ids)], dtype=np.float32).mean(axis=0)
            out[int(h.id)] = v / (float(np.linalg.norm(v)) or 1.0)
    return out


def strongest_partners(he_id: int, links: Iterable[tuple[int, int]], vectors: Mapping[int, Any],
                       n: int = 5) -> tuple[list[tuple[int, float | None]], int]:
    """The ``n`` must-linked partners of hyper-edge ``he_id`` most similar to it, and how
    many more it has.

    Args:
        he_id: The hyper-edge.
        links: ``(a, b)`` hyper-edge links (each pair once).
        vectors: ``{hyper-edge id: unit vector}`` (:func:`hyperedge_vectors`); a partner
            (or ``he_id``) without one has no score and comes last.
        n: Partners listed (>= 0).

    Returns:
        ``([(partner id, cosine similarity or None), ...], more)``: best first (ties by
        id), at most ``n``; ``more`` is the number of partners left out.
    """
    partners = sorted({b if a == he_id else a for a, b in links if he_id in (a, b) and a != b})
    mine = vectors.get(he_id)
    scored = [(p, float(mine @ vectors[p]) if mine is not None and p in vectors else None) for p in partners]
    scored.sort(key=lambda t: (t[1] is None, -(t[1] or 0.0), t[0]))
    n = max(0, int(n))
    return scored[:n], max(0, len(scored) - n)
