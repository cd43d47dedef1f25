"""Structural Entropy Correlation (SEC) between text nodes of one document tree.

Source: DocMaster (arXiv 2607.08539) Sec. 2.3, Eq. (1); SPEC F3.

For text nodes ``v_i, v_j`` of a document tree ``T = (V, E)``::

    SEC(v_i, v_j) = alpha * cos(e_i, e_j) - (1 - alpha) * H_T(v_i, v_j) / log2 |V|
    H_T(v_i, v_j) = - sum_{v in P_ij} (d_v / 2|E|) * log2(d_v / vol(T_v))

``d_v`` is the degree of ``v`` in the (undirected) tree: its number of children plus
one for its parent (ROOT has no parent). ``vol(T_v)`` is the sum of the degrees of the
nodes of the subtree rooted at ``v``; ``|E| = |V| - 1``; ``P_ij`` is the unique tree
path between ``v_i`` and ``v_j``, both ends included.

Sign discrepancy in the paper: the prose says SEC favours pairs that are "semantically
similar yet structurally distant", but Eq. (1) as printed *subtracts* the path entropy,
so it penalises structural distance. ``sign="printed"`` (the default) implements the
equation as printed; ``sign="prose"`` adds the entropy term instead, which favours
structurally distant pairs as the prose describes.

Implementation: every node gets the term ``h_v = -(d_v / 2|E|) log2(d_v / vol(T_v))``
(>= 0, and 0 for a leaf since ``d = vol = 1``) and the prefix sum from the root
``S[v] = sum of h over root..v``. With ``a = LCA(i, j)`` the path entropy is
``H(i, j) = S[i] + S[j] - 2 S[a] + h[a]``. The LCA of all pairs is found with an Euler
tour and a sparse-table range-minimum query (O(1) per pair, vectorised in row
blocks), so no Python loop runs over the O(m^2) pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal, Sequence

import numpy as np

__all__ = [
    "TreeStructure",
    "path_entropy_terms",
    "pairwise_lca",
    "pairwise_path_entropy",
    "sec_matrix",
    "top_k_anchor_pairs",
    "top_k_sec_pairs",
]

SecSign = Literal["printed", "prose"]

# Target number of (row, column) pairs processed per block; bounds the temporaries
# of the vectorised LCA/SEC computation to a few MiB each.
_BLOCK_PAIRS = 1 << 20


def _as_parents(tree_or_parents) -> np.ndarray:
    """Parent array of a :class:`~docmaster_core.model.DocumentTree` or an array-like."""
    if hasattr(tree_or_parents, "parents") and callable(tree_or_parents.parents):
        return tree_or_parents.parents()
    return np.asarray(tree_or_parents)


@dataclass(frozen=True)
class TreeStructure:
    """Per-node arrays of a rooted tree used by SEC.

    Built with :meth:`from_parents`. All arrays are indexed by node id.

    Attributes:
        parents: (n,) int64, parent id, -1 for the root.
        root: Id of the root.
        degree: (n,) int64, undirected degree d_v (children + 1 for the parent).
        volume: (n,) int64, vol(T_v) = sum of degrees over the subtree of v.
        depth: (n,) int64, root depth 0.
        h: (n,) float64, h_v = -(d_v / 2|E|) log2(d_v / vol(T_v)).
        prefix: (n,) float64, S[v] = sum of h over the path root..v.
        euler: (2n-1,) int32, Euler tour (node ids).
        first: (n,) int32, first position of every node in ``euler``.
        sparse: (L, 2n-1) int32, sparse table: ``sparse[k, p]`` is the shallowest
            node of ``euler[p : p + 2**k]``.
    """

    parents: np.ndarray
    root: int
    degree: np.ndarray
    volume: np.ndarray
    depth: np.ndarray
    h: np.ndarray
    prefix: np.ndarray
    euler: np.ndarray
    first: np.ndarray
    sparse: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.parents.shape[0])

    @classmethod
    def from_parents(cls, parents) -> "TreeStructure":
        """Build the arrays from a parent array.

        Args:
            parents: (n,) integer array-like (or a ``DocumentTree``), ``parents[v]``
                the parent of node ``v`` and -1 for exactly one root. Node ids need not
                be in pre-order.

        Raises:
            ValueError: if the array is empty, not 1-D, has no or several roots, a
                parent id out of range, or a cycle (not every node reachable from the
                root).
        """
        p = _as_parents(parents)
        if p.ndim != 1 or p.shape[0] == 0:
            raise ValueError(f"parents must be a non-empty 1-D array, got shape {p.shape}")
        if not np.issubdtype(p.dtype, np.integer):
            if not np.all(np.isfinite(p)) or not np.all(p == np.round(p)):
                raise ValueError("parents must hold integer node ids")
        p = p.astype(np.int64)
        n = p.shape[0]
        roots = np.flatnonzero(p == -1)
        if roots.size != 1:
            raise ValueError(f"parents must have exactly one root (-1), found {roots.size}")
        nonroot = p != -1
        if np.any((p[nonroot] < 0) | (p[nonroot] >= n)):
            raise ValueError("parents holds a parent id out of range [0, n)")
        root = int(roots[0])

        # children lists (ascending id) and an iterative DFS producing the Euler tour
        child_order = np.argsort(p, kind="stable")
        child_order = child_order[p[child_order] >= 0]
        counts = np.bincount(p[nonroot], minlength=n)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        kids = child_order.tolist()
        ptr_l = ptr.tolist()
        nxt = ptr_l[:-1].copy()
        end = ptr_l[1:]

        euler: list[int] = [root]
        first = [-1] * n
        first[root] = 0
        depth = [0] * n
        preorder = [root]
        stack = [root]
        while stack:
            v = stack[-1]
            if nxt[v] < end[v]:
                c = kids[nxt[v]]
                nxt[v] += 1
                if first[c] != -1:  # pragma: no cover - impossible for a parent array
                    raise ValueError("parents does not describe a tree")
                first[c] = len(euler)
                depth[c] = depth[v] + 1
                euler.append(c)
                preorder.append(c)
                stack.append(c)
            else:
                stack.pop()
                if stack:
                    euler.append(stack[-1])
        if len(preorder) != n:
            raise ValueError(f"parents has a cycle: only {len(preorder)} of {n} nodes reachable from the root")

        degree = counts.astype(np.int64) + nonroot.astype(np.int64)
        # subtree volumes: accumulate in reverse pre-order (children before parents)
        vol = degree.tolist()
        p_l = p.tolist()
        for v in reversed(preorder[1:]):
            vol[p_l[v]] += vol[v]
        volume = np.asarray(vol, dtype=np.int64)

        h = _path_entropy_terms_from(degree, volume)
        prefix = np.zeros(n, dtype=np.float64)
        h_l = h.tolist()
        pre_l = [0.0] * n
        for v in preorder:
            pv = p_l[v]
            pre_l[v] = h_l[v] + (pre_l[pv] if pv >= 0 else 0.0)
        prefix[:] = pre_l

        depth_a = np.asarray(depth, dtype=np.int64)
        euler_a = np.asarray(euler, dtype=np.int32)
        first_a = np.asarray(first, dtype=np.int32)
        sparse = _build_sparse_table(euler_a, depth_a)
        return cls(
            parents=p,
            root=root,
            degree=degree,
            volume=volume,
            depth=depth_a,
            h=h,
            prefix=prefix,
            euler=euler_a,
            first=first_a,
            sparse=sparse,
        )

    def lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lowest common ancestors of node ids ``a`` and ``b`` (broadcast together).

        Args:
            a, b: integer arrays of node ids, broadcastable to one shape.

        Returns:
            int32 array of that shape with the LCA ids.
        """
        fa = self.first[np.asarray(a)]
        fb = self.first[np.asarray(b)]
        lo = np.minimum(fa, fb)
        hi = np.maximum(fa, fb)
        span = hi - lo + 1
        k = _floor_log2(span)
        c1 = self.sparse[k, lo]
        c2 = self.sparse[k, hi - (np.int32(1) << k) + 1]
        return np.where(self.depth[c1] <= self.depth[c2], c1, c2)


