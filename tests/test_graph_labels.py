"""The hyper-edge graph readable at every zoom (issue 36, item 3): short headings, short
names for groups, the whole-document overview that labels only what fits, and the
must-link list cut to the strongest few (ui/graph.py; pure functions, no Streamlit)."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.model import DocumentTree, HyperEdge, Node, NodeType
from ui.graph import (
    LABEL_FONT,
    LABEL_LINE,
    MAX_GRAPH_HEIGHT,
    group_names,
    hyperedge_vectors,
    needs_overview,
    overview_layout,
    short_heading,
    strongest_partners,
    tree_positions,
)

T, X = NodeType.TITLE, NodeType.TEXT


def make_tree(spec, title="A contract") -> DocumentTree:
    """spec: (kind, parent index, content) in pre-order; index 0 is ROOT."""
    nodes = [Node(id=0, type=NodeType.ROOT, depth=0, parent=None, children=[], content="", page_start=1, page_end=1)]
    for kind, parent, content in spec:
        i = len(nodes)
        nodes.append(Node(id=i, type=kind, depth=nodes[parent].depth + 1, parent=parent, children=[],
                          content=content, page_start=1, page_end=1))
        nodes[parent].children.append(i)
    tree = DocumentTree(doc_id="d", title=title, nodes=nodes)
    tree.validate()
    return tree


# ---------------------------------------------------------------- short headings

@pytest.mark.parametrize("text, n, want", [
    ("2. Development, Delivery and Acceptance", 22, "2. Development…"),  # numbered, cut after a word
    ("2. Development, Delivery and Acceptance", 30, "2. Development, Delivery…"),  # no trailing "and", no comma
    ("5.1.1 OVERFITTING TO WEAK SUPERVISION", 40, "5.1.1 Overfitting to Weak Supervision"),  # capitals tamed
    ("5.1.1 OVERFITTING TO WEAK SUPERVISION", 22, "5.1.1 Overfitting…"),  # never ends on "to"
    ("(b)   Bounty\nFee", 22, "(b) Bounty Fee"),  # whitespace folded, short enough: whole
    ("EXHIBIT A", 22, "Exhibit A"),  # a last "A" is no article
    ("", 22, "(untitled)"),
])
def test_short_heading_keeps_the_number_and_cuts_at_a_word(text, n, want):
    assert short_heading(text, n) == want
    assert len(short_heading(text, n)) <= n


def test_short_heading_of_one_long_word_is_cut_hard():
    s = short_heading("Supercalifragilisticexpialidocious", 12)
    assert s == "Supercalifr…" and len(s) == 12


# ---------------------------------------------------------------- group names

SPEC = [
    (T, 0, "1. Definitions"),  # 1
    (X, 1, "Confidential Information means all confidential information disclosed by a party."),  # 2
    (X, 1, "Confidential Information excludes information that is public."),  # 3
    (X, 1, "Territory means the United States and Canada, the territory of the licence."),  # 4
    (X, 1, "Territory excludes Mexico; the territory may grow by notice."),  # 5
    (T, 0, "2. Payments"),  # 6
    (T, 6, "(a) Invoices and Late Payment"),  # 7
    (X, 7, "The Distributor pays each invoice within thirty days."),  # 8
    (X, 0, "This Agreement is made between Acme Inc. and Beta Corp. on 1 May 2020."),  # 9
]
HES = [
    HyperEdge(id=0, doc_id="d", section_id=1, node_ids=[2, 3], summary="confidential information", cluster=0),
    HyperEdge(id=1, doc_id="d", section_id=1, node_ids=[4, 5], summary="territory", cluster=1),
    HyperEdge(id=2, doc_id="d", section_id=7, node_ids=[8], summary="invoices", cluster=1),
    HyperEdge(id=3, doc_id="d", section_id=0, node_ids=[9], summary="parties", cluster=0),
]


def test_groups_are_named_by_heading_and_their_own_word():
    names = group_names(make_tree(SPEC), HES, n=30)
    assert set(names) == {0, 1, 2, 3}
    # alone in its section: the heading without its numbering
    assert names[2] == "Invoices and Late Payment"
    # two groups share "1. Definitions": the heading and the word that tells them apart
    assert names[0].startswith("Definitions · ") and names[1].startswith("Definitions · ")
    assert names[0] != names[1]
    assert "confidential" in names[0] or "information" in names[0]
    assert "territory" in names[1]
    # front matter (directly under the document): its telling words, no heading
    assert names[3] and "Definitions" not in names[3]
    assert all(len(v) <= 30 for v in names.values())


# ---------------------------------------------------------------- the overview

def big_document(n_top=6, subs=3, groups=8):
    """n_top numbered sections of ``subs`` subsections, each holding ``groups`` hyper-edges of
    1-4 passages (the last top-level section: References)."""
    spec, sections = [], []
    for t in range(n_top):
        spec.append((T, 0, f"{t + 1}. TOP LEVEL SECTION NUMBER {t + 1}" if t < n_top - 1 else "References"))
        top = len(spec)
        for s in range(subs):
            spec.append((T, top, f"({'abc'[s]}) Subsection {s} of section {t + 1}"))
            sub = len(spec)
            for g in range(groups):
                ids = []
                for p in range(1 + (t * 7 + s * 3 + g) % 4):
                    spec.append((X, sub, f"passage {t} {s} {g} {p}"))
                    ids.append(len(spec))
                sections.append((sub, ids, t == n_top - 1))
    tree = make_tree(spec, title="MASTER SERVICES AGREEMENT BETWEEN TWO PARTIES")
    hes = [HyperEdge(id=i, doc_id="d", section_id=sid, node_ids=ids, summary=f"group {i}", cluster=i % 4)
           for i, (sid, ids, _) in enumerate(sections)]
    roles = {i: ("back" if back else "body") for i, (_, _, back) in enumerate(sections)}
    return tree, hes, roles


def _box_w(p):
    return 0.5 * p.font * len(p.label) + 2 * p.margin


def test_whole_document_overview_labels_top_sections_and_largest_groups():
    tree, hes, roles = big_document()  # 144 hyper-edges: one row each would not fit
    plain = tree_positions(tree, hes, False)
    assert needs_overview(sum(k.startswith("h:") for k in plain))
    assert not needs_overview(12)
    selected = next(h.id for h in hes if len(h.node_ids) == 1)  # a small one
    look = overview_layout(tree, hes, roles=roles, selected=selected, max_groups=8,
                           names={h.id: f"group name {h.id}" for h in hes})
    assert {f"h:{h.id}" for h in hes} <= set(look)
    tops = [i for i, n in enumerate(tree.nodes) if n.parent == 0]
    readable = {k for k, p in look.items() if p.readable}
    # the document and every top-level section are named (a subsection where its label fits)
    assert {"s:0"} | {f"s:{s}" for s in tops} <= {k for k in readable if k.startswith("s:")}
    assert look["s:1"].label == "1. Top Level Section…"  # 26 characters at most, cut after a word
    assert look["s:0"].label == "Master Services…"
    # named groups: the selected one and the 8 largest of the body (references last)
    named = {int(k[2:]) for k in readable if k.startswith("h:")}
    body = sorted((h for h in hes if roles[h.id] == "body"), key=lambda h: (-len(h.node_ids), h.id))
    assert named == {selected} | {h.id for h in body[:8]}
    assert look[f"h:{selected}"].label == f"G{selected} group name {selected}"
    # the rest: a label too small to draw at zoom 1 (the browser skips it), shown when zoomed in
    for k, p in look.items():
        assert 0 < p.font <= LABEL_FONT
        if k.startswith("h:"):
            assert p.readable == (p.font == LABEL_FONT) == (int(k[2:]) in named)
    # it fits the frame at zoom 1 (vis-network fits with a 1.1 margin)
    ys = [p.y for p in look.values()]
    assert max(ys) - min(ys) <= MAX_GRAPH_HEIGHT / 1.1
    left = min(p.x - _box_w(p) / 2 for p in look.values())
    right = max(p.x + _box_w(p) / 2 for p in look.values())
    assert right - left <= 600 / 1.1
    _no_readable_label_overlaps(look)


def _no_readable_label_overlaps(look):
    readable = {k for k, p in look.items() if p.readable}
    # no readable label overlaps another node: its row band is its own
    for a in readable:
        for b, q in look.items():
            if b != a and q.x == look[a].x:
                assert abs(q.y - look[a].y) >= LABEL_LINE / 2 - 1e-6, (a, b)
    # nor a readable label of the next column
    for k in readable:
        for j in readable:
            if look[j].x > look[k].x:
                assert look[k].x + _box_w(look[k]) / 2 < look[j].x - _box_w(look[j]) / 2


def test_overview_labels_more_when_more_fits():
    """Fewer groups per subsection leave taller rows: subsection headings become readable
    too (never overlapping), and a group left unnamed still shows when zoomed in."""
    tree, hes, roles = big_document(n_top=4, subs=3, groups=2)  # 24 hyper-edges
    look = overview_layout(tree, hes, roles=roles, max_groups=3)
    subs = [k for k in look if k.startswith("s:") and tree.nodes[int(k[2:])].depth == 2]
    assert subs and all(look[k].readable for k in subs)
    assert sum(look[f"h:{h.id}"].font == LABEL_FONT for h in hes) >= 3
    _no_readable_label_overlaps(look)
    dense_tree, dense, dense_roles = big_document(n_top=4, subs=3, groups=12)
    dense_look = overview_layout(dense_tree, dense, roles=dense_roles, max_groups=3)
    assert not any(dense_look[k].readable for k in dense_look
                   if k.startswith("s:") and dense_tree.nodes[int(k[2:])].depth == 2)
    _no_readable_label_overlaps(dense_look)


def test_overview_keeps_reading_order_and_places_passages():
    tree, hes, roles = big_document(n_top=3, subs=2, groups=4)
    look = overview_layout(tree, hes, roles=roles, show_passages=True)
    # hyper-edges top to bottom in reading order, passages right of their hyper-edge
    ys = [look[f"h:{h.id}"].y for h in hes]
    assert ys == sorted(ys)
    for h in hes:
        xs = {look[f"t:{n}"].x for n in h.node_ids}
        assert len(xs) == 1 and xs.pop() > look[f"h:{h.id}"].x
        band = [look[f"t:{n}"].y for n in h.node_ids]
        assert min(band) <= look[f"h:{h.id}"].y <= max(band)
    # sections left of what they hold
    assert look["s:0"].x < look["s:1"].x < look[f"h:{hes[0].id}"].x
    assert overview_layout(tree, [], roles=roles) == {}


def test_overview_of_a_deep_section_draws_the_chain_to_the_document():
    tree, hes, roles = big_document()
    part = [h for h in hes if tree.nodes[h.section_id].parent == 1]  # section 1's groups only
    look = overview_layout(tree, part, roles=roles, names={})
    assert look["s:0"].x < look["s:1"].x  # the document sits left of the drawn section
    assert look["s:0"].y == look["s:1"].y and look["s:0"].readable
    assert not any(k == f"h:{h.id}" for h in hes if h not in part for k in look)


# ---------------------------------------------------------------- the must-link list

def test_must_link_list_is_the_five_most_similar_and_a_count_of_the_rest():
    rng = np.random.default_rng(0)
    d = 16
    base = rng.normal(size=d)
    vectors = {0: base / np.linalg.norm(base)}
    links = []
    for p in range(1, 13):  # partner p drifts further from H0 as p grows
        v = base + 0.3 * p * rng.normal(size=d)
        vectors[p] = v / np.linalg.norm(v)
        links.append((0, p) if p % 2 else (p, 0))  # either order
    links.append((3, 4))  # not H0's: ignored
    links.append((0, 99))  # a partner with no vector: last, unscored
    top, more = strongest_partners(0, links, vectors, n=5)
    cos = {p: float(vectors[0] @ vectors[p]) for p in range(1, 13)}
    want = sorted(cos, key=lambda p: -cos[p])[:5]
    assert [p for p, _ in top] == want
    assert [s for _, s in top] == pytest.approx([cos[p] for p in want])
    assert more == 13 - 5
    everything, none_left = strongest_partners(0, links, vectors, n=100)
    assert everything[-1] == (99, None) and none_left == 0
    assert strongest_partners(5, [(0, 1)], vectors) == ([], 0)


def test_hyperedge_vectors_are_unit_means_of_the_members():
    emb = np.array([[1, 0], [0, 1], [1, 1], [3, 4]], dtype=np.float32)
    hes = [HyperEdge(id=0, doc_id="d", section_id=0, node_ids=[0, 1], summary=""),
           HyperEdge(id=1, doc_id="d", section_id=0, node_ids=[3], summary="")]
    v = hyperedge_vectors(hes, emb)
    assert v[0] == pytest.approx([2 ** -0.5, 2 ** -0.5])
    assert v[1] == pytest.approx([0.6, 0.8])


# ---------------------------------------------------------------- topic colours: legend and drawing agree

def test_the_legend_lists_every_colour_the_graph_draws():
    """A newcomer saw "Topic colours (1 topics drawn)" above dots of three colours: a group's box
    wears its majority topic, each passage's dot its own. The legend lists the topics of the
    boxes and, with the passages shown, of the dots (grey "no topic" included)."""
    from ui.graph import NO_TOPIC_COLOUR, legend_topics, topic_colour

    groups = [HyperEdge(id=0, doc_id="d", section_id=1, node_ids=[2, 3, 4], summary="", cluster=5),
              HyperEdge(id=1, doc_id="d", section_id=1, node_ids=[6, 7], summary="", cluster=5),
              HyperEdge(id=2, doc_id="d", section_id=8, node_ids=[9], summary="", cluster=-1)]
    label_of = {2: 5, 3: 5, 4: 1, 6: 7, 7: 5, 9: -1}
    boxes_only = legend_topics(groups, label_of, show_passages=False)
    assert [r["topic"] for r in boxes_only] == [-1, 5] and [r["groups"] for r in boxes_only] == [1, 2]
    with_dots = legend_topics(groups, label_of, show_passages=True)
    assert [r["topic"] for r in with_dots] == [-1, 1, 5, 7]
    assert {r["topic"]: r["passages"] for r in with_dots} == {-1: 1, 1: 1, 5: 3, 7: 1}
    assert sum(r["passages"] for r in with_dots) == sum(len(h.node_ids) for h in groups)
    # every colour drawn (boxes, dots) is a legend row's colour, and no legend row is undrawn
    drawn = {topic_colour(h.cluster) for h in groups} | {topic_colour(label_of[n]) for h in groups for n in h.node_ids}
    assert drawn == {topic_colour(r["topic"]) for r in with_dots}
    assert topic_colour(-1) == NO_TOPIC_COLOUR and topic_colour(5) != NO_TOPIC_COLOUR


def test_the_collection_line_counts_passages_not_lists():
    """"Left out of the topics: 3303 reference lists" read as 3303 lists on the 88-PDF collection: the
    line counts passages and names every reason, the signature blocks' too."""
    from ui.plain import collection_topics_line

    line = collection_topics_line({"boilerplate_by_reason": {"back": 3303, "front": 179, "signature": 16},
                                   "centered": 0.0})
    assert line.startswith("Passages left out of the topics: 3303 in reference lists and acknowledgements, "
                           "179 in cover pages and preambles, 16 in signature blocks.")
