"""Tri-modal retrieval and the flat baseline (SPEC F6) on a hand-built workspace.

The toy collection (:func:`build_toy_workspace`, also used by the filter/QA and
evaluation tests) has twelve small documents with real section structure, embedded
with the real all-MiniLM-L6-v2 (session fixture ``embedder``).
"""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import RetrievalSettings
from docmaster_core.model import DocumentTree, HyperEdge, Node, NodeType
from docmaster_core.pipeline import node_embedding_text
from docmaster_core.store.workspace import Workspace

# (file name, title, [(section title, [paragraphs])]); a section title None = content under ROOT
from support.toy import TOY_DOCS, add_toy_document, build_toy_workspace, make_tree  # noqa: F401


@pytest.fixture(scope="module")
def toy(tmp_path_factory, embedder):
    ws = build_toy_workspace(tmp_path_factory.mktemp("toyws"), embedder)
    from docmaster_core.retrieval.retriever import Retriever

    return ws, Retriever(ws, embedder, RetrievalSettings())


def _doc(ws: Workspace, name: str) -> str:
    return ws.document(name).doc_id


# ------------------------------------------------------------------------------ semantic
def test_semantic_score_is_the_paper_formula(toy, embedder):
    from docmaster_core.retrieval.semantic import node_cosines, semantic_scores

    ws, r = toy
    view = r.view
    st = RetrievalSettings(gamma=0.8, w_title=1.5, w_text=1.0, w_table=0.8)
    q = r.encode("results on ImageNet")
    cos = node_cosines(view, q)
    # FAISS cosines equal the exact inner products
    np.testing.assert_allclose(cos, view.emb @ q, atol=1e-5)
    s = semantic_scores(view, cos, st)
    w = {0: 0.0, 1: 1.5, 2: 1.0, 3: st.w_image, 4: 0.8, 5: st.w_equation}
    expect = np.array([w[int(t)] for t in view.type_code]) * (view.emb @ q) * 0.8 ** view.depth
    np.testing.assert_allclose(s, expect, atol=1e-5)


def test_top_k_per_doc_matches_brute_force(toy):
    from docmaster_core.retrieval.semantic import top_k_per_doc

    ws, r = toy
    view = r.view
    rng = np.random.default_rng(0)
    scores = rng.normal(size=view.emb.shape[0]).astype(np.float32)
    got = top_k_per_doc(view, scores, 3)
    for di, dv in enumerate(view.docs):
        s = scores[dv.rows]
        best = np.argsort(-s)[:3]
        np.testing.assert_array_equal(got[di][0], best)
        np.testing.assert_allclose(got[di][1], s[best])


def test_semantic_search_finds_experiment_and_skips_references(toy):
    ws, r = toy
    out = r.search("Does the paper report experimental results on the ImageNet dataset?", "semantic", top_k=3)
    cnn = out[_doc(ws, "cnn_imagenet.pdf")]
    assert any("ImageNet ILSVRC-2012" in e.text for e in cnn)
    # the bag-of-words paper mentions ImageNet only in its reference list: never evidence
    for evs in out.values():
        for e in evs:
            assert "References" not in e.section_path
            assert e.evidence_id.startswith("S") and e.strategy == "semantic"
    ids = [e.evidence_id for e in cnn]
    assert ids == [f"S{i}" for i in range(1, len(ids) + 1)]


def test_evidence_carries_page_bbox_and_section_path(toy):
    ws, r = toy
    out = r.search("descale the machine every month", "semantic", doc_ids=[_doc(ws, "coffee_manual.pdf")], top_k=3)
    evs = next(iter(out.values()))
    # title weight 1.5 lifts the heading above its paragraph (DocMaster type weights)
    assert evs[0].node_type == "TITLE" and evs[0].text == "2 Cleaning and descaling"
    e = next(e for e in evs if e.node_type == "TEXT")
    assert e.text.startswith("Clean the milk system")
    assert e.page == 2 and e.section_path == ["2 Cleaning and descaling"]
    assert e.bbox == (50.0, 100.0, 550.0, 170.0)
    assert e.node_type == "TEXT" and e.node_id > 0


