"""Structural Entropy Correlation (DocMaster Eq. (1)): hand-computed values and brute force."""
from __future__ import annotations

import math

import numpy as np
import pytest

from docmaster_core.index import sec as sec_mod
from docmaster_core.index.sec import (
    TreeStructure,
    pairwise_lca,
    pairwise_path_entropy,
    path_entropy_terms,
    sec_matrix,
    top_k_anchor_pairs,
    top_k_sec_pairs,
)
from docmaster_core.model import DocumentTree, Node, NodeType

# The 7-node tree used below:
#
#            0 ROOT
#           /      \
#      1 TITLE    2 TITLE
#       /   \      /   \
#   3 TEXT 4 TEXT 5 TEXT 6 TEXT
#
# |V| = 7, |E| = 6, 2|E| = 12
# degrees (children + 1 for the parent): d0 = 2, d1 = d2 = 3, leaves 1
# volumes: leaves 1; vol(T1) = vol(T2) = 3 + 1 + 1 = 5; vol(T0) = 2 + 5 + 5 = 12
# h_v = -(d_v / 12) log2(d_v / vol_v):
#   h0 = -(2/12) log2(2/12) = (1/6) log2 6   = 0.43082708...
#   h1 = h2 = -(3/12) log2(3/5) = (1/4) log2(5/3) = 0.18423709...
#   leaves: -(1/12) log2(1/1) = 0
PARENTS7 = np.array([-1, 0, 0, 1, 1, 2, 2])
H_ROOT = math.log2(6) / 6
H_TITLE = math.log2(5 / 3) / 4


def tree7() -> DocumentTree:
    spec = [
        (NodeType.ROOT, None, "doc"),
        (NodeType.TITLE, 0, "1 Intro"),
        (NodeType.TITLE, 0, "2 Method"),
        (NodeType.TEXT, 1, "alpha text"),
        (NodeType.TEXT, 1, "beta text"),
        (NodeType.TEXT, 2, "gamma text"),
        (NodeType.TEXT, 2, "delta text"),
    ]
    nodes = []
    for i, (t, p, c) in enumerate(spec):
        depth = 0 if p is None else nodes[p].depth + 1
        nodes.append(Node(id=i, type=t, depth=depth, parent=p, children=[], content=c, page_start=1, page_end=1))
        if p is not None:
            nodes[p].children.append(i)
    tree = DocumentTree(doc_id="t7", title="doc", nodes=nodes)
    tree.validate()
    return tree


def test_terms_match_hand_computation():
    h = path_entropy_terms(PARENTS7)
    np.testing.assert_allclose(h, [H_ROOT, H_TITLE, H_TITLE, 0, 0, 0, 0], rtol=0, atol=1e-15)
    ts = TreeStructure.from_parents(PARENTS7)
    assert ts.degree.tolist() == [2, 3, 3, 1, 1, 1, 1]
    assert ts.volume.tolist() == [12, 5, 5, 1, 1, 1, 1]
    assert ts.depth.tolist() == [0, 1, 1, 2, 2, 2, 2]


def test_path_entropy_hand_values_and_symmetry():
    ids = np.array([3, 4, 5, 6])
    H = pairwise_path_entropy(tree7(), ids)
    # same section: path 3-1-4 -> h3 + h1 + h4 = H_TITLE
    same = H_TITLE
    # across sections: path 3-1-0-2-5 -> h1 + h0 + h2 = 2 H_TITLE + H_ROOT
    cross = 2 * H_TITLE + H_ROOT
    expected = np.array(
        [
            [0, same, cross, cross],
            [same, 0, cross, cross],
            [cross, cross, 0, same],
            [cross, cross, same, 0],
        ]
    )
    np.testing.assert_allclose(H, expected, atol=1e-15)
    # the path of a title and a leaf below the other title: 1-0-2-5
    H2 = pairwise_path_entropy(PARENTS7, [1, 5, 0])
    assert H2[0, 1] == pytest.approx(H_TITLE + H_ROOT + H_TITLE, abs=1e-15)
    assert H2[0, 2] == pytest.approx(H_TITLE + H_ROOT, abs=1e-15)  # path 1-0
    assert H2[2, 2] == pytest.approx(H_ROOT, abs=1e-15)  # single-node path


