"""Keyword (BM25) scoring of nodes: the lexical component fused into ``combined``.

The small sentence embedder blurs exact names (benchmarks, models, line items such as
"effective tax rate", "Table II"). Node-level BM25 (Robertson and Zaragoza 2009) over
the document-tree nodes recovers them::

    bm25(v, q) = sum over query terms t of idf(t) * tf(t, v) (k1 + 1) / (tf(t, v) + k1 (1 - b + b |v| / avg|v|))
    idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5) + 1)

with N the number of nodes of the workspace, ``n_t`` the nodes containing t, k1 = 1.2,
b = 0.75. Terms are the query's words minus stop words
(:func:`~docmaster_core.text.terms.condition_terms`). The node-term matrix is a
``scipy.sparse`` CSR matrix of the per-node term weights, built once per corpus view;
scoring a query is one sparse column sum.

This is not one of the paper's three strategies. It is usable alone (strategy
``keyword``) and ``combined`` fuses it with them (reciprocal rank fusion) when the
retriever is built with ``keyword=True``; by default it does not, and the flat
baseline is always plain cosine.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .corpus import CorpusView
from ..text.terms import condition_terms, tokens

__all__ = ["KeywordIndex", "keyword_index", "keyword_scores", "doc_term_counts", "evidence_term_counts",
           "COLLECTION_BM25"]


@dataclass
class KeywordIndex:
    """BM25 weights of every node of a view.

    Attributes:
        vocab: Term -> column.
        weights: scipy CSR float32 (N, V); entry (v, t) is the BM25 term weight without
            the idf factor.
        idf: float32 (V,) idf per column.
    """

    vocab: "Mapping[str, int]"
    weights: object
    idf: np.ndarray


class _Columns(Mapping):
    """Term -> column of a :class:`KeywordIndex`: the view's shared term ids
    (:attr:`CorpusView.term_ids`) restricted to the ids that occur in the view, column j
    being the j-th smallest such id (no per-view dictionary of every term is built)."""

    def __init__(self, term_ids: dict[str, int], ids: np.ndarray):
        self._term_ids, self._ids = term_ids, ids

    def __getitem__(self, term: str) -> int:
        g = self._term_ids[term]
        j = int(np.searchsorted(self._ids, g))
        if j >= self._ids.size or self._ids[j] != g:
            raise KeyError(term)
        return j

    def __iter__(self):
        by_id = {g: t for t, g in self._term_ids.items()}
        return (by_id[int(g)] for g in self._ids)

    def __len__(self) -> int:
        return int(self._ids.size)


def doc_term_counts(view: CorpusView, dv) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray]:
    """The term counts of one document's nodes, as :func:`keyword_index` needs them.

    Tokens are :func:`~docmaster_core.text.terms.tokens` of each node's content (the
    ROOT row is empty). Kept per document across runs: in the view's byte-bounded
    :attr:`CorpusView.doc_cache` and on disk (``collection/docinfo/terms``, tagged with
    the node count), so a filter at scale tokenises a candidate once, not once per
    condition (issue 37: re-tokenising the candidates' trees was ~60 % of a warm 5k
    filter).

    Returns:
        ``(terms, rows, cols, counts, lengths, term_ids)``: the document's distinct terms
        in order of first occurrence; int32 (e,) node rows (0-based within the document)
        and int32 (e,) indices into ``terms`` of its non-zero counts, float32 (e,) counts
        (entries in node order, terms in first-occurrence order within a node); float32
        (n_nodes,) token count per node; int64 (len(terms),) each term's id in the
        view's shared :attr:`CorpusView.term_ids`.
    """
    from ..store.docinfo import load_arrays, save_arrays

    cache = view.doc_cache
    key = ("terms", dv.doc_id, dv.n_nodes)
    got = cache.get(key)
    if got is not None:
        return got
    tag = str(dv.n_nodes)
    z = load_arrays(view.ws_path, "terms", dv.doc_id, tag)
    if z is not None and z["lengths"].shape == (dv.n_nodes,):
        raw = z["terms"].tobytes().decode("utf-8")
        got = (raw.split("\n") if raw else [], z["rows"], z["cols"], z["counts"], z["lengths"])
    else:
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        vals: list[int] = []
        lengths = np.zeros(dv.n_nodes, dtype=np.float32)
        for r, n in enumerate(dv.tree.nodes):
            toks = tokens(n.content) if n.id else []
            lengths[r] = len(toks)
            tf: dict[int, int] = {}
            for t in toks:
                j = vocab.setdefault(t, len(vocab))
                tf[j] = tf.get(j, 0) + 1
            rows.extend([r] * len(tf))
            cols.extend(tf.keys())
            vals.extend(tf.values())
        terms = list(vocab)
        got = (terms, np.asarray(rows, np.int32), np.asarray(cols, np.int32), np.asarray(vals, np.float32), lengths)
        save_arrays(view.ws_path, "terms", dv.doc_id, tag,
                    terms=np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8),
                    rows=got[1], cols=got[2], counts=got[3], lengths=lengths)
    got = (*got, view.ids_of_terms(got[0]))
    cache.put(key, got, sum(len(t) + 56 for t in got[0]) + sum(a.nbytes for a in got[1:]) + 100)
    return got


def evidence_term_counts(view: CorpusView, doc_ids: "list[str]", evidence: "Mapping[str, list[int]]"):
    """Term counts of each document's evidence passages for one condition: the lexical
    features of the review's relevance feedback
    (:class:`~docmaster_core.filtering.review.Feedback` weights them by TF-IDF).

    Tokens are those of :func:`doc_term_counts` (the BM25 index's, read from its per-document
    cache, no text is re-read) minus 1-character tokens and the stop words of both
    :data:`~docmaster_core.text.terms.STOPWORDS` and scikit-learn's English list (318
    words; ours alone, 89 words, leave "between", "during", "because": Q10 at 5,000 copies
    asked 40.9 % of the documents with ours alone against 35.4 % with both, 2 seeds).

    Args:
        doc_ids: The documents, in the order of the rows.
        evidence: ``{doc_id: [node ids]}``; ids out of a document's range are ignored; a
            document without evidence gets an empty row.

    Returns:
        scipy CSR float32 (len(doc_ids), V): occurrences of term ``t`` in the evidence
        nodes of document ``i`` (each node counted once), over the V terms that occur.

    Raises:
        RetrievalError: a document is not in the view.
    """
    from scipy import sparse
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from ..text.terms import STOPWORDS

    stop = STOPWORDS | ENGLISH_STOP_WORDS
    rows, cols, vals = [], [], []
    for i, d in enumerate(doc_ids):
        dv = view.doc(d)
        ids = np.unique(np.asarray([int(j) for j in evidence.get(d, ()) if 0 < int(j) < dv.n_nodes], np.int64))
        if not ids.size:
            continue
        terms, r, c, v, _, gid = doc_term_counts(view, dv)
        keep = np.isin(r, ids)
        if not keep.any():
            continue
        ok = np.array([len(t) > 1 and t not in stop for t in terms], dtype=bool)
        keep &= ok[c]
        rows.append(np.full(int(keep.sum()), i, np.int64))
        cols.append(gid[c[keep]])
        vals.append(v[keep])
    if not rows:
        return sparse.csr_matrix((len(doc_ids), 0), dtype=np.float32)
    g = np.concatenate(cols)
    _, local = np.unique(g, return_inverse=True)
    out = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), local.ravel())),
                            shape=(len(doc_ids), int(local.max()) + 1), dtype=np.float32)
    out.sum_duplicates()
    return out


def keyword_index(view: CorpusView, k1: float = 1.2, b: float = 0.75) -> KeywordIndex:
    """The (cached) :class:`KeywordIndex` of a view (BM25, Robertson and Zaragoza 2009;
    the statistics N, avg|v| and n_t are the view's)."""

    def build() -> KeywordIndex:
        from scipy import sparse

        rows, cols, vals = [], [], []
        lengths = np.zeros(view.emb.shape[0], dtype=np.float32)
        for dv in view.docs:
            _, r, c, v, ln, gid = doc_term_counts(view, dv)
            lengths[dv.rows] = ln
            rows.append(r.astype(np.int64) + dv.start)
            cols.append(gid[c])
            vals.append(v)
        n_rows = view.emb.shape[0]
        cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt))  # noqa: E731
        ids, local = np.unique(cat(cols, np.int64), return_inverse=True)
        tf = sparse.csr_matrix((cat(vals, np.float32), (cat(rows, np.int64), local.ravel())),
                               shape=(n_rows, max(1, ids.size)), dtype=np.float32)
        avg = float(lengths[lengths > 0].mean()) if (lengths > 0).any() else 1.0
        norm = (k1 * (1 - b + b * lengths / avg)).astype(np.float32)
        tf = tf.tocoo()
        w = tf.data * (k1 + 1) / (tf.data + norm[tf.row])
        weights = sparse.csc_matrix((w.astype(np.float32), (tf.row, tf.col)), shape=tf.shape)
        df = np.bincount(tf.col, minlength=tf.shape[1]).astype(np.float64)
        idf = np.log((n_rows - df + 0.5) / (df + 0.5) + 1.0).astype(np.float32)
        return KeywordIndex(_Columns(view.term_ids, ids), weights, idf)

    return view.aux(("keyword_index", k1, b), build)


