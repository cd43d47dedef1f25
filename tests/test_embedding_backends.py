"""Embedder backends (issue 18): ONNX Runtime fp32 / int8 and torch bf16 against torch fp32 on real text."""
from __future__ import annotations

import os

import numpy as np
import pytest

from docmaster_core.config import EmbeddingSettings
from docmaster_core.embedding.embedders import get_embedder, model_dir, resolve_backend
from docmaster_core.errors import EmbeddingError
from docmaster_core.embedding.onnx import OnnxEmbedder, export_onnx

# Sentences in the register of the corpus: methods, results, tables, equations, plus
# the edge cases an ingest meets (empty, very long, non-ASCII).
SAMPLE = [
    "We propose a retrieval-augmented generation method and evaluate it on open-domain question answering.",
    "Table 2: Exact match on Natural Questions and TriviaQA for the 7B and 13B models.",
    "The loss is L = -sum_i log p(y_i | x, z_i), where z_i is the retrieved passage.",
    "Figure 3 shows that recall@5 grows with the number of retrieved documents.",
    "Acknowledgements. We thank the anonymous reviewers for their comments.",
    "Net revenue increased 12% year over year, driven by the cloud segment.",
    "Les résultats montrent une amélioration de 3,2 points sur le jeu de test.",
    "",
    "attention " * 600,
    "3.1 Experimental setup",
]


@pytest.fixture(scope="module")
def torch_vectors():
    return get_embedder(EmbeddingSettings(backend="torch")).encode(SAMPLE)


@pytest.mark.parametrize("backend, floor", [("onnx", 0.9999), ("onnx-int8", 0.99), ("torch-bf16", 0.999)])
def test_backend_vectors_match_torch(backend, floor, torch_vectors):
    emb = get_embedder(EmbeddingSettings(backend=backend))
    assert emb.backend == backend
    v = emb.encode(SAMPLE)
    assert v.shape == (len(SAMPLE), 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    cos = (v * torch_vectors).sum(1)
    assert cos.mean() >= floor, cos
    # the same model: workspaces embedded by one backend are searched by another
    assert emb.name == get_embedder(EmbeddingSettings(backend="torch")).name


def test_onnx_batches_keep_input_order(torch_vectors):
    emb = get_embedder(EmbeddingSettings(backend="onnx"))
    rev = emb.encode(SAMPLE[::-1], batch_size=3)  # uneven batches, sorted by length inside
    np.testing.assert_allclose(rev[::-1], emb.encode(SAMPLE), atol=1e-5)
    assert emb.encode([]).shape == (0, 384)


def test_auto_backend_on_a_cpu_machine():
    if resolve_backend(EmbeddingSettings(backend="torch")) != "torch":
        pytest.fail("an explicit backend must be kept")
    import torch

    from docmaster_core.embedding.embedders import cpu_has_bf16

    want = "torch" if torch.cuda.is_available() else ("torch-bf16" if cpu_has_bf16() else "torch")
    assert resolve_backend(EmbeddingSettings()) == want
    assert get_embedder().backend == want
    assert resolve_backend(EmbeddingSettings(quantize=True)) == "torch"  # the torch int8 path it configures


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """A fresh cache with both graphs exported (once per module)."""
    d = tmp_path_factory.mktemp("onnx-cache")
    src = model_dir(EmbeddingSettings())
    export_onnx(src, "int8", d)  # exports fp32 first
    return d


def test_export_is_cached_and_atomic(export_dir):
    tmp_path = export_dir
    src = model_dir(EmbeddingSettings())
    fp32 = export_onnx(src, "fp32", tmp_path)
    int8 = export_onnx(src, "int8", tmp_path)
    assert fp32.exists() and int8.exists() and int8.stat().st_size < fp32.stat().st_size / 3
    mtime = int8.stat().st_mtime_ns
    assert export_onnx(src, "int8", tmp_path) == int8 and int8.stat().st_mtime_ns == mtime  # reused
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # nothing half-written
    with pytest.raises(EmbeddingError, match="unknown ONNX variant"):
        export_onnx(src, "fp8", tmp_path)


def test_corrupt_cached_graph_is_a_clear_error(export_dir, tmp_path):
    import shutil

    src = model_dir(EmbeddingSettings())
    for f in export_dir.glob("*-fp32.onnx"):
        shutil.copy(f, tmp_path / f.name)
    target = export_onnx(src, "fp32", tmp_path)
    assert target.parent == tmp_path  # the copy is found, nothing exported
    target.write_bytes(b"not an onnx graph")
    emb = OnnxEmbedder(EmbeddingSettings(backend="onnx", onnx_cache=str(tmp_path)), src)
    with pytest.raises(EmbeddingError, match="delete it to export again"):
        emb.encode(["x"])