def test_sec_matrix_hand_values_both_signs():
    ids = np.array([3, 4, 5, 6])
    s = 1 / math.sqrt(2)
    emb = np.array([[1, 0], [1, 0], [0, 1], [s, s]], dtype=np.float32)
    cos = np.array([[1, 1, 0, s], [1, 1, 0, s], [0, 0, 1, s], [s, s, s, 1]])
    same, cross = H_TITLE, 2 * H_TITLE + H_ROOT
    H = np.array([[H_TITLE * 0, same, cross, cross], [same, 0, cross, cross], [cross, cross, 0, same], [cross, cross, same, 0]])
    norm = math.log2(7)
    S = sec_matrix(tree7(), emb, ids, alpha=0.6)
    np.testing.assert_allclose(S, 0.6 * cos - 0.4 * H / norm, atol=1e-6)
    # e.g. SEC(3, 4) = 0.6 * 1 - 0.4 * 0.18423709 / 2.80735492 = 0.57374943
    assert S[0, 1] == pytest.approx(0.6 - 0.4 * 0.18423709 / 2.80735492, abs=1e-6)
    assert np.array_equal(S, S.T)
    P = sec_matrix(tree7(), emb, ids, alpha=0.6, sign="prose")
    np.testing.assert_allclose(P, 0.6 * cos + 0.4 * H / norm, atol=1e-6)
    # printed favours the near pair (3,4); prose rewards distance: (5,6) cos 0.707 same
    # section vs (4,6) cos 0.707 across sections -> prose ranks (4,6) above (5,6)
    assert S[2, 3] > S[1, 3]
    assert P[1, 3] > P[2, 3]


def test_top_k_excludes_diagonal_and_identical_texts():
    ids = np.array([3, 4, 5, 6])
    s = 1 / math.sqrt(2)
    emb = np.array([[1, 0], [1, 0], [0, 1], [s, s]], dtype=np.float32)
    S = sec_matrix(PARENTS7, emb, ids)
    pairs, scores = top_k_anchor_pairs(S, 3)
    assert pairs.dtype == np.int64 and pairs.shape == (3, 2)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    assert pairs[0].tolist() == [0, 1]  # cos 1, same section
    assert np.all(np.diff(scores) <= 0)
    np.testing.assert_allclose(scores, S[pairs[:, 0], pairs[:, 1]])
    texts = ["same words", "Same  words", "x", "y"]
    pairs2, _ = top_k_anchor_pairs(S, 6, texts=texts)
    assert [0, 1] not in pairs2.tolist() and len(pairs2) == 5
    # asking for more than exist returns all m(m-1)/2 pairs
    assert top_k_anchor_pairs(S, 100)[0].shape == (6, 2)
    assert top_k_anchor_pairs(S, 0)[0].shape == (0, 2)


def _brute_path_entropy(parents: np.ndarray, i: int, j: int) -> tuple[float, int]:
    """Walk the path explicitly: ancestors of i and j, meet at the LCA."""
    n = parents.size
    deg = np.bincount(parents[parents >= 0], minlength=n) + (parents >= 0)

    def ancestors(v):
        out = [v]
        while parents[v] != -1:
            v = parents[v]
            out.append(v)
        return out

    vol = np.zeros(n)
    for v in range(n):
        for a in ancestors(v):
            vol[a] += deg[v]
    h = -(deg / (2 * (n - 1))) * np.log2(deg / vol)
    ai, aj = ancestors(i), ancestors(j)
    lca = next(a for a in ai if a in set(aj))
    path = set(ai[: ai.index(lca) + 1]) | set(aj[: aj.index(lca) + 1])
    return float(sum(h[v] for v in path)), lca


