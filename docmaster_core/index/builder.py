"""Build the structure-aware semantic index of a document and of a collection.

Source: DocMaster (arXiv 2607.08539) Sec. 2.3 (SPEC F3-F5). Per document:

1. SEC (Eq. (1)) over all pairs of TEXT nodes; the top-k pairs are the anchor pairs
   (pairs with identical text are skipped);
2. one ``llm.label_pairs`` call labels the k anchor pairs must-link / cannot-link;
3. PC-KMeans (Eq. (2), Basu et al. 2004) clusters all TEXT nodes into
   ``min(K, #TEXT)`` clusters under those constraints. With ``back_matter=True`` the
   reference list (:func:`~docmaster_core.index.boilerplate.back_matter_reasons`) is in no
   anchor pair and no cluster (label -1); the pages apply the same rule to what they show
   (:func:`leave_out_back_matter`: bibliography entries are each other's nearest neighbours,
   so they took the top SEC pairs and made a "reference list" topic of every paper);
4. hyper-edges: LLM grouping per section, summary embeddings, majority cluster,
   must-links across sections (see :mod:`docmaster_core.index.hyperedges`).

The collection level (optional) re-clusters every document's TEXT nodes together with
the union of the per-document constraints and links hyper-edges of *different*
documents that share a collection cluster and whose summary embeddings have cosine
>= ``link_threshold``.

Persistence is JSON only (``to_json_dict`` / ``from_json_dict``; arrays as lists).
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..config import IndexSettings
from ..errors import IndexBuildError
from ..model import DocumentTree, HyperEdge
from .hyperedges import (
    HyperEdgeSet,
    assign_hyperedge_clusters,
    group_hyperedges,
    hyperedge_from_dict,
    link_hyperedges,
    unlinked_hyperedges,
)
from .pckmeans import PCKMeans
from .sec import top_k_sec_pairs

__all__ = [
    "DocumentIndex",
    "CollectionIndex",
    "build_document_index",
    "build_collection_index",
    "label_anchor_pairs",
    "back_matter_of",
    "leave_out_back_matter",
]

SCHEMA_VERSION = 1


def _i64(a, cols: int | None = None) -> np.ndarray:
    arr = np.asarray(a, dtype=np.int64)
    if cols is not None:
        arr = arr.reshape(-1, cols)
    return arr


def _f32_2d(a, dim: int) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float32)
    return arr.reshape(-1, dim) if arr.size else np.zeros((0, dim), dtype=np.float32)


@dataclass
class DocumentIndex:
    """The semantic index of one document (DocMaster Sec. 2.3).

    Attributes:
        doc_id: Document id.
        params: The index settings used (``IndexSettings.model_dump()``) plus
            ``embedder`` and ``llm_backend`` names.
        text_node_ids: (m,) int64 TEXT node ids, ascending; all per-node arrays below
            are aligned with it.
        anchor_pairs: (k, 2) int64 node ids (not positions) of the anchor pairs,
            first < second, by decreasing SEC.
        anchor_scores: (k,) float64 SEC scores.
        anchor_labels: (k,) bool, True = must-link, False = cannot-link.
        labels: (m,) int64 PC-KMeans cluster of every TEXT node; -1 for the reference
            list (``stats["left_out_by_reason"]``), which is in no cluster and no anchor pair.
        centers: (K', d) float32 cluster centres, K' = min(K, m') with m' the clustered
            TEXT nodes (0 rows if m' = 0).
        objective: PC-KMeans objective, Eq. (2), over the anchor constraints.
        hyperedges: Hyper-edges with their majority cluster.
        hyperedge_embeddings: (h, d) float32 summary embeddings.
        hyperedge_links: (r, 2) int64 must-link relations between hyper-edge ids.
        stats: Counts: ``text_nodes, anchor_pairs, must, cannot, clusters,
            hyperedges, must_links`` plus ``violated_must, violated_cannot, n_iter,
            converged, llm_calls, grouping_repairs``, ``left_out`` and
            ``left_out_by_reason`` (``{"back": n, "reference": n}``: the reference list,
            :func:`back_matter_of`) and timings in seconds. An index stored before the
            reference list was left out has no ``left_out`` (:func:`leave_out_back_matter`).
    """

    doc_id: str
    params: dict[str, Any]
    text_node_ids: np.ndarray
    anchor_pairs: np.ndarray
    anchor_scores: np.ndarray
    anchor_labels: np.ndarray
    labels: np.ndarray
    centers: np.ndarray
    objective: float
    hyperedges: list[HyperEdge]
    hyperedge_embeddings: np.ndarray
    hyperedge_links: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)

    def must_link_pairs(self) -> np.ndarray:
        """(p, 2) int64 node ids of the must-link anchor pairs."""
        return self.anchor_pairs[self.anchor_labels]

    def cannot_link_pairs(self) -> np.ndarray:
        """(q, 2) int64 node ids of the cannot-link anchor pairs."""
        return self.anchor_pairs[~self.anchor_labels]

    def label_of(self) -> dict[int, int]:
        """Mapping TEXT node id -> cluster."""
        return dict(zip(self.text_node_ids.tolist(), self.labels.tolist()))

    def to_json_dict(self, include_vectors: bool = True, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready dict (lists, no pickle). ``include_vectors=False`` drops the
        centres and hyper-edge embeddings (e.g. when a vector file stores them);
        ``arrays=True`` keeps them as (K', d) / (h, d) float32 ``np.ndarray`` for a store
        that writes arrays in binary (:meth:`~docmaster_core.store.upkeep.IndexRunStore.save_index`)."""
        d = {
            "schema": SCHEMA_VERSION,
            "doc_id": self.doc_id,
            "params": self.params,
            "text_node_ids": self.text_node_ids.tolist(),
            "anchor_pairs": self.anchor_pairs.tolist(),
            "anchor_scores": self.anchor_scores.tolist(),
            "anchor_labels": self.anchor_labels.tolist(),
            "labels": self.labels.tolist(),
            "objective": float(self.objective),
            "hyperedges": [h.to_dict() for h in self.hyperedges],
            "hyperedge_links": self.hyperedge_links.tolist(),
            "stats": self.stats,
            "dim": int(self.centers.shape[1]) if self.centers.ndim == 2 else 0,
            "hyperedge_dim": int(self.hyperedge_embeddings.shape[1]) if self.hyperedge_embeddings.ndim == 2 else 0,
        }
        if include_vectors:
            d["centers"] = self.centers if arrays else self.centers.tolist()
            d["hyperedge_embeddings"] = self.hyperedge_embeddings if arrays else self.hyperedge_embeddings.tolist()
        return d

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> "DocumentIndex":
        """Inverse of :meth:`to_json_dict`; missing vectors come back as empty arrays.

        Raises:
            ValueError: on an unknown schema version.
        """
        if int(d.get("schema", SCHEMA_VERSION)) != SCHEMA_VERSION:
            raise ValueError(f"unknown DocumentIndex schema {d.get('schema')}")
        dim = int(d.get("dim", 0))
        return cls(
            doc_id=str(d["doc_id"]),
            params=dict(d.get("params", {})),
            text_node_ids=_i64(d["text_node_ids"]),
            anchor_pairs=_i64(d["anchor_pairs"], 2),
            anchor_scores=np.asarray(d["anchor_scores"], dtype=np.float64),
            anchor_labels=np.asarray(d["anchor_labels"], dtype=bool),
            labels=_i64(d["labels"]),
            centers=_f32_2d(d.get("centers", []), dim),
            objective=float(d["objective"]),
            hyperedges=[hyperedge_from_dict(h) for h in d.get("hyperedges", [])],
            hyperedge_embeddings=_f32_2d(d.get("hyperedge_embeddings", []), int(d.get("hyperedge_dim", dim))),
            hyperedge_links=_i64(d.get("hyperedge_links", []), 2),
            stats=dict(d.get("stats", {})),
        )


def label_anchor_pairs(llm, texts: list[tuple[str, str]], cosines: np.ndarray, doc_id: str | None) -> np.ndarray:
    """Label anchor pairs with ONE ``llm.label_pairs`` call.

    Args:
        llm: LLM protocol object.
        texts: k pairs of node texts.
        cosines: (k,) float cosine of each pair's embeddings.
        doc_id: Document id (for caching and usage accounting).

    Returns:
        (k,) bool, True = must-link.

    Raises:
        IndexBuildError: when the LLM returns a number of labels other than k or a
            value that is not a boolean (or 0/1).
    """
    if not texts:
        return np.zeros(0, dtype=bool)
    raw = llm.label_pairs(texts, cosines=np.asarray(cosines, dtype=np.float64), doc_id=doc_id)
    try:
        raw = list(raw)
    except TypeError as e:
        raise IndexBuildError(f"label_pairs returned {type(raw).__name__}, expected a list of booleans") from e
    if len(raw) != len(texts):
        raise IndexBuildError(f"label_pairs returned {len(raw)} labels for {len(texts)} anchor pairs")
    out = np.zeros(len(raw), dtype=bool)
    for i, v in enumerate(raw):
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
            out[i] = bool(v)
        else:
            raise IndexBuildError(f"label_pairs returned a non-boolean label {v!r}")
    return out


def _check_embeddings(tree: DocumentTree, embeddings) -> np.ndarray:
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != len(tree.nodes):
        raise ValueError(f"embeddings of {tree.doc_id!r} must have shape (|V|={len(tree.nodes)}, d), got {emb.shape}")
    if not np.all(np.isfinite(emb)):
        raise ValueError(f"embeddings of {tree.doc_id!r} contain NaN or infinite values")
    return emb.astype(np.float32, copy=False)


def _fit_clusters(X: np.ndarray, K: int, w: float, seed: int, ml: np.ndarray, cl: np.ndarray):
    """PC-KMeans with K capped at n; returns (labels, centers, objective, fit stats)."""
    n, d = X.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, d), dtype=np.float32), 0.0, {
            "violated_must": 0, "violated_cannot": 0, "n_iter": 0, "converged": True}
    Keff = max(1, min(int(K), n))
    model = PCKMeans(n_clusters=Keff, w=float(w), random_state=int(seed))
    with warnings.catch_warnings():
        # non-convergence is reported in the stats ("converged"); matching by message
        # avoids importing scikit-learn (> 1 s) just for the warning class
        warnings.filterwarnings("ignore", message="PCKMeans did not converge")
        model.fit(X, must_link=ml, cannot_link=cl)
    return (
        model.labels_.astype(np.int64),
        np.asarray(model.cluster_centers_, dtype=np.float32),
        float(model.objective_),
        {
            "violated_must": model.n_violated_must_,
            "violated_cannot": model.n_violated_cannot_,
            "n_iter": model.n_iter_,
            "converged": bool(model.converged_),
        },
    )


def build_document_index(
    tree: DocumentTree,
    embeddings: np.ndarray,
    llm,
    embedder,
    params: IndexSettings | None = None,
    *,
    groups: HyperEdgeSet | None = None,
    back_matter: bool = False,
) -> DocumentIndex:
    """Build the semantic index of one document (SEC -> labels -> PC-KMeans -> hyper-edges).

    LLM cost: one ``label_pairs`` call (when there is at least one anchor pair) plus
    one ``group_paragraphs`` call per section with >= 2 TEXT nodes (none when
    ``groups`` is given).

    Args:
        tree: The document tree.
        embeddings: (|V|, d) float32 node embeddings, row i for node id i (d = 384 for
            all-MiniLM-L6-v2).
        llm: LLM protocol object (``label_pairs``, ``group_paragraphs``).
        embedder: Embedder protocol object, used for hyper-edge summaries.
        params: alpha, k, K, w, sec_sign, random_state (defaults: ``IndexSettings()``).
        groups: A previous :class:`HyperEdgeSet` of this tree to reuse (the grouping
            does not depend on alpha, k, K, w), so that rebuilding with new
            hyperparameters costs only the ``label_pairs`` call.
        back_matter: Leave the reference list out of the anchor pairs and the clusters
            (:func:`back_matter_of`; its passages get label -1, ``stats["left_out"]`` counts
            them). False (the default) clusters every TEXT node, the paper's method as
            printed: refitting PC-KMeans without the reference list moves the body's clusters
            and so the must-links between hyper-edges, and on the 88-PDF corpus the
            hyper-edge strategy's filter F1 fell 0.687 -> 0.656 (P+Q, docs/results/app.md).
            The pages leave the reference list out of what they show instead
            (:func:`leave_out_back_matter`).

    Returns:
        A :class:`DocumentIndex`. With < 2 clustered TEXT nodes there are no anchor
        pairs; with none there are no clusters (hyper-edges are still made).

    Raises:
        ValueError: on embeddings of the wrong shape or non-finite values.
        IndexBuildError: when the LLM's labels or groups break the protocol.
    """
    params = params or IndexSettings()
    t0 = time.perf_counter()
    emb = _check_embeddings(tree, embeddings)
    d = emb.shape[1]
    text_ids = tree.text_node_ids()
    m = text_ids.size
    X = np.ascontiguousarray(emb[text_ids]) if m else np.zeros((0, d), dtype=np.float32)
    # the reference list is in no anchor pair and no cluster (positions into text_ids)
    left_out = back_matter_of(tree, text_ids) if back_matter else np.full(m, "", dtype=object)
    keep = np.flatnonzero(left_out == "")
    Xk = np.ascontiguousarray(X[keep]) if keep.size else np.zeros((0, d), dtype=np.float32)

    # 1. SEC anchor pairs (positions into text_ids)
    if keep.size >= 2 and params.k > 0:
        texts = [tree.nodes[i].content for i in text_ids[keep]]
        pos_k, scores = top_k_sec_pairs(
            tree.parents(), Xk, text_ids[keep], params.k, alpha=params.alpha, sign=params.sec_sign, texts=texts
        )
    else:
        pos_k, scores = np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.float64)
    pos = keep[pos_k].reshape(-1, 2)
    t_sec = time.perf_counter()

    # 2. one LLM call for all anchor pairs
    if pos.shape[0]:
        Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
        cos = np.einsum("ij,ij->i", Xn[pos[:, 0]], Xn[pos[:, 1]]).astype(np.float64)
        pair_texts = [(tree.nodes[text_ids[i]].content, tree.nodes[text_ids[j]].content) for i, j in pos]
        anchor_labels = label_anchor_pairs(llm, pair_texts, cos, tree.doc_id)
        label_calls = 1
    else:
        anchor_labels = np.zeros(0, dtype=bool)
        label_calls = 0
    t_lab = time.perf_counter()

    # 3. PC-KMeans over the text nodes kept (the reference list: label -1)
    labels_k, centers, objective, fit_stats = _fit_clusters(Xk, params.K, params.w, params.random_state,
                                                            pos_k[anchor_labels], pos_k[~anchor_labels])
    labels = np.full(m, -1, dtype=np.int64)
    labels[keep] = labels_k
    t_fit = time.perf_counter()

    # 4. hyper-edges
    if groups is None:
        groups = group_hyperedges(tree, llm, embedder, emb)
        group_calls = groups.llm_calls
    else:
        group_calls = 0
    hyperedges = [dataclasses.replace(h, node_ids=list(h.node_ids)) for h in groups.hyperedges]
    assign_hyperedge_clusters(hyperedges, text_ids, labels)
    links = link_hyperedges(hyperedges, unlinked_hyperedges(tree, hyperedges))  # no front / back matter links
    t_he = time.perf_counter()

    stats = {
        "text_nodes": int(m),
        "anchor_pairs": int(pos.shape[0]),
        "must": int(anchor_labels.sum()),
        "cannot": int((~anchor_labels).sum()),
        "clusters": int(centers.shape[0]),
        "hyperedges": len(hyperedges),
        "must_links": int(links.shape[0]),
        **fit_stats,
        "llm_calls": label_calls + group_calls,
        "grouping_repairs": int(groups.repaired),
        **({"left_out": int(m - keep.size),
            "left_out_by_reason": {r: int((left_out == r).sum()) for r in ("back", "reference")
                                   if (left_out == r).any()}} if back_matter else {}),
        "seconds": {
            "sec": round(t_sec - t0, 4),
            "label": round(t_lab - t_sec, 4),
            "pckmeans": round(t_fit - t_lab, 4),
            "hyperedges": round(t_he - t_fit, 4),
        },
    }
    p = params.model_dump()
    p["embedder"] = embedder.name
    p["llm_backend"] = llm.backend_name
    return DocumentIndex(
        doc_id=tree.doc_id,
        params=p,
        text_node_ids=text_ids.astype(np.int64),
        anchor_pairs=text_ids[pos].reshape(-1, 2).astype(np.int64),
        anchor_scores=scores.astype(np.float64),
        anchor_labels=anchor_labels,
        labels=labels,
        centers=centers,
        objective=objective,
        hyperedges=hyperedges,
        hyperedge_embeddings=np.asarray(groups.embeddings, dtype=np.float32),
        hyperedge_links=links,
        stats=stats,
    )


