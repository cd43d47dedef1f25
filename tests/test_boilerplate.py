"""Boilerplate out of the collection clustering, and topics inside alike documents (issue 36)."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import IndexSettings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.index import build_collection_index
from docmaster_core.index.boilerplate import boilerplate_reasons, passage_key, word_count
from docmaster_core.index.builder import documents_alike
from docmaster_core.index.builder import DocumentIndex
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


# ------------------------------------------------------------------ reference lists (per-document index too)

ENTRIES = [
    "[17] Matteo Hessel, Joseph Modayil, Hado Van Hasselt, Tom Schaul, and David Silver. Rainbow: Combining "
    "improvements in deep reinforcement learning. In Thirty-Second AAAI Conference on Artificial Intelligence, 2018.",
    "[18] Dan Horgan, John Quan, David Budden, Gabriel Barth-Maron, Matteo Hessel, and David Silver. Distributed "
    "prioritized experience replay. In International Conference on Learning Representations, 2018.",
    "[19] Norman P Jouppi, Cliff Young, Nishant Patil, and David Patterson. In-datacenter performance analysis of a "
    "tensor processing unit. In Proceedings of the 44th Annual International Symposium on Computer Architecture, 2017.",
    "[20] Steven Kapturowski, Georg Ostrovski, John Quan, Remi Munos, and Will Dabney. Recurrent experience replay "
    "in distributed reinforcement learning. In International Conference on Learning Representations, 2019.",
]
BODY = [
    "The agent plans with a learned model that predicts the reward, the policy and the value of each state.",
    "Monte Carlo tree search expands the most promising actions and backs their values up the tree.",
    "We evaluate the agent on board games and on a suite of Atari games with the same hyperparameters.",
    "The model is trained end to end so that its predictions match the observed rewards and search policies.",
]


def test_the_reference_list_is_found_under_every_heading_variant():
    from docmaster_core.index.boilerplate import back_matter_reasons, is_back_heading

    for h in ("References", "REFERENCES", "7. References", "§9 References", "References:", "IX. REFERENCES",
              "Bibliography", "13.2. Informative References", "Acknowlegements"):
        assert is_back_heading(h), h
    for h in ("Referenced documents and their scope", "Literature review", "2 Related Work", "Reference architecture"):
        assert not is_back_heading(h), h
    texts = BODY[:2] + ENTRIES[:2] + [BODY[2]]
    # nested under the last body section (the outermost heading, "10 Conclusion", named its role before)
    paths = [["1 Introduction"]] * 2 + [["10 Conclusion", "References"]] * 2 + [["10 Conclusion"]]
    assert back_matter_reasons(texts, paths).tolist() == ["", "", "back", "back", ""]
    # "§9 References"; an appendix after the references is the paper's own text again
    paths = [["§2 Model"]] * 2 + [["§9 References"]] * 2 + [["§9 References", "Appendix A. Proofs"]]
    assert back_matter_reasons(texts, paths).tolist() == ["", "", "back", "back", ""]
    # the heading kept as a paragraph: what follows it in its section, an entry or a name list
    names = "Peter F Brown, Peter V Desouza, Robert L Mercer, and Jenifer C Lai."
    texts = BODY[:2] + ["References", ENTRIES[0], names]
    paths = [["6 Discussion"]] * 5
    assert back_matter_reasons(texts, paths).tolist() == ["", "", "back", "back", "back"]
    # a run-in heading; the entries of a document without one; an entry split over two paragraphs
    texts = [BODY[0], "References [1] A. Alon and J. Spencer. The Probabilistic Method. Wiley, 2008.",
             "Davidson, K. R. and Szarek, S. J. Local operator theory, random matrices, and Banach spaces. "
             "In Handbook of Banach Spaces, volume 1, pp. 317-336. Elsevier, 2001.",
             "Alan Akbik, Duncan Blythe, and Roland Vollgraf.",
             "Negahban, S. and Wainwright, M. J. Restricted strong convexity and matrix completion. "
             "Technical report, UC Berkeley, 2010."]
    got = back_matter_reasons(texts, [["6 Discussion"]] * 5).tolist()
    assert got == ["", "back", "reference", "reference", "reference"]
    with pytest.raises(ValueError, match="section paths"):
        back_matter_reasons(texts, [[]])


def test_prose_with_citations_and_contract_clauses_are_no_reference_list():
    from docmaster_core.index.boilerplate import back_matter_reasons, looks_like_reference

    prose = ["Language model pre-training has been shown to be effective for improving many natural language "
             "processing tasks (Dai and Le, 2015; Peters et al., 2018a; Radford et al., 2018; Howard and Ruder, 2018).",
             "We evaluate our models on C4 (Raffel et al., 2020), Wikitext103 (Merity et al., 2017) and Lambada "
             "(Paperno et al., 2016), as in the Proceedings of earlier work.",
             "Andrew R. Jassy. Mr. Jassy has served as President and Chief Executive Officer since July 2021.",
             "By FY 2026, NARA will process 85 percent of archival holdings and increase enhanced descriptions.",
             "13. References . . . . . . . . . . . . 22 13.1. Normative References . . . . . . 22"]
    assert not any(looks_like_reference(t) for t in prose[:4])
    assert all(looks_like_reference(t) for t in ENTRIES)
    # a contract's "Acknowledgments" clause says what a party acknowledges: kept (the document cites nothing)
    clauses = ["23.1. Developer acknowledges that it has received a complete copy of the Franchise Disclosure "
               "Document.",
               "23.2. Developer acknowledges that it has read and understands this Agreement.",
               "7. Acknowledgement by Client Client agrees to the terms of the Statement of Work."]
    assert back_matter_reasons(clauses, [["23. Acknowledgments."]] * 2 + [["5. Statement of Work"]]).tolist() == \
        [""] * 3
    assert back_matter_reasons(prose, [[]] * 5).tolist() == [""] * 5
    # in a paper with a reference list, its acknowledgements are back matter too
    thanks = "Acknowledgements We are grateful to Nal Kalchbrenner and Stephan Gouws for their fruitful comments."
    got = back_matter_reasons([BODY[0], thanks] + ENTRIES[:2], [["7 Conclusion"]] * 2 + [["References"]] * 2)
    assert got.tolist() == ["", "back", "back", "back"]
    # a bibliography that is the whole document is not left out for its heading
    assert back_matter_reasons(ENTRIES[:2] + BODY[:3], [["References"]] * 5, max_share=0.5).tolist() == \
        ["reference", "reference", "", "", ""]


def _paper(doc_id: str, entries: list[str]) -> object:
    """A paper: two body sections, then its reference list, one paragraph per entry, under the
    last body section (the parser nests "References" there when it is set like a subsection)."""
    spec = [(T, 0, "1 Introduction"), (X, 1, BODY[0]), (X, 1, BODY[1]), (T, 0, "2 Experiments"), (X, 4, BODY[2]),
            (X, 4, BODY[3]), (T, 4, "References")] + [(X, 7, e) for e in entries]
    return _with_paths(make_tree(doc_id, spec))


def test_reference_entries_get_no_anchor_pair_and_no_topic():
    """The per-document index (its anchor pairs are what the Clusters page lists, also over the
    collection) and its topics leave the reference list out; without the rule, entries, which are
    each other's nearest neighbours, take the top pairs and a topic of their own."""
    from docmaster_core.index import build_document_index
    from docmaster_core.index.builder import leave_out_back_matter

    tree = _paper("p", ENTRIES)
    refs = {8, 9, 10, 11}
    params = IndexSettings(k=6, K=2)
    old = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), params, back_matter=False)
    assert refs & set(old.anchor_pairs.ravel().tolist())  # before: entries anchored (and clustered)
    assert all(c >= 0 for c in old.labels)
    new = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), params, back_matter=True)
    assert not refs & set(new.anchor_pairs.ravel().tolist()) and new.anchor_pairs.shape[0] == 6  # C(4, 2) body pairs
    lab = new.label_of()
    assert all(lab[n] == -1 for n in refs) and all(lab[n] >= 0 for n in (2, 3, 5, 6))
    assert new.stats["left_out"] == 4 and new.stats["left_out_by_reason"] == {"back": 4}
    assert new.stats["clusters"] == 2
    ref_groups = [h for h in new.hyperedges if set(h.node_ids) <= refs]
    assert ref_groups and all(h.cluster == -1 for h in ref_groups)  # no topic, so no must-link either
    assert not {h.id for h in ref_groups} & set(new.hyperedge_links.ravel().tolist())
    assert DocumentIndex.from_json_dict(new.to_json_dict()).stats["left_out"] == 4
    # an index stored before the rule is read back without its entries' pairs and topics
    stored = DocumentIndex.from_json_dict({**old.to_json_dict(), "stats": {k: v for k, v in old.stats.items()
                                                                           if not k.startswith("left_out")}})
    fixed = leave_out_back_matter(stored, tree)
    assert not refs & set(fixed.anchor_pairs.ravel().tolist())
    assert fixed.stats["anchor_pairs"] == fixed.anchor_pairs.shape[0] < old.anchor_pairs.shape[0]
    assert all(fixed.label_of()[n] == -1 for n in refs) and fixed.stats["left_out"] == 4
    assert fixed.stats["must"] + fixed.stats["cannot"] == fixed.anchor_pairs.shape[0]
    assert leave_out_back_matter(new, tree) is new  # built with the rule: as is


