"""Pairwise-constrained k-means (PC-KMeans).

Source: Basu, Banerjee and Mooney (2004), "Active Semi-Supervision for Pairwise
Constrained Clustering", SDM, Algorithm PCKMeans; used by DocMaster Sec. 2.3, Eq. (2)
(SPEC F4). The objective minimised is::

    J = sum_i ||x_i - mu_{l_i}||^2
        + w * #{(i, j) in M : l_i != l_j}     (violated must-links)
        + w * #{(i, j) in C : l_i == l_j}     (violated cannot-links)

DocMaster prints a minus before the cannot-link term; Basu's objective penalises
violations of both kinds, which is what is implemented. Basu writes
``1/2 ||x - mu||^2`` and separate weights w, w-bar; here the distance has no 1/2 (as
in Eq. (2)) and one weight w serves both kinds, i.e. Basu's w = w-bar = w/2.
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["PCKMeans"]

# scipy.sparse and sklearn are imported inside the functions that use them so that
# importing this module stays cheap (sklearn alone takes > 1 s to import).


def __getattr__(name: str):
    if name == "ConvergenceWarning":
        from sklearn.exceptions import ConvergenceWarning

        return ConvergenceWarning
    raise AttributeError(name)


_CHUNK_ROWS = 65536  # rows per distance block (n x K output is needed anyway)
_SSE_ROWS = 8192  # rows per float64 residual block in the exact SSE


def _validate_pairs(pairs, n: int, name: str) -> np.ndarray:
    """Constraints as a (p, 2) int64 array with i < j, duplicates removed."""
    if pairs is None:
        return np.zeros((0, 2), dtype=np.int64)
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (p, 2), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer point indices")
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"{name} holds indices out of range [0, {n})")
    arr = np.sort(arr, axis=1)
    return np.unique(arr, axis=0)


def _adjacency(pairs: np.ndarray, n: int):
    """Symmetric 0/1 CSR adjacency (n, n) of undirected pairs (scipy.sparse.csr_matrix)."""
    from scipy.sparse import coo_matrix, csr_matrix

    if pairs.shape[0] == 0:
        return csr_matrix((n, n), dtype=np.int8)
    r = np.concatenate([pairs[:, 0], pairs[:, 1]])
    c = np.concatenate([pairs[:, 1], pairs[:, 0]])
    a = coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n, n)).tocsr()
    a.data[:] = 1  # duplicates were summed
    a.sort_indices()
    return a


def _sq_dist_chunked(X: np.ndarray, C: np.ndarray, x_sq: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (n, K) in X's float dtype, clipped at 0."""
    c_sq = np.einsum("ij,ij->i", C, C)
    out = np.empty((X.shape[0], C.shape[0]), dtype=X.dtype)
    Ct = np.ascontiguousarray(C.T)
    for s in range(0, X.shape[0], _CHUNK_ROWS):
        blk = out[s : s + _CHUNK_ROWS]
        np.matmul(X[s : s + _CHUNK_ROWS], Ct, out=blk)
        blk *= -2
        blk += x_sq[s : s + _CHUNK_ROWS, None]
        blk += c_sq[None, :]
    np.maximum(out, 0, out=out)
    return out


