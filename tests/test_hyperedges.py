"""Hyper-edges (DocMaster Sec. 2.3): grouping per section, majority cluster, must-links."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import IndexBuildError
from docmaster_core.index.hyperedges import (
    assign_hyperedge_clusters,
    build_hyperedges,
    extractive_summary,
    group_hyperedges,
    hyperedge_from_dict,
    link_hyperedges,
    text_sections,
)
from docmaster_core.model import DocumentTree, HyperEdge, Node, NodeType


def make_tree(doc_id: str, spec) -> DocumentTree:
    """spec: list of (kind, parent_index, content) in pre-order; index 0 is ROOT."""
    nodes = [Node(id=0, type=NodeType.ROOT, depth=0, parent=None, children=[], content="", page_start=1, page_end=1)]
    for kind, parent, content in spec:
        i = len(nodes)
        nodes.append(
            Node(id=i, type=kind, depth=nodes[parent].depth + 1, parent=parent, children=[], content=content, page_start=1, page_end=1)
        )
        nodes[parent].children.append(i)
    tree = DocumentTree(doc_id=doc_id, title=doc_id, nodes=nodes)
    tree.validate()
    return tree


T, X, TAB = NodeType.TITLE, NodeType.TEXT, NodeType.TABLE

SPEC = [
    (T, 0, "1 Introduction"),  # 1
    (X, 1, "Retrieval augmented generation grounds answers in documents."),  # 2
    (X, 1, "Document filtering selects relevant papers from a collection."),  # 3
    (X, 1, "We evaluate retrieval on open domain question answering."),  # 4
    (T, 0, "2 Method"),  # 5
    (X, 5, "The document tree keeps sections tables and figures."),  # 6
    (TAB, 5, "| a | b |"),  # 7
    (T, 5, "2.1 Clustering"),  # 8
    (X, 8, "Pairwise constrained k-means uses must-link and cannot-link pairs."),  # 9
    (T, 0, "3 Experiments"),  # 10
    (X, 10, "Open domain question answering accuracy improves with retrieval."),  # 11
    (X, 10, "Clustering with constraints groups related paragraphs."),  # 12
    (X, 0, "A paragraph directly under the root."),  # 13
]


class StubLLM:
    """Groups consecutive paragraphs two by two; records every call."""

    backend_name = "stub"
    is_offline = True

    def __init__(self, answer=None):
        self.answer = answer
        self.calls: list[dict] = []

    def group_paragraphs(self, texts, *, embeddings=None, doc_id=None):
        self.calls.append({"texts": list(texts), "embeddings": embeddings, "doc_id": doc_id})
        if self.answer is not None:
            return self.answer(texts)
        return [(list(range(i, min(i + 2, len(texts)))), f"group of {len(texts)} starting {i}") for i in range(0, len(texts), 2)]

    def label_pairs(self, pairs, *, cosines=None, doc_id=None):  # pragma: no cover - unused here
        return [True] * len(pairs)


def test_sections_are_text_children_of_the_same_title():
    tree = make_tree("d", SPEC)
    assert text_sections(tree) == [(0, [13]), (1, [2, 3, 4]), (5, [6]), (8, [9]), (10, [11, 12])]


def test_every_text_node_of_a_section_covered_exactly_once():
    tree = make_tree("d", SPEC)
    emb = HashingEmbedder().encode([n.content for n in tree.nodes])
    llm = StubLLM()
    hs = group_hyperedges(tree, llm, HashingEmbedder(), emb)
    # LLM called only for the sections with >= 2 TEXT nodes (1 and 10)
    assert len(llm.calls) == hs.llm_calls == 2
    assert [c["texts"][0] for c in llm.calls] == [tree.nodes[2].content, tree.nodes[11].content]
    assert llm.calls[0]["embeddings"].shape == (3, 384) and llm.calls[0]["doc_id"] == "d"
    np.testing.assert_array_equal(llm.calls[0]["embeddings"], emb[[2, 3, 4]])
    for section_id, ids in text_sections(tree):
        members = [i for h in hs.hyperedges if h.section_id == section_id for i in h.node_ids]
        assert sorted(members) == ids  # exactly once
    assert [h.id for h in hs.hyperedges] == list(range(len(hs.hyperedges)))
    assert [h.node_ids for h in hs.hyperedges] == [[13], [2, 3], [4], [6], [9], [11, 12]]
    # singleton sections: the node's own words as summary, no LLM call
    single = next(h for h in hs.hyperedges if h.section_id == 5)
    assert single.summary == tree.nodes[6].content
    assert hs.embeddings.shape == (6, 384) and hs.embeddings.dtype == np.float32
    np.testing.assert_allclose(hs.embeddings[1], HashingEmbedder().encode([hs.hyperedges[1].summary])[0])
    assert all(h.cluster == -1 for h in hs.hyperedges)


def test_bad_llm_groupings_are_repaired():
    tree = make_tree("d", SPEC)

    def messy(texts):
        # duplicate index, out-of-range, negative, non-integer, empty group; index 2 missing
        return [([0, 0, 7], "first"), ([1, -1, "x"], ""), ([], "nothing"), ([0], "dup")]

    hs = group_hyperedges(tree, StubLLM(messy), HashingEmbedder())
    sec1 = [h for h in hs.hyperedges if h.section_id == 1]
    assert [h.node_ids for h in sec1] == [[2], [3], [4]]
    assert sec1[0].summary == "first"
    assert sec1[1].summary == tree.nodes[3].content  # empty summary -> extractive
    assert hs.repaired > 0
    for section_id, ids in text_sections(tree):
        members = sorted(i for h in hs.hyperedges if h.section_id == section_id for i in h.node_ids)
        assert members == ids


def test_malformed_llm_answer_raises():
    tree = make_tree("d", SPEC)
    with pytest.raises(IndexBuildError):
        group_hyperedges(tree, StubLLM(lambda texts: "not a list"), HashingEmbedder())
    with pytest.raises(IndexBuildError):
        group_hyperedges(tree, StubLLM(lambda texts: [(1, 2, 3)]), HashingEmbedder())


def test_majority_cluster_and_links_across_sections_only():
    hes = [
        HyperEdge(id=0, doc_id="d", section_id=1, node_ids=[2, 3, 4], summary="a"),
        HyperEdge(id=1, doc_id="d", section_id=1, node_ids=[5], summary="b"),
        HyperEdge(id=2, doc_id="d", section_id=8, node_ids=[9, 10], summary="c"),
        HyperEdge(id=3, doc_id="d", section_id=10, node_ids=[11], summary="d"),
    ]
    text_ids = [2, 3, 4, 5, 9, 10, 11]
    labels = [1, 1, 0, 1, 2, 0, 1]
    assign_hyperedge_clusters(hes, text_ids, labels)
    # {1,1,0} -> 1; {1} -> 1; {2,0} tie -> smallest = 0; {1} -> 1
    assert [h.cluster for h in hes] == [1, 1, 0, 1]
    links = link_hyperedges(hes)
    # cluster 1 holds 0, 1, 3; (0, 1) share section 1 -> not linked
    assert links.tolist() == [[0, 3], [1, 3]]
    assert links.dtype == np.int64
    assert link_hyperedges(hes[:1]).shape == (0, 2)
    hes[3].cluster = -1
    assert link_hyperedges(hes).tolist() == []
    with pytest.raises(ValueError):
        assign_hyperedge_clusters(hes, [1, 2], [0])


def test_build_hyperedges_end_to_end():
    tree = make_tree("d", SPEC)
    text_ids = tree.text_node_ids()
    labels = np.array([0, 1, 0, 1, 0, 1, 0, 1])[: text_ids.size]
    hyper, emb, links = build_hyperedges(tree, StubLLM(), HashingEmbedder(), text_ids, labels)
    assert emb.shape == (len(hyper), 384)
    for a, b in links:
        assert hyper[a].cluster == hyper[b].cluster >= 0
        assert hyper[a].section_id != hyper[b].section_id
    # every pair satisfying the rule is linked
    expected = {
        (a.id, b.id)
        for a in hyper
        for b in hyper
        if a.id < b.id and a.cluster == b.cluster and a.section_id != b.section_id
        and a.section_id != 0 and b.section_id != 0  # front matter (under the root) gets no links
    }
    assert {tuple(x) for x in links.tolist()} == expected
    assert hyperedge_from_dict(hyper[1].to_dict()) == hyper[1]


def test_extractive_summary_cuts_at_50_words():
    text = " ".join(f"w{i}" for i in range(80))
    s = extractive_summary(text)
    assert s.split()[:50] == text.split()[:50] and s.endswith("...")
    assert extractive_summary("  a  b ") == "a b"


def test_front_and_back_matter_get_no_must_links():
    """Hyper-edges of content before the first heading (title block, permission notice)
    and of the references get no must-links, even when they share a cluster."""
    from docmaster_core.index.hyperedges import unlinked_hyperedges

    tree = make_tree("d", [
        (X, 0, "Permission to reproduce tables and figures is granted."),  # 1, front matter
        (T, 0, "3 Multi-head attention"),  # 2
        (X, 2, "Multi-head attention runs attention layers in parallel."),  # 3
        (T, 0, "4 Why self-attention"),  # 4
        (X, 4, "Self-attention connects all positions."),  # 5
        (T, 0, "References"),  # 6
        (X, 6, "[1] A. Author. Attention. 2017."),  # 7
    ])
    hes = [HyperEdge(id=i, doc_id="d", section_id=s, node_ids=[n], summary="x", cluster=0)
           for i, (s, n) in enumerate([(0, 1), (2, 3), (4, 5), (6, 7)])]
    assert unlinked_hyperedges(tree, hes) == {0, 3}
    assert link_hyperedges(hes, unlinked_hyperedges(tree, hes)).tolist() == [[1, 2]]
    assert len(link_hyperedges(hes).tolist()) == 6  # without the rule every pair across sections
