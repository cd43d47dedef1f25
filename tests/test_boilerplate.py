"""Boilerplate out of the collection clustering, and topics inside alike documents (issue 36)."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import IndexSettings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.index import build_collection_index
from docmaster_core.index.boilerplate import boilerplate_reasons, passage_key, word_count
from docmaster_core.index.builder import documents_alike
from test_index_builder import StubLLM, T, X, embed, make_tree

CLAUSE = "Either party may terminate this agreement upon thirty days written notice to the other party."


def test_word_count_and_key():
    assert word_count("Its: Chief Administrative Officer") == 4
    assert word_count("By: /s/ J. Samson 2019") == 2  # "By", "Samson"; one letter is no word
    assert word_count("合同双方应当遵守本协议") == 11  # each CJK character is a word
    assert passage_key("Page 3 of 10") == passage_key("PAGE 4 of 12.") == "page of"


def test_reasons_short_repeated_and_roles():
    footer = "Confidential treatment requested: the omitted portions have been filed separately with the Commission."
    texts = [CLAUSE, footer, "Its: President", CLAUSE.replace("thirty", "sixty"), footer.upper(), "Signature page follows",
             "The licensee shall pay the royalties within forty five days after the end of each quarter.",
             "The licensee shall pay the royalties within forty five days after the end of each quarter."]
    docs = ["a", "a", "a", "b", "b", "b", "c", "c"]
    got = boilerplate_reasons(texts, docs).tolist()
    # the footer is in two documents; the same clause with other numbers too (digits ignored
    # only: "thirty" / "sixty" differ, so it stays); a sentence twice in one document stays
    assert got == ["", "repeated", "short", "", "repeated", "short", "", ""]
    assert boilerplate_reasons(texts, docs, min_repeats=2).tolist()[6:] == ["repeated", "repeated"]
    assert boilerplate_reasons(texts, docs, min_words=0, min_docs=0).tolist() == [""] * 8
    roles = ["front", "body", "body", "body", "body", "body", "back", "body"]
    assert boilerplate_reasons(texts, docs, roles=roles).tolist()[0::6] == ["front", "back"]
    # a passage the parser tagged as a signature block ("IN WITNESS WHEREOF, the parties have executed this
    # Agreement ...": long, worded differently in every contract) is left out too
    signed = [False] * 7 + [True]
    assert boilerplate_reasons(texts, docs, min_repeats=0, signature=signed).tolist()[6:] == ["", "signature"]
    with pytest.raises(ValueError):
        boilerplate_reasons(texts, docs[:-1])
    with pytest.raises(ValueError, match="signature"):
        boilerplate_reasons(texts, docs, signature=signed[:-1])


def _with_paths(tree):
    """Fill ``section_path`` (the headings above each node) as the parser does."""
    for n in tree.nodes:
        path, cur = [], n.parent if n.type != T else n.id
        while cur:
            if tree.nodes[cur].type == T:
                path.append(tree.nodes[cur].content)
            cur = tree.nodes[cur].parent
        n.section_path = path[::-1]
    return tree


def _contract(doc_id: str, party: str) -> object:
    """A contract whose every page ends with the same notice and signature line."""
    return _with_paths(make_tree(doc_id, [
        (X, 0, f"This agreement is made between {party} Incorporated and its distributor."),  # front matter
        (T, 0, "1 Term"),
        (X, 2, CLAUSE.replace("Either party", f"{party} or the distributor")),
        (X, 2, f"The term of this agreement begins on the effective date and {party} may renew it each year."),
        (X, 2, "Portions of this exhibit were omitted and filed separately with the Securities Commission."),
        (T, 0, "2 Payment"),
        (X, 6, f"The distributor shall pay {party} all invoiced amounts within thirty days of the invoice date."),
        (X, 6, "Portions of this exhibit were omitted and filed separately with the Securities Commission."),
        (X, 6, f"By: {party} Its: President"),
    ]))


def test_collection_leaves_boilerplate_out_and_drops_its_pairs():
    trees = [_contract("a", "Acme"), _contract("b", "Zenith"), _contract("c", "Orbit")]
    embs = {t.doc_id: embed(t) for t in trees}
    params = IndexSettings(k=6, K=2)
    full = build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params)
    out = build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params,
                                 boilerplate={"roles": True})
    assert full.stats["boilerplate_left_out"] == 0 and full.node_ids.size == 3 * 7
    # per contract: 2 notices (repeated), the signature line (short), the preamble (front)
    assert out.stats["boilerplate_by_reason"] == {"front": 3, "repeated": 6, "short": 3}
    assert out.node_ids.size == out.labels.size == 3 * 3
    kept = {(out.doc_ids[int(d)], int(n)) for d, n in zip(out.node_doc, out.node_ids)}
    assert all(n in (3, 4, 7) for _, n in kept)
    # every anchor constraint left joins two kept passages
    assert out.stats["must"] + out.stats["cannot"] <= full.stats["must"] + full.stats["cannot"]
    assert out.hyperedge_clusters.size == full.hyperedge_clusters.size  # every group keeps its row


def test_a_document_without_headings_is_not_all_front_matter():
    flat = make_tree("flat", [(X, 0, CLAUSE + " Flat."), (X, 0, "The distributor shall pay all invoiced amounts within "
                                                    "thirty days of the invoice date and keep records.")])
    other = _contract("a", "Acme")
    out = build_collection_index([flat, other], {"flat": embed(flat), "a": embed(other)}, StubLLM(),
                                 HashingEmbedder(), IndexSettings(k=2, K=2), boilerplate={"roles": True})
    assert sum(1 for d in out.node_doc if out.doc_ids[int(d)] == "flat") == 2


def test_centering_makes_topics_follow_passages_inside_alike_documents():
    """Two documents, each with a termination and a payment passage, whose vectors carry a
    strong document component: plain clustering splits by document, centred by topic."""
    rng = np.random.default_rng(0)
    dim = 16
    doc_axis = {"a": np.eye(dim)[0], "b": np.eye(dim)[1]}
    topic_axis = {"term": np.eye(dim)[2], "pay": np.eye(dim)[3]}
    trees, embs = [], {}
    for d in ("a", "b"):
        spec = [(T, 0, "1 Terms")] + [(X, 1, f"{topic} passage {i} of {d} with enough words to be kept here")
                                      for topic in ("term", "pay") for i in range(3)]
        t = make_tree(d, spec)
        E = np.zeros((len(t.nodes), dim), dtype=np.float32)
        for n in t.text_node_ids():
            topic = t.nodes[int(n)].content.split()[0]
            v = 3.0 * doc_axis[d] + 1.0 * topic_axis[topic] + 0.05 * rng.standard_normal(dim)
            E[int(n)] = v / np.linalg.norm(v)
        E[0] = E[1] = np.eye(dim)[5]
        trees.append(t)
        embs[d] = E
    params = IndexSettings(k=0, K=2)

    def split(col):
        lab = {}
        for d, n, c in zip(col.node_doc, col.node_ids, col.labels):
            t = trees[int(d)]
            lab.setdefault(int(c), set()).add(t.nodes[int(n)].content.split()[0])
        return sorted(sorted(v) for v in lab.values())

    plain = build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params)
    centred = build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params, center=1.0)
    assert split(plain) == [["pay", "term"], ["pay", "term"]]  # by document
    assert split(centred) == [["pay"], ["term"]]  # by topic
    assert centred.stats["centered"] == 1.0 and plain.stats["centered"] == 0.0
    X_all = np.concatenate([embs[t.doc_id][t.text_node_ids()] for t in trees])
    nd = np.repeat([0, 1], 6)
    assert documents_alike(X_all, nd) == pytest.approx(plain.stats["documents_alike"], abs=1e-3)
    # "auto": these documents are not alike (orthogonal document components): no centring
    assert build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params,
                                  center="auto").stats["centered"] == 0.0
    assert documents_alike(X_all[:6], np.zeros(6, dtype=np.int64)) == 0.0
    with pytest.raises(ValueError):
        build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), params, center=2.0)