#: :meth:`CorpusView.aux` key of a candidate view's collection-wide BM25 source: ``(lex, rows)``
#: with ``lex`` the workspace's :class:`~docmaster_core.store.lexical_index.LexicalIndex` and
#: ``rows`` int64 (N,) the view's rows in the collection store (set by the filter's stage one).
COLLECTION_BM25 = "collection_bm25"


def keyword_scores(view: CorpusView, query: str) -> np.ndarray:
    """BM25 score of every node for ``query``: float32 (N,), 0 where no term occurs.

    A candidate view of a filter at scale (one that carries :data:`COLLECTION_BM25`) is
    scored by the persisted collection-wide index (:meth:`LexicalIndex.node_scores`,
    bm25s with the same k1, b and idf): the statistics N, avg|v| and n_t are then the
    whole collection's, as in an exhaustive run, and no per-view index is built (issue
    37: building it was the largest share of a warm 5k filter). That index leaves the ROOT
    and back-matter rows empty and counts them in avg|v|; :func:`keyword_index` leaves
    the ROOT row out of avg|v| and counts back matter in n_t. Both rank only body rows.
    """
    src = view.aux(COLLECTION_BM25, lambda: None)
    if src is not None:
        from ..store.lexical_index import K1

        lex, rows = src  # bm25s' Lucene BM25 leaves out the constant factor (k1 + 1) of the formula above
        return np.asarray(lex.node_scores(condition_terms(query))[rows] * np.float32(K1 + 1.0), dtype=np.float32)
    ki = keyword_index(view)
    cols = [ki.vocab[t] for t in condition_terms(query) if t in ki.vocab]
    if not cols:
        return np.zeros(view.emb.shape[0], dtype=np.float32)
    sub = ki.weights[:, cols]
    return np.asarray(sub @ ki.idf[cols], dtype=np.float32).ravel()
