"""The page-cache hints of memory-mapped gathers (docmaster_core.store.readahead): they read
nothing into the values and change no result."""
import numpy as np
import pytest

from docmaster_core.store import readahead
from docmaster_core.store.readahead import merge_ranges, willneed_rows


def test_merge_ranges_joins_overlapping_and_touching_ranges():
    s, e = merge_ranges(np.array([10, 0, 5, 30, 12]), np.array([12, 5, 8, 31, 20]))
    assert s.tolist() == [0, 10, 30] and e.tolist() == [8, 20, 31]
    s, e = merge_ranges(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert s.size == 0 and e.size == 0


def test_willneed_rows_on_a_memory_map(tmp_path):
    a = np.arange(4096 * 6, dtype=np.float32).reshape(-1, 64)
    p = tmp_path / "a.bin"
    a.tofile(p)
    m = np.memmap(p, dtype=np.float32, mode="r", shape=a.shape)
    expected = readahead._madvise() is not None
    assert willneed_rows(m, [0, 100, 380], [3, 50, 100]) is expected  # the last range is cut at the end
    assert willneed_rows(m, [5], [0]) is (True if expected else False)
    assert np.array_equal(m[100:150], a[100:150])
    assert willneed_rows(a, [0], [3]) is False  # not memory-mapped: left alone


def test_willneed_lists_changes_no_search_result():
    faiss = pytest.importorskip("faiss")
    from docmaster_core.store.collection_index import willneed_lists

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    quant = faiss.IndexFlatIP(16)
    index = faiss.IndexIVFScalarQuantizer(quant, 16, 16, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    index.train(x)
    index.add(x)
    index.nprobe = 4
    q = x[:3].copy()
    before = index.search(q, 10)
    assert 0 < willneed_lists(index, q) <= 12
    after = index.search(q, 10)
    assert np.array_equal(before[1], after[1]) and np.array_equal(before[0], after[0])
    assert willneed_lists(faiss.IndexFlatIP(16), q) == 0