# ------------------------------------------------------------------------------ tree traversal
def test_tree_traversal_takes_content_under_best_section(toy):
    ws, r = toy
    did = _doc(ws, "spanner_db.pdf")
    out = r.search("experience of running the system in production", "tree", doc_ids=[did], top_k=2)
    evs = out[did]
    assert evs[0].section_path == ["2 Production Experience"]
    assert all(e.node_type != "TITLE" for e in evs)


def test_tree_traversal_sections_scores_and_root_pseudo_section(toy):
    from docmaster_core.retrieval.tree_traversal import section_index, section_scores

    ws, r = toy
    view = r.view
    si = section_index(view)
    dv = view.doc(_doc(ws, "rag_qa.pdf"))
    # subtree sizes from the pre-order layout
    assert si.size[dv.start] == dv.n_nodes
    rows, sig = section_scores(view, r.encode("anything"))
    refs = [j for j, row in enumerate(rows) if view.back_matter[row]]
    assert refs and all(np.isneginf(sig[j]) for j in refs)
    # content directly under ROOT (the abstract) is reachable through the ROOT pseudo-section
    out = r.search("retrieval-augmented generation model conditioning a generator on Wikipedia passages", "tree",
                   doc_ids=[dv.doc_id], top_k=1)
    assert out[dv.doc_id][0].section_path == []


def test_tree_traversal_on_document_without_titles(tmp_path, embedder):
    from docmaster_core.retrieval.retriever import Retriever

    ws = Workspace(tmp_path / "w")
    add_toy_document(ws, embedder, "flatdoc.pdf", "Notes", [(None, ["Alpha beta.", "Solar panels convert light to power."])])
    out = Retriever(ws, embedder, RetrievalSettings()).search("photovoltaic energy", "tree", top_k=1)
    (evs,) = out.values()
    assert evs[0].text.startswith("Solar panels")


# ------------------------------------------------------------------------------ hyper-edges
class _FakeIndex:
    def __init__(self, doc_id, groups, emb, links):
        self.hyperedges = [HyperEdge(i, doc_id, 0, ids, f"summary {i}") for i, ids in enumerate(groups)]
        self.hyperedge_embeddings = emb
        self.hyperedge_links = np.asarray(links, dtype=np.int64).reshape(-1, 2)


def test_hyperedge_matching_returns_all_members_and_must_link_neighbours(tmp_path, embedder):
    from docmaster_core.retrieval.retriever import Retriever

    ws = Workspace(tmp_path / "w")
    f, title, secs = TOY_DOCS[1]  # rag_qa: nodes 1 abstract, 3-4 method, 6-7 experiments, 9 refs
    did = add_toy_document(ws, embedder, f, title, secs)
    groups = [[3, 4], [6, 7], [1], [9]]  # node 9 is in the reference list
    emb = embedder.encode(["retriever and generator architecture", "question answering benchmark results",
                           "abstract of the approach", "How is the generator conditioned on retrieved passages?"])
    idx = _FakeIndex(did, groups, emb, [[0, 1]])
    r = Retriever(ws, embedder, RetrievalSettings(), load_index=lambda d: idx if d == did else None, index_key="fake")
    out = r.search("How is the generator conditioned on retrieved passages?", "hyperedge", top_k=10)
    ids = {e.node_id for e in out[did]}
    assert {3, 4} <= ids  # every member of the best hyper-edge
    assert {6, 7} <= ids  # its must-link neighbour is followed
    assert 9 not in ids  # a hyper-edge in the references is never evidence
    hv = r.hyperedges()
    assert not hv.fallback.any() and hv.links[0] == [1]


