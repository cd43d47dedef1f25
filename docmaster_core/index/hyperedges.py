"""Hyper-edges: LLM-grouped paragraphs within a section, linked across sections.

Source: DocMaster (arXiv 2607.08539) Sec. 2.3 "Hyper-Edges"; SPEC F5.

Rules implemented here (the paper leaves them open):

* **Sections.** A section is the set of TEXT nodes whose parent is the same TITLE (or
  ROOT) node. Sections are visited by ascending parent id, their TEXT nodes by
  ascending node id. Only TEXT nodes form hyper-edges.
* **Grouping.** A section with >= 2 TEXT nodes is grouped by one
  ``llm.group_paragraphs(texts, embeddings=..., doc_id=...)`` call. A section with a
  single TEXT node becomes a singleton hyper-edge *without* an LLM call; its summary
  is the node's summary when it has one, else its first 50 words.
* **Repair.** The LLM's answer is sanitised so that every TEXT node of the section is
  covered exactly once: indices out of range are dropped, an index repeated in a later
  group is dropped there, empty groups are dropped, and every uncovered node becomes
  a singleton hyper-edge with the extractive summary above. Empty summaries are
  replaced by the members' first 50 words. The number of repairs is reported.
* **Cluster.** The cluster of a hyper-edge is the majority PC-KMeans label of its
  member nodes; ties go to the smallest label.
* **Must-links.** Two hyper-edges are linked by a must-link relation when they lie in
  *different* sections and have the same (majority) cluster. Links are returned as
  pairs of hyper-edge ids ``(a, b)`` with ``a < b``, sorted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import IndexBuildError
from ..model import DocumentTree, HyperEdge, NodeType

__all__ = [
    "HyperEdgeSet",
    "text_sections",
    "group_hyperedges",
    "assign_hyperedge_clusters",
    "link_hyperedges",
    "hyperedge_roles",
    "build_hyperedges",
    "extractive_summary",
    "hyperedge_from_dict",
]


def extractive_summary(text: str, max_words: int = 50) -> str:
    """The first ``max_words`` words of ``text`` (whitespace folded), with "..." when cut."""
    words = (text or "").split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]) + " ..."


def hyperedge_from_dict(d: dict[str, Any]) -> HyperEdge:
    """Inverse of :meth:`HyperEdge.to_dict`."""
    return HyperEdge(
        id=int(d["id"]),
        doc_id=str(d["doc_id"]),
        section_id=int(d["section_id"]),
        node_ids=[int(x) for x in d["node_ids"]],
        summary=str(d.get("summary", "")),
        cluster=int(d.get("cluster", -1)),
    )


@dataclass
class HyperEdgeSet:
    """The hyper-edges of one document.

    Attributes:
        hyperedges: h hyper-edges, ``hyperedges[i].id == i``, ordered by section then
            first member.
        embeddings: (h, d) float32 embeddings of the summaries (unit rows).
        links: (r, 2) int64 must-link relations between hyper-edge ids, a < b.
        llm_calls: Number of ``group_paragraphs`` invocations made.
        repaired: Number of repairs applied to LLM groupings (see module docstring).
    """

    hyperedges: list[HyperEdge]
    embeddings: np.ndarray
    links: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    llm_calls: int = 0
    repaired: int = 0


def text_sections(tree: DocumentTree) -> list[tuple[int, list[int]]]:
    """The sections of a document tree: ``[(parent_id, [TEXT node ids ascending])]``.

    Only parents with at least one TEXT child appear, by ascending parent id.
    """
    groups: dict[int, list[int]] = {}
    for node in tree.nodes:
        if node.type == NodeType.TEXT and node.parent is not None:
            groups.setdefault(int(node.parent), []).append(node.id)
    return [(p, sorted(ids)) for p, ids in sorted(groups.items())]


def _node_summary(tree: DocumentTree, node_id: int) -> str:
    node = tree.nodes[node_id]
    return (node.summary or "").strip() or extractive_summary(node.content)


def _sanitise_groups(raw, n: int) -> tuple[list[tuple[list[int], str]], int]:
    """Make an LLM grouping a partition of range(n); returns (groups, repairs)."""
    repairs = 0
    seen = np.zeros(n, dtype=bool)
    out: list[tuple[list[int], str]] = []
    if not isinstance(raw, (list, tuple)):
        raise IndexBuildError(f"group_paragraphs returned {type(raw).__name__}, expected a list of (indices, summary)")
    for item in raw:
        try:
            idx, summary = item
        except (TypeError, ValueError) as e:
            raise IndexBuildError(f"group_paragraphs returned a malformed group: {item!r}") from e
        members: list[int] = []
        for i in idx:
            try:
                i = int(i)
            except (TypeError, ValueError):
                repairs += 1
                continue
            if not 0 <= i < n or seen[i]:
                repairs += 1
                continue
            seen[i] = True
            members.append(i)
        if not members:
            repairs += 1
            continue
        out.append((sorted(members), str(summary or "").strip()))
    for i in np.flatnonzero(~seen):
        repairs += 1
        out.append(([int(i)], ""))
    return out, repairs


def group_hyperedges(
    tree: DocumentTree,
    llm,
    embedder,
    embeddings: np.ndarray | None = None,
) -> HyperEdgeSet:
    """Group each section's TEXT nodes into hyper-edges and embed their summaries.

    One ``llm.group_paragraphs`` call per section with >= 2 TEXT nodes; sections with
    one TEXT node give a singleton hyper-edge without a call (module docstring).
    Clusters are left at -1 and no links are made (see
    :func:`assign_hyperedge_clusters`, :func:`link_hyperedges`).

    Args:
        tree: The document tree.
        llm: Object with ``group_paragraphs(texts, *, embeddings=None, doc_id=None)
            -> list[(list[int], str)]`` (the LLM protocol).
        embedder: Object with ``encode(texts) -> (n, d) float32`` (the Embedder
            protocol); used once, for all summaries.
        embeddings: Optional (|V|, d) float array of node embeddings, rows indexed by
            node id; a section's rows are passed to ``group_paragraphs``.

    Returns:
        A :class:`HyperEdgeSet` whose ``embeddings`` has shape (h, embedder.dim),
        float32.

    Raises:
        IndexBuildError: when the LLM answer is not a list of (indices, summary)
            pairs or the embedder returns the wrong shape.
        ValueError: when ``embeddings`` does not have |V| rows.
    """
    if embeddings is not None:
        embeddings = np.asarray(embeddings)
        if embeddings.ndim != 2 or embeddings.shape[0] != len(tree.nodes):
            raise ValueError(f"embeddings must have shape (|V|={len(tree.nodes)}, d), got {embeddings.shape}")
    hyperedges: list[HyperEdge] = []
    calls = repairs = 0
    for section_id, ids in text_sections(tree):
        if len(ids) == 1:
            groups = [([0], "")]
        else:
            texts = [tree.nodes[i].content for i in ids]
            emb = None if embeddings is None else np.ascontiguousarray(embeddings[ids], dtype=np.float32)
            raw = llm.group_paragraphs(texts, embeddings=emb, doc_id=tree.doc_id)
            calls += 1
            groups, rep = _sanitise_groups(raw, len(ids))
            repairs += rep
        groups.sort(key=lambda g: g[0][0])
        for members, summary in groups:
            node_ids = [ids[i] for i in members]
            if not summary:
                if len(node_ids) == 1:
                    summary = _node_summary(tree, node_ids[0])
                else:
                    summary = extractive_summary(" ".join(tree.nodes[i].content for i in node_ids))
            hyperedges.append(
                HyperEdge(id=len(hyperedges), doc_id=tree.doc_id, section_id=section_id, node_ids=node_ids, summary=summary)
            )
    dim = int(getattr(embedder, "dim", 0) or (embeddings.shape[1] if embeddings is not None else 0))
    if hyperedges:
        # A singleton hyper-edge's summary is extracted from its one paragraph, whose
        # embedding is already known: reuse it (rows of ``embeddings`` are indexed by
        # node id) and run the model only on the summaries of multi-node hyper-edges.
        reuse = embeddings is not None and embeddings.ndim == 2 and embeddings.shape[0] == len(tree.nodes)
        todo = [j for j, h in enumerate(hyperedges) if not (reuse and len(h.node_ids) == 1)]
        enc = np.asarray(embedder.encode([hyperedges[j].summary for j in todo]), dtype=np.float32) if todo else None
        if enc is not None and (enc.ndim != 2 or enc.shape[0] != len(todo)):
            raise IndexBuildError(f"embedder returned shape {enc.shape} for {len(todo)} summaries")
        d = enc.shape[1] if enc is not None else int(embeddings.shape[1])
        vecs = np.zeros((len(hyperedges), d), dtype=np.float32)
        if enc is not None:
            vecs[todo] = enc
        for j, h in enumerate(hyperedges):
            if reuse and len(h.node_ids) == 1:
                vecs[j] = embeddings[h.node_ids[0]]
    else:
        vecs = np.zeros((0, dim), dtype=np.float32)
    return HyperEdgeSet(hyperedges=hyperedges, embeddings=vecs, llm_calls=calls, repaired=repairs)


def assign_hyperedge_clusters(hyperedges: Sequence[HyperEdge], text_node_ids, labels) -> None:
    """Set every hyper-edge's ``cluster`` to the majority label of its members (in place).

    Ties go to the smallest label; members without a label give -1 when none has one.

    Args:
        hyperedges: The hyper-edges of one document.
        text_node_ids: (m,) int node ids the labels refer to.
        labels: (m,) int PC-KMeans labels aligned with ``text_node_ids``.

    Raises:
        ValueError: when the two arrays differ in length.
    """
    ids = np.asarray(text_node_ids, dtype=np.int64)
    lab = np.asarray(labels, dtype=np.int64)
    if ids.shape != lab.shape:
        raise ValueError(f"text_node_ids {ids.shape} and labels {lab.shape} differ in shape")
    lookup = dict(zip(ids.tolist(), lab.tolist()))
    for he in hyperedges:
        member = [lookup[i] for i in he.node_ids if i in lookup and lookup[i] >= 0]
        if not member:
            he.cluster = -1
            continue
        vals, counts = np.unique(np.asarray(member), return_counts=True)
        he.cluster = int(vals[np.argmax(counts)])  # np.unique sorts: ties -> smallest


def hyperedge_roles(tree: DocumentTree, hyperedges: Sequence[HyperEdge]) -> dict[int, str]:
    """The section role of every hyper-edge (:data:`docmaster_core.tree.roles.ROLES`:
    ``front`` for content before the first heading, ``back`` for references and
    acknowledgements, ``body``, ``method`` ... from the headings above its section,
    :func:`docmaster_core.tree.roles.path_role`).

    Returns:
        ``{hyper-edge id: role name}``.
    """
    from ..tree.roles import path_role

    def headings(sid: int) -> list[str]:
        path, cur = [], sid
        while cur is not None and 0 < cur < len(tree.nodes):
            path.append(tree.nodes[cur].content)
            cur = tree.nodes[cur].parent
        return path[::-1]

    cache: dict[int, str] = {}
    out = {}
    for h in hyperedges:
        sid = int(h.section_id)
        if sid not in cache:
            cache[sid] = path_role(headings(sid))
        out[int(h.id)] = cache[sid]
    return out


def unlinked_hyperedges(tree: DocumentTree, hyperedges: Sequence[HyperEdge]) -> set[int]:
    """Ids of the hyper-edges in front matter (content before the first heading: title
    block, author lines, permission notices) or back matter (references,
    acknowledgements): they are someone else's work or boilerplate, so they get no
    must-links (:func:`link_hyperedges`). Roles come from the section headings
    (:func:`hyperedge_roles`)."""
    return {i for i, r in hyperedge_roles(tree, hyperedges).items() if r in ("front", "back")}


def link_hyperedges(hyperedges: Sequence[HyperEdge], unlinked: set[int] | None = None) -> np.ndarray:
    """Must-link relations between hyper-edges of different sections sharing a cluster.

    Args:
        hyperedges: Hyper-edges with ``cluster`` set (-1 = unknown, never linked) and
            ``id`` equal to their position.
        unlinked: Ids of hyper-edges that get no links (front and back matter, see
            :func:`unlinked_hyperedges`); None links every hyper-edge.

    Returns:
        (r, 2) int64 array of hyper-edge ids ``(a, b)``, a < b, sorted
        lexicographically. For a cluster holding c hyper-edges there are at most
        c(c-1)/2 links.
    """
    h = len(hyperedges)
    if h < 2:
        return np.zeros((0, 2), dtype=np.int64)
    cl = np.array([-1 if unlinked and he.id in unlinked else he.cluster for he in hyperedges], dtype=np.int64)
    sec = np.array([he.section_id for he in hyperedges], dtype=np.int64)
    ids = np.array([he.id for he in hyperedges], dtype=np.int64)
    parts = []
    for c in np.unique(cl[cl >= 0]):
        idx = np.flatnonzero(cl == c)
        if idx.size < 2:
            continue
        a, b = np.triu_indices(idx.size, k=1)
        a, b = idx[a], idx[b]
        keep = sec[a] != sec[b]
        parts.append(np.stack([ids[a[keep]], ids[b[keep]]], axis=1))
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    links = np.concatenate(parts)
    links = np.sort(links, axis=1)
    order = np.lexsort((links[:, 1], links[:, 0]))
    return links[order].astype(np.int64)


def build_hyperedges(
    tree: DocumentTree,
    llm,
    embedder,
    text_node_ids,
    labels,
    embeddings: np.ndarray | None = None,
) -> tuple[list[HyperEdge], np.ndarray, np.ndarray]:
    """Group, embed, assign clusters and link in one go (paper Sec. 2.3).

    Args:
        tree: The document tree.
        llm: LLM protocol object (``group_paragraphs``).
        embedder: Embedder protocol object.
        text_node_ids: (m,) int TEXT node ids the labels refer to.
        labels: (m,) int PC-KMeans labels.
        embeddings: Optional (|V|, d) node embeddings (rows by node id).

    Returns:
        ``(hyperedges, summary_embeddings (h, d) float32, links (r, 2) int64)``.

    Raises:
        IndexBuildError, ValueError: as :func:`group_hyperedges`.
    """
    hs = group_hyperedges(tree, llm, embedder, embeddings)
    assign_hyperedge_clusters(hs.hyperedges, text_node_ids, labels)
    return hs.hyperedges, hs.embeddings, link_hyperedges(hs.hyperedges, unlinked_hyperedges(tree, hs.hyperedges))
