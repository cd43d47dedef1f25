"""The flat-chunk baseline (SPEC F6): fixed-size overlapping chunks, plain cosine top-k.

This is the structure-agnostic retrieval that DocMaster is compared against. For each
document the node texts (titles and content, ROOT excluded) are joined in reading
order with newlines; the text is cut into windows of ``chunk_chars`` characters that
overlap by ``chunk_overlap`` characters (window ends moved back to the last space when
one is within the last 20 % of the window). Each chunk's page is the page of the node
that contributes most characters to it. Chunks are embedded with the same embedder
as the nodes and scored by plain cosine; no type weights, no depth, no sections.

Chunk embeddings cost time, so they are cached in the workspace as
``vectors/flat/<doc_id>-<chunk_chars>-<chunk_overlap>-<embedder>.npy`` (float32
(m, d); written atomically). The sub-folder keeps them out of the workspace's
node-vector integrity check.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model import DocumentTree, Evidence, NodeType
from .corpus import CorpusView

__all__ = ["Chunk", "chunk_tree", "FlatView", "flat_view", "flat_search", "chunk_evidence"]


@dataclass
class Chunk:
    """One flat chunk.

    Attributes:
        index: Chunk index within its document.
        text: The chunk text.
        start: Character offset in the document's joined text.
        page: 1-based page of the node contributing most characters.
        pages: All 1-based pages the chunk touches, ascending.
        node_ids: Ids of the nodes the chunk overlaps, in reading order.
    """

    index: int
    text: str
    start: int
    page: int
    pages: list[int]
    node_ids: list[int]


def chunk_tree(tree: DocumentTree, chunk_chars: int = 1000, chunk_overlap: int = 200) -> list[Chunk]:
    """Cut a document's node texts (reading order) into fixed-size overlapping chunks.

    Args:
        tree: The document tree.
        chunk_chars: Window size in characters (>= 100).
        chunk_overlap: Overlap in characters (< chunk_chars).

    Returns:
        Chunks in order; an empty list for a document without text.

    Raises:
        ValueError: ``chunk_overlap >= chunk_chars``.
    """
    if chunk_overlap >= chunk_chars:
        raise ValueError("chunk_overlap must be smaller than chunk_chars")
    nodes = sorted((n for n in tree.nodes if n.type != NodeType.ROOT), key=lambda n: (n.order, n.id))
    parts, starts, ids, pages = [], [], [], []
    pos = 0
    for n in nodes:
        t = re.sub(r"\s+", " ", n.content or "").strip()
        if not t:
            continue
        starts.append(pos)
        parts.append(t)
        ids.append(n.id)
        pages.append(n.page_start)
        pos += len(t) + 1
    if not parts:
        return []
    text = "\n".join(parts)
    starts_a = np.asarray(starts, dtype=np.int64)
    ends_a = starts_a + np.asarray([len(p) for p in parts], dtype=np.int64)
    out: list[Chunk] = []
    a = 0
    n = len(text)
    while a < n:
        b = min(n, a + chunk_chars)
        if b < n:
            sp = text.rfind(" ", a + int(0.8 * chunk_chars), b)
            if sp > a:
                b = sp
        seg = text[a:b].strip()
        if seg:
            ov = np.minimum(ends_a, b) - np.maximum(starts_a, a)
            hit = np.flatnonzero(ov > 0)
            if hit.size:
                best = hit[np.argmax(ov[hit])]
                pg = sorted({pages[i] for i in hit})
                out.append(Chunk(len(out), seg, a, int(pages[best]), pg, [ids[i] for i in hit]))
        if b >= n:
            break
        a = max(a + 1, b - chunk_overlap)
    return out


@dataclass
class FlatView:
    """All chunks of a corpus view, with stacked embeddings.

    Attributes:
        chunks: D lists of :class:`Chunk`.
        emb: float32 (M, d) unit chunk embeddings.
        doc_of: int32 (M,) document index of each chunk row.
        chunk_of: int32 (M,) chunk index within its document.
        index: FAISS ``IndexFlatIP`` over ``emb``.
    """

    chunks: list[list[Chunk]]
    emb: np.ndarray
    doc_of: np.ndarray
    chunk_of: np.ndarray
    index: object = None


_EMBED_LOCK = threading.Lock()


def _cache_path(ws_path: str, doc_id: str, settings, embedder) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", getattr(embedder, "name", "embedder"))
    return Path(ws_path) / "vectors" / "flat" / f"{doc_id}-{settings.chunk_chars}-{settings.chunk_overlap}-{name}.npy"


def _load_or_embed(path: Path, texts: list[str], embedder) -> np.ndarray:
    d = getattr(embedder, "dim", 384)
    if path.exists():
        try:
            arr = np.load(path, allow_pickle=False)
            if arr.shape == (len(texts), d):
                return np.asarray(arr, dtype=np.float32)
        except (OSError, ValueError):
            pass
    arr = embedder.encode(texts) if texts else np.zeros((0, d), np.float32)
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.npy")
        with open(tmp, "wb") as f:
            np.save(f, arr, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        pass  # read-only workspace: the cache is an optimisation only
    return arr


def flat_view(view: CorpusView, embedder, settings) -> FlatView:
    """The (cached) :class:`FlatView` of a corpus view; embeds chunks not yet on disk.

    Args:
        view: The corpus view.
        embedder: The embedder used for nodes (its ``name`` keys the disk cache).
        settings: RetrievalSettings (``chunk_chars``, ``chunk_overlap``).
    """
    key = ("flat", settings.chunk_chars, settings.chunk_overlap, getattr(embedder, "name", ""))

    def build() -> FlatView:
        import faiss

        chunks, embs, doc_of, chunk_of = [], [], [], []
        with _EMBED_LOCK:
            for dv in view.docs:
                ch = chunk_tree(dv.tree, settings.chunk_chars, settings.chunk_overlap)
                e = _load_or_embed(_cache_path(view.ws_path, dv.doc_id, settings, embedder), [c.text for c in ch], embedder)
                chunks.append(ch)
                embs.append(e)
                doc_of.append(np.full(len(ch), dv.index, dtype=np.int32))
                chunk_of.append(np.arange(len(ch), dtype=np.int32))
        d = view.emb.shape[1]
        emb = np.ascontiguousarray(np.vstack(embs) if embs else np.zeros((0, d), np.float32), dtype=np.float32)
        idx = faiss.IndexFlatIP(d)
        if emb.shape[0]:
            idx.add(emb)
        return FlatView(chunks, emb,
                        np.concatenate(doc_of) if doc_of else np.zeros(0, np.int32),
                        np.concatenate(chunk_of) if chunk_of else np.zeros(0, np.int32), idx)

    return view.aux(key, build)


def flat_cosines(fv: FlatView, q: np.ndarray) -> np.ndarray:
    """Cosine of every chunk with the query: float32 (M,) (FAISS exact inner product)."""
    m = fv.emb.shape[0]
    if m == 0:
        return np.zeros(0, dtype=np.float32)
    D, I = fv.index.search(np.ascontiguousarray(np.atleast_2d(q), dtype=np.float32), m)
    out = np.empty(m, dtype=np.float32)
    out[I[0]] = D[0]
    return out


def flat_search(fv: FlatView, q: np.ndarray, settings, *, top_k: int | None = None,
                doc_mask: np.ndarray | None = None, cos: np.ndarray | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Baseline: per-document top-k chunks by plain cosine.

    Returns:
        ``{doc_index: (chunk_indices int64, cosines float32)}`` best first.
    """
    k = top_k or settings.top_k
    if cos is None:
        cos = flat_cosines(fv, q)
    ok = np.ones(cos.shape[0], dtype=bool) if doc_mask is None else doc_mask[fv.doc_of]
    rows = np.flatnonzero(ok)
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if rows.size == 0:
        return out
    order = rows[np.lexsort((-cos[rows], fv.doc_of[rows]))]
    d = fv.doc_of[order]
    bounds = np.r_[0, np.flatnonzero(np.diff(d)) + 1, order.size]
    for a, b in zip(bounds[:-1], bounds[1:]):
        r = order[a:b][:k]
        out[int(d[a])] = (fv.chunk_of[r].astype(np.int64), cos[r].astype(np.float32))
    return out


def chunk_evidence(view: CorpusView, fv: FlatView, doc_index: int, chunk_index: int, score: float,
                   evidence_id: str = "") -> Evidence:
    """An :class:`Evidence` for a flat chunk (``node_id`` = -1, no section path, no box)."""
    ch = fv.chunks[doc_index][chunk_index]
    return Evidence(evidence_id=evidence_id, doc_id=view.docs[doc_index].doc_id, node_id=-1, strategy="flat",
                    score=float(score), text=ch.text, page=ch.page, bbox=None, section_path=[], node_type="CHUNK")
