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

from dataclasses import dataclass

import numpy as np

from .corpus import CorpusView
from ..text.terms import condition_terms, tokens

__all__ = ["KeywordIndex", "keyword_index", "keyword_scores"]


@dataclass
class KeywordIndex:
    """BM25 weights of every node of a view.

    Attributes:
        vocab: Term -> column.
        weights: scipy CSR float32 (N, V); entry (v, t) is the BM25 term weight without
            the idf factor.
        idf: float32 (V,) idf per column.
    """

    vocab: dict[str, int]
    weights: object
    idf: np.ndarray


def keyword_index(view: CorpusView, k1: float = 1.2, b: float = 0.75) -> KeywordIndex:
    """The (cached) :class:`KeywordIndex` of a view."""

    def build() -> KeywordIndex:
        from scipy import sparse

        vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(view.emb.shape[0], dtype=np.float32)
        r = 0
        for dv in view.docs:
            for n in dv.tree.nodes:
                toks = tokens(n.content) if n.id else []
                lengths[r] = len(toks)
                if toks:
                    tf: dict[int, int] = {}
                    for t in toks:
                        j = vocab.setdefault(t, len(vocab))
                        tf[j] = tf.get(j, 0) + 1
                    rows.extend([r] * len(tf))
                    cols.extend(tf.keys())
                    vals.extend(tf.values())
                r += 1
        n_rows = view.emb.shape[0]
        tf = sparse.csr_matrix((np.asarray(vals, np.float32), (np.asarray(rows), np.asarray(cols))),
                               shape=(n_rows, max(1, len(vocab))), dtype=np.float32)
        avg = float(lengths[lengths > 0].mean()) if (lengths > 0).any() else 1.0
        norm = (k1 * (1 - b + b * lengths / avg)).astype(np.float32)
        tf = tf.tocoo()
        w = tf.data * (k1 + 1) / (tf.data + norm[tf.row])
        weights = sparse.csc_matrix((w.astype(np.float32), (tf.row, tf.col)), shape=tf.shape)
        df = np.bincount(tf.col, minlength=tf.shape[1]).astype(np.float64)
        idf = np.log((n_rows - df + 0.5) / (df + 0.5) + 1.0).astype(np.float32)
        return KeywordIndex(vocab, weights, idf)

    return view.aux(("keyword_index", k1, b), build)


def keyword_scores(view: CorpusView, query: str) -> np.ndarray:
    """BM25 score of every node for ``query``: float32 (N,), 0 where no term occurs."""
    ki = keyword_index(view)
    cols = [ki.vocab[t] for t in condition_terms(query) if t in ki.vocab]
    if not cols:
        return np.zeros(view.emb.shape[0], dtype=np.float32)
    sub = ki.weights[:, cols]
    return np.asarray(sub @ ki.idf[cols], dtype=np.float32).ravel()
