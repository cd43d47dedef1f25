"""Two-stage filtering at scale (issue 25): candidate documents from the collection-wide
FAISS and BM25 indexes, exact scoring of the candidates only, and indexes that follow
the workspace when documents are added or removed."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.config import CandidateSettings, get_settings
from dataclasses import replace

from docmaster_core.filtering.decider import DEFAULT_CALIBRATION, lexical_stats
from docmaster_core.pipeline import DocMaster
from docmaster_core.retrieval import corpus
from docmaster_core.store.collection_index import collection_index, index_kind, search
from docmaster_core.store.lexical_index import lexical_index
from test_filter_qa import CONDITIONS
from support.toy import add_toy_document, build_toy_workspace, generated_docs

STRATS = ("tree", "semantic", "hyperedge", "combined")
EXHAUSTIVE = CandidateSettings(min_docs=10**9)
#: The rule's statistics over the 8 best documents (44 by default, more than this collection
#: holds): as at scale, the candidate pool is then larger than the statistics' pool.
CALIB = replace(DEFAULT_CALIBRATION, pool=8)


@pytest.fixture(scope="module")
def generated(tmp_path_factory, embedder):
    """A generated collection of 40 documents (8 copies of each toy topic, mixed)."""
    path = tmp_path_factory.mktemp("gen") / "ws"
    build_toy_workspace(path, embedder, generated_docs(40)).close()
    return path


def _dm(path, embedder):
    return DocMaster(path, get_settings(llm={"backend": "offline"}), embedder=embedder)


def test_candidates_cover_every_document_the_exhaustive_path_keeps(generated, embedder):
    dm = _dm(generated, embedder)
    some_left_out = False
    for c in CONDITIONS:
        full = dm.filter(c, decider="calibrated", save=False, candidates=EXHAUSTIVE, calibration=CALIB)
        assert full.candidates == {} and full.not_candidates() == 0
        two = dm.filter(c, decider="calibrated", save=False, candidates=CandidateSettings(min_docs=0, pool_docs=16),
                        calibration=CALIB)
        assert [d.doc_id for d in two.documents] == [d.doc_id for d in full.documents]
        out = [d for d in two.documents if d.decisions["combined"].decided_by == "not-a-candidate"]
        assert two.not_candidates() == len(out) == len(two.documents) - two.candidates["candidates"]
        assert two.to_dict()["candidates"]["not_candidates"] == len(out)
        some_left_out |= bool(out)
        for d in out:
            assert all(d.decisions[s].decision is False and d.evidence[s] == [] for s in STRATS)
        by_id = {d.doc_id: d for d in two.documents}
        for s in STRATS:
            for doc_id in full.matches(s):
                assert by_id[doc_id].decisions[s].decided_by != "not-a-candidate", (c, s, doc_id)
    assert some_left_out  # the pool was small enough that the stage mattered


def test_small_collection_scores_every_document_by_default(generated, embedder):
    dm = _dm(generated, embedder)
    assert dm.settings.candidates.min_docs >= 40
    run = dm.filter(CONDITIONS[2], decider="calibrated", save=False)
    assert run.candidates == {} and "candidates" not in run.to_dict()
    assert all(d.decisions[s].decided_by != "not-a-candidate" for d in run.documents for s in STRATS)


def test_lexical_index_equals_the_tree_walk_statistics(generated, embedder):
    corpus.clear_corpus_cache()
    view = corpus.load_corpus(_dm(generated, embedder).ws)
    li = lexical_index(_dm(generated, embedder).ws, view.collection)
    st = lexical_stats(view)
    assert (li.n_docs, li.df) == (st.n_docs, st.df)
    assert li.rows == view.emb.shape[0]


def test_approximate_dense_index_past_the_size_threshold(generated, embedder):
    view = corpus.load_corpus(_dm(generated, embedder).ws)
    coll = view.collection
    assert index_kind(coll.rows) == "flat-fp16"
    ivf = collection_index(coll, exact_max_rows=10, nprobe=64)
    assert ivf.ntotal == coll.rows and index_kind(coll.rows, 10).startswith("ivf")
    rows = np.arange(0, coll.rows, 37)
    I, D = search(coll, np.asarray(coll.emb[rows], np.float32), 1, exact_max_rows=10, nprobe=64)
    # nprobe = every list: each row finds itself or an identical copy (the generated documents share passages)
    np.testing.assert_allclose(D[:, 0], 1.0, atol=2e-3)
    assert (I[:, 0] >= 0).all()
    flat = collection_index(coll)  # back under the threshold after a rebuild
    assert flat.ntotal == coll.rows


def test_added_and_removed_documents_update_both_indexes(tmp_path, embedder):
    ws = build_toy_workspace(tmp_path / "ws", embedder, generated_docs(12))
    dm = _dm(tmp_path / "ws", embedder)
    view = corpus.load_corpus(dm.ws)
    li = lexical_index(dm.ws, view.collection)
    assert "zygomorphic" not in li.df
    new = add_toy_document(dm.ws, embedder, "orchids.pdf", "Zygomorphic Orchid Flowers", [
        ("1 Flowers", ["Zygomorphic orchid flowers attract specific pollinators such as bees."])])
    view = corpus.load_corpus(dm.ws)
    di = view.doc(new).index
    rows = np.arange(view.offsets[di], view.offsets[di + 1])
    li = lexical_index(dm.ws, view.collection)
    assert li.rows == view.emb.shape[0] and li.df["zygomorphic"] == 1
    hits = np.flatnonzero(li.node_scores(["zygomorphic"]) > 0)
    assert hits.size and set(hits.tolist()) <= set(rows.tolist())
    assert collection_index(view.collection).ntotal == view.emb.shape[0]
    I, _ = search(view.collection, np.asarray(view.emb[rows[-1]], np.float32), 1)
    assert I[0, 0] == rows[-1]
    cs = CandidateSettings(min_docs=0, pool_docs=2)
    run = dm.filter("Which orchid flowers are zygomorphic?", decider="calibrated", save=False, candidates=cs,
                    calibration=replace(DEFAULT_CALIBRATION, pool=2))
    assert run.not_candidates() > 0
    assert next(d for d in run.documents if d.doc_id == new).decisions["combined"].decided_by != "not-a-candidate"

    from docmaster_core.store.docinfo import docinfo_dir

    assert (docinfo_dir(tmp_path / "ws") / "roles" / f"{new}.safetensors").exists()
    dm.remove([new])
    view = corpus.load_corpus(dm.ws)
    assert not view.has(new)
    li = lexical_index(dm.ws, view.collection)
    assert not list(docinfo_dir(tmp_path / "ws").glob(f"*/{new}.*"))  # pruned with the rebuilt index
    assert li.rows == view.emb.shape[0] and "zygomorphic" not in li.df
    assert not (li.node_scores(["zygomorphic"]) > 0).any()
    assert collection_index(view.collection).ntotal == view.emb.shape[0]
    run = dm.filter("Which orchid flowers are zygomorphic?", decider="calibrated", save=False, candidates=cs,
                    calibration=replace(DEFAULT_CALIBRATION, pool=2))
    assert new not in {d.doc_id for d in run.documents}
    ws.close()


def test_candidate_pool_smaller_than_the_statistics_pool_is_refused(generated, embedder):
    from docmaster_core.errors import RetrievalError

    with pytest.raises(RetrievalError, match="pool_docs"):
        _dm(generated, embedder).filter(CONDITIONS[0], decider="calibrated", save=False,
                                        candidates=CandidateSettings(min_docs=0, pool_docs=10))


def test_candidate_settings_reject_unknown_keys():
    with pytest.raises(Exception, match="pool_dcs"):
        get_settings(candidates={"pool_dcs": 5})


def test_every_document_a_candidate_gives_the_exhaustive_decisions_and_scores(generated, embedder):
    """The candidate path over a sub-view (collection-wide lexical statistics, term counts
    from the stored index) computes the same evidence scores as the exhaustive path."""
    from docmaster_core.store.docinfo import docinfo_dir

    for c in CONDITIONS:
        corpus.clear_corpus_cache()
        full = _dm(generated, embedder).filter(c, decider="calibrated", save=False, candidates=EXHAUSTIVE)
        # a fresh view: the candidates' roles, parents and hyper-edges come from collection/docinfo
        corpus.clear_corpus_cache()
        assert len(list((docinfo_dir(generated) / "hyperedges").glob("*.safetensors"))) == len(full.documents)
        two = _dm(generated, embedder).filter(c, decider="calibrated", save=False,
                                              candidates=CandidateSettings(min_docs=0, pool_docs=44))
        assert two.candidates["candidates"] == len(full.documents) and two.not_candidates() == 0
        for a, b in zip(full.documents, two.documents):
            for s in STRATS:
                da, db = a.decisions[s], b.decisions[s]
                assert (da.decision, da.rank, da.evidence_ids) == (db.decision, db.rank, db.evidence_ids), (c, s)
                assert db.evidence_score == pytest.approx(da.evidence_score, abs=1e-9)


def test_ask_over_candidate_documents_gives_the_exhaustive_passages(generated, embedder):
    dm = _dm(generated, embedder)
    for q in ("Which datasets are used to evaluate open-domain question answering?",
              "What top-5 error does the network reach on ImageNet?"):
        full = dm.ask(q, all_docs=True, save=False, candidates=EXHAUSTIVE)
        two = dm.ask(q, all_docs=True, save=False, candidates=CandidateSettings(min_docs=0, pool_docs=16))
        assert full.candidates == {} and two.candidates["not_candidates"] > 0
        assert two.to_dict()["candidates"]["candidates"] == 40 - two.candidates["not_candidates"]
        assert [(e.doc_id, e.node_id) for e in two.evidence] == [(e.doc_id, e.node_id) for e in full.evidence]
        assert two.answer.text == full.answer.text and two.doc_ids == full.doc_ids


def test_filter_page_lists_only_the_scored_documents_and_counts_the_others(generated, embedder):
    from ui.filtering import candidates_line, ranked_rows

    run = _dm(generated, embedder).filter(CONDITIONS[2], decider="calibrated", save=False, calibration=CALIB,
                                          candidates=CandidateSettings(min_docs=0, pool_docs=16))
    page = run.to_dict()
    rows = ranked_rows(page)
    assert len(rows) == run.candidates["candidates"] < len(run.documents)
    line = candidates_line(page)
    assert line.startswith(f"{run.not_candidates()} of {len(run.documents)} documents were not candidates")
    assert candidates_line(_dm(generated, embedder).filter(CONDITIONS[2], decider="calibrated",
                                                           save=False).to_dict()) is None


def test_keyword_index_from_stored_term_counts_equals_tokenising_the_trees(tmp_path, generated, embedder):
    """Issue 37: the BM25 node index of a view reads each document's term counts from
    ``collection/docinfo/terms`` (written on first use); its scores equal those of
    tokenising every tree, for the whole collection and for a candidate sub-view."""
    import shutil

    from docmaster_core.retrieval import keyword
    from docmaster_core.text.terms import condition_terms, tokens

    ws_path = tmp_path / "ws"
    shutil.copytree(generated, ws_path)
    corpus.clear_corpus_cache()
    view = corpus.load_corpus(_dm(ws_path, embedder).ws)

    def by_tokenising(v, query):  # the BM25 of the module's docstring, computed directly
        terms = [t for t in condition_terms(query)]
        rows = [tokens(n.content) if n.id else [] for dv in v.docs for n in dv.tree.nodes]
        lengths = np.array([len(r) for r in rows], dtype=np.float64)
        avg = lengths[lengths > 0].mean()
        out = np.zeros(len(rows))
        for t in dict.fromkeys(terms):
            tf = np.array([r.count(t) for r in rows], dtype=np.float64)
            df = (tf > 0).sum()
            if not df:
                continue
            idf = np.log((len(rows) - df + 0.5) / (df + 0.5) + 1.0)
            out += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * lengths / avg))
        return out

    for sub in (view, corpus.sub_view(view, range(3, 29))):
        for q in CONDITIONS:
            got = keyword.keyword_scores(sub, q)
            assert np.allclose(got, by_tokenising(sub, q), rtol=1e-5, atol=1e-6), q
    stored = sorted(p.stem for p in (ws_path / "collection" / "docinfo" / "terms").glob("*.safetensors"))
    assert stored == sorted(dv.doc_id for dv in view.docs)
    # a fresh process's view: the counts come from disk, the scores are the same bits
    first = [keyword.keyword_scores(view, q) for q in CONDITIONS]
    corpus.clear_corpus_cache()
    again = corpus.load_corpus(_dm(ws_path, embedder).ws)
    def no_tree(doc_id):
        raise AssertionError(f"tree of {doc_id} read")

    for dv in again.docs:  # no tree is needed to build the index
        dv._tree, dv._loader = None, no_tree
    assert all(np.array_equal(a, keyword.keyword_scores(again, q)) for a, q in zip(first, CONDITIONS))


def test_name_fields_come_back_from_disk_without_reading_a_tree(tmp_path, generated, embedder):
    """Issue 37: routing a question by names keeps each document's name tokens in
    ``collection/docinfo/names``; a later process gets the same fields without trees."""
    import shutil

    from docmaster_core.qa.names import name_fields

    ws_path = tmp_path / "ws"
    shutil.copytree(generated, ws_path)
    corpus.clear_corpus_cache()
    first = name_fields(corpus.load_corpus(_dm(ws_path, embedder).ws))
    corpus.clear_corpus_cache()
    again = corpus.load_corpus(_dm(ws_path, embedder).ws)

    def no_tree(doc_id):
        raise AssertionError(f"tree of {doc_id} read")

    for dv in again.docs:
        dv._tree, dv._loader = None, no_tree
    nf = name_fields(again)
    assert nf.tokens == first.tokens and nf.squashed == first.squashed
    assert nf.df == first.df and nf.file_df == first.file_df and nf.n_docs == first.n_docs == 40
    assert dict(nf.text_df) == dict(first.text_df) and len(nf.text_df) > 50
    t = max(first.text_df, key=first.text_df.get)
    assert nf.text_df.get(t) == first.text_df[t] > 1 and nf.text_df.get("no-such-token", 0) == 0


def test_candidate_view_keyword_scores_are_the_collection_bm25(generated, embedder):
    """Issue 37: a filter's candidate view scores BM25 from the persisted collection index
    (the whole collection's N, avg|v| and n_t, ROOT and back matter indexed empty) and
    builds no BM25 index of its own."""
    from docmaster_core.filtering.run import _stage_one
    from docmaster_core.retrieval import keyword
    from docmaster_core.text.terms import condition_terms, tokens

    dm = _dm(generated, embedder)
    retr = dm.retriever()
    view = retr.view
    rows_tokens = [tokens(n.content) if n.id and not view.back_matter[dv.start + n.id] else []
                   for dv in view.docs for n in dv.tree.nodes]
    lengths = np.array([len(r) for r in rows_tokens], dtype=np.float64)
    for c in CONDITIONS:
        cand, sub = _stage_one(retr, view, c, CandidateSettings(min_docs=0, pool_docs=16), None, 0.25)
        assert 0 < len(sub.docs) < len(view.docs)
        want = np.zeros(len(rows_tokens))
        for t in dict.fromkeys(condition_terms(c)):  # Lucene BM25 over every row of the collection
            tf = np.array([r.count(t) for r in rows_tokens], dtype=np.float64)
            df = (tf > 0).sum()
            if df:
                idf = np.log((len(rows_tokens) - df + 0.5) / (df + 0.5) + 1.0)
                want += idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * lengths / lengths.mean()))
        rows = np.concatenate([np.arange(view.offsets[i], view.offsets[i + 1]) for i in cand.doc_indices])
        got = keyword.keyword_scores(sub, c)
        assert got.shape == (rows.size,) and (got > 0).any()
        assert np.allclose(got, want[rows], rtol=1e-4, atol=1e-5), c
        assert ("keyword_index", 1.2, 0.75) not in sub._aux


def test_evidence_lengths_are_the_passage_texts_and_follow_new_summaries(tmp_path, generated, embedder):
    """Issue 37: the budgeted evidence counts passages by ``collection/docinfo/chars``
    (written on first use) instead of reading every pooled node; the lengths equal
    ``node_text``'s, and new summaries drop the stored ones."""
    import shutil

    from docmaster_core.retrieval.corpus import evidence_chars, node_text
    from docmaster_core.store.docinfo import docinfo_dir

    ws_path = tmp_path / "ws"
    shutil.copytree(generated, ws_path)
    corpus.clear_corpus_cache()
    dm = _dm(ws_path, embedder)
    view = corpus.load_corpus(dm.ws)
    for dv in view.docs[:5]:
        tree = dv.tree
        want = [len(node_text(n, tree.title if n.id == 0 else "")) for n in tree.nodes]
        assert evidence_chars(view, dv.index).tolist() == want
    dv = view.docs[0]
    stored = docinfo_dir(ws_path) / "chars" / f"{dv.doc_id}.safetensors"
    assert stored.exists()
    sec = next(n for n in dv.tree.nodes if n.type.name == "TITLE")
    dm.ws.update_summaries(dv.doc_id, {sec.id: "A new, much longer summary of this section. " * 5})
    assert not stored.exists()
    corpus.clear_corpus_cache()
    again = corpus.load_corpus(dm.ws)
    n = again.docs[0].tree.nodes[sec.id]
    assert evidence_chars(again, 0)[sec.id] == len(node_text(n, "")) > len(sec.content) + 200