def back_matter_of(tree: DocumentTree, text_ids=None) -> np.ndarray:
    """Why each TEXT node of ``tree`` is reference-list matter (``"back"``, ``"reference"``)
    or ``""``: :func:`~docmaster_core.index.boilerplate.back_matter_reasons` over the nodes
    in reading order.

    Args:
        tree: The document tree.
        text_ids: (m,) TEXT node ids, ascending (default ``tree.text_node_ids()``).

    Returns:
        An object array of m reason strings, aligned with ``text_ids``.
    """
    from .boilerplate import back_matter_reasons

    ids = tree.text_node_ids() if text_ids is None else np.asarray(text_ids, dtype=np.int64)
    return back_matter_reasons([tree.nodes[int(i)].content or "" for i in ids],
                               [tree.nodes[int(i)].section_path or [] for i in ids])


def leave_out_back_matter(idx: DocumentIndex, tree: DocumentTree) -> DocumentIndex:
    """An index stored before :func:`build_document_index` left the reference list out,
    brought as close to a new one as possible without refitting: the reference list's
    passages get no cluster (-1), anchor pairs touching them are dropped, every hyper-edge
    takes the majority cluster of its remaining members and the must-links between
    hyper-edges follow. An index built with the rule (``stats["left_out"]`` present) or
    one without reference list is returned as is.

    The stored index keys (:class:`~docmaster_core.index.params.IndexParams`) do not
    change with the rule, so old indexes are read back as they were stored; the Clusters and
    Hyper-edge graph pages pass them through this function to show no reference entry in
    their pairs and topics (a rebuild, ``docmaster index --force``, makes a new one).
    """
    if "left_out" in (idx.stats or {}):
        return idx
    reasons = back_matter_of(tree, idx.text_node_ids)
    out = reasons != ""
    if not out.any():
        return idx
    labels = np.where(out, -1, idx.labels).astype(np.int64)
    gone = set(idx.text_node_ids[out].tolist())
    keep = np.asarray([a not in gone and b not in gone for a, b in idx.anchor_pairs.tolist()], dtype=bool)
    pairs, lab = idx.anchor_pairs[keep].reshape(-1, 2), idx.anchor_labels[keep]
    hyperedges = [dataclasses.replace(h, node_ids=list(h.node_ids)) for h in idx.hyperedges]
    assign_hyperedge_clusters(hyperedges, idx.text_node_ids, labels)
    links = link_hyperedges(hyperedges, unlinked_hyperedges(tree, hyperedges))
    of = dict(zip(idx.text_node_ids.tolist(), labels.tolist()))
    same = np.asarray([of[a] == of[b] for a, b in pairs.tolist()], dtype=bool)
    stats = dict(idx.stats)
    stats.update({"anchor_pairs": int(pairs.shape[0]), "must": int(lab.sum()), "cannot": int((~lab).sum()),
                  "must_links": int(links.shape[0]),
                  "violated_must": int((lab & ~same).sum()), "violated_cannot": int((~lab & same).sum()),
                  "left_out": int(out.sum()),
                  "left_out_by_reason": {r: int((reasons == r).sum()) for r in ("back", "reference")
                                         if (reasons == r).any()},
                  "left_out_after_build": True})
    return dataclasses.replace(idx, labels=labels, anchor_pairs=pairs, anchor_scores=idx.anchor_scores[keep],
                               anchor_labels=lab, hyperedges=hyperedges, hyperedge_links=links, stats=stats)