def _sq_dist_to(X: np.ndarray, x_sq: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Squared distances (n,) float64 of all rows of X to one point c, clipped at 0."""
    d = x_sq.astype(np.float64) - 2.0 * (X @ c).astype(np.float64) + float(np.dot(c, c))
    return np.maximum(d, 0.0, out=d)


def _sse(X: np.ndarray, C: np.ndarray, labels: np.ndarray) -> float:
    """sum_i ||x_i - C[labels_i]||^2 in float64, exact (no expansion)."""
    total = 0.0
    for s in range(0, X.shape[0], _SSE_ROWS):
        diff = X[s : s + _SSE_ROWS].astype(np.float64) - C[labels[s : s + _SSE_ROWS]].astype(np.float64)
        total += float(np.einsum("ij,ij->", diff, diff))
    return total


class PCKMeans:
    """Pairwise-constrained k-means (Basu, Banerjee, Mooney 2004), scikit-learn style.

    Algorithm (Basu et al. 2004, Alg. PCKMeans):

    1. *Neighbourhoods*: the connected components (size >= 2) of the must-link graph,
       i.e. its transitive closure (union-find via ``scipy.sparse.csgraph``). With
       ``augment=True`` the must-links are augmented with the closure and the
       cannot-links with every pair across two neighbourhoods joined by a cannot-link.
    2. *Initialisation*: neighbourhoods sorted by decreasing size (ties: smallest
       member first). If there are >= K, the centroids of the K largest; otherwise
       all their centroids, then (Basu step 1d) a point cannot-linked to every
       neighbourhood, then k-means++ (D^2 sampling) picks from
       ``np.random.default_rng(random_state)``. ``fit(init_centers=...)`` overrides.
    3. *Assignment*: unconstrained points go to their nearest centre (vectorised);
       constrained points are then assigned greedily, in a random order drawn from the
       seeded generator, to ``argmin_h ||x - mu_h||^2 + w * #(must-link partners in
       another cluster) + w * #(cannot-link partners in cluster h)``, counting only
       partners already assigned (at the first iteration unassigned partners are
       ignored; afterwards the current labels are used). Each step is a coordinate
       descent step on J with the centres fixed.
    4. *Update*: centroids are the means of their points. An empty cluster is
       re-seeded at the point farthest from its centre (as scikit-learn does).
    5. Stop when no label changes, or when the summed squared centre shift is
       <= ``tol * mean(var(X, axis=0))`` (scikit-learn's scaling), or after
       ``max_iter`` iterations (then a :class:`~sklearn.exceptions.ConvergenceWarning`
       is issued and labels are re-assigned once to the final centres).

    With no constraints this is Lloyd's k-means and, from the same initial centres,
    reaches the same fixed point as ``sklearn.cluster.KMeans(init=centers, n_init=1)``.

    Args:
        n_clusters: K (>= 1).
        w: Penalty weight per violated constraint (>= 0); w = 0 gives k-means.
        max_iter: Maximum number of iterations (>= 1).
        tol: Relative tolerance on the centre shift (>= 0).
        random_state: Seed (int), ``None`` or a ``np.random.Generator``; the global
            NumPy random state is never used.
        augment: Use Basu's augmented (transitively closed) constraint sets in the
            assignment step. The reported objective and violation counts always refer
            to the constraints as given.

    Attributes (after ``fit``):
        labels_: (n,) int64 cluster of every point, in [0, K).
        cluster_centers_: (K, d) centres, dtype of X (float32 or float64).
        objective_: float, Eq. (2) over the given constraints:
            SSE + w * (n_violated_must_ + n_violated_cannot_).
        inertia_: float, the SSE part alone.
        n_iter_: int, iterations run.
        n_violated_must_: int, violated must-links (given, deduplicated).
        n_violated_cannot_: int, violated cannot-links (given, deduplicated).
        n_neighbourhoods_: int, must-link neighbourhoods (components of size >= 2).
        converged_: bool.
    """

    def __init__(
        self,
        n_clusters: int = 8,
        w: float = 1.0,
        max_iter: int = 100,
        tol: float = 1e-4,
        random_state=None,
        augment: bool = True,
    ):
        self.n_clusters = n_clusters
        self.w = w
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.augment = augment

    # ------------------------------------------------------------------ helpers
    def _check_params(self, n: int) -> None:
        if not isinstance(self.n_clusters, (int, np.integer)) or self.n_clusters < 1:
            raise ValueError(f"n_clusters must be an integer >= 1, got {self.n_clusters!r}")
        if self.n_clusters > n:
            raise ValueError(f"n_clusters={self.n_clusters} is larger than the number of points n={n}")
        if not np.isfinite(self.w) or self.w < 0:
            raise ValueError(f"w must be a finite number >= 0, got {self.w!r}")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter!r}")
        if not np.isfinite(self.tol) or self.tol < 0:
            raise ValueError(f"tol must be >= 0, got {self.tol!r}")

    @staticmethod
    def _check_X(X) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {X.shape}")
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinite values")
        return np.ascontiguousarray(X)

    def _neighbourhoods(self, n: int, ml: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Component id per point and the neighbourhoods (size >= 2), largest first."""
        if ml.shape[0] == 0:
            return np.arange(n), []
        from scipy.sparse.csgraph import connected_components

        adj = _adjacency(ml, n)
        _, comp = connected_components(adj, directed=False)
        sizes = np.bincount(comp)
        big = np.flatnonzero(sizes >= 2)
        order = np.argsort(comp, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)])
        members = {c: order[starts[c] : starts[c + 1]] for c in big}
        hoods = sorted((members[c] for c in big), key=lambda mem: (-mem.size, int(mem[0])))
        return comp, hoods

    @staticmethod
    def _augment(comp: np.ndarray, hoods: list[np.ndarray], ml: np.ndarray, cl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Basu's augmented constraint sets (transitive closure; entailed cannot-links)."""
        ml_parts = [ml]
        for mem in hoods:
            a, b = np.triu_indices(mem.size, k=1)
            ml_parts.append(np.stack([mem[a], mem[b]], axis=1))
        ml_aug = np.unique(np.sort(np.concatenate(ml_parts), axis=1), axis=0) if len(ml_parts) > 1 else ml
        if cl.shape[0] == 0:
            return ml_aug, cl
        members: dict[int, np.ndarray] = {int(comp[m[0]]): m for m in hoods}
        cl_parts = [cl]
        for i, j in cl:
            ci, cj = int(comp[i]), int(comp[j])
            if ci == cj:
                continue  # inconsistent constraint set: keep the given pair only
            mi = members.get(ci, np.array([i]))
            mj = members.get(cj, np.array([j]))
            if mi.size == 1 and mj.size == 1:
                continue
            cl_parts.append(np.stack(np.meshgrid(mi, mj, indexing="ij"), axis=-1).reshape(-1, 2))
        cl_aug = np.unique(np.sort(np.concatenate(cl_parts), axis=1), axis=0)
        return ml_aug, cl_aug

    def _init_centers(self, X, x_sq, comp, hoods, cl_adj, rng) -> np.ndarray:
        K = self.n_clusters
        n, d = X.shape
        centers: list[np.ndarray] = [X[mem].astype(np.float64).mean(axis=0) for mem in hoods[:K]]
        chosen: list[int] = []
        if 0 < len(hoods) < K and cl_adj.nnz:
            # Basu step 1d: a point cannot-linked to every neighbourhood seeds the next centre
            hood_of = np.full(n, -1, dtype=np.int64)
            for h_id, mem in enumerate(hoods):
                hood_of[mem] = h_id
            for i in np.flatnonzero(np.diff(cl_adj.indptr) > 0):
                if hood_of[i] >= 0:
                    continue
                partners = cl_adj.indices[cl_adj.indptr[i] : cl_adj.indptr[i + 1]]
                linked = np.unique(hood_of[partners])
                if np.count_nonzero(linked >= 0) == len(hoods):
                    centers.append(X[i].astype(np.float64))
                    chosen.append(int(i))
                    break
        if len(centers) < K:
            # k-means++ (D^2 sampling) for the remaining centres
            if centers:
                C = np.asarray(centers, dtype=X.dtype)
                d2 = _sq_dist_chunked(X, C, x_sq).min(axis=1).astype(np.float64)
            else:
                first = int(rng.integers(n))
                centers.append(X[first].astype(np.float64))
                d2 = _sq_dist_to(X, x_sq, X[first])
            while len(centers) < K:
                total = d2.sum()
                if total > 0 and np.isfinite(total):
                    idx = int(rng.choice(n, p=d2 / total))
                else:
                    idx = int(rng.integers(n))
                centers.append(X[idx].astype(np.float64))
                np.minimum(d2, _sq_dist_to(X, x_sq, X[idx]), out=d2)
        return np.asarray(centers, dtype=X.dtype)

    def _assign(self, dist, labels, constrained, partners, rng) -> np.ndarray:
        """One greedy assignment pass; returns the new labels (n,) int64.

        ``partners[i] = (must-link partner ids, cannot-link partner ids)`` for every
        constrained point i.
        """
        K = dist.shape[1]
        new = np.argmin(dist, axis=1).astype(np.int64)
        if constrained.size == 0 or self.w == 0:
            return new
        cur = labels.copy()
        free = np.ones(labels.shape[0], dtype=bool)
        free[constrained] = False
        cur[free] = new[free]
        w = float(self.w)
        order = rng.permutation(constrained)
        rows = dist[order].astype(np.float64)
        for cost, i in zip(rows, order.tolist()):
            mlp, clp = partners[i]
            if mlp.size:
                p = cur[mlp]
                p = p[p >= 0]
                cost += w * (p.size - np.bincount(p, minlength=K))
            if clp.size:
                q = cur[clp]
                q = q[q >= 0]
                cost += w * np.bincount(q, minlength=K)
            cur[i] = cost.argmin()
        return cur

    @staticmethod
    def _update(X, labels, K, old_centers, dist) -> np.ndarray:
        counts = np.bincount(labels, minlength=K)
        sums = np.zeros((K, X.shape[1]), dtype=np.float64)
        _add_rows(sums, labels, X)
        centers = old_centers.astype(np.float64, copy=True)
        nz = counts > 0
        centers[nz] = sums[nz] / counts[nz, None]
        empty = np.flatnonzero(~nz)
        if empty.size:
            # re-seed empty clusters at the points farthest from their current centre
            far = dist[np.arange(X.shape[0]), labels]
            cand = np.argsort(-far, kind="stable")[: empty.size]
            for e, idx in zip(empty, cand):
                if far[idx] > 0:
                    centers[e] = X[idx]
        return centers.astype(X.dtype)

    # ------------------------------------------------------------------ public API
    def fit(self, X, must_link=None, cannot_link=None, init_centers=None) -> "PCKMeans":
        """Cluster X under must-link and cannot-link constraints.

        Args:
            X: (n, d) float array (float32 kept, other types converted to float64),
                e.g. L2-normalised 384-d text-node embeddings.
            must_link: (p, 2) int array or list of index pairs that should share a
                cluster; order within a pair and duplicates do not matter;
                self-pairs are ignored.
            cannot_link: (q, 2) int array or list of index pairs that should not
                share a cluster.
            init_centers: optional (K, d) initial centres; replaces step 2.

        Returns:
            self, with ``labels_``, ``cluster_centers_``, ``objective_``, ``inertia_``,
            ``n_iter_``, ``n_violated_must_``, ``n_violated_cannot_``, ``converged_``.

        Raises:
            ValueError: if X is not a finite non-empty 2-D array, K > n, a parameter
                is out of range, a constraint index is out of range, a cannot-link
                joins a point with itself, or ``init_centers`` has the wrong shape or
                non-finite values.

        Warns:
            ConvergenceWarning: when ``max_iter`` iterations did not converge.
        """
        X = self._check_X(X)
        n, d = X.shape
        self._check_params(n)
        K = int(self.n_clusters)
        ml = _validate_pairs(must_link, n, "must_link")
        cl = _validate_pairs(cannot_link, n, "cannot_link")
        ml = ml[ml[:, 0] != ml[:, 1]]
        if np.any(cl[:, 0] == cl[:, 1]):
            raise ValueError("cannot_link contains a pair of a point with itself (never satisfiable)")
        rng = np.random.default_rng(self.random_state)

        comp, hoods = self._neighbourhoods(n, ml)
        ml_used, cl_used = (self._augment(comp, hoods, ml, cl) if self.augment else (ml, cl))
        ml_adj = _adjacency(ml_used, n)
        cl_adj = _adjacency(cl_used, n)
        constrained = np.flatnonzero((np.diff(ml_adj.indptr) > 0) | (np.diff(cl_adj.indptr) > 0))
        partners = {
            i: (
                ml_adj.indices[ml_adj.indptr[i] : ml_adj.indptr[i + 1]],
                cl_adj.indices[cl_adj.indptr[i] : cl_adj.indptr[i + 1]],
            )
            for i in constrained.tolist()
        }

        x_sq = np.einsum("ij,ij->i", X, X)
        if init_centers is not None:
            C = np.asarray(init_centers)
            if C.shape != (K, d):
                raise ValueError(f"init_centers must have shape ({K}, {d}), got {C.shape}")
            if not np.all(np.isfinite(C)):
                raise ValueError("init_centers contains NaN or infinite values")
            C = C.astype(X.dtype, copy=True)
        else:
            C = self._init_centers(X, x_sq, comp, hoods, cl_adj, rng)

        tol_abs = float(self.tol) * float(np.mean(np.var(X, axis=0, dtype=np.float64)))
        labels = np.full(n, -1, dtype=np.int64)
        converged = False
        strict = False
        n_iter = 0
        for it in range(int(self.max_iter)):
            n_iter = it + 1
            dist = _sq_dist_chunked(X, C, x_sq)
            new_labels = self._assign(dist, labels, constrained, partners, rng)
            new_C = self._update(X, new_labels, K, C, dist)
            if np.array_equal(new_labels, labels):
                labels, C = new_labels, new_C
                converged = strict = True
                break
            shift = float(((new_C.astype(np.float64) - C.astype(np.float64)) ** 2).sum())
            labels, C = new_labels, new_C
            if shift <= tol_abs:
                converged = True
                break
        if not strict:
            # make labels consistent with the final centres (as scikit-learn does)
            dist = _sq_dist_chunked(X, C, x_sq)
            labels = self._assign(dist, labels, constrained, partners, rng)
        if not converged:
            from sklearn.exceptions import ConvergenceWarning

            warnings.warn(
                f"PCKMeans did not converge within max_iter={self.max_iter} iterations; "
                "increase max_iter or tol.",
                ConvergenceWarning,
                stacklevel=2,
            )

        self.labels_ = labels
        self.cluster_centers_ = C
        self.inertia_ = _sse(X, C, labels)
        self.n_violated_must_ = int(np.count_nonzero(labels[ml[:, 0]] != labels[ml[:, 1]])) if ml.size else 0
        self.n_violated_cannot_ = int(np.count_nonzero(labels[cl[:, 0]] == labels[cl[:, 1]])) if cl.size else 0
        self.objective_ = self.inertia_ + float(self.w) * (self.n_violated_must_ + self.n_violated_cannot_)
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.n_neighbourhoods_ = len(hoods)
        self.n_features_in_ = d
        return self

    def fit_predict(self, X, must_link=None, cannot_link=None, init_centers=None) -> np.ndarray:
        """``fit`` and return ``labels_`` ((n,) int64)."""
        return self.fit(X, must_link, cannot_link, init_centers).labels_

    def predict(self, X) -> np.ndarray:
        """Nearest fitted centre for new points (no constraints).

        Args:
            X: (n', d) float array.

        Returns:
            (n',) int64 cluster ids.

        Raises:
            ValueError: if not fitted, or X has the wrong width or non-finite values.
        """
        if not hasattr(self, "cluster_centers_"):
            raise ValueError("PCKMeans is not fitted yet; call fit first")
        X = self._check_X(X)
        if X.shape[1] != self.cluster_centers_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, expected {self.cluster_centers_.shape[1]}")
        C = self.cluster_centers_.astype(X.dtype)
        return np.argmin(_sq_dist_chunked(X, C, np.einsum("ij,ij->i", X, X)), axis=1).astype(np.int64)


def _add_rows(sums: np.ndarray, labels: np.ndarray, X: np.ndarray) -> None:
    """sums[labels[i]] += X[i] for all i, via a sparse one-hot product (fast for large n)."""
    from scipy.sparse import csr_matrix

    K = sums.shape[0]
    n = X.shape[0]
    onehot = csr_matrix((np.ones(n, dtype=X.dtype), (labels, np.arange(n))), shape=(K, n))
    sums += np.asarray(onehot @ X, dtype=np.float64)

