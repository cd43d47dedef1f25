"""Node embeddings (SPEC F2): all-MiniLM-L6-v2, 384-d, L2-normalised, on the backend
the settings choose (:mod:`.embedders`: torch float32 / bfloat16, the hashing test
embedder; :mod:`.onnx`: ONNX Runtime float32 / int8)."""
from .embedders import (
    DIM,
    Embedder,
    HashingEmbedder,
    SentenceTransformerEmbedder,
    cpu_capability,
    cpu_has_bf16,
    get_embedder,
    model_dir,
    resolve_backend,
)

__all__ = ["DIM", "Embedder", "HashingEmbedder", "SentenceTransformerEmbedder", "cpu_capability", "cpu_has_bf16", "get_embedder",
           "model_dir", "resolve_backend"]