# --------------------------------------------------------------------------------------
# Collection level
# --------------------------------------------------------------------------------------


@dataclass
class CollectionIndex:
    """Collection-level clustering and cross-document hyper-edge links (optional level).

    Attributes:
        doc_ids: The documents, in order; ``doc`` columns below index this list.
        documents: The per-document indices by doc id.
        node_doc: (N,) int64 document position of every clustered TEXT node.
        node_ids: (N,) int64 node id within its document.
        labels: (N,) int64 collection cluster.
        centers: (K', d) float32 centres.
        objective: PC-KMeans objective over the union of the per-document constraints.
        hyperedge_doc: (H,) int64 document position of every hyper-edge.
        hyperedge_ids: (H,) int64 hyper-edge id within its document.
        hyperedge_clusters: (H,) int64 majority collection cluster.
        links: (r, 2) int64 rows into the hyper-edge arrays (a < b), pairs from
            different documents in the same cluster with cosine >= threshold.
        link_scores: (r,) float64 cosine of the two summary embeddings.
        params: Settings used, plus ``n_clusters`` and ``link_threshold``.
        stats: Counts and timings.
    """

    doc_ids: list[str]
    documents: dict[str, DocumentIndex]
    node_doc: np.ndarray
    node_ids: np.ndarray
    labels: np.ndarray
    centers: np.ndarray
    objective: float
    hyperedge_doc: np.ndarray
    hyperedge_ids: np.ndarray
    hyperedge_clusters: np.ndarray
    links: np.ndarray
    link_scores: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def to_json_dict(self, include_vectors: bool = True, arrays: bool = False) -> dict[str, Any]:
        """JSON-ready dict (lists, no pickle), documents included; ``arrays`` as in
        :meth:`DocumentIndex.to_json_dict`."""
        d = {
            "schema": SCHEMA_VERSION,
            "doc_ids": list(self.doc_ids),
            "documents": {k: v.to_json_dict(include_vectors, arrays) for k, v in self.documents.items()},
            "node_doc": self.node_doc.tolist(),
            "node_ids": self.node_ids.tolist(),
            "labels": self.labels.tolist(),
            "objective": float(self.objective),
            "hyperedge_doc": self.hyperedge_doc.tolist(),
            "hyperedge_ids": self.hyperedge_ids.tolist(),
            "hyperedge_clusters": self.hyperedge_clusters.tolist(),
            "links": self.links.tolist(),
            "link_scores": self.link_scores.tolist(),
            "params": self.params,
            "stats": self.stats,
            "dim": int(self.centers.shape[1]),
        }
        if include_vectors:
            d["centers"] = self.centers if arrays else self.centers.tolist()
        return d

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> "CollectionIndex":
        """Inverse of :meth:`to_json_dict`.

        Raises:
            ValueError: on an unknown schema version.
        """
        if int(d.get("schema", SCHEMA_VERSION)) != SCHEMA_VERSION:
            raise ValueError(f"unknown CollectionIndex schema {d.get('schema')}")
        dim = int(d.get("dim", 0))
        return cls(
            doc_ids=[str(x) for x in d["doc_ids"]],
            documents={k: DocumentIndex.from_json_dict(v) for k, v in d.get("documents", {}).items()},
            node_doc=_i64(d["node_doc"]),
            node_ids=_i64(d["node_ids"]),
            labels=_i64(d["labels"]),
            centers=_f32_2d(d.get("centers", []), dim),
            objective=float(d["objective"]),
            hyperedge_doc=_i64(d["hyperedge_doc"]),
            hyperedge_ids=_i64(d["hyperedge_ids"]),
            hyperedge_clusters=_i64(d["hyperedge_clusters"]),
            links=_i64(d["links"], 2),
            link_scores=np.asarray(d["link_scores"], dtype=np.float64),
            params=dict(d.get("params", {})),
            stats=dict(d.get("stats", {})),
        )