def test_collection_leaves_out_a_reference_list_longer_than_the_paper():
    """Seven of the 88 papers have more entries than body paragraphs; "front and back matter
    under half of the passages" kept all their entries in the collection's topics."""
    long_refs = [e.replace("[17]", f"[{i}]") + f" Volume {i}." for i, e in enumerate(ENTRIES * 2)]
    trees = [_paper("a", long_refs), _paper("b", ENTRIES[:2])]
    embs = {t.doc_id: embed(t) for t in trees}
    out = build_collection_index(trees, embs, StubLLM(), HashingEmbedder(), IndexSettings(k=4, K=2),
                                 boilerplate={"min_docs": 0, "roles": True})
    kept = [trees[int(d)].nodes[int(n)].content for d, n in zip(out.node_doc, out.node_ids)]
    assert len(kept) == 8 and set(kept) == set(BODY)
    assert out.stats["boilerplate_by_reason"] == {"back": 10}


def test_real_papers_reference_lists_stay_out_of_pairs_and_topics():
    """Four corpus papers, four ways a reference list reached the anchor pairs and topics:
    "References" heading (MuZero, "[18] Dan Horgan ..."), "§9 References", "References" under
    "10 Conclusion" (TAO), and entries with no heading under "6. Discussion"."""
    from pathlib import Path

    from docmaster_core.index import build_document_index
    from docmaster_core.parsing import parse_document
    from docmaster_core.tree.build import build_tree

    corpus = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "pdf"
    names = ["1911.08265_muzero.pdf", "1601.04920_understanding-deep-cnns.pdf", "tao-facebook-social-graph-store.pdf",
             "noisy-matrix-decomposition-convex-relaxation.pdf"]
    if not all((corpus / n).is_file() for n in names):
        pytest.skip("shared corpus PDFs not available")
    import re

    entry = re.compile(r"^\s*\[\d+\]\s*[A-Z]|arXiv preprint|In Proceedings of"
                       r"|^[A-Z][\w'-]+, (?:[A-Z]\.\s?){1,3}(?:,| and)")
    params = IndexSettings(k=20, K=8)
    for name in names:
        tree = build_tree(parse_document(corpus / name), name)
        emb = embed(tree)
        text = {int(i): tree.nodes[int(i)].content or "" for i in tree.text_node_ids()}
        n_entries = sum(bool(entry.search(t)) for t in text.values())
        assert n_entries >= 8, name
        before = build_document_index(tree, emb, StubLLM(), HashingEmbedder(), params, back_matter=False)
        after = build_document_index(tree, emb, StubLLM(), HashingEmbedder(), params, back_matter=True)
        anchored = lambda idx: [text[n] for n in set(idx.anchor_pairs.ravel().tolist())]  # noqa: E731
        topical = lambda idx: [text[n] for n, c in idx.label_of().items() if c >= 0]  # noqa: E731
        assert sum(bool(entry.search(t)) for t in topical(before)) == n_entries, name
        assert not any(entry.search(t) for t in anchored(after)), name
        assert not any(entry.search(t) for t in topical(after)), name
        # the paper's own passages keep their topics
        assert len(topical(after)) >= 0.6 * len(text) and after.anchor_pairs.shape[0] == 20, name