@pytest.mark.parametrize("seed", range(6))
def test_lca_path_entropy_equals_brute_force_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 45))
    perm = rng.permutation(n)  # ids not in pre-order
    parents = np.full(n, -1)
    for k in range(1, n):
        # mix of bushy and deep trees
        lo = max(0, k - 3) if seed % 2 else 0
        parents[perm[k]] = perm[rng.integers(lo, k)]
    ids = rng.permutation(n)[: max(2, n // 2)]
    H = pairwise_path_entropy(parents, ids)
    L = pairwise_lca(parents, ids)
    for a, i in enumerate(ids):
        for b, j in enumerate(ids):
            val, lca = _brute_path_entropy(parents, int(i), int(j))
            assert H[a, b] == pytest.approx(val, abs=1e-12)
            assert L[a, b] == lca
    assert np.allclose(H, H.T)


def test_streaming_top_k_equals_matrix_top_k_across_blocks(monkeypatch):
    rng = np.random.default_rng(3)
    n = 300
    parents = np.concatenate([[-1], [rng.integers(0, k) for k in range(1, n)]])
    ids = np.sort(rng.choice(n, 120, replace=False))
    emb = rng.normal(size=(120, 16)).astype(np.float32)
    emb[7] = emb[3]  # exact ties
    texts = [f"t{i % 100}" for i in range(120)]  # some identical texts
    monkeypatch.setattr(sec_mod, "_BLOCK_PAIRS", 500)  # many row blocks
    S_small = sec_matrix(parents, emb, ids, alpha=0.4, sign="prose")
    monkeypatch.setattr(sec_mod, "_BLOCK_PAIRS", 1 << 20)
    S = sec_matrix(parents, emb, ids, alpha=0.4, sign="prose")
    np.testing.assert_allclose(S_small, S, atol=1e-12)
    for k in (1, 25, 400):
        # SEC values computed with the same blocks; the top-k merge with tiny blocks
        p2, s2 = top_k_sec_pairs(parents, emb, ids, k, alpha=0.4, sign="prose", texts=texts)
        monkeypatch.setattr(sec_mod, "_BLOCK_PAIRS", 700)
        p1, s1 = top_k_anchor_pairs(S, k, texts=texts)
        monkeypatch.setattr(sec_mod, "_BLOCK_PAIRS", 1 << 20)
        assert np.array_equal(p1, p2)
        assert np.array_equal(s1, s2)
        # brute force over the upper triangle, ties broken by (i, j) ascending
        iu, ju = np.triu_indices(120, k=1)
        keep = np.array([texts[a] != texts[b] for a, b in zip(iu, ju)])
        iu, ju = iu[keep], ju[keep]
        vals = S[iu, ju]
        order = np.lexsort((ju, iu, -vals))[:k]
        assert np.array_equal(p1, np.stack([iu[order], ju[order]], axis=1))


@pytest.mark.parametrize(
    "parents, match",
    [
        ([-1, 0, -1], "exactly one root"),
        ([0, 0, 1], "exactly one root"),
        ([-1, 5], "out of range"),
        ([-1, 2, 1], "cycle"),
        ([], "non-empty"),
    ],
)
def test_invalid_trees_raise(parents, match):
    with pytest.raises(ValueError, match=match):
        path_entropy_terms(np.array(parents, dtype=np.int64))


def test_invalid_sec_arguments_raise():
    emb = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match="alpha"):
        sec_matrix(PARENTS7, emb, [3, 4, 5, 6], alpha=1.5)
    with pytest.raises(ValueError, match="sign"):
        sec_matrix(PARENTS7, emb, [3, 4, 5, 6], sign="both")
    with pytest.raises(ValueError, match="shape"):
        sec_matrix(PARENTS7, emb[:3], [3, 4, 5, 6])
    bad = emb.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        sec_matrix(PARENTS7, bad, [3, 4, 5, 6])
    with pytest.raises(ValueError, match="out of range"):
        sec_matrix(PARENTS7, emb, [3, 4, 5, 9])


def test_single_node_tree_and_zero_vectors():
    assert path_entropy_terms([-1]).tolist() == [0.0]
    S = sec_matrix([-1, 0, 0], np.zeros((2, 3), dtype=np.float32), [1, 2])
    assert np.all(np.isfinite(S))
