"""A read-only, vectorised view of a workspace's document trees and node embeddings.

Every retrieval strategy scores nodes of many documents at once. :class:`CorpusView`
holds the trees of all documents and one concatenated embedding matrix with per-row
document index, node id, node type code, depth and a "back-matter" flag, so a query
is scored against the whole collection with one matrix product.

Views are cached per workspace path and *signature*: the list of
``(doc_id, n_nodes, added_at, vector-file mtime)``. Adding or removing a document
changes the signature and the next :func:`load_corpus` rebuilds the view; saving a
run or an index does not.

Back matter: nodes whose section path contains a reference list, bibliography or
acknowledgements heading are flagged. They list *cited* work (what other documents
do), so the structure-aware strategies skip them by default; the flat baseline has no
sections and cannot.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..store.collection import META_DTYPE, sync_collection
from ..store.readahead import willneed_rows
from ..errors import RetrievalError, WorkspaceError
from ..model import DocumentTree, Evidence, Node, NodeType

__all__ = [
    "TYPE_CODES",
    "BACK_MATTER_RE",
    "DocView",
    "CorpusView",
    "load_corpus",
    "clear_corpus_cache",
    "sub_view",
    "ByteLRU",
    "DOC_CACHE_BYTES",
    "type_weight_vector",
    "node_evidence",
    "evidence_text",
    "node_text",
]

#: Integer code of each node type in :attr:`CorpusView.type_code`.
TYPE_CODES: dict[NodeType, int] = {t: i for i, t in enumerate(NodeType)}

#: Headings that open back matter (matched case-insensitively against each title on
#: a node's section path, after stripping section numbers).
BACK_MATTER_RE = re.compile(
    r"^\s*(?:[0-9ivxlc]+[.)]?\s*|[a-z][.)]\s+)?(references|bibliography|works cited|literature cited|"
    r"acknowle?d?ge?ments?|reference list)\b",
    re.IGNORECASE,
)

#: Rows per block in :meth:`CorpusView.cosines`.
COSINE_BLOCK = 65536

#: Trees kept in memory per view when they are loaded lazily (``DOCMASTER_TREE_CACHE``).
TREE_CACHE = int(os.environ.get("DOCMASTER_TREE_CACHE", "1024"))

#: Nodes kept by :meth:`CorpusView.prefetch` (about 1 KB each).
NODE_CACHE = 500_000

#: Bytes of per-document derived structures (section roles, tree parents, hyper-edges)
#: kept across filter runs by a view and the candidate views made from it
#: (``DOCMASTER_DOC_CACHE_MB``, default 512).
DOC_CACHE_BYTES = int(float(os.environ.get("DOCMASTER_DOC_CACHE_MB", "512")) * 2**20)

#: Characters of a node's content put into one evidence passage.
MAX_EVIDENCE_CHARS = 1500


class ByteLRU:
    """A thread-safe least-recently-used cache bounded in bytes.

    Args:
        max_bytes: Capacity; the least recently used entries are dropped past it (an
            entry larger than the capacity is not kept).

    Attributes:
        nbytes: Bytes held (as declared by :meth:`put`).
    """

    def __init__(self, max_bytes: int = DOC_CACHE_BYTES):
        from collections import OrderedDict

        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._d: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        """The value of ``key`` (marked recently used), else ``default``."""
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                return default
            self._d.move_to_end(key)
            return hit[0]

    def put(self, key, value, nbytes: int) -> None:
        """Keep ``value`` under ``key``, declared as ``nbytes`` bytes."""
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            if nbytes > self.max_bytes:
                return
            self._d[key] = (value, int(nbytes))
            self.nbytes += int(nbytes)
            while self.nbytes > self.max_bytes and self._d:
                _, (_, n) = self._d.popitem(last=False)
                self.nbytes -= n

    def __len__(self) -> int:
        return len(self._d)


class DocView:
    """One document inside a :class:`CorpusView`.

    Attributes:
        index: Position of the document in the view.
        doc_id: Workspace document id.
        file_name: Source file name.
        tree: The document tree; read from the workspace on first use when the view was
            built without trees (the collection store), and kept in the view's
            least-recently-used cache of trees (:data:`TREE_CACHE` documents).
        start: First row of this document in the concatenated arrays; node ``i`` is
            row ``start + i``.
        n_nodes: Number of nodes |V|.
    """

    __slots__ = ("index", "doc_id", "file_name", "_tree", "start", "n_nodes", "_loader")

    def __init__(self, index: int, doc_id: str, file_name: str, tree: DocumentTree | None, start: int, n_nodes: int,
                 loader: Callable[[str], DocumentTree] | None = None):
        if tree is None and loader is None:
            raise ValueError("a DocView needs its tree or a loader")
        self.index, self.doc_id, self.file_name = index, doc_id, file_name
        self._tree, self.start, self.n_nodes, self._loader = tree, start, n_nodes, loader

    @property
    def tree(self) -> DocumentTree:
        """The document tree (loaded lazily, see the class docstring)."""
        return self._tree if self._tree is not None else self._loader(self.doc_id)

    @property
    def rows(self) -> slice:
        """Rows of this document's nodes in the concatenated arrays."""
        return slice(self.start, self.start + self.n_nodes)

    def __repr__(self) -> str:
        return f"DocView({self.index}, {self.doc_id!r}, {self.file_name!r}, start={self.start}, n_nodes={self.n_nodes})"


