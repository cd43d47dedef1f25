"""Workspace store: atomic document writes, reload without parsing, integrity check, lock."""
from __future__ import annotations

import numpy as np
import pytest

from docmaster_core.errors import WorkspaceError, WorkspaceLockedError
from docmaster_core.model import DocumentTree, Node, NodeType
from docmaster_core.store.workspace import Workspace


def _tree(doc_id="abc123def4567890"):
    nodes = [
        Node(0, NodeType.ROOT, 0, None, [1], "", 1, 2),
        Node(1, NodeType.TITLE, 1, 0, [2, 3], "1 Introduction", 1, 2, [(1, 72, 90, 300, 104)], ["1 Introduction"], 1, 1),
        Node(2, NodeType.TEXT, 2, 1, [], "Retrieval helps generation.", 1, 1, [(1, 72, 110, 300, 150)], ["1 Introduction"], 2),
        Node(3, NodeType.TABLE, 2, 1, [], "| a | b |\n|---|---|\n| 1 | 2 |", 2, 2, [(2, 72, 72, 300, 120)], ["1 Introduction"], 3,
             extra={"rows": [["a", "b"], ["1", "2"]]}),
    ]
    t = DocumentTree(doc_id, "A paper", nodes, n_pages=2, source="paper.pdf")
    t.validate()
    return t


def test_add_reload_and_check(tmp_path):
    ws = Workspace(tmp_path / "ws")
    tree = _tree()
    emb = np.eye(4, 384, dtype=np.float32)
    ws.add_document(tree, emb, sha256="f" * 64, source_path="/x/paper.pdf", parser="pymupdf")
    ws.close()

    ws2 = Workspace(tmp_path / "ws", create=False)
    assert ws2.has_sha("f" * 64) == tree.doc_id
    back = ws2.load_tree("paper.pdf")
    back.validate()
    assert [n.type for n in back.nodes] == [n.type for n in tree.nodes]
    assert back.nodes[1].children == [2, 3]
    assert back.nodes[3].extra["rows"] == [["a", "b"], ["1", "2"]]
    assert back.nodes[2].bboxes == [(1, 72, 90 + 20, 300, 150)]
    assert np.array_equal(ws2.load_embeddings(tree.doc_id), emb)
    assert ws2.documents()[0].counts == {"ROOT": 1, "TITLE": 1, "TEXT": 1, "IMAGE": 0, "TABLE": 1, "EQUATION": 0}
    assert ws2.check() == []


def test_failed_transaction_leaves_nothing(tmp_path):
    ws = Workspace(tmp_path)
    tree = _tree()
    tree.nodes[2].extra = {"bad": object()}  # serialises via default=str, fine
    with pytest.raises(ValueError):
        ws.add_document(tree, np.zeros((3, 384), np.float32), sha256="a" * 64, source_path="p.pdf", parser="x")
    assert ws.documents() == []
    # an orphan vector file (crash between vector write and commit) is reported and repaired
    (ws.vectors_dir / "deadbeefdeadbeef.npy").write_bytes(b"junk")
    assert any("orphan" in p for p in ws.check())
    assert ws.repair() == ["deadbeefdeadbeef.npy"]
    assert ws.check() == []


def test_duplicate_sha_rejected_atomically(tmp_path):
    ws = Workspace(tmp_path)
    ws.add_document(_tree(), np.zeros((4, 384), np.float32), sha256="b" * 64, source_path="p.pdf", parser="x")
    with pytest.raises(Exception):
        ws.add_document(_tree("0000000000000001"), np.zeros((4, 384), np.float32), sha256="b" * 64,
                        source_path="q.pdf", parser="x")
    assert len(ws.documents()) == 1
    assert ws.check() == [f"orphan vector file 0000000000000001.npy"]


def test_write_lock_is_exclusive(tmp_path):
    from support.locks import other_writer

    b = Workspace(tmp_path)
    with other_writer(tmp_path):
        with pytest.raises(WorkspaceLockedError, match="another process"):
            b.acquire_write_lock()
    b.acquire_write_lock()
    b.release_write_lock()


def test_missing_workspace_and_unknown_document(tmp_path):
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "nope", create=False)
    ws = Workspace(tmp_path)
    with pytest.raises(WorkspaceError, match="no document"):
        ws.load_tree("missing.pdf")


def test_runs_and_index_roundtrip(tmp_path):
    ws = Workspace(tmp_path)
    params = {"alpha": 0.6, "k": 5}
    ws.save_index("d1", params, {"labels": [0, 1]})
    assert ws.load_index("d1", {"k": 5, "alpha": 0.6}) == {"labels": [0, 1]}
    assert ws.load_index("d1", {"k": 6, "alpha": 0.6}) is None
    versions = ws.index_versions()
    assert [(d, k) for d, k, _ in versions] == [("d1", Workspace.params_key(params))]
    ws.save_index("d1", {"alpha": 0.7, "k": 5}, {"labels": [1, 0]})
    assert len(ws.index_versions()) == 2
    rid = ws.save_run("filter", {"condition": "x"}, {"decisions": {}})
    assert ws.runs("filter")[0]["run_id"] == rid


