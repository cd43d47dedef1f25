"""The collection store (issue 18): memory-mapped float16 vectors, lazy trees and one
persisted FAISS index give the same filter decisions as the in-memory float32 view;
incremental updates equal a rebuild; a workspace of the old layout opens."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from docmaster_core.store.collection import collection_dir, sync_collection
from docmaster_core.store.collection_index import collection_index, search
from docmaster_core.config import RetrievalSettings
from docmaster_core.errors import WorkspaceError
from docmaster_core.retrieval import corpus
from docmaster_core.filtering.run import run_filter
from docmaster_core.retrieval.retriever import Retriever
from support.toy import CONDITIONS, TOY_DOCS, add_toy_document, build_toy_workspace

STRATS = ("tree", "semantic", "hyperedge", "combined")


def _decisions(ws, embedder):
    """``{(condition, strategy): [(doc_id, decision, rank)]}`` and evidence scores of offline runs."""
    r = Retriever(ws, embedder, RetrievalSettings())
    out, scores = {}, {}
    for c in CONDITIONS:
        run = run_filter(ws, embedder, None, r.settings, c, decider="calibrated", save=False, retriever=r)
        for s in STRATS:
            # the passages as a set: fp16 rounding may swap two near-tied passages of the combined
            # evidence's score-normalised (CombSUM) list; the decisions and ranks must not change
            out[(c, s)] = [(d.doc_id, d.decision(s), d.decisions[s].rank,
                            sorted((e.node_id, e.text, e.page, e.bbox, e.section_path) for e in d.evidence[s]))
                           for d in run.documents]
            scores[(c, s)] = [d.decisions[s].evidence_score for d in run.documents]
    return out, scores


@pytest.mark.slow
def test_memory_mapped_fp16_view_gives_the_same_filter_decisions(tmp_path, embedder, monkeypatch):
    ws = build_toy_workspace(tmp_path / "ws", embedder)
    # today's path: every tree and a float32 matrix in memory (the store cannot be written)
    corpus.clear_corpus_cache()
    with monkeypatch.context() as m:
        m.setattr(corpus, "sync_collection", lambda *a, **k: (_ for _ in ()).throw(PermissionError("read-only")))
        old_view = corpus.load_corpus(ws)
        assert old_view.collection is None and old_view.emb.dtype == np.float32
        old, old_scores = _decisions(ws, embedder)
    assert not collection_dir(ws).exists()
    corpus.clear_corpus_cache()
    view = corpus.load_corpus(ws)
    assert view.collection is not None
    assert isinstance(view.emb, np.memmap) and view.emb.dtype == np.float16
    for a in ("doc_of", "node_of", "type_code", "depth", "back_matter", "page", "offsets"):
        np.testing.assert_array_equal(getattr(view, a), getattr(old_view, a), err_msg=a)
    assert view.back_matter.any()  # the toy documents have reference lists
    assert [d.doc_id for d in view.docs] == [d.doc_id for d in old_view.docs]
    assert view.docs[1].tree.nodes == old_view.docs[1].tree.nodes  # loaded on demand
    np.testing.assert_allclose(view.cosines(old_view.emb[:3]), old_view.emb[:3] @ old_view.emb.T, atol=2e-3)
    new, new_scores = _decisions(ws, embedder)
    assert new == old
    for k in old_scores:
        np.testing.assert_allclose(new_scores[k], old_scores[k], atol=0.05, err_msg=str(k))
    corpus.clear_corpus_cache()


def _files(ws) -> tuple[bytes, bytes]:
    d = collection_dir(ws)
    return (d / "vectors.bin").read_bytes(), (d / "nodes.bin").read_bytes()


@pytest.mark.slow
def test_incremental_append_and_faiss_add_match_a_rebuild(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:-2])
    coll = sync_collection(ws, corpus.node_meta)
    gen = coll.generation
    idx = collection_index(coll)
    assert idx.ntotal == coll.rows
    # an interrupted write left rows past the manifest: the next append cuts them off
    with open(collection_dir(ws) / "vectors.bin", "ab") as f:
        f.write(b"\x01" * 1000)
    for f, title, secs in TOY_DOCS[-2:]:
        add_toy_document(ws, embedder, f, title, secs)
    coll2 = sync_collection(ws, corpus.node_meta)
    assert coll2.generation == gen and coll2.rows > coll.rows and len(coll2.doc_ids) == len(TOY_DOCS)
    q = np.asarray(embedder.encode(["results on ImageNet", "household appliance cleaning"]), np.float32)
    rows_inc, cos_inc = search(coll2, q, 10)  # the index gains the new rows incrementally
    appended = _files(ws)
    shutil.rmtree(collection_dir(ws))
    coll3 = sync_collection(ws, corpus.node_meta)
    assert coll3.generation != gen
    assert _files(ws) == appended
    rows_new, cos_new = search(coll3, q, 10)
    np.testing.assert_array_equal(rows_inc, rows_new)
    np.testing.assert_allclose(cos_inc, cos_new, atol=1e-6)
    exact = np.asarray(coll3.emb, np.float32) @ q.T
    np.testing.assert_allclose(cos_new, np.take_along_axis(exact.T, rows_new, 1), atol=1e-4)
    assert (rows_new[:, 0] == exact.argmax(0)).all()

    # removing a document rebuilds the store and the index without its rows
    gone = coll3.doc_ids[1]
    ws.remove_document(gone)
    coll4 = sync_collection(ws, corpus.node_meta)
    assert gone not in coll4.doc_ids and coll4.generation != coll3.generation
    assert collection_index(coll4).ntotal == coll4.rows
    corpus.clear_corpus_cache()
    view = corpus.load_corpus(ws)
    assert not view.has(gone) and view.emb.shape[0] == coll4.rows
    corpus.clear_corpus_cache()


def test_old_layout_workspace_opens_and_damaged_vectors_are_skipped(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:3])
    assert not collection_dir(ws).exists()  # per-document .npy files only, as before
    bad = ws.documents()[1]
    np.save(ws.vectors_dir / f"{bad.doc_id}.npy", np.zeros((2, 384), np.float32))
    corpus.clear_corpus_cache()
    view = corpus.load_corpus(ws)
    assert collection_dir(ws).is_dir() and len(view.docs) == 2
    assert "2 rows" in view.skipped[bad.doc_id] and "check --repair" in view.skipped[bad.doc_id]
    # the vector file is repaired: the store follows (rebuilt: the file's mtime changed)
    ws.write_embeddings(bad.doc_id, np.asarray(embedder.encode(["x"] * bad.n_nodes), np.float32))
    corpus.clear_corpus_cache()
    assert len(corpus.load_corpus(ws).docs) == 3
    corpus.clear_corpus_cache()


def test_bad_vectors_dtype_is_refused_and_float32_store_works(tmp_path, embedder, monkeypatch):
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:2])
    monkeypatch.setenv("DOCMASTER_VECTORS_DTYPE", "int8")
    with pytest.raises(WorkspaceError, match="float16 or float32"):
        sync_collection(ws, corpus.node_meta)
    monkeypatch.setenv("DOCMASTER_VECTORS_DTYPE", "float32")
    coll = sync_collection(ws, corpus.node_meta)
    assert coll.emb.dtype == np.float32
    np.testing.assert_array_equal(coll.emb[: ws.documents()[0].n_nodes], ws.load_embeddings(coll.doc_ids[0]))


def test_repair_removes_collection_leftovers_and_an_unreadable_store(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:2])
    coll = sync_collection(ws, corpus.node_meta)
    d = collection_dir(ws)
    (d / ".manifest.json.123.tmp").write_text("{")
    assert ws.repair() == ["collection/.manifest.json.123.tmp"]
    (d / "manifest.json").write_text("not json")
    assert "collection/manifest.json" in ws.repair()
    again = sync_collection(ws, corpus.node_meta)  # rebuilt from the .npy files
    assert again.rows == coll.rows and again.generation != coll.generation


def test_an_unchanged_faiss_index_is_opened_once_per_process(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:-1])
    coll = sync_collection(ws, corpus.node_meta)
    first = collection_index(coll)  # built and written
    assert collection_index(coll) is first  # then reused, not read again
    f, title, secs = TOY_DOCS[-1]
    add_toy_document(ws, embedder, f, title, secs)
    coll2 = sync_collection(ws, corpus.node_meta)
    grown = collection_index(coll2)  # the file was rewritten: a new index
    assert grown is not first and grown.ntotal == coll2.rows > first.ntotal
    assert collection_index(coll2) is grown
    corpus.clear_corpus_cache()


def test_collection_indexes_writes_missing_per_document_files_only(tmp_path, embedder):
    from docmaster_core.pipeline import DOCINFO_KINDS, DocMaster
    from docmaster_core.store.docinfo import docinfo_dir, has_arrays

    ws = build_toy_workspace(tmp_path / "ws", embedder, TOY_DOCS[:4])
    dm = DocMaster(ws, embedder=embedder)
    first = dm.collection_indexes()
    ids = [d.doc_id for d in ws.documents()]
    assert first["docinfo_docs"] == 4
    assert all(has_arrays(ws.path, k, d) for k in DOCINFO_KINDS for d in ids)
    assert dm.collection_indexes()["docinfo_docs"] == 0  # all there: nothing is read or written
    (docinfo_dir(ws.path) / "roles" / f"{ids[2]}.safetensors").unlink()
    corpus.clear_corpus_cache()  # a later process: nothing of it in memory
    assert dm.collection_indexes()["docinfo_docs"] == 1 and has_arrays(ws.path, "roles", ids[2])
    corpus.clear_corpus_cache()