_TERM_IDS_LOCK = threading.Lock()


@dataclass
class CorpusView:
    """Trees and node embeddings of a set of documents, concatenated.

    Attributes:
        docs: One :class:`DocView` per document, in workspace order.
        emb: (N, d) node embeddings, unit rows; N = total nodes. float16 (or float32,
            see :func:`~docmaster_core.store.collection.vectors_dtype`) memory-mapped from the
            workspace's collection store; float32 in memory for a workspace whose store
            cannot be written. Use :meth:`cosines` for products with all rows.
        doc_of: int32 (N,) document index of each row.
        node_of: int32 (N,) node id of each row within its document.
        type_code: int8 (N,) node type code (:data:`TYPE_CODES`).
        depth: int16 (N,) node depth (ROOT = 0).
        back_matter: bool (N,) row lies in a references/acknowledgements section.
        page: int32 (N,) 1-based first page of each node.
        offsets: int64 (D+1,) row offsets; document ``i`` has rows
            ``offsets[i]:offsets[i+1]``.
        signature: The cache key the view was built for.
        collection: The :class:`~docmaster_core.store.collection.Collection` the view reads
            (None for the in-memory fallback).
        node_loader: ``(doc_id, node_ids) -> {node_id: Node}`` reading single nodes
            without their tree (:meth:`~docmaster_core.store.workspace.Workspace.load_nodes`);
            None when the view holds every tree.
        skipped: ``{doc_id: warning}`` for stored documents left out of the view
            because their vector file is missing, unreadable or does not match the tree
            (``docmaster check --repair`` rebuilds it).
        doc_cache: :class:`ByteLRU` of per-document derived structures (keyed by doc id),
            shared with the candidate views made from this view (:func:`sub_view`).
        term_ids: ``{term: id}`` for the BM25 node index
            (:func:`~docmaster_core.retrieval.keyword.keyword_index`), grown as documents
            are indexed and shared with the candidate views, so that each document's terms
            are looked up once per process, not once per condition.
    """

    docs: list[DocView]
    emb: np.ndarray
    doc_of: np.ndarray
    node_of: np.ndarray
    type_code: np.ndarray
    depth: np.ndarray
    back_matter: np.ndarray
    page: np.ndarray
    offsets: np.ndarray
    signature: tuple = ()
    ws_path: str = ""
    skipped: dict[str, str] = field(default_factory=dict)
    collection: object = None
    node_loader: Callable[[str, list[int]], dict] | None = field(default=None, repr=False)
    doc_cache: ByteLRU = field(default_factory=ByteLRU, repr=False)
    term_ids: dict = field(default_factory=dict, repr=False)
    _nodes: dict = field(default_factory=dict, repr=False)
    _by_id: dict[str, int] = field(default_factory=dict, repr=False)
    _aux: dict = field(default_factory=dict, repr=False)
    _aux_lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {d.doc_id: d.index for d in self.docs}

    def __len__(self) -> int:
        return len(self.docs)

    def doc(self, doc_id: str) -> DocView:
        """The :class:`DocView` of ``doc_id``.

        Raises:
            RetrievalError: the document is not in the view.
        """
        try:
            return self.docs[self._by_id[doc_id]]
        except KeyError:
            if doc_id in self.skipped:
                raise RetrievalError(self.skipped[doc_id]) from None
            raise RetrievalError(f"document {doc_id} is not in the workspace") from None

    def has(self, doc_id: str) -> bool:
        """True when ``doc_id`` is in the view."""
        return doc_id in self._by_id

    def doc_mask(self, doc_ids: Sequence[str] | None) -> np.ndarray:
        """bool (D,) mask of the documents in ``doc_ids`` (all when None).

        Raises:
            RetrievalError: an id is not in the view.
        """
        if doc_ids is None:
            return np.ones(len(self.docs), dtype=bool)
        m = np.zeros(len(self.docs), dtype=bool)
        for d in doc_ids:
            m[self.doc(d).index] = True
        return m

    def doc_vectors(self, doc_ids: Sequence[str]) -> np.ndarray:
        """float32 (n, d): the mean of each document's node embeddings, L2-normalised (a
        zero row for a document without nodes), in the order of ``doc_ids``: the document
        features of the review's relevance feedback. Computed once per view for every
        document (:meth:`aux`), so the app's reruns only index it.

        Raises:
            RetrievalError: an id is not in the view.
        """
        def build() -> np.ndarray:
            out = np.zeros((len(self.docs), int(self.emb.shape[1])), dtype=np.float32)
            for dv in self.docs:
                if dv.n_nodes:
                    v = np.asarray(self.emb[dv.start:dv.start + dv.n_nodes], dtype=np.float32).mean(0)
                    out[dv.index] = v / (float(np.linalg.norm(v)) or 1.0)
            return out

        all_docs = self.aux("doc_vectors", build)
        return all_docs[[self.doc(d).index for d in doc_ids]]

    def evidence_vectors(self, doc_ids: Sequence[str], evidence: Mapping[str, Sequence[int]]) -> np.ndarray:
        """float32 (n, d): per document of ``doc_ids``, the mean of the embeddings of its
        evidence nodes for one condition, L2-normalised; a document without evidence nodes
        gets its :meth:`doc_vectors` row. The document features of the review's relevance
        feedback (:class:`~docmaster_core.filtering.review.Feedback`): they describe a
        document by what it says about the condition, not by its whole text. On 5,000
        copies of the corpus the documents asked at recall 0.9 fell 23.5 -> 22.4 % (P) and
        26.5 -> 25.4 % (Q, 10 seeds) against whole-document means (docs/results/review.md).

        Args:
            doc_ids: The documents, in the order of the rows.
            evidence: ``{doc_id: [node ids]}`` (e.g.
                :func:`~docmaster_core.filtering.results.run_evidence_nodes`); ids out of a
                document's range are ignored.

        Raises:
            RetrievalError: an id is not in the view.
        """
        out = np.array(self.doc_vectors(doc_ids), dtype=np.float32, copy=True)
        for row, d in enumerate(doc_ids):
            dv = self.docs[self.doc(d).index]
            ids = [int(i) for i in evidence.get(d, ()) if 0 <= int(i) < dv.n_nodes]
            if ids:
                v = np.asarray(self.emb[[dv.start + i for i in sorted(set(ids))]], dtype=np.float32).mean(0)
                norm = float(np.linalg.norm(v))
                if norm > 0:
                    out[row] = v / norm
        return out

    def node(self, doc_index: int, node_id: int) -> Node:
        """Node ``node_id`` of document ``doc_index``: from the node cache filled by
        :meth:`prefetch`, else from the document's tree.

        Raises:
            IndexError: no such node.
        """
        n = self._nodes.get((doc_index, node_id))
        if n is not None:
            return n
        return self.docs[doc_index].tree.nodes[node_id]

    def prefetch(self, pairs) -> None:
        """Read the nodes ``(doc_index, node_id)`` that :meth:`node` will be asked for,
        one query per document, without building trees (evidence of thousands of
        documents). A no-op for a view that holds its trees. The cache keeps at most
        :data:`NODE_CACHE` nodes (emptied when full).
        """
        if self.node_loader is None:
            return
        want: dict[int, set[int]] = {}
        for di, nid in pairs:
            if (di, nid) not in self._nodes:
                want.setdefault(int(di), set()).add(int(nid))
        if not want:
            return
        got = {}
        for di, ids in want.items():
            for nid, n in self.node_loader(self.docs[di].doc_id, sorted(ids)).items():
                got[(di, nid)] = n
        with self._aux_lock:
            if len(self._nodes) + len(got) > NODE_CACHE:
                self._nodes = {}
            self._nodes.update(got)

    def cosines(self, q: np.ndarray) -> np.ndarray:
        """Inner product (cosine, for unit vectors) of every row with each query.

        Computed over the (memory-mapped) matrix in blocks of :data:`COSINE_BLOCK` rows,
        each converted to float32, so no float32 copy of the whole matrix is made.

        Args:
            q: float32 (d,) or (m, d) query vectors.

        Returns:
            float32 (N,) for one query, (m, N) for m queries.
        """
        q2 = np.atleast_2d(np.asarray(q, dtype=np.float32))
        n = self.emb.shape[0]
        out = np.empty((q2.shape[0], n), dtype=np.float32)
        to32 = _float32_block()
        for a in range(0, n, COSINE_BLOCK):
            b = min(a + COSINE_BLOCK, n)
            np.matmul(q2, to32(self.emb[a:b]).T, out=out[:, a:b])
        return out[0] if np.ndim(q) == 1 else out

    def ids_of_terms(self, terms: Sequence[str]) -> np.ndarray:
        """int64 (len(terms),) ids of ``terms`` in :attr:`term_ids`, new terms added
        (under a lock: the app filters from several threads on one cached view)."""
        ids = self.term_ids
        with _TERM_IDS_LOCK:
            return np.fromiter((ids.setdefault(t, len(ids)) for t in terms), dtype=np.int64, count=len(terms))

    def aux(self, key, build):
        """A derived structure cached on the view (e.g. section centroids); thread-safe, and a
        ``build`` may itself call :meth:`aux` (re-entrant lock)."""
        with self._aux_lock:
            if key not in self._aux:
                self._aux[key] = build()
            return self._aux[key]