#: ``center="auto"``: documents whose mean passage vectors have a mean cosine of at least
#: this are alike (one kind of document: contracts 0.60, the 88 mixed PDFs 0.40), and
#: their collection topics follow what passages say inside them.
ALIKE = 0.5


def documents_alike(X: np.ndarray, node_doc: np.ndarray) -> float:
    """Mean cosine between the documents' mean passage vectors (rows of ``X`` unit-
    normalised first; 0 with fewer than two documents): near 1 when the documents are of
    one kind and subject, lower for a mixed collection."""
    docs = np.unique(node_doc)
    if docs.size < 2:
        return 0.0
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    M = np.stack([Xn[node_doc == d].mean(axis=0) for d in docs])
    M /= np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-12)
    S = M @ M.T
    n = docs.size
    return float((S.sum() - np.trace(S)) / (n * (n - 1)))


def _centered(X: np.ndarray, node_doc: np.ndarray, beta: float) -> np.ndarray:
    """Rows minus ``beta`` times their document's mean row, renormalised."""
    Xn = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    out = Xn.astype(np.float32, copy=True)
    for d in np.unique(node_doc):
        sel = node_doc == d
        out[sel] -= beta * Xn[sel].mean(axis=0)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def _kept_passages(trees: Sequence[DocumentTree], doc_indexes: Mapping[str, DocumentIndex] | None,
                   rules: Mapping[str, Any] | None) -> dict[str, dict[int, str]] | None:
    """``{doc id: {node id: reason}}`` of the TEXT nodes left out as boilerplate (None: rules off).
    Front matter is left out only of a document where it is under half of its passages (one
    without headings is all "front"); the reference list (:func:`back_matter_of`, reason
    ``back``) always: a paper's entries, one paragraph each, are often more than half of its
    passages, and the half rule kept them all in."""
    if rules is None:
        return None
    from ..tree.roles import ROLES, node_roles
    from .boilerplate import boilerplate_reasons

    rules = dict(rules)
    use_roles = bool(rules.pop("roles", False))
    use_signature = bool(rules.pop("signature", False))
    texts, groups, ids, roles, signature = [], [], [], [], []
    for tree in trees:
        idx = (doc_indexes or {}).get(tree.doc_id)
        tids = idx.text_node_ids if idx is not None else tree.text_node_ids()
        names = [ROLES[int(c)] for c in node_roles(tree)[tids]] if use_roles else []
        # the reference list by its own rules (not the outermost heading's role: "10 Conclusion >
        # References" was "conclusion"); other back-matter roles count as body
        names = ["body" if r == "back" else r for r in names]
        if names and sum(r == "front" for r in names) * 2 >= len(names):
            names = ["body"] * len(names)  # few or no headings: the roles say nothing, keep the document
        if use_roles:
            names = ["back" if b else r for r, b in zip(names, (back_matter_of(tree, tids) != "").tolist())]
        for j, t in enumerate(tids.tolist()):
            texts.append(tree.nodes[int(t)].content or "")
            groups.append(tree.doc_id)
            ids.append(int(t))
            signature.append((tree.nodes[int(t)].extra or {}).get("role") == "signature")
            if use_roles:
                roles.append(names[j])
    reasons = boilerplate_reasons(texts, groups, roles=roles if use_roles else None,
                                  signature=signature if use_signature else None, **rules)
    out: dict[str, dict[int, str]] = {}
    for g, t, r in zip(groups, ids, reasons.tolist()):
        if r:
            out.setdefault(g, {})[t] = r
    return out


