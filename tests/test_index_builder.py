"""Per-document and collection semantic index builders (SPEC F3-F5)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from docmaster_core.config import IndexSettings
from docmaster_core.embedding.embedders import HashingEmbedder
from docmaster_core.errors import IndexBuildError
from docmaster_core.index import (
    CollectionIndex,
    DocumentIndex,
    build_collection_index,
    build_document_index,
    sec_matrix,
    text_sections,
)
from docmaster_core.model import DocumentTree, Node, NodeType

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
T, X, TAB, IMG = NodeType.TITLE, NodeType.TEXT, NodeType.TABLE, NodeType.IMAGE


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


PAPER = [
    (T, 0, "1 Introduction"),  # 1
    (X, 1, "Retrieval augmented generation grounds model answers in retrieved documents."),  # 2
    (X, 1, "Users filter relevant papers from a large document collection before analysis."),  # 3
    (X, 1, "Flat chunking discards sections tables and figures of the documents."),  # 4
    (T, 0, "2 Method"),  # 5
    (X, 5, "The document tree keeps sections tables figures and equations as nodes."),  # 6
    (TAB, 5, "| model | accuracy |"),  # 7
    (T, 5, "2.1 Clustering"),  # 8
    (X, 8, "Pairwise constrained k-means clusters text nodes with must-link constraints."),  # 9
    (X, 8, "Cannot-link constraints keep unrelated paragraphs in different clusters."),  # 10
    (IMG, 8, "Figure 2: clusters"),  # 11
    (T, 0, "3 Experiments"),  # 12
    (X, 12, "Retrieval augmented generation improves open domain question answering accuracy."),  # 13
    (X, 12, "Clusters with must-link constraints group related paragraphs across sections."),  # 14
    (X, 12, "Filtering relevant papers from the collection is accurate."),  # 15
]


class StubLLM:
    """Deterministic stand-in for the LLM protocol; counts calls."""

    backend_name = "stub"
    is_offline = True

    def __init__(self, n_labels=None):
        self.label_calls: list[list] = []
        self.group_calls = 0
        self.n_labels = n_labels

    def label_pairs(self, pairs, *, cosines=None, doc_id=None):
        self.label_calls.append(list(pairs))
        out = [bool(c > 0.1) for c in cosines]
        return out if self.n_labels is None else out[: self.n_labels]

    def group_paragraphs(self, texts, *, embeddings=None, doc_id=None):
        self.group_calls += 1
        return [(list(range(i, min(i + 2, len(texts)))), " ".join(texts[i].split()[:40])) for i in range(0, len(texts), 2)]


def embed(tree: DocumentTree) -> np.ndarray:
    return HashingEmbedder().encode([n.content for n in tree.nodes])


def check_consistent(idx: DocumentIndex, tree: DocumentTree, params: IndexSettings) -> None:
    st = idx.stats
    m = len(tree.text_node_ids())
    assert st["text_nodes"] == m == idx.text_node_ids.size == idx.labels.size
    assert np.array_equal(idx.text_node_ids, tree.text_node_ids())
    assert st["anchor_pairs"] == idx.anchor_pairs.shape[0] == idx.anchor_scores.size == idx.anchor_labels.size
    assert st["anchor_pairs"] <= params.k
    assert st["must"] + st["cannot"] == st["anchor_pairs"]
    assert st["must"] == int(idx.anchor_labels.sum()) == idx.must_link_pairs().shape[0]
    assert st["cannot"] == idx.cannot_link_pairs().shape[0]
    # the reference list (label -1) is in no cluster and no anchor pair
    clustered = idx.labels >= 0
    assert st.get("left_out", 0) == m - int(clustered.sum()) == sum(st.get("left_out_by_reason", {}).values())
    assert st["clusters"] == idx.centers.shape[0] == min(params.K, int(clustered.sum()))
    assert st["hyperedges"] == len(idx.hyperedges) == idx.hyperedge_embeddings.shape[0]
    assert st["must_links"] == idx.hyperedge_links.shape[0]
    if clustered.any():
        assert idx.labels[clustered].max() < st["clusters"]
    text = set(idx.text_node_ids[clustered].tolist())
    assert all(a in text and b in text and a < b for a, b in idx.anchor_pairs.tolist())
    assert np.all(np.diff(idx.anchor_scores) <= 1e-12)
    # hyper-edges cover every TEXT node exactly once
    covered = sorted(i for h in idx.hyperedges for i in h.node_ids)
    assert covered == sorted(idx.text_node_ids.tolist())
    # objective = SSE + w * violated constraints (Eq. 2), over the clustered nodes
    if clustered.any():
        pos = {n: p for p, n in enumerate(idx.text_node_ids[clustered].tolist())}
        lab = idx.labels[clustered]
        E = embed(tree)[idx.text_node_ids[clustered]]
        sse = float(((E.astype(np.float64) - idx.centers[lab]) ** 2).sum())
        viol = sum((lab[pos[a]] != lab[pos[b]]) == bool(ml) for (a, b), ml in zip(idx.anchor_pairs.tolist(), idx.anchor_labels))
        assert viol == st["violated_must"] + st["violated_cannot"]
        assert idx.objective == pytest.approx(sse + params.w * viol, rel=1e-5, abs=1e-6)


def test_document_index_on_hand_tree():
    tree = make_tree("paper", PAPER)
    params = IndexSettings(k=6, K=3, w=1.0, alpha=0.6)
    llm = StubLLM()
    emb = embed(tree)
    idx = build_document_index(tree, emb, llm, HashingEmbedder(), params)
    check_consistent(idx, tree, params)
    # exactly ONE label_pairs call carrying all k anchor pairs
    assert len(llm.label_calls) == 1 and len(llm.label_calls[0]) == 6
    # one grouping call per section with >= 2 TEXT nodes
    assert llm.group_calls == sum(len(ids) >= 2 for _, ids in text_sections(tree)) == 3
    assert idx.stats["llm_calls"] == 4
    # anchors are the top SEC pairs
    ids = tree.text_node_ids()
    S = sec_matrix(tree, emb[ids], ids, alpha=0.6)
    iu, ju = np.triu_indices(ids.size, k=1)
    best = np.sort(S[iu, ju])[::-1][:6]
    np.testing.assert_allclose(idx.anchor_scores, best, atol=1e-12)
    # the texts handed to the LLM are those of the anchor pairs
    first = idx.anchor_pairs[0]
    assert llm.label_calls[0][0] == (tree.nodes[first[0]].content, tree.nodes[first[1]].content)
    # hyper-edge links obey the rule: same cluster, different sections
    for a, b in idx.hyperedge_links.tolist():
        ha, hb = idx.hyperedges[a], idx.hyperedges[b]
        assert ha.cluster == hb.cluster and ha.section_id != hb.section_id
    assert idx.params["alpha"] == 0.6 and idx.params["llm_backend"] == "stub"


def test_json_roundtrip_without_pickle():
    tree = make_tree("paper", PAPER)
    idx = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), IndexSettings(k=5, K=3))
    text = json.dumps(idx.to_json_dict())
    back = DocumentIndex.from_json_dict(json.loads(text))
    for name in ("text_node_ids", "anchor_pairs", "anchor_scores", "anchor_labels", "labels", "centers", "hyperedge_embeddings", "hyperedge_links"):
        a, b = getattr(idx, name), getattr(back, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert np.array_equal(a, b), name
    assert back.hyperedges == idx.hyperedges
    assert back.objective == idx.objective and back.stats == idx.stats and back.params == idx.params
    slim = DocumentIndex.from_json_dict(json.loads(json.dumps(idx.to_json_dict(include_vectors=False))))
    assert slim.centers.shape[0] == 0 and np.array_equal(slim.labels, idx.labels)


def test_K_capped_and_small_documents():
    tree = make_tree("paper", PAPER)
    idx = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), IndexSettings(K=50, k=3))
    assert idx.stats["clusters"] == 9  # 9 TEXT nodes
    # one TEXT node: no anchor pair, no LLM call, one cluster, one singleton hyper-edge
    one = make_tree("one", [(T, 0, "1 Only"), (X, 1, "The single paragraph."), (TAB, 1, "| x |")])
    llm = StubLLM()
    idx1 = build_document_index(one, embed(one), llm, HashingEmbedder(), IndexSettings())
    check_consistent(idx1, one, IndexSettings())
    assert llm.label_calls == [] and llm.group_calls == 0
    assert idx1.labels.tolist() == [0] and [h.node_ids for h in idx1.hyperedges] == [[2]]
    # no TEXT node at all
    none = make_tree("none", [(T, 0, "1 Only"), (TAB, 1, "| x |")])
    idx0 = build_document_index(none, embed(none), llm, HashingEmbedder(), IndexSettings())
    assert idx0.stats["text_nodes"] == 0 and idx0.stats["clusters"] == 0 and idx0.hyperedges == []
    assert DocumentIndex.from_json_dict(json.loads(json.dumps(idx0.to_json_dict()))).labels.size == 0
    # k = 0: no labelling call
    llm = StubLLM()
    idxk = build_document_index(tree, embed(tree), llm, HashingEmbedder(), IndexSettings(k=0))
    assert llm.label_calls == [] and idxk.stats["anchor_pairs"] == 0


def test_identical_paragraphs_never_anchor():
    spec = PAPER + [(X, 12, PAPER[1][2]), (X, 1, PAPER[1][2])]
    tree = make_tree("dup", spec)
    idx = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), IndexSettings(k=40))
    for a, b in idx.anchor_pairs.tolist():
        assert tree.nodes[a].content != tree.nodes[b].content


def test_protocol_breaches_and_bad_embeddings_raise():
    tree = make_tree("paper", PAPER)
    with pytest.raises(IndexBuildError, match="labels"):
        build_document_index(tree, embed(tree), StubLLM(n_labels=2), HashingEmbedder(), IndexSettings(k=5))
    with pytest.raises(ValueError, match="shape"):
        build_document_index(tree, embed(tree)[:-1], StubLLM(), HashingEmbedder(), IndexSettings())
    bad = embed(tree)
    bad[3, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        build_document_index(tree, bad, StubLLM(), HashingEmbedder(), IndexSettings())


def test_rebuild_with_new_hyperparameters_reuses_groups():
    from docmaster_core.index import group_hyperedges

    tree = make_tree("paper", PAPER)
    emb = embed(tree)
    groups = group_hyperedges(tree, StubLLM(), HashingEmbedder(), emb)
    llm = StubLLM()
    a = build_document_index(tree, emb, llm, HashingEmbedder(), IndexSettings(K=2, k=4), groups=groups)
    b = build_document_index(tree, emb, llm, HashingEmbedder(), IndexSettings(K=4, k=4, alpha=0.3), groups=groups)
    assert llm.group_calls == 0 and len(llm.label_calls) == 2
    assert a.stats["clusters"] == 2 and b.stats["clusters"] == 4
    assert all(h.cluster == -1 for h in groups.hyperedges)  # the shared set is not mutated


def test_collection_index_links_across_documents():
    t1 = make_tree("d1", PAPER)
    t2 = make_tree(
        "d2",
        [
            (T, 0, "1 Background"),
            (X, 1, "Retrieval augmented generation grounds model answers in retrieved documents."),
            (X, 1, "Weather data were collected at three stations."),
            (T, 0, "2 Results"),
            (X, 4, "Pairwise constrained k-means clusters text nodes with must-link constraints."),
        ],
    )
    embs = {"d1": embed(t1), "d2": embed(t2)}
    llm = StubLLM()
    params = IndexSettings(k=4, K=3)
    col = build_collection_index([t1, t2], embs, llm, HashingEmbedder(), params, link_threshold=0.3)
    assert len(llm.label_calls) == 2  # one per document
    n1, n2 = len(t1.text_node_ids()), len(t2.text_node_ids())
    assert col.labels.shape == (n1 + n2,) and col.node_doc.tolist() == [0] * n1 + [1] * n2
    assert col.stats["must"] + col.stats["cannot"] == sum(d.stats["anchor_pairs"] for d in col.documents.values())
    assert col.stats["clusters"] == col.centers.shape[0] == 3
    E = np.concatenate([col.documents[d].hyperedge_embeddings for d in col.doc_ids])
    for (a, b), s in zip(col.links.tolist(), col.link_scores):
        assert col.hyperedge_doc[a] != col.hyperedge_doc[b]
        assert col.hyperedge_clusters[a] == col.hyperedge_clusters[b]
        assert s >= 0.3 and s == pytest.approx(float(E[a] @ E[b]), abs=1e-5)
    # identical summaries in the two documents share a cluster -> linked
    assert col.stats["cross_doc_links"] == col.links.shape[0] >= 1
    back = CollectionIndex.from_json_dict(json.loads(json.dumps(col.to_json_dict())))
    assert np.array_equal(back.links, col.links) and np.array_equal(back.labels, col.labels)
    assert back.documents["d2"].hyperedges == col.documents["d2"].hyperedges
    # prebuilt per-document indices: no LLM call at all
    llm2 = StubLLM()
    col2 = build_collection_index([t1, t2], embs, llm2, HashingEmbedder(), params, doc_indexes=col.documents, link_threshold=0.3)
    assert llm2.label_calls == [] and llm2.group_calls == 0
    assert np.array_equal(col2.labels, col.labels) and np.array_equal(col2.links, col.links)
    with pytest.raises(ValueError, match="duplicate"):
        build_collection_index([t1, t1], embs, llm, HashingEmbedder(), params)
    with pytest.raises(ValueError, match="no embeddings"):
        build_collection_index([t1], {}, llm, HashingEmbedder(), params)


def _tree_from_mineru(content_list: list[dict], doc_id: str) -> DocumentTree:
    """A document tree from a MinerU content_list: text_level 1 -> TITLE under ROOT."""
    spec, title = [], 0
    for block in content_list:
        kind = block.get("type")
        text = (block.get("text") or "").strip()
        if kind == "text" and block.get("text_level") == 1 and text:
            spec.append((T, 0, text))
            title = len(spec)
        elif kind == "text" and text:
            spec.append((X, title, text))
        elif kind == "table":
            spec.append((TAB, title, block.get("table_body") or ""))
        elif kind == "image":
            spec.append((IMG, title, " ".join(block.get("img_caption") or [])))
    return make_tree(doc_id, spec)


def test_real_mineru_document():
    path = SHARED / "corpus" / "mineru" / "magicpdf-0.10.0-demo1" / "demo1_content_list.json"
    if not path.exists():
        pytest.skip("shared corpus not available")
    tree = _tree_from_mineru(json.loads(path.read_text(encoding="utf-8")), "demo1")
    params = IndexSettings(k=20, K=8, w=1.0)
    llm = StubLLM()
    idx = build_document_index(tree, embed(tree), llm, HashingEmbedder(), params)
    check_consistent(idx, tree, params)
    assert idx.stats["text_nodes"] > 40
    assert idx.stats["anchor_pairs"] == 20 and len(llm.label_calls) == 1
    assert idx.stats["clusters"] == 8
    assert idx.stats["hyperedges"] < idx.stats["text_nodes"]  # paragraphs were grouped


def test_importing_the_index_package_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, docmaster_core.index as ix; "
        "heavy = [m for m in ('sklearn', 'scipy.sparse', 'torch', 'faiss', 'fitz', 'openai', 'streamlit') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


def test_index_arrays_stored_in_binary_and_old_json_rows_still_read(tmp_path):
    """Issue 37: a stored index keeps its float arrays in binary (same values, same
    dtypes), far smaller than JSON text; a row written the old way (arrays as JSON
    lists) reads back equal and ``compact_indexes`` rewrites it in binary."""
    import sqlite3

    from docmaster_core.store.workspace import Workspace

    tree = make_tree("paper", PAPER)
    idx = build_document_index(tree, embed(tree), StubLLM(), HashingEmbedder(), IndexSettings(k=5, K=3))
    assert idx.hyperedge_embeddings.size and idx.centers.size
    ws = Workspace(tmp_path / "ws")
    ws.save_index("lean", {"k": 5}, idx.to_json_dict(arrays=True))
    ws.save_index("old", {"k": 5}, idx.to_json_dict())  # lists: as written before issue 37
    con = sqlite3.connect(ws.db_path, isolation_level=None)
    con.execute("UPDATE indexes SET arrays=NULL WHERE doc_id='old'")  # as a schema-1 row has it
    (lean_json, lean_blob), = con.execute("SELECT data_json, arrays FROM indexes WHERE doc_id='lean'")
    (old_json, old_blob), = con.execute("SELECT data_json, arrays FROM indexes WHERE doc_id='old'")
    assert old_blob is None and lean_blob
    n_floats = idx.centers.size + idx.hyperedge_embeddings.size
    assert len(lean_blob) < 4 * n_floats + 1024  # float32 bytes and the .npz headers
    assert len(lean_json) < len(old_json) - 2 * n_floats  # no float left as text
    for doc in ("lean", "old"):
        back = DocumentIndex.from_json_dict(ws.load_index(doc, {"k": 5}))
        for name in ("centers", "hyperedge_embeddings", "labels", "anchor_scores", "hyperedge_links"):
            a, b = getattr(idx, name), getattr(back, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), (doc, name)
    assert ws.compact_indexes() == 1 and ws.compact_indexes() == 0
    (blob,), = con.execute("SELECT arrays FROM indexes WHERE doc_id='old'")
    assert blob is not None
    back = DocumentIndex.from_json_dict(ws.load_index("old", {"k": 5}))
    assert np.array_equal(back.hyperedge_embeddings, idx.hyperedge_embeddings)


def test_schema_1_workspace_gets_the_arrays_column(tmp_path):
    """A workspace written before issue 37 (schema 1, no ``indexes.arrays``) opens,
    keeps its stored index readable and is migrated to schema 2."""
    import sqlite3

    from docmaster_core.store.workspace import SCHEMA_VERSION, Workspace

    ws = Workspace(tmp_path / "ws")
    ws.save_index("d1", {"k": 5}, {"labels": [0, 1], "centers": [[0.5, 0.25]]})
    ws.close()
    con = sqlite3.connect(tmp_path / "ws" / "workspace.sqlite")
    with con:  # rebuild the table as schema 1 had it
        con.execute("CREATE TABLE old AS SELECT doc_id, params_key, params_json, data_json, created_at FROM indexes")
        con.execute("DROP TABLE indexes")
        con.execute("ALTER TABLE old RENAME TO indexes")
        con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    con.close()
    ws = Workspace(tmp_path / "ws")
    assert ws.load_index("d1", {"k": 5}) == {"labels": [0, 1], "centers": [[0.5, 0.25]]}
    con = sqlite3.connect(ws.db_path)
    assert "arrays" in {r[1] for r in con.execute("PRAGMA table_info(indexes)")}
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert ws.compact_indexes() == 1
    got = ws.load_index("d1", {"k": 5})
    assert got["centers"].dtype == np.float32 and got["centers"].tolist() == [[0.5, 0.25]]