def test_hyperedge_fallback_groups_without_index(toy):
    ws, r = toy
    hv = r.hyperedges()
    assert hv.fallback.all()
    did = _doc(ws, "coffee_manual.pdf")
    out = r.search("safety: unplug before cleaning, keep children away from steam", "hyperedge", doc_ids=[did], top_k=4)
    assert any("Unplug" in e.text for e in out[did])
    # members are TEXT nodes, never from the reference list
    for dv_groups, d in zip(hv.members, hv.doc_of):
        dv = r.view.docs[int(d)]
        assert all(dv.tree.nodes[n].type == NodeType.TEXT for n in dv_groups)


# ------------------------------------------------------------------------------ combined
def test_rrf_fuse_merges_and_names_strategies():
    from docmaster_core.retrieval.combine import rrf_fuse

    a = (np.array([5, 7, 9]), np.array([0.9, 0.8, 0.7], np.float32))
    b = (np.array([7, 11]), np.array([0.5, 0.4], np.float32))
    ids, sc, who = rrf_fuse({"semantic": a, "tree": b}, k=10)
    assert ids[0] == 7 and who[0] == "semantic+tree"
    assert sorted(ids.tolist()) == [5, 7, 9, 11]
    assert np.all(np.diff(sc) <= 0)
    assert abs(sc[0] - (1 / 62 + 1 / 61)) < 1e-6


def test_rrf_fuse_pages_ranks_pages_and_groups_nodes():
    from docmaster_core.retrieval.combine import rrf_fuse_pages

    # nodes 1-3 on page 1, 4-5 on page 2, 6 on page 3
    page_of = np.array([1, 1, 1, 1, 2, 2, 3])
    a = (np.array([4, 1, 6]), np.ones(3, np.float32))  # pages 2, 1, 3
    b = (np.array([2, 3, 5]), np.ones(3, np.float32))  # pages 1, 1, 2
    ids, sc, who = rrf_fuse_pages({"semantic": a, "tree": b}, page_of, k=10, c=5.0)
    # page 1: 1/7 + 1/6 beats page 2: 1/6 + 1/7? tie -> lower page first; page 3 last
    p1, p2 = 1 / 7 + 1 / 6, 1 / 6 + 1 / 7
    assert abs(p1 - p2) < 1e-12
    pages = page_of[ids].tolist()
    assert pages == sorted(pages, key=lambda p: (p == 3, p))  # grouped by page, page 3 last
    assert sorted(ids.tolist()) == [1, 2, 3, 4, 5, 6]
    assert abs(sc[0] - p1) < 1e-6 and abs(sc[-1] - 1 / 8) < 1e-6
    assert who[ids.tolist().index(4)] == "semantic"
    # a page reached by two lists beats a page reached by one, whatever the node ranks
    c = (np.array([6]), np.ones(1, np.float32))
    ids2, _, _ = rrf_fuse_pages({"semantic": a, "tree": c}, page_of, k=2, c=5.0)
    assert page_of[ids2[0]] == 3
    # the "first" list goes ahead
    ids3, _, _ = rrf_fuse_pages({"semantic": a, "reference": (np.array([5]), np.ones(1, np.float32))}, page_of, k=3,
                                first="reference")
    assert ids3[0] == 5


def test_combined_fuses_by_page_by_default(toy, embedder):
    from docmaster_core.retrieval.retriever import Retriever

    ws, r = toy
    assert RetrievalSettings().combine_unit == "page"
    did = _doc(ws, "fact_check.pdf")
    q = "fact-checking and claim verification"
    evs = r.search(q, "combined", doc_ids=[did], top_k=8)[did]
    pages = [e.page for e in evs]
    # nodes come page by page: once a page is left it does not come back
    assert all(p not in pages[:i] or pages[i - 1] == p for i, p in enumerate(pages) if i)
    rn = Retriever(ws, embedder, RetrievalSettings(combine_unit="node"))
    evn = rn.search(q, "combined", doc_ids=[did], top_k=8)[did]
    assert len({e.node_id for e in evn}) == len(evn)
    # both fuse the same strategy lists: the best page of the node fusion is among the page fusion's pages
    assert evn[0].page in pages


