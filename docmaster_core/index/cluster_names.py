"""Names for clusters from their content: class-based TF-IDF (issue 36).

A cluster of passages is named by the terms that are frequent in it and rare in the
other clusters, the class-based TF-IDF of BERTopic (Grootendorst 2022, "BERTopic: Neural
topic modeling with a class-based TF-IDF procedure", Eq. 1):

    W(t, c) = tf(t, c) * log(1 + A / f(t))

with ``tf(t, c)`` the frequency of term t in cluster c (all its passages joined, L1-
normalised per cluster), ``f(t)`` the frequency of t over all clusters and ``A`` the
average number of words per cluster. Counting is scikit-learn's ``CountVectorizer``
(English stop words removed, words of 3+ letters). A term found in one passage only is
not a name (``min_passages``): a name says what several passages share; and with four or
more clusters a term found in most of them names none (``max_share``). Over a collection, a
term found in the passages of one document only is not a name either (``min_groups``): a party,
a station's call sign ("WLIB"), a product or a defined term names a contract, not what the
contracts of a cluster share.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["cluster_names", "representative_passages"]


def cluster_names(texts: Sequence[str], labels: Sequence[int], n_terms: int = 3, min_passages: int = 2,
                  max_share: float = 0.5, groups: Sequence[object] | None = None, min_groups: int = 2
                  ) -> dict[int, list[str]]:
    """The ``n_terms`` most distinctive terms of each cluster (BERTopic's c-TF-IDF).

    Args:
        texts: One passage per point, length n.
        labels: int (n,) cluster of each point (any integers; a negative label is noise and
            gets no name).
        n_terms: Terms per name.
        min_passages: A term must occur in at least this many passages of the cluster (of a
            cluster of at least twice as many passages; in a smaller one, in one).
        max_share: With 4 clusters or more, a term found in more than this share of the
            clusters names none (the words of a whole collection: "shall", "party").
        groups: Length n, the document of each passage (any hashable ids); None: one
            document.
        min_groups: A term must occur in passages of at least this many documents of the
            cluster (of a cluster spanning that many; else in one). A cluster none of whose
            terms passes this rule is named without it.

    Returns:
        ``{cluster: [term, ...]}`` best first; a cluster without such terms gets ``[]``.

    Raises:
        ValueError: ``texts`` and ``labels`` differ in length.
    """
    from sklearn.feature_extraction.text import CountVectorizer

    labels = np.asarray(labels, dtype=np.int64)
    if len(texts) != labels.size:
        raise ValueError(f"{len(texts)} texts but {labels.size} labels")
    if groups is not None and len(groups) != labels.size:
        raise ValueError(f"{len(groups)} document ids but {labels.size} labels")
    keep = labels >= 0
    clusters = sorted(set(labels[keep].tolist()))
    if not clusters:
        return {}
    vec = CountVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_]{3,}\b", lowercase=True)
    try:
        x = vec.fit_transform([t or "" for t, k in zip(texts, keep) if k])  # (passages, terms) counts
    except ValueError:  # no term at all (empty vocabulary)
        return {c: [] for c in clusters}
    lab = labels[keep]
    member = np.zeros((len(clusters), lab.size))
    member[np.searchsorted(clusters, lab), np.arange(lab.size)] = 1.0
    tf = np.asarray((x.T @ member.T).T)  # (clusters, terms) term counts per cluster
    passages = np.asarray(((x > 0).T @ member.T).T)  # passages of each cluster holding each term
    words = tf.sum(axis=1, keepdims=True)
    a = float(words.mean()) or 1.0
    f = tf.sum(axis=0)
    w = (tf / np.maximum(words, 1.0)) * np.log1p(a / np.maximum(f, 1.0))
    if len(clusters) >= 4:  # a word of most clusters ("shall", "party") names none of them
        spread = (passages > 0).sum(axis=0) / len(clusters)
        w[:, spread > max_share] = 0.0
    size = member.sum(axis=1, keepdims=True)
    need = np.where(size >= 2 * min_passages, min_passages, 1)  # a small cluster: any of its passages
    w[passages < need] = 0.0
    if groups is not None:  # a term of one document's passages (a party, a product) names no cluster
        from scipy import sparse

        _, g = np.unique(np.asarray([str(v) for v in groups], dtype=object)[keep], return_inverse=True)
        pair = np.searchsorted(clusters, lab) * (int(g.max()) + 1) + g  # (cluster, document) of each passage
        pairs, col = np.unique(pair, return_inverse=True)
        pm = sparse.csr_matrix((np.ones(lab.size), (col, np.arange(lab.size))), shape=(pairs.size, lab.size))
        held = ((pm @ (x > 0).astype(np.float64)) > 0).astype(np.float64)  # (cluster-document pairs, terms)
        owner = pairs // (int(g.max()) + 1)
        om = sparse.csr_matrix((np.ones(pairs.size), (owner, np.arange(pairs.size))), shape=(len(clusters), pairs.size))
        docs = np.asarray((om @ held).todense())  # documents of each cluster holding each term
        spans = np.bincount(owner, minlength=len(clusters))[:, None]
        shared = np.where(docs >= np.minimum(min_groups, spans), w, 0.0)
        # a cluster none of whose words is shared by its documents (mostly one document's
        # passages) keeps its own words rather than no name
        unnamed = ~(shared > 0).any(axis=1)
        w = np.where(unnamed[:, None], w, shared)
    terms = vec.get_feature_names_out()
    out = {}
    for i, c in enumerate(clusters):
        best = np.argsort(-w[i], kind="stable")[:n_terms]
        out[c] = [str(terms[j]) for j in best if w[i, j] > 0]
    return out


def representative_passages(emb: np.ndarray, labels: Sequence[int], n: int = 3) -> dict[int, list[int]]:
    """The passages that show what each cluster is about: its ``n`` members closest (cosine)
    to the cluster's mean embedding, the centroid-nearest "representative documents" of topic
    models (BERTopic shows its representatives beside the c-TF-IDF names). The first members
    in reading order, shown before, were often a section's opening lines, unlike the topic.

    Args:
        emb: float (N, d) passage embeddings (any norm; rows are L2-normalised here).
        labels: int (N,) cluster label per passage (-1 = noise, skipped).
        n: Representatives per cluster (>= 1).

    Returns:
        ``{label: [row index, ...]}``, closest first, at most ``n`` per cluster.

    Raises:
        ValueError: ``emb`` and ``labels`` differ in length, or ``n`` < 1.
    """
    x = np.asarray(emb, dtype=np.float32)
    lab = np.asarray(labels, dtype=np.int64)
    if x.ndim != 2 or x.shape[0] != lab.shape[0]:
        raise ValueError(f"emb has {x.shape[0] if x.ndim else 0} rows for {lab.shape[0]} labels")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    out: dict[int, list[int]] = {}
    for c in np.unique(lab[lab >= 0]):
        rows = np.flatnonzero(lab == c)
        centre = x[rows].mean(axis=0)
        sims = x[rows] @ (centre / max(float(np.linalg.norm(centre)), 1e-12))
        out[int(c)] = rows[np.argsort(-sims, kind="stable")[:n]].tolist()
    return out