def _cross_doc_links(emb: np.ndarray, doc: np.ndarray, clusters: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a < b) of rows from different documents, same cluster, cosine >= threshold."""
    e = emb.astype(np.float32, copy=True)
    e /= np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    pairs, scores = [], []
    block = 1024
    for c in np.unique(clusters[clusters >= 0]):
        idx = np.flatnonzero(clusters == c)
        if idx.size < 2:
            continue
        for s in range(0, idx.size, block):
            rows = idx[s : s + block]
            cos = e[rows] @ e[idx].T
            r, q = np.nonzero(cos >= threshold)
            a, b = rows[r], idx[q]
            keep = (a < b) & (doc[a] != doc[b])
            pairs.append(np.stack([a[keep], b[keep]], axis=1))
            scores.append(cos[r[keep], q[keep]].astype(np.float64))
    if not pairs:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.float64)
    P = np.concatenate(pairs).astype(np.int64)
    S = np.concatenate(scores)
    order = np.lexsort((P[:, 1], P[:, 0]))
    return P[order], S[order]


def build_collection_index(
    trees: Sequence[DocumentTree],
    embeddings_by_doc: Mapping[str, np.ndarray],
    llm,
    embedder,
    params: IndexSettings | None = None,
    *,
    doc_indexes: Mapping[str, DocumentIndex] | None = None,
    n_clusters: int | None = None,
    link_threshold: float = 0.5,
    boilerplate: Mapping[str, Any] | None = None,
    center: str | float = 0.0,
) -> CollectionIndex:
    """Cluster the TEXT nodes of all documents together and link hyper-edges across documents.

    Per-document indices are taken from ``doc_indexes`` when given (no LLM call),
    else built with :func:`build_document_index`. The collection PC-KMeans runs on all
    TEXT-node embeddings with the union of the per-document anchor constraints; a
    hyper-edge's collection cluster is the majority label of its members; two
    hyper-edges of different documents are linked when they share that cluster and
    the cosine of their summary embeddings is >= ``link_threshold``.

    Args:
        trees: The document trees (distinct doc ids).
        embeddings_by_doc: doc id -> (|V|, d) float32 node embeddings.
        llm: LLM protocol object (used only for documents without an index).
        embedder: Embedder protocol object.
        params: Index settings; ``params.K`` is the default collection K.
        doc_indexes: Optional prebuilt per-document indices by doc id.
        n_clusters: Collection K (default ``params.K``), capped at the node count.
        link_threshold: Cosine threshold in [-1, 1] for cross-document links.
        boilerplate: Leave boilerplate passages out of the clustering: keyword arguments
            of :func:`~docmaster_core.index.boilerplate.boilerplate_reasons` (``min_words``,
            ``min_docs``, ``min_repeats``) and ``roles`` (bool: front and back matter out
            too); ``{}`` uses its defaults, None keeps every TEXT node. Left-out passages
            are in no collection cluster (absent from ``node_ids``), their anchor pairs are
            dropped, and ``stats["boilerplate_left_out"]`` counts them by reason.
        center: Subtract this share (0-1) of each document's mean passage vector before
            clustering (rows renormalised), so that topics follow what passages say
            *inside* their documents (a contract's clauses) rather than what each
            document is about; ``"auto"``: 1 when the documents are alike
            (:func:`documents_alike` >= :data:`ALIKE`), else 0. ``stats["centered"]``
            and ``stats["documents_alike"]`` say what was done.

    Returns:
        A :class:`CollectionIndex`.

    Raises:
        ValueError: on duplicate doc ids, a missing embedding matrix, an invalid
            threshold or shapes.
        IndexBuildError: as :func:`build_document_index`.
    """
    params = params or IndexSettings()
    if not -1.0 <= float(link_threshold) <= 1.0:
        raise ValueError(f"link_threshold must be in [-1, 1], got {link_threshold}")
    doc_ids = [t.doc_id for t in trees]
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError("trees contain duplicate doc ids")
    t0 = time.perf_counter()
    kept_by_doc = _kept_passages(trees, doc_indexes, boilerplate)
    left_out: dict[str, int] = {}
    documents: dict[str, DocumentIndex] = {}
    X_parts, nd_parts, ni_parts, ml_parts, cl_parts = [], [], [], [], []
    he_doc, he_ids, he_emb = [], [], []
    offset = 0
    dim = None
    for di, tree in enumerate(trees):
        if tree.doc_id not in embeddings_by_doc:
            raise ValueError(f"no embeddings for document {tree.doc_id!r}")
        emb = _check_embeddings(tree, embeddings_by_doc[tree.doc_id])
        if dim is None:
            dim = emb.shape[1]
        elif emb.shape[1] != dim:
            raise ValueError(f"embedding width {emb.shape[1]} of {tree.doc_id!r} differs from {dim}")
        idx = (doc_indexes or {}).get(tree.doc_id)
        if idx is None:
            idx = build_document_index(tree, emb, llm, embedder, params)
        documents[tree.doc_id] = idx
        tids = idx.text_node_ids
        if kept_by_doc is not None:
            reasons = kept_by_doc.get(tree.doc_id, {})
            for r in reasons.values():
                left_out[r] = left_out.get(r, 0) + 1
            tids = tids[np.asarray([int(t) not in reasons for t in tids.tolist()], dtype=bool)] if reasons else tids
        X_parts.append(emb[tids])
        nd_parts.append(np.full(tids.size, di, dtype=np.int64))
        ni_parts.append(tids)
        pos_of = {int(n): offset + p for p, n in enumerate(tids.tolist())}
        both = [(a in pos_of and b in pos_of) for a, b in idx.anchor_pairs.tolist()]
        gp = np.array([[pos_of[int(a)], pos_of[int(b)]] for (a, b), ok in zip(idx.anchor_pairs.tolist(), both) if ok],
                      dtype=np.int64).reshape(-1, 2)
        lab = np.asarray(idx.anchor_labels, dtype=bool)[np.asarray(both, dtype=bool)] if both else np.zeros(0, bool)
        ml_parts.append(gp[lab])
        cl_parts.append(gp[~lab])
        he_doc.extend([di] * len(idx.hyperedges))
        he_ids.extend(h.id for h in idx.hyperedges)
        he_emb.append(np.asarray(idx.hyperedge_embeddings, dtype=np.float32))
        offset += tids.size
    dim = dim or int(getattr(embedder, "dim", 0))
    X = np.concatenate(X_parts) if X_parts else np.zeros((0, dim), dtype=np.float32)
    node_doc = np.concatenate(nd_parts) if nd_parts else np.zeros(0, dtype=np.int64)
    node_ids = np.concatenate(ni_parts) if ni_parts else np.zeros(0, dtype=np.int64)
    ml = np.concatenate(ml_parts) if ml_parts else np.zeros((0, 2), dtype=np.int64)
    cl = np.concatenate(cl_parts) if cl_parts else np.zeros((0, 2), dtype=np.int64)
    K = params.K if n_clusters is None else int(n_clusters)
    if K < 1:
        raise ValueError(f"n_clusters must be >= 1, got {K}")
    alike = documents_alike(X, node_doc)
    beta = (1.0 if alike >= ALIKE else 0.0) if center == "auto" else float(center)
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"center must be 'auto' or in [0, 1], got {center!r}")
    Xc = _centered(X, node_doc, beta) if beta > 0 else X
    labels, centers, objective, fit_stats = _fit_clusters(Xc, K, params.w, params.random_state, ml, cl)
    t_fit = time.perf_counter()

    # collection cluster of every hyper-edge (majority over its members)
    hyper_doc = np.asarray(he_doc, dtype=np.int64)
    hyper_ids = np.asarray(he_ids, dtype=np.int64)
    hyper_cl = np.full(hyper_doc.size, -1, dtype=np.int64)
    row = 0
    for di, tree in enumerate(trees):
        idx = documents[tree.doc_id]
        sel = node_doc == di
        copies = [dataclasses.replace(h, node_ids=list(h.node_ids)) for h in idx.hyperedges]
        assign_hyperedge_clusters(copies, node_ids[sel], labels[sel])
        for h in copies:
            hyper_cl[row] = h.cluster
            row += 1
    he_emb = [e for e in he_emb if e.size]
    E = np.concatenate(he_emb) if he_emb else np.zeros((0, dim), dtype=np.float32)
    if E.shape[0] != hyper_doc.size:
        raise IndexBuildError(f"{E.shape[0]} hyper-edge embeddings for {hyper_doc.size} hyper-edges (vectors missing?)")
    links, link_scores = _cross_doc_links(E, hyper_doc, hyper_cl, float(link_threshold))
    t_end = time.perf_counter()

    p = params.model_dump()
    p.update(n_clusters=int(centers.shape[0]), link_threshold=float(link_threshold))
    stats = {
        "documents": len(trees),
        "text_nodes": int(X.shape[0]),
        "must": int(ml.shape[0]),
        "cannot": int(cl.shape[0]),
        "clusters": int(centers.shape[0]),
        "hyperedges": int(hyper_doc.size),
        "cross_doc_links": int(links.shape[0]),
        "boilerplate_left_out": sum(left_out.values()),
        "boilerplate_by_reason": dict(sorted(left_out.items())),
        "centered": round(beta, 4),
        "documents_alike": round(alike, 4),
        **fit_stats,
        "seconds": {"documents_and_pckmeans": round(t_fit - t0, 4), "links": round(t_end - t_fit, 4)},
    }
    return CollectionIndex(
        doc_ids=doc_ids,
        documents=documents,
        node_doc=node_doc,
        node_ids=node_ids,
        labels=labels,
        centers=centers,
        objective=objective,
        hyperedge_doc=hyper_doc,
        hyperedge_ids=hyper_ids,
        hyperedge_clusters=hyper_cl,
        links=links,
        link_scores=link_scores,
        params=p,
        stats=stats,
    )