def test_combined_deduplicates_across_strategies(toy):
    ws, r = toy
    did = _doc(ws, "fact_check.pdf")
    out = r.search("fact-checking and claim verification", "combined", doc_ids=[did], top_k=8)
    evs = out[did]
    assert len({e.node_id for e in evs}) == len(evs)
    assert any("+" in e.strategy for e in evs)
    assert all(e.evidence_id.startswith("C") for e in evs)


def test_unknown_strategy_raises(toy):
    from docmaster_core.errors import RetrievalError

    ws, r = toy
    with pytest.raises(RetrievalError):
        r.search("x", "bm25")
    with pytest.raises(RetrievalError):
        r.search("x", "semantic", doc_ids=["nope"])


# ------------------------------------------------------------------------------ flat baseline
def test_chunk_tree_windows_overlap_and_pages():
    from docmaster_core.retrieval.flat import chunk_tree

    paras = [" ".join(f"w{p}_{i}" for i in range(60)) for p in range(6)]
    tree = make_tree("d" * 16, "x.pdf", "X", [("S1", paras[:3]), ("S2", paras[3:])])
    chunks = chunk_tree(tree, chunk_chars=300, chunk_overlap=100)
    text = "\n".join(n.content for n in tree.nodes[1:])
    assert all(len(c.text) <= 300 for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.start + len(a.text)  # consecutive windows overlap
        assert b.start > a.start
    assert chunks[-1].start + len(chunks[-1].text) >= len(text) - 1  # the whole text is covered
    assert chunks[0].page == 1 and chunks[-1].page == 2
    assert {p for c in chunks for p in c.pages} == {1, 2}
    with pytest.raises(ValueError):
        chunk_tree(tree, 200, 200)


class _Counting:
    def __init__(self, inner):
        self.inner, self.dim, self.name, self.calls = inner, inner.dim, inner.name, 0

    def encode(self, texts, batch_size=None):
        self.calls += len(texts)
        return self.inner.encode(texts)


def test_flat_chunk_embeddings_are_cached_on_disk(tmp_path, embedder):
    from docmaster_core.retrieval.corpus import clear_corpus_cache
    from docmaster_core.retrieval.retriever import Retriever

    ws = build_toy_workspace(tmp_path / "w", embedder, TOY_DOCS[:3])
    st = RetrievalSettings(chunk_chars=200, chunk_overlap=50)
    counting = _Counting(embedder)
    r = Retriever(ws, counting, st)
    out = r.search("open-domain question answering benchmarks", "flat", top_k=2)
    assert counting.calls > 0
    files = sorted((ws.path / "vectors" / "flat").glob("*.npy"))
    assert len(files) == 3
    assert ws.check() == []  # the cache does not look like an orphan node-vector file
    best = out[_doc(ws, "rag_qa.pdf")][0]
    assert best.node_id == -1 and best.strategy == "flat" and "Natural Questions" in best.text
    clear_corpus_cache()
    n = counting.calls
    Retriever(ws, counting, st).search("anything", "flat")
    assert counting.calls == n + 1  # only the query: the chunks come from the disk cache


def test_flat_includes_reference_lists(toy):
    ws, r = toy
    did = _doc(ws, "text_classifier.pdf")
    out = r.search("ImageNet Large Scale Visual Recognition Challenge", "flat", doc_ids=[did], top_k=1)
    assert "ImageNet" in out[did][0].text  # the baseline has no sections to skip


# ------------------------------------------------------------------------------ cache
def test_corpus_view_cache_follows_the_workspace(tmp_path, embedder):
    from docmaster_core.retrieval.corpus import load_corpus

    ws = build_toy_workspace(tmp_path / "w", embedder, TOY_DOCS[:2])
    v1 = load_corpus(ws)
    assert load_corpus(ws) is v1
    ws.save_run("filter", {"x": 1}, {"y": 2})
    assert load_corpus(ws) is v1  # saving a run does not invalidate
    add_toy_document(ws, embedder, *TOY_DOCS[2])
    v2 = load_corpus(ws)
    assert v2 is not v1 and len(v2) == 3
    assert v2.emb.shape == (sum(d.n_nodes for d in v2.docs), 384)


# ------------------------------------------------------------------------------ explicit references
def test_find_references():
    from docmaster_core.retrieval.references import find_references

    assert find_references("In figure 5, what colour is the line?") == [("figure", "5")]
    assert find_references("According to Table II and Fig. 3") == [("table", "2"), ("figure", "3")]
    assert find_references("the picture on page 50, see Section 4.2") == [("page", "50"), ("section", "4.2")]
    assert find_references("Does the paper report results on ImageNet?") == []


def test_combined_puts_named_figure_first(tmp_path, embedder):
    from docmaster_core.retrieval.retriever import Retriever

    tree = make_tree("f" * 16, "figs.pdf", "Figures", [
        ("1 Intro", ["We study coffee brewing temperatures.", "Figure 1 shows nothing special here."]),
        ("2 Results", ["Brewing at 93 degrees gives the best taste in our panel."]),
    ])
    # an IMAGE node whose content is its caption, and a TABLE with a roman-numbered caption
    for typ, text, page in ((NodeType.IMAGE, "Figure 2: Extraction yield against grind size.", 2),
                            (NodeType.TABLE, "TABLE III. Panel scores per roast.", 2)):
        parent = tree.nodes[4]  # "2 Results"
        n = Node(len(tree.nodes), typ, 2, parent.id, [], text, page, page, [(page, 1.0, 2.0, 3.0, 4.0)],
                 ["2 Results"], len(tree.nodes))
        tree.nodes.append(n)
        parent.children.append(n.id)
    tree.validate()
    ws = Workspace(tmp_path / "w")
    emb = embedder.encode([node_embedding_text(tree, n.id) for n in tree.nodes])
    ws.add_document(tree, emb, sha256="f" * 64, source_path="/toy/figs.pdf", parser="test")
    r = Retriever(ws, embedder, RetrievalSettings())
    (evs,) = r.search("What does figure 2 show?", "combined", top_k=3).values()
    assert evs[0].text.startswith("Figure 2:") and evs[0].page == 2 and "reference" in evs[0].strategy
    (evs,) = r.search("Which roast wins in Table 3?", "combined", top_k=3).values()
    assert evs[0].node_type == "TABLE"
    (evs,) = r.search("What is on page 2?", "combined", top_k=2).values()
    assert evs[0].page == 2


# ------------------------------------------------------------------------------ keyword (BM25)
def test_keyword_scores_are_bm25(toy):
    from docmaster_core.retrieval.keyword import keyword_scores

    ws, r = toy
    view = r.view
    s = keyword_scores(view, "TrueTime Paxos")
    hits = {(view.docs[view.doc_of[i]].file_name, int(view.node_of[i])) for i in np.flatnonzero(s > 0)}
    assert {f for f, _ in hits} == {"spanner_db.pdf"}
    best = int(np.argmax(s))
    assert "TrueTime" in view.docs[view.doc_of[best]].tree.nodes[view.node_of[best]].content
    assert not keyword_scores(view, "the of and").any()  # stop words only


def test_keyword_fusion_is_optional(toy, embedder):
    from docmaster_core.retrieval.retriever import Retriever

    ws, r = toy
    assert r.keyword is False
    rk = Retriever(ws, embedder, RetrievalSettings(), keyword=True)
    did = _doc(ws, "rag_qa.pdf")
    evs = rk.search("WebQuestions TriviaQA", "combined", doc_ids=[did], top_k=4)[did]
    assert any("keyword" in e.strategy for e in evs)
    alone = rk.search("WebQuestions TriviaQA", "keyword", doc_ids=[did], top_k=4)[did]
    assert "WebQuestions" in alone[0].text and alone[0].evidence_id == "K1"