def test_cache_signatures_follow_writes_of_this_and_other_connections(tmp_path):
    import threading

    ws = Workspace(tmp_path)
    assert ws.index_versions() == []
    ws.save_index("d1", {"k": 5}, {"labels": [0]})
    assert [d for d, _, _ in ws.index_versions()] == ["d1"]  # this connection's own write
    other = Workspace(tmp_path)  # another connection, as another process holds
    other.save_index("d2", {"k": 5}, {"labels": [1]})
    assert [d for d, _, _ in ws.index_versions()] == ["d1", "d2"]  # its commit is seen
    got = ws.index_versions()
    got.clear()  # callers get a copy of the remembered list
    assert len(ws.index_versions()) == 2
    seen = []
    t = threading.Thread(target=lambda: seen.append([d for d, _, _ in ws.index_versions()]))
    t.start(), t.join()  # another thread of this process
    assert seen == [["d1", "d2"]]
    other.save_index("d3", {"k": 5}, {"labels": [2]})
    assert len(ws.index_versions()) == 3 and ws.document_versions() == []


def test_per_document_arrays_round_trip_and_old_npz_files_are_rewritten(tmp_path):
    import numpy as np

    from docmaster_core.store.docinfo import docinfo_dir, forget, load_arrays, prune, save_arrays

    (tmp_path / "collection").mkdir()
    arrays = {"emb": np.arange(12, dtype=np.float32).reshape(3, 4), "off": np.array([0, 2, 3], np.int64),
              "empty": np.zeros((0, 4), np.float16), "flag": np.array(True)}
    assert save_arrays(tmp_path, "hyperedges", "d1", "k|1.5", **arrays)
    got = load_arrays(tmp_path, "hyperedges", "d1", "k|1.5")
    assert set(got) == set(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v)
    assert load_arrays(tmp_path, "hyperedges", "d1", "k|2.0") is None  # another tag: recompute
    # a file of the old format is read, then rewritten as safetensors
    old = docinfo_dir(tmp_path) / "roles" / "d2.npz"
    old.parent.mkdir(parents=True)
    np.savez(old, tag=np.array("7"), roles=np.array([1, 0, 2], np.int8))
    assert load_arrays(tmp_path, "roles", "d2", "7")["roles"].tolist() == [1, 0, 2]
    assert not old.exists() and (old.parent / "d2.safetensors").exists()
    assert load_arrays(tmp_path, "roles", "d2", "7")["roles"].tolist() == [1, 0, 2]
    # text arrays safetensors lacks stay .npz; a damaged file counts as missing
    assert save_arrays(tmp_path, "names", "d3", "1", words=np.array(["a", "b"]))
    assert load_arrays(tmp_path, "names", "d3", "1")["words"].tolist() == ["a", "b"]
    (old.parent / "d2.safetensors").write_bytes(b"not a safetensors file")
    assert load_arrays(tmp_path, "roles", "d2", "7") is None
    forget(tmp_path, "d1", ["hyperedges"])
    assert load_arrays(tmp_path, "hyperedges", "d1", "k|1.5") is None
    assert prune(tmp_path, keep=["d3"]) == 1 and load_arrays(tmp_path, "names", "d3", "1") is not None


def test_warming_reads_in_the_background_and_changes_nothing(tmp_path):
    from docmaster_core.store.docinfo import FILTER_KINDS, load_arrays, save_arrays, warm

    ws = Workspace(tmp_path / "ws")
    tree = _tree()
    ws.add_document(tree, np.eye(4, 384, dtype=np.float32), sha256="f" * 64, source_path="/x/paper.pdf",
                    parser="pymupdf")
    before = ws.load_nodes(tree.doc_id, [1, 3])
    t = ws.warm_nodes([tree.doc_id, "no-such-document", tree.doc_id])
    t.join(10)
    assert not t.is_alive() and ws.warm_nodes([]) is None
    after = ws.load_nodes(tree.doc_id, [1, 3])
    assert [(n.id, n.content, n.bboxes) for n in after.values()] == [(n.id, n.content, n.bboxes) for n in before.values()]
    (ws.path / "collection").mkdir(exist_ok=True)
    assert save_arrays(ws.path, "chars", tree.doc_id, "4", chars=np.array([0, 14, 27, 30], np.int32))
    t = warm(ws.path, FILTER_KINDS, [tree.doc_id, "no-such-document"])  # missing files are skipped
    if t is not None:
        t.join(10)
        assert not t.is_alive()
    assert load_arrays(ws.path, "chars", tree.doc_id, "4")["chars"].tolist() == [0, 14, 27, 30]
    assert warm("", FILTER_KINDS, [tree.doc_id]) is None
