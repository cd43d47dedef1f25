"""PC-KMeans (Basu, Banerjee, Mooney 2004; DocMaster Eq. (2))."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from docmaster_core.index.pckmeans import PCKMeans


def blobs(seed=0, k=5, per=80, d=8, spread=1.0, scale=6.0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, scale, (k, d))
    X = np.concatenate([rng.normal(c, spread, (per, d)) for c in centres])
    return X, np.repeat(np.arange(k), per)


def two_groups(seed=0):
    """Two tight groups on a line; constraints that contradict the geometry.

    Must-links join point i of group A to point i of group B (30 pairs) and
    cannot-links join neighbours inside group A (29 pairs), so the geometric
    2-means solution violates all 59 constraints.
    """
    rng = np.random.default_rng(seed)
    A = rng.normal(0, 0.5, (60, 2))
    B = rng.normal(0, 0.5, (60, 2)) + [5.0, 0.0]
    X = np.vstack([A, B])
    ml = [(i, 60 + i) for i in range(30)]
    cl = [(i, i + 1) for i in range(0, 58, 2)]
    return X, ml, cl


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tol", [0.0, 1e-4])
def test_no_constraints_matches_sklearn_kmeans(seed, tol):
    X, _ = blobs(seed)
    rng = np.random.default_rng(100 + seed)
    init = X[rng.choice(X.shape[0], 5, replace=False)]
    ours = PCKMeans(n_clusters=5, tol=tol, random_state=seed).fit(X, init_centers=init)
    ref = KMeans(n_clusters=5, init=init, n_init=1, tol=tol).fit(X)
    # objective with no constraints = SSE = sklearn's inertia
    assert ours.objective_ == pytest.approx(ref.inertia_, rel=1e-6)
    assert ours.inertia_ == ours.objective_
    assert np.array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=1e-6, atol=1e-9)
    assert ours.n_violated_must_ == ours.n_violated_cannot_ == 0


def test_objective_is_sse_plus_penalties():
    X, ml, cl = two_groups()
    m = PCKMeans(n_clusters=2, w=0.7, random_state=0).fit(X, ml, cl)
    lab, C = m.labels_, m.cluster_centers_
    sse = float(((X - C[lab]) ** 2).sum())
    vm = sum(lab[i] != lab[j] for i, j in ml)
    vc = sum(lab[i] == lab[j] for i, j in cl)
    assert (m.n_violated_must_, m.n_violated_cannot_) == (vm, vc)
    assert m.objective_ == pytest.approx(sse + 0.7 * (vm + vc), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("augment", [True, False])
def test_violations_fall_as_w_grows(seed, augment):
    X, ml, cl = two_groups(seed)
    ws = [0.0, 0.1, 1.0, 3.0, 30.0, 300.0]
    violated = []
    for w in ws:
        m = PCKMeans(n_clusters=2, w=w, random_state=seed, augment=augment).fit(X, ml, cl)
        violated.append(m.n_violated_must_ + m.n_violated_cannot_)
    # w = 0 is plain k-means: the two groups, every constraint violated
    assert violated[0] == 59
    assert all(a >= b for a, b in zip(violated, violated[1:])), violated
    assert violated[-1] < violated[0]
    assert violated[-1] <= 5


def test_deterministic_for_fixed_random_state():
    X, _ = blobs(4, k=6)
    ml = [(0, 100), (1, 2), (200, 300)]
    cl = [(0, 1), (5, 250)]
    a = PCKMeans(n_clusters=6, w=2.0, random_state=7).fit(X, ml, cl)
    b = PCKMeans(n_clusters=6, w=2.0, random_state=7).fit(X, ml, cl)
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.objective_ == b.objective_ and a.n_iter_ == b.n_iter_
    # the global NumPy state is neither used nor changed
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    PCKMeans(n_clusters=6, random_state=None).fit(X)
    assert np.random.random() == before


def test_convergence_warning_with_max_iter_1():
    X, _ = blobs(0, k=5)
    rng = np.random.default_rng(0)
    init = X[rng.choice(X.shape[0], 5, replace=False)]
    with pytest.warns(ConvergenceWarning):
        m = PCKMeans(n_clusters=5, max_iter=1, random_state=0).fit(X, init_centers=init)
    assert m.n_iter_ == 1 and not m.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = PCKMeans(n_clusters=5, random_state=0).fit(X, init_centers=init)
    assert m.converged_ and m.n_iter_ > 1


def test_must_link_neighbourhoods_initialise_and_hold():
    X, truth = blobs(1, k=3, per=30)
    # chains 0-1-2 and 30-31 are neighbourhoods after the transitive closure; 0-60 CL
    ml = np.array([[0, 1], [1, 2], [30, 31], [60, 61]])
    cl = np.array([[0, 60]])
    m = PCKMeans(n_clusters=3, w=100.0, random_state=0).fit(X, must_link=ml, cannot_link=cl)
    assert m.n_neighbourhoods_ == 3
    # with 3 neighbourhoods >= K the initial centres are their centroids: one per blob,
    # so the result is the blob partition
    assert len(set(zip(m.labels_.tolist(), truth.tolist()))) == 3
    assert m.n_violated_must_ == 0 and m.n_violated_cannot_ == 0


def test_constraints_pull_a_point_across():
    X, ml, cl = two_groups(0)
    # one must-link from point 0 (group A) to 10 members of group B, huge w
    ml = [(0, 60 + i) for i in range(10)]
    m = PCKMeans(n_clusters=2, w=1000.0, random_state=0).fit(X, ml)
    assert m.n_violated_must_ == 0
    assert m.labels_[0] == m.labels_[60]
    assert m.labels_[1] != m.labels_[60]  # its geometric neighbour stays in A


def test_empty_clusters_and_duplicates_do_not_break():
    X = np.array([[0.0, 0.0]] * 10 + [[1.0, 1.0]] * 10)
    m = PCKMeans(n_clusters=4, random_state=0).fit(X)
    assert m.labels_.min() >= 0 and m.labels_.max() < 4
    assert np.all(np.isfinite(m.cluster_centers_))
    assert m.inertia_ == pytest.approx(0.0, abs=1e-12)


def test_float32_input_kept_and_predict():
    X, _ = blobs(2)
    X32 = X.astype(np.float32)
    m = PCKMeans(n_clusters=5, random_state=0).fit(X32)
    assert m.cluster_centers_.dtype == np.float32
    assert m.labels_.dtype == np.int64
    assert np.array_equal(m.predict(X32), m.labels_)
    assert np.array_equal(m.fit_predict(X32), m.labels_)


def test_input_validation():
    X, _ = blobs(0, k=2, per=5)
    with pytest.raises(ValueError, match="larger than the number of points"):
        PCKMeans(n_clusters=11).fit(X)
    with pytest.raises(ValueError, match="out of range"):
        PCKMeans(n_clusters=2).fit(X, must_link=[(0, 10)])
    with pytest.raises(ValueError, match="out of range"):
        PCKMeans(n_clusters=2).fit(X, cannot_link=[(-1, 3)])
    with pytest.raises(ValueError, match=r"shape \(p, 2\)"):
        PCKMeans(n_clusters=2).fit(X, must_link=[(0, 1, 2)])
    with pytest.raises(ValueError, match="itself"):
        PCKMeans(n_clusters=2).fit(X, cannot_link=[(3, 3)])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        PCKMeans(n_clusters=2).fit(bad)
    with pytest.raises(ValueError, match="init_centers"):
        PCKMeans(n_clusters=2).fit(X, init_centers=np.zeros((3, X.shape[1])))
    with pytest.raises(ValueError, match="w must"):
        PCKMeans(n_clusters=2, w=-1).fit(X)
    with pytest.raises(ValueError, match="2-D"):
        PCKMeans(n_clusters=2).fit(X[0])
    with pytest.raises(ValueError, match="not fitted"):
        PCKMeans().predict(X)
    # must-link self-pairs and duplicates are harmless
    m = PCKMeans(n_clusters=2, random_state=0).fit(X, must_link=[(1, 1), (0, 1), (1, 0)])
    assert m.n_violated_must_ in (0, 1)


def test_init_params_stored_only():
    m = PCKMeans(n_clusters=3, w=2.5, max_iter=7, tol=0.1, random_state=4)
    assert (m.n_clusters, m.w, m.max_iter, m.tol, m.random_state) == (3, 2.5, 7, 0.1, 4)
    assert not hasattr(m, "labels_")