@functools.lru_cache(maxsize=1)
def _float32_block() -> Callable[[np.ndarray], np.ndarray]:
    """``block -> float32 copy`` for a float16 block: torch's vectorised conversion when
    torch is installed (exact, about twice as fast as numpy's here), else numpy's."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch comes with sentence-transformers
        return lambda x: np.asarray(x, dtype=np.float32)

    def conv(x: np.ndarray) -> np.ndarray:
        if x.dtype != np.float16:
            return np.asarray(x, dtype=np.float32)
        with warnings.catch_warnings():  # a read-only memory map: torch only reads it
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(np.ascontiguousarray(x)).to(torch.float32).numpy()

    return conv


def type_weight_vector(settings) -> np.ndarray:
    """Type weight w_type per type code, float32 (6,), from :class:`RetrievalSettings`.

    ROOT gets 0 (the document title is not evidence). Source: DocMaster Sec. 2.4,
    type weights title 1.5, text 1.0, table 0.8 (image and equation configurable).
    """
    w = np.zeros(len(TYPE_CODES), dtype=np.float32)
    w[TYPE_CODES[NodeType.TITLE]] = settings.w_title
    w[TYPE_CODES[NodeType.TEXT]] = settings.w_text
    w[TYPE_CODES[NodeType.TABLE]] = settings.w_table
    w[TYPE_CODES[NodeType.IMAGE]] = settings.w_image
    w[TYPE_CODES[NodeType.EQUATION]] = settings.w_equation
    return w


def _is_back_matter(section_path: list[str]) -> bool:
    return any(BACK_MATTER_RE.match(t or "") for t in section_path)


def evidence_text(tree: DocumentTree, node_id: int, max_chars: int = MAX_EVIDENCE_CHARS) -> str:
    """The passage text of a node given to the decider/answerer.

    Content nodes give their content (a table its markdown, an image its caption);
    a TITLE node gives its heading followed by its section summary when there is one.
    Cut to ``max_chars`` characters at a word boundary.
    """
    return node_text(tree.nodes[node_id], tree.title, max_chars)


def node_text(n: Node, title: str, max_chars: int = MAX_EVIDENCE_CHARS) -> str:
    """:func:`evidence_text` of one node (``title``: its document's title, the text of ROOT)."""
    if n.type == NodeType.ROOT:
        text = title
    elif n.type == NodeType.TITLE:
        text = n.content + (("\n" + n.summary) if n.summary else "")
    else:
        text = n.content or ""
        cap = n.extra.get("caption") if isinstance(n.extra, dict) else None
        if cap and cap not in text:
            text = f"{cap}\n{text}"
    text = text.strip()
    if len(text) > max_chars:
        cut = text[:max_chars]
        sp = cut.rfind(" ")
        text = (cut[:sp] if sp > max_chars // 2 else cut) + " ..."
    return text


def evidence_chars(view: CorpusView, doc_index: int) -> np.ndarray:
    """Characters of :func:`node_text` of every node of one document (what the budgeted
    combined evidence counts against its budget), without reading the nodes again.

    Kept in the view's byte-bounded :attr:`CorpusView.doc_cache` and on disk
    (``collection/docinfo/chars``, tagged with the node count); computed from the tree
    the first time (issue 37: the budgeted evidence read every pooled passage of every
    candidate from SQLite only to know its length).

    Returns:
        int32 (n_nodes,) character counts, in node id order (ROOT: its document title).
    """
    from ..store.docinfo import load_arrays, save_arrays

    dv = view.docs[doc_index]
    key = ("chars", dv.doc_id, dv.n_nodes)
    got = view.doc_cache.get(key)
    if got is not None:
        return got
    z = load_arrays(view.ws_path, "chars", dv.doc_id, str(dv.n_nodes))
    got = z["chars"] if z is not None else None
    if got is None or got.shape != (dv.n_nodes,):
        tree = dv.tree
        got = np.fromiter((len(node_text(n, tree.title if n.id == 0 else "")) for n in tree.nodes), dtype=np.int32,
                          count=dv.n_nodes)
        save_arrays(view.ws_path, "chars", dv.doc_id, str(dv.n_nodes), chars=got)
    view.doc_cache.put(key, got, got.nbytes + 100)
    return got


def node_evidence(view: CorpusView, doc_index: int, node_id: int, strategy: str, score: float,
                  evidence_id: str = "") -> Evidence:
    """An :class:`Evidence` for node ``node_id`` of document ``doc_index``.

    ``page`` is the node's first page (1-based) and ``bbox`` its first box in PDF
    points on that page (``None`` when the node has no box).
    """
    dv = view.docs[doc_index]
    n = view.node(doc_index, node_id)
    bbox = None
    page = n.page_start
    if n.bboxes:
        b = n.bboxes[0]
        page = int(b[0])
        bbox = (float(b[1]), float(b[2]), float(b[3]), float(b[4]))
    return Evidence(
        evidence_id=evidence_id,
        doc_id=dv.doc_id,
        node_id=int(node_id),
        strategy=strategy,
        score=float(score),
        text=node_text(n, dv.tree.title if n.type == NodeType.ROOT else ""),
        page=int(page),
        bbox=bbox,
        section_path=list(n.section_path),
        node_type=n.type.value,
        page_chars=_page_chars(n),
    )


def _page_chars(n) -> list[list[int]] | None:
    """``[[char_offset, page], ...]`` of a node spanning pages (``None`` otherwise)."""
    pc = n.extra.get("page_chars") if isinstance(n.extra, dict) else None
    return [[int(o), int(p)] for o, p in pc] if pc else None


# ---------------------------------------------------------------------------- cache
_CACHE: dict[str, CorpusView] = {}
_CACHE_LOCK = threading.Lock()


def _signature(ws) -> tuple:
    sig = []
    vdir = str(ws.vectors_dir)
    versions = getattr(ws, "document_versions", None)
    rows = versions() if versions else [(d.doc_id, int(d.n_nodes), float(d.added_at)) for d in ws.documents()]
    for doc_id, n_nodes, added_at in rows:
        try:
            mt = os.stat(f"{vdir}/{doc_id}.npy").st_mtime_ns
        except OSError:
            mt = -1
        sig.append((doc_id, n_nodes, added_at, mt))
    return tuple(sig)


def node_meta(ws, doc_id: str, n_nodes: int) -> np.ndarray:
    """The collection store's metadata rows of one document (from its stored nodes, no tree).

    Returns:
        :data:`~docmaster_core.store.collection.META_DTYPE` (n_nodes,): type code
        (:data:`TYPE_CODES`), back-matter flag, depth, first page (1-based).
    """
    rows = ws.node_columns(doc_id, ("type", "depth", "parent", "page_start", "section_path_json"))[:n_nodes]
    out = np.zeros(n_nodes, dtype=META_DTYPE)
    codes = {t.value: c for t, c in TYPE_CODES.items()}
    title = NodeType.TITLE.value
    back = [False] * len(rows)
    for i, (typ, _, parent, _, sp) in enumerate(rows):
        # section_path of a TITLE includes its own heading; content inherits its section's flag
        back[i] = (typ == title and _is_back_matter(json.loads(sp))) or (parent is not None and back[parent])
    if rows:
        out["type"] = [codes[r[0]] for r in rows]
        out["depth"] = [r[1] for r in rows]
        out["page"] = [r[3] for r in rows]
        out["back"] = back
    return out


def _build(ws, signature: tuple) -> CorpusView:
    """The view over the workspace's collection store (memory-mapped vectors, trees on
    demand); over the per-document files in memory when the store cannot be written."""
    try:
        coll = sync_collection(ws, node_meta)
    except OSError as e:
        logging.getLogger(__name__).warning("collection store of %s not usable (%s); reading vector files", ws.path, e)
        return _build_in_memory(ws, signature)
    names = {d.doc_id: d.file_name for d in ws.documents()}

    @functools.lru_cache(maxsize=max(TREE_CACHE, 1))
    def load(doc_id: str) -> DocumentTree:
        return ws.load_tree(doc_id)

    starts = coll.starts
    n = np.diff(starts)
    docs = [DocView(i, d, names.get(d, d), None, int(starts[i]), int(n[i]), load) for i, d in enumerate(coll.doc_ids)]
    doc_of = np.repeat(np.arange(len(docs), dtype=np.int32), n)
    node_of = (np.arange(coll.rows, dtype=np.int64) - np.repeat(starts[:-1], n)).astype(np.int32)
    meta = np.array(coll.meta)  # 8 bytes a row, in memory
    return CorpusView(node_loader=ws.load_nodes,
        docs=docs, emb=coll.emb, doc_of=doc_of, node_of=node_of, type_code=meta["type"].copy(),
        depth=meta["depth"].copy(), back_matter=meta["back"].copy(), page=meta["page"].astype(np.int32),
        offsets=starts.astype(np.int64), signature=signature, ws_path=str(ws.path), skipped=dict(coll.skipped),
        collection=coll,
    )


def _build_in_memory(ws, signature: tuple) -> CorpusView:
    """The view with every tree and a float32 matrix in memory (the layout before the
    collection store; used when the store cannot be written)."""
    recs = {d.doc_id: d for d in ws.documents()}
    docs: list[DocView] = []
    embs, doc_of, node_of, tcode, depth, back, page = [], [], [], [], [], [], []
    start = 0
    skipped: dict[str, str] = {}
    for doc_id, n_nodes, _, _ in signature:
        if doc_id not in recs:  # removed between the signature and now
            continue
        tree = ws.load_tree(doc_id)
        name = recs[doc_id].file_name
        fix = "run 'docmaster check --repair' to rebuild it"
        try:
            e = np.asarray(ws.load_embeddings(doc_id, mmap=False), dtype=np.float32)
        except WorkspaceError:
            skipped[doc_id] = f"{name}: skipped, its vector file vectors/{doc_id}.npy is missing or unreadable ({fix})"
            continue
        if e.ndim != 2 or e.shape[0] != len(tree.nodes):
            skipped[doc_id] = (f"{name}: skipped, its vector file has {e.shape[0] if e.ndim else 0} rows for "
                               f"{len(tree.nodes)} nodes ({fix})")
            continue
        if embs and e.shape[1] != embs[0].shape[1]:
            skipped[doc_id] = f"{name}: skipped, its vectors have dimension {e.shape[1]}, not {embs[0].shape[1]} ({fix})"
            continue
        i = len(docs)
        n = len(tree.nodes)
        docs.append(DocView(i, doc_id, recs[doc_id].file_name, tree, start, n))
        embs.append(e)
        doc_of.append(np.full(n, i, dtype=np.int32))
        node_of.append(np.arange(n, dtype=np.int32))
        tcode.append(np.fromiter((TYPE_CODES[nd.type] for nd in tree.nodes), dtype=np.int8, count=n))
        depth.append(np.fromiter((nd.depth for nd in tree.nodes), dtype=np.int16, count=n))
        page.append(np.fromiter((nd.page_start for nd in tree.nodes), dtype=np.int32, count=n))
        bm = np.zeros(n, dtype=bool)
        # section_path of a TITLE includes its own heading; of content nodes, the enclosing ones
        flagged_titles = {nd.id for nd in tree.nodes if nd.type == NodeType.TITLE and _is_back_matter(nd.section_path)}
        if flagged_titles:
            for nd in tree.nodes:
                if nd.id in flagged_titles or (nd.parent is not None and bm[nd.parent]):
                    bm[nd.id] = True
        back.append(bm)
        start += n
    dim = embs[0].shape[1] if embs else 384
    cat = (lambda xs, dt: np.concatenate(xs) if xs else np.zeros(0, dtype=dt))
    view = CorpusView(
        docs=docs,
        emb=np.ascontiguousarray(np.concatenate(embs) if embs else np.zeros((0, dim), np.float32)),
        doc_of=cat(doc_of, np.int32),
        node_of=cat(node_of, np.int32),
        type_code=cat(tcode, np.int8),
        depth=cat(depth, np.int16),
        back_matter=cat(back, bool),
        page=cat(page, np.int32),
        offsets=np.array([d.start for d in docs] + [start], dtype=np.int64),
        signature=signature,
        ws_path=str(ws.path),
        skipped=skipped,
    )
    return view


def load_corpus(ws) -> CorpusView:
    """The (cached) :class:`CorpusView` of a workspace.

    Args:
        ws: A :class:`~docmaster_core.store.workspace.Workspace`.

    A document whose vector file is missing, unreadable or does not match its tree is
    left out of the view and named in :attr:`CorpusView.skipped` (the rest of the
    workspace stays searchable).
    """
    sig = _signature(ws)
    key = str(ws.path)
    with _CACHE_LOCK:
        v = _CACHE.get(key)
        if v is not None and v.signature == sig:
            return v
    v = _build(ws, sig)
    with _CACHE_LOCK:
        _CACHE[key] = v
    return v


def sub_view(view: CorpusView, doc_indices) -> CorpusView:
    """A view over some documents of ``view`` (the candidates of a filter at scale).

    The documents keep their order; their rows' vectors are copied out of the
    (memory-mapped) matrix, only theirs (their ranges advised ``MADV_WILLNEED`` first:
    :func:`~docmaster_core.store.readahead.willneed_rows`), and their trees are read through the parent's
    loader (and its tree cache). Derived structures (:meth:`CorpusView.aux`: section
    roles, term counts, hyper-edges) are then built for these documents only.

    Args:
        view: The parent view.
        doc_indices: Indices of the documents in ``view`` (any order, no duplicates).

    Returns:
        A :class:`CorpusView` with ``len(doc_indices)`` documents (``collection`` None).
    """
    idx = np.unique(np.asarray(list(doc_indices), dtype=np.int64))
    starts = view.offsets[idx]
    n = (view.offsets[idx + 1] - starts).astype(np.int64)
    offsets = np.r_[0, np.cumsum(n)].astype(np.int64)
    rows = (np.repeat(starts - offsets[:-1], n) + np.arange(int(offsets[-1]))).astype(np.int64)
    docs = []
    for j, i in enumerate(idx.tolist()):
        dv = view.docs[i]
        docs.append(DocView(j, dv.doc_id, dv.file_name, dv._tree, int(offsets[j]), int(n[j]), dv._loader))
    if rows.size:
        willneed_rows(view.emb, starts, n)  # the documents' row ranges read at once, nothing around them
        emb = np.ascontiguousarray(view.emb[rows])
    else:
        emb = np.zeros((0, view.emb.shape[1]), view.emb.dtype)
    return CorpusView(
        docs=docs, emb=emb, doc_of=np.repeat(np.arange(len(docs), dtype=np.int32), n), node_of=view.node_of[rows],
        type_code=view.type_code[rows], depth=view.depth[rows], back_matter=view.back_matter[rows],
        page=view.page[rows], offsets=offsets, signature=("sub", len(view.docs), tuple(d.doc_id for d in docs)),
        ws_path=view.ws_path, node_loader=view.node_loader, doc_cache=view.doc_cache, term_ids=view.term_ids,
    )


def clear_corpus_cache() -> None:
    """Drop every cached view (tests, or after external edits of a workspace)."""
    with _CACHE_LOCK:
        _CACHE.clear()