def _floor_log2(x: np.ndarray) -> np.ndarray:
    """floor(log2(x)) for positive int arrays, as int32 (exact via frexp)."""
    _, e = np.frexp(x.astype(np.float64))
    return (e - 1).astype(np.int32)


def _build_sparse_table(euler: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Sparse table for range-minimum (by depth) queries over the Euler tour."""
    L = euler.shape[0]
    levels = int(np.floor(np.log2(L))) + 1
    table = np.empty((levels, L), dtype=np.int32)
    table[0] = euler
    for k in range(1, levels):
        half = 1 << (k - 1)
        prev = table[k - 1]
        left = prev[: L - half]
        right = prev[half:]
        row = table[k]
        row[: L - half] = np.where(depth[left] <= depth[right], left, right)
        row[L - half :] = prev[L - half :]  # ranges running past the end: never queried
    return table


def _path_entropy_terms_from(degree: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """h_v = -(d_v / 2|E|) log2(d_v / vol(T_v)) from degrees and volumes.

    Args:
        degree: (n,) int, tree degrees d_v.
        volume: (n,) int, subtree volumes vol(T_v).

    Returns:
        (n,) float64, >= 0; 0 for leaves and for a single-node tree (|E| = 0).
    """
    n = degree.shape[0]
    two_e = 2.0 * (n - 1)
    h = np.zeros(n, dtype=np.float64)
    if two_e <= 0:
        return h
    ok = degree > 0
    d = degree[ok].astype(np.float64)
    h[ok] = -(d / two_e) * np.log2(d / volume[ok].astype(np.float64))
    return h


def path_entropy_terms(parents) -> np.ndarray:
    """Per-node structural entropy term of DocMaster Eq. (1).

    ``h_v = -(d_v / 2|E|) * log2(d_v / vol(T_v))`` with ``d_v`` the undirected tree
    degree, ``vol(T_v)`` the sum of degrees in the subtree rooted at ``v`` and
    ``|E| = |V| - 1``.

    Args:
        parents: (n,) int array (parent id, -1 for the root) or a ``DocumentTree``.

    Returns:
        (n,) float64 array of h_v (bits), indexed by node id.

    Raises:
        ValueError: if ``parents`` does not describe a rooted tree.
    """
    return TreeStructure.from_parents(parents).h.copy()


def _check_node_ids(node_ids, n: int) -> np.ndarray:
    ids = np.asarray(node_ids)
    if ids.ndim != 1:
        raise ValueError(f"node_ids must be 1-D, got shape {ids.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError("node_ids must be integers")
    ids = ids.astype(np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"node_ids out of range [0, {n})")
    return ids


def _row_blocks(m: int) -> Iterator[slice]:
    rows = max(1, _BLOCK_PAIRS // max(m, 1))
    for start in range(0, m, rows):
        yield slice(start, min(m, start + rows))


def _path_entropy_block(ts: TreeStructure, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """H_T for the (len(rows), len(cols)) block of node-id pairs, float64."""
    a = ts.lca(rows[:, None], cols[None, :])
    # H = S[i] + S[j] - 2 S[a] + h[a]
    g = ts.h - 2.0 * ts.prefix
    out = g[a]
    out += ts.prefix[rows][:, None]
    out += ts.prefix[cols][None, :]
    return out


def pairwise_lca(parents, node_ids) -> np.ndarray:
    """Lowest common ancestor of every pair of the given nodes.

    Args:
        parents: (n,) int parent array (-1 for the root) or a ``DocumentTree``.
        node_ids: (m,) int node ids.

    Returns:
        (m, m) int64 array, entry (i, j) the LCA of ``node_ids[i]`` and ``node_ids[j]``.

    Raises:
        ValueError: on an invalid tree or node ids out of range.
    """
    ts = TreeStructure.from_parents(parents)
    ids = _check_node_ids(node_ids, ts.n_nodes)
    m = ids.size
    out = np.empty((m, m), dtype=np.int64)
    for sl in _row_blocks(m):
        out[sl] = ts.lca(ids[sl][:, None], ids[None, :])
    return out


def pairwise_path_entropy(parents, node_ids) -> np.ndarray:
    """Structural entropy H_T(v_i, v_j) of the tree path for every pair of nodes.

    DocMaster Eq. (1): ``H_T(v_i, v_j) = -sum_{v in P_ij} (d_v/2|E|) log2(d_v/vol(T_v))``,
    path ends included (so the diagonal holds ``h_{v_i}``). Not normalised.

    Args:
        parents: (n,) int parent array (-1 for the root) or a ``DocumentTree``.
        node_ids: (m,) int node ids (usually the TEXT nodes).

    Returns:
        (m, m) float64, symmetric, >= 0, in bits.

    Raises:
        ValueError: on an invalid tree or node ids out of range.
    """
    ts = TreeStructure.from_parents(parents)
    ids = _check_node_ids(node_ids, ts.n_nodes)
    m = ids.size
    out = np.empty((m, m), dtype=np.float64)
    for sl in _row_blocks(m):
        out[sl] = _path_entropy_block(ts, ids[sl], ids)
    return out


def _check_sec_args(ts: TreeStructure, embeddings, node_ids, alpha: float, sign: str):
    ids = _check_node_ids(node_ids, ts.n_nodes)
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != ids.size:
        raise ValueError(f"embeddings must have shape (len(node_ids)={ids.size}, d), got {emb.shape}")
    if not np.all(np.isfinite(emb)):
        raise ValueError("embeddings contain NaN or infinite values")
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if sign not in ("printed", "prose"):
        raise ValueError(f"sign must be 'printed' or 'prose', got {sign!r}")
    e = emb.astype(np.float64, copy=True)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # zero vectors: cosine 0 with everything
    e /= norms
    return ids, e


def _sec_blocks(ts: TreeStructure, ids: np.ndarray, e: np.ndarray, alpha: float, sign: str) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield (row slice, SEC block of shape (rows, m) float64)."""
    n = ts.n_nodes
    norm = np.log2(n) if n > 1 else 0.0
    coef = 0.0 if norm == 0 else (1.0 - alpha) / norm
    if sign == "printed":
        coef = -coef
    for sl in _row_blocks(ids.size):
        block = _path_entropy_block(ts, ids[sl], ids)
        block *= coef
        cos = e[sl] @ e.T
        cos *= alpha
        block += cos
        yield sl, block


def sec_matrix(
    tree_or_parents,
    embeddings: np.ndarray,
    node_ids,
    alpha: float = 0.6,
    sign: SecSign = "printed",
) -> np.ndarray:
    """SEC score of every pair of the given nodes (DocMaster Eq. (1)).

    ``SEC = alpha * cos(e_i, e_j) -/+ (1 - alpha) * H_T(v_i, v_j) / log2 |V|``.

    ``sign="printed"`` subtracts the normalised path entropy, as Eq. (1) is printed
    (penalises structurally distant pairs). ``sign="prose"`` adds it, matching the
    paper's prose ("semantically similar yet structurally distant"). The paper is
    inconsistent on this point; the default follows the equation.

    Args:
        tree_or_parents: a ``DocumentTree`` or an (n,) int parent array (-1 = root);
            ``|V| = n``.
        embeddings: (m, d) float array, row i the embedding of ``node_ids[i]``
            (normalised here; zero rows get cosine 0).
        node_ids: (m,) int node ids, usually the TEXT nodes.
        alpha: weight of the cosine term in [0, 1] (paper: 0.6).
        sign: ``"printed"`` or ``"prose"`` (see above).

    Returns:
        (m, m) float64, symmetric. The diagonal is defined by the formula
        (path = the node itself) but is not a meaningful pair.

    Raises:
        ValueError: on an invalid tree, node ids out of range, mismatched or
            non-finite embeddings, alpha outside [0, 1] or an unknown sign.
    """
    ts = TreeStructure.from_parents(tree_or_parents)
    ids, e = _check_sec_args(ts, embeddings, node_ids, alpha, sign)
    m = ids.size
    out = np.empty((m, m), dtype=np.float64)
    for sl, block in _sec_blocks(ts, ids, e, float(alpha), sign):
        out[sl] = block
    return out


def _text_keys(texts: Sequence[str] | None, m: int) -> np.ndarray | None:
    """Integer key per text (equal keys = identical text after whitespace folding)."""
    if texts is None:
        return None
    if len(texts) != m:
        raise ValueError(f"texts must have {m} entries, got {len(texts)}")
    seen: dict[str, int] = {}
    keys = np.empty(m, dtype=np.int64)
    for i, t in enumerate(texts):
        norm = " ".join((t or "").split()).lower()
        keys[i] = seen.setdefault(norm, len(seen))
    return keys


class _TopK:
    """Exact streaming top-k over row blocks, ties broken by (i, j) ascending."""

    def __init__(self, k: int):
        self.k = k
        self.scores: list[np.ndarray] = []
        self.i: list[np.ndarray] = []
        self.j: list[np.ndarray] = []

    def add(self, row0: int, block: np.ndarray, keys: np.ndarray | None, keys_cols: np.ndarray | None) -> None:
        b, m = block.shape
        rows = np.arange(row0, row0 + b)
        cols = np.arange(m)
        valid = cols[None, :] > rows[:, None]  # strict upper triangle: i < j
        if keys is not None:
            valid &= keys[row0 : row0 + b][:, None] != keys_cols[None, :]
        flat_valid = np.flatnonzero(valid.ravel())
        if flat_valid.size == 0 or self.k == 0:
            return
        vals = block.ravel()[flat_valid]
        if np.isnan(vals).any():
            raise ValueError("score matrix contains NaN")
        kk = min(self.k, vals.size)
        t = np.partition(vals, vals.size - kk)[vals.size - kk]
        gt = np.flatnonzero(vals > t)
        eq = np.flatnonzero(vals == t)[: kk - gt.size]
        sel = np.concatenate([gt, eq])
        flat = flat_valid[sel]
        self.scores.append(vals[sel])
        self.i.append(row0 + flat // m)
        self.j.append(flat % m)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.scores:
            return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.float64)
        s = np.concatenate(self.scores)
        i = np.concatenate(self.i).astype(np.int64)
        j = np.concatenate(self.j).astype(np.int64)
        order = np.lexsort((j, i, -s))[: self.k]
        return np.stack([i[order], j[order]], axis=1), s[order].astype(np.float64)


def top_k_anchor_pairs(S: np.ndarray, k: int, texts: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k highest-scoring pairs (i < j) of a symmetric score matrix: the anchor pairs.

    Only the strict upper triangle is read (so i == j never appears). Ties are broken
    by (i, j) ascending, so the result is deterministic.

    Args:
        S: (m, m) float score matrix, e.g. from :func:`sec_matrix`.
        k: number of pairs wanted (>= 0); fewer are returned when fewer exist.
        texts: optional m texts; pairs whose texts are identical (after folding
            whitespace and case) are excluded (duplicated boilerplate paragraphs).

    Returns:
        ``(pairs, scores)``: pairs (k', 2) int64 row indices into S with
        ``pairs[:, 0] < pairs[:, 1]``, scores (k',) float64 descending, k' <= k.

    Raises:
        ValueError: if S is not square, k < 0, texts has the wrong length, or a
            candidate score is NaN.
    """
    S = np.asarray(S)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be square, got shape {S.shape}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    m = S.shape[0]
    keys = _text_keys(texts, m)
    top = _TopK(int(k))
    for sl in _row_blocks(m):
        top.add(sl.start, S[sl], keys, keys)
    return top.result()


def top_k_sec_pairs(
    tree_or_parents,
    embeddings: np.ndarray,
    node_ids,
    k: int,
    alpha: float = 0.6,
    sign: SecSign = "printed",
    texts: Sequence[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k SEC anchor pairs without materialising the (m, m) matrix.

    Same result as ``top_k_anchor_pairs(sec_matrix(...), k, texts)`` but computed in
    row blocks, so peak memory is O(block * m) instead of O(m^2).

    Args:
        tree_or_parents: a ``DocumentTree`` or an (n,) int parent array.
        embeddings: (m, d) float, rows aligned with ``node_ids``.
        node_ids: (m,) int node ids.
        k: number of anchor pairs (>= 0).
        alpha: cosine weight in [0, 1].
        sign: ``"printed"`` or ``"prose"`` (see :func:`sec_matrix`).
        texts: optional m texts for the identical-text exclusion.

    Returns:
        ``(pairs, scores)``: (k', 2) int64 indices into ``node_ids`` (i < j) and
        (k',) float64 SEC scores, descending.

    Raises:
        ValueError: as :func:`sec_matrix` and :func:`top_k_anchor_pairs`.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    ts = TreeStructure.from_parents(tree_or_parents)
    ids, e = _check_sec_args(ts, embeddings, node_ids, alpha, sign)
    keys = _text_keys(texts, ids.size)
    top = _TopK(int(k))
    for sl, block in _sec_blocks(ts, ids, e, float(alpha), sign):
        top.add(sl.start, block, keys, keys)
    return top.result()
