"""The one place that turns settings into concrete parts, and the ingest pipeline.

``DocMaster`` wires a :class:`~docmaster_core.store.Workspace`, a parser, the
embedder and the LLM layer together. The CLI and the app both go through it.

Ingest of one file (SPEC F1, F2, F9): hash -> skip if already stored -> parse ->
document tree -> bottom-up summaries -> node embeddings -> one atomic store ->
per-document semantic index. A file that fails at any stage is reported with a
one-line reason and skipped; the batch goes on.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .config import Settings, get_settings
from .embedding import Embedder, get_embedder
from .errors import DocMasterError, ParseError, RetrievalError
from .model import DocumentTree, NodeType
from .store import Workspace, file_sha256, storable_text

__all__ = ["DocMaster", "IngestEvent", "IngestResult", "collect_inputs", "node_embedding_text"]

INPUT_SUFFIXES = (".pdf",)
MINERU_SUFFIX = "_content_list.json"


@dataclass
class IngestEvent:
    """A progress event: ``stage`` is one of queued, parsing, summarising, embedding,
    storing, indexing, done, skipped, failed. ``elapsed`` is seconds since the file started."""

    file: str
    index: int
    total: int
    stage: str
    elapsed: float = 0.0
    message: str = ""


@dataclass
class IngestResult:
    """Outcome for one input file."""

    file: str
    status: str  # "ingested", "skipped", "failed"
    doc_id: str | None = None
    reason: str = ""
    pages: int = 0
    nodes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "status": self.status,
            "doc_id": self.doc_id,
            "reason": self.reason,
            "pages": self.pages,
            "nodes": self.nodes,
            "counts": self.counts,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


def collect_inputs(paths: Iterable[str | os.PathLike]) -> tuple[list[Path], list[IngestResult]]:
    """Expand files and folders into the PDFs (and MinerU content lists) to ingest.

    Folders are searched recursively for ``*.pdf``; a ``*_content_list.json`` is taken
    only when given directly (beside a PDF it is picked up by the parser).
    Returns the inputs (sorted, de-duplicated) and failures for paths that do not exist
    or have an unsupported type.
    """
    out: list[Path] = []
    bad: list[IngestResult] = []
    seen = set()
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and q.suffix.lower() in INPUT_SUFFIXES)
        elif p.is_file():
            if p.suffix.lower() in INPUT_SUFFIXES or p.name.endswith(MINERU_SUFFIX):
                found = [p]
            else:
                bad.append(IngestResult(str(p), "failed", reason=f"{p.name}: unsupported file type (expected .pdf or *{MINERU_SUFFIX})"))
                found = []
        else:
            bad.append(IngestResult(str(p), "failed", reason=f"{p}: no such file or folder"))
            found = []
        for q in found:
            rq = q.resolve()
            if rq not in seen:
                seen.add(rq)
                out.append(q)
    return out, bad


def node_embedding_text(tree: DocumentTree, node_id: int) -> str:
    """The text embedded for a node: its content; a section path for empty content;
    the document title for ROOT."""
    n = tree.nodes[node_id]
    if n.type == NodeType.ROOT:
        return tree.title or tree.source or "document"
    text = (n.content or "").strip()
    if n.type in (NodeType.IMAGE, NodeType.TABLE) and n.extra.get("caption") and n.extra["caption"] not in text:
        text = (n.extra["caption"] + "\n" + text).strip()
    if not text:
        text = " / ".join(n.section_path) or n.type.value.lower()
    return text


class DocMaster:
    """Facade over one workspace: ingest, index, retrieval, filtering and QA.

    Args:
        workspace: Workspace directory (created if missing) or an open :class:`Workspace`.
        settings: Settings; defaults from the environment (``DOCMASTER_*``).
        embedder: Embedder to use; default the shared all-MiniLM-L6-v2 (loaded lazily).
        llm: LLM facade; default built from ``settings.llm`` with the workspace's cache.
    """

    def __init__(
        self,
        workspace: str | os.PathLike | Workspace,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        llm: Any | None = None,
    ):
        self.settings = settings or get_settings()
        self.ws = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self._embedder = embedder
        self._llm = llm

    # ------------------------------------------------------------------ parts
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings.embedding)
        return self._embedder

    @property
    def llm(self):
        if self._llm is None:
            from .llm import make_llm

            # only the offline backend uses the sentence embedder: do not load it for a chat model
            emb = self.embedder if self.settings.llm.backend == "offline" else None
            self._llm = make_llm(self.settings.llm, cache_dir=self.ws.path, embedder=emb)
        return self._llm

    def check_llm(self) -> None:
        """Fail fast when the configured LLM backend cannot work at all (e.g. the
        OpenAI backend without an API key), before any model load or retrieval.

        Raises:
            ConfigError: the backend is not usable (one-line reason).
        """
        check = getattr(self.llm, "check_ready", None)
        if callable(check):
            check()

    # ------------------------------------------------------------------ ingest
    def _parse(self, path: Path):
        from .parsing import parse_document

        t0 = time.perf_counter()
        parsed = parse_document(path, settings=self.settings.parsing, parser=self.settings.parsing.parser)
        return parsed, time.perf_counter() - t0

    def ingest(
        self,
        paths: Sequence[str | os.PathLike],
        *,
        on_progress: Callable[[IngestEvent], None] | None = None,
        build_index: bool = True,
        summaries: bool = True,
    ) -> list[IngestResult]:
        """Ingest files/folders into the workspace; returns one result per input.

        Holds the workspace write lock for the whole batch. Already-stored documents
        (same SHA-256) are skipped without parsing. Parsing of the next file overlaps
        the embedding of the current one (one background thread).

        A file whose content is already stored under another name is skipped with the
        reason ``same content as <stored file>, already in workspace``. A stored
        document whose vector file is missing gets it rebuilt from the stored tree.

        Raises:
            WorkspaceLockedError: another process is writing to the workspace.
            ConfigError: the LLM backend is unusable (e.g. no API key) and summaries or
                the index were asked for; raised before any file is touched.
        """
        inputs, results = collect_inputs(paths)
        if inputs and (summaries or build_index):
            self.check_llm()  # e.g. no API key: fail once, not once per file
        emit = on_progress or (lambda e: None)
        total = len(inputs)
        with self.ws.writing():
            # we hold the single-writer lock: temp/orphan vector files can only be
            # leftovers of an interrupted (killed) writer
            self.ws.repair()
            todo: list[tuple[int, Path, str]] = []
            in_batch: dict[str, Path] = {}  # sha -> first file of this batch with that content
            for i, p in enumerate(inputs):
                try:
                    sha = file_sha256(p)
                except OSError as e:
                    results.append(IngestResult(str(p), "failed", reason=storable_text(
                        f"{' '.join(p.name.split())}: cannot read file: {e.strerror or e}")))
                    emit(IngestEvent(str(p), i, total, "failed", 0.0, results[-1].reason))
                    continue
                doc_id = self.ws.has_sha(sha)
                if doc_id is not None:
                    rec = self.ws.document(doc_id)
                    why = "already in workspace"
                    if rec.file_name != p.name:
                        why = f"same content as {' '.join(rec.file_name.split())}, already in workspace"
                    if not self.ws.vectors_ok(doc_id):
                        try:
                            self.reembed_document(doc_id)
                            why += "; its missing vector file was rebuilt"
                        except DocMasterError as e:
                            why += storable_text(" ".join(f"; its vector file is missing and could not be rebuilt: {e}".split()))
                    if build_index and self.ws.load_index(doc_id, self.index_params()) is None:
                        # stored by a run that was interrupted (or failed) before its index step
                        emit(IngestEvent(str(p), i, total, "indexing", 0.0))
                        try:
                            self.index_document(doc_id)
                            why += "; its semantic index was completed"
                        except DocMasterError as e:
                            why += storable_text(" ".join(f"; index failed: {e}".split()))
                    results.append(IngestResult(str(p), "skipped", doc_id, why, rec.n_pages, rec.n_nodes, rec.counts))
                    emit(IngestEvent(str(p), i, total, "skipped", 0.0, why))
                    continue
                first = in_batch.get(sha)
                if first is not None:  # the same bytes twice in one batch: store once
                    why = f"same content as {' '.join(first.name.split())} in this batch"
                    results.append(IngestResult(str(p), "skipped", None, why))
                    emit(IngestEvent(str(p), i, total, "skipped", 0.0, why))
                    continue
                in_batch[sha] = p
                todo.append((i, p, sha))
            with cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="docmaster-parse") as pool:
                futures = {}
                if todo:
                    futures[0] = pool.submit(self._parse, todo[0][1])
                for j, (i, p, sha) in enumerate(todo):
                    t_start = time.perf_counter()
                    emit(IngestEvent(str(p), i, total, "parsing", 0.0))
                    if j + 1 < len(todo):
                        futures[j + 1] = pool.submit(self._parse, todo[j + 1][1])
                    try:
                        parsed, t_parse = futures.pop(j).result()
                        res = self._ingest_parsed(parsed, p, sha, i, total, t_start, t_parse, emit, build_index, summaries)
                    except DocMasterError as e:
                        res = self._fail(p, sha, str(e))
                    except Exception as e:  # noqa: BLE001 - one bad file must not stop the batch
                        res = self._fail(p, sha, f"{p.name}: unexpected {type(e).__name__}: {e}")
                    results.append(res)
                    emit(IngestEvent(str(p), i, total, res.status if res.status != "ingested" else "done",
                                     time.perf_counter() - t_start, res.reason))
        return results

    def _fail(self, p: Path, sha: str, reason: str) -> IngestResult:
        reason = " ".join(reason.split())
        name = " ".join(p.name.split())  # a file name may hold newlines/tabs: one line
        if name not in reason:
            reason = f"{name}: {reason}"
        reason = storable_text(reason)
        try:
            self.ws.record_failure(sha, p.name, reason)
        except DocMasterError:
            pass
        return IngestResult(str(p), "failed", reason=reason)

    def _ingest_parsed(self, parsed, p: Path, sha: str, i: int, total: int, t_start: float, t_parse: float,
                       emit, build_index: bool, summaries: bool) -> IngestResult:
        from .tree import build_tree

        timings = {"parse": t_parse}
        doc_id = sha[:16]
        t0 = time.perf_counter()
        tree = build_tree(parsed, doc_id, self.settings.parsing)
        tree.source = tree.source or (p.name if p.suffix.lower() == ".pdf" else Path(parsed.path).name)
        timings["tree"] = time.perf_counter() - t0
        if not any(n.type.is_content for n in tree.nodes):
            raise ParseError(f"{p.name}: no content found")

        emit(IngestEvent(str(p), i, total, "embedding", time.perf_counter() - t_start))
        t0 = time.perf_counter()
        texts = [node_embedding_text(tree, n.id) for n in tree.nodes]
        emb = self.embedder.encode(texts)
        timings["embed"] = time.perf_counter() - t0

        if summaries:
            emit(IngestEvent(str(p), i, total, "summarising", time.perf_counter() - t_start))
            t0 = time.perf_counter()
            from .llm.summaries import summarize_tree

            summarize_tree(tree, self.llm)
            timings["summarise"] = time.perf_counter() - t0

        emit(IngestEvent(str(p), i, total, "storing", time.perf_counter() - t_start))
        t0 = time.perf_counter()
        rec = self.ws.add_document(
            tree, emb, sha256=sha, source_path=str(p), parser=parsed.parser, page_sizes=parsed.page_sizes,
            embedding_model=self.embedder.name, timings=timings,
        )
        timings["store"] = time.perf_counter() - t0
        if build_index:
            emit(IngestEvent(str(p), i, total, "indexing", time.perf_counter() - t_start))
            t0 = time.perf_counter()
            try:
                self.index_document(tree.doc_id, tree=tree, embeddings=emb)
            except DocMasterError as e:
                rec_reason = f"stored, but the semantic index failed: {e}"
                return IngestResult(str(p), "ingested", rec.doc_id, rec_reason, rec.n_pages, rec.n_nodes, rec.counts, timings)
            timings["index"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        self.ws.update_timings(rec.doc_id, timings)
        return IngestResult(str(p), "ingested", rec.doc_id, "", rec.n_pages, rec.n_nodes, rec.counts, timings)

    # ------------------------------------------------------------------ repair
    def reembed_document(self, doc_id: str) -> int:
        """Rebuild a document's vector file from its stored tree (no parsing).

        Embeds :func:`node_embedding_text` of every node with this facade's embedder and
        writes ``vectors/<doc_id>.npy`` atomically. The caller should hold the write lock.

        Returns:
            The number of node vectors written.

        Raises:
            WorkspaceError: no such document.
            EmbeddingError: the embedder failed.
            ConfigError: the embedder is not the model the document was embedded with.
        """
        from .errors import ConfigError

        rec = self.ws.document(doc_id)
        name = getattr(self.embedder, "name", "")
        if rec.embedding_model and name and rec.embedding_model != name:
            raise ConfigError(
                f"{rec.file_name} was embedded with {rec.embedding_model}, the configured embedder is {name}; "
                "remove the workspace document and ingest the PDF again"
            )
        tree = self.ws.load_tree(rec.doc_id)
        emb = self.embedder.encode([node_embedding_text(tree, n.id) for n in tree.nodes])
        self.ws.write_embeddings(rec.doc_id, np.asarray(emb, dtype=np.float32))
        return len(tree.nodes)

    def repair_vectors(self) -> list[str]:
        """Re-embed every document whose vector file is missing, unreadable or of the
        wrong shape (see :meth:`reembed_document`); holds the write lock.

        Returns:
            One line per document: what was rebuilt, or why it could not be.

        Raises:
            WorkspaceLockedError: another process is writing to the workspace.
        """
        out = []
        with self.ws.writing():
            for d in self.ws.documents():
                if self.ws.vectors_ok(d.doc_id):
                    continue
                try:
                    n = self.reembed_document(d.doc_id)
                    out.append(f"rebuilt vectors/{d.doc_id}.npy of {d.file_name} ({n} node vectors re-embedded)")
                except DocMasterError as e:
                    out.append(f"could not rebuild the vectors of {d.file_name}: {e}")
        return out

    # ------------------------------------------------------------------ index
    def index_params(self, **overrides) -> dict[str, Any]:
        """The index parameters in force (settings.index with overrides), as a plain dict."""
        p = self.settings.index.model_dump()
        p.update({k: v for k, v in overrides.items() if v is not None})
        p["llm"] = self.llm.backend_name
        return p

    def index_document(self, doc_id: str, *, tree: DocumentTree | None = None, embeddings: np.ndarray | None = None,
                       force: bool = False, **overrides) -> dict[str, Any]:
        """Build (or reuse) the semantic index of one document; returns its stats dict."""
        from .config import IndexSettings
        from .index.builder import DocumentIndex, build_document_index

        params = self.index_params(**overrides)
        if not force:
            stored = self.ws.load_index(doc_id, params)
            if stored is not None:
                return DocumentIndex.from_json_dict(stored).stats
        tree = tree or self.ws.load_tree(doc_id)
        emb = np.asarray(embeddings if embeddings is not None else self.ws.load_embeddings(doc_id, mmap=False))
        isettings = IndexSettings(**{k: v for k, v in params.items() if k in IndexSettings.model_fields})
        idx = build_document_index(tree, emb, self.llm, self.embedder, isettings)
        self.ws.save_index(doc_id, params, idx.to_json_dict())
        return idx.stats

    def load_index(self, doc_id: str, **overrides):
        """The stored :class:`~docmaster_core.index.builder.DocumentIndex` for the parameters, or None."""
        from .index.builder import DocumentIndex

        d = self.ws.load_index(doc_id, self.index_params(**overrides))
        return None if d is None else DocumentIndex.from_json_dict(d)

    def index(self, *, force: bool = False, on_progress: Callable[[str, int, int], None] | None = None,
              **overrides) -> dict[str, dict[str, Any]]:
        """Build the semantic index for every document (reusing stored ones for the same
        parameters); returns ``{doc_id: stats}``."""
        out = {}
        docs = self.ws.documents()
        with self.ws.writing():
            for i, d in enumerate(docs):
                if on_progress:
                    on_progress(d.file_name, i, len(docs))
                out[d.doc_id] = self.index_document(d.doc_id, force=force, **overrides)
        return out

    COLLECTION_KEY = "__collection__"

    def index_collection(self, *, force: bool = False, n_clusters: int | None = None,
                         link_threshold: float = 0.5, **overrides) -> dict[str, Any]:
        """Build (or reuse) the optional collection-level index: PC-KMeans over all
        documents' TEXT nodes and hyper-edge links across documents. Returns its stats."""
        from .config import IndexSettings
        from .index.builder import CollectionIndex, DocumentIndex, build_collection_index

        params = self.index_params(**overrides)
        params["collection_K"] = n_clusters
        params["link_threshold"] = link_threshold
        docs = self.ws.documents()
        params["docs"] = sorted(d.doc_id for d in docs)
        if not force:
            stored = self.ws.load_index(self.COLLECTION_KEY, params)
            if stored is not None:
                return CollectionIndex.from_json_dict(stored).stats
        doc_params = {k: v for k, v in params.items() if k not in ("collection_K", "link_threshold", "docs")}
        trees, embs, idxs = [], {}, {}
        for d in docs:
            self.index_document(d.doc_id, **{k: v for k, v in overrides.items()})
            trees.append(self.ws.load_tree(d.doc_id))
            embs[d.doc_id] = np.asarray(self.ws.load_embeddings(d.doc_id, mmap=False))
            stored = self.ws.load_index(d.doc_id, doc_params)
            if stored is not None:
                idxs[d.doc_id] = DocumentIndex.from_json_dict(stored)
        isettings = IndexSettings(**{k: v for k, v in params.items() if k in IndexSettings.model_fields})
        coll = build_collection_index(trees, embs, self.llm, self.embedder, isettings, doc_indexes=idxs,
                                      n_clusters=n_clusters, link_threshold=link_threshold)
        self.ws.save_index(self.COLLECTION_KEY, params, coll.to_json_dict())
        return coll.stats

    def load_collection_index(self, *, n_clusters: int | None = None, link_threshold: float = 0.5, **overrides):
        """The stored :class:`~docmaster_core.index.builder.CollectionIndex` for these parameters, or None."""
        from .index.builder import CollectionIndex

        params = self.index_params(**overrides)
        params["collection_K"] = n_clusters
        params["link_threshold"] = link_threshold
        params["docs"] = sorted(d.doc_id for d in self.ws.documents())
        d = self.ws.load_index(self.COLLECTION_KEY, params)
        return None if d is None else CollectionIndex.from_json_dict(d)

    # ------------------------------------------------------------------ retrieval, filter, QA (SPEC F6, F7)
    def retriever(self):
        """The :class:`~docmaster_core.retrieval.retriever.Retriever` of this workspace
        (tri-modal strategies plus the flat baseline; hyper-edges from the stored index for
        the index parameters in force). Built once per facade."""
        from .retrieval.retriever import Retriever

        r = getattr(self, "_retriever_obj", None)
        if r is None:
            key = self.ws.params_key(self.index_params())
            r = Retriever(self.ws, self.embedder, self.settings.retrieval, load_index=self.load_index, index_key=key)
            self._retriever_obj = r
        return r

    def filter(self, condition: str, *, strategy: str = "combined", strategies: Sequence[str] | None = None,
               top_k: int | None = None, doc_ids: Sequence[str] | None = None, decider: str = "auto",
               save: bool = True, **options):
        """Filter the workspace's documents by a natural-language condition (SPEC F6).

        Returns a :class:`~docmaster_core.retrieval.filter.FilterRun` with, per document,
        the decision, rationale, cited evidence ids and tokens of every strategy; the run
        is saved in the workspace unless ``save`` is false. See
        :func:`docmaster_core.retrieval.filter.run_filter` for the options.
        Documents whose vector file is missing are skipped; ``run.warnings`` (list of
        str) names them.

        Raises:
            RetrievalError: empty condition, ``top_k`` < 1, unknown strategy or
                document, empty workspace.
            ConfigError: the LLM backend is unusable (e.g. no API key), raised before
                anything is loaded or retrieved.
        """
        from .retrieval.filter import condition_query, run_filter
        from .retrieval.qa import searchable_documents
        from .retrieval.retriever import check_top_k

        condition_query(condition)
        check_top_k(top_k)
        llm = None if decider == "calibrated" else self.llm
        if llm is not None and not getattr(llm, "is_offline", True):
            self.check_llm()  # before the embedder is loaded or anything is retrieved
        r = self.retriever()
        view = r.view
        if doc_ids is not None:
            doc_ids, warnings = searchable_documents(view, doc_ids)
        else:
            warnings = list(view.skipped.values())
            if view.skipped and not view.docs:
                raise RetrievalError("no document can be searched: " + warnings[0])
        run = run_filter(self.ws, self.embedder, llm, self.settings.retrieval, condition, strategy=strategy,
                         strategies=strategies, top_k=top_k, doc_ids=doc_ids, decider=decider, retriever=r,
                         index_key=r._index_key, save=save, **options)
        run.warnings = warnings
        return run

    def ask(self, question: str, *, docs: Sequence[str] | None = None, top_k: int | None = None,
            deep: bool = False, save: bool = True, **options):
        """Answer a question over chosen documents with cited passages (SPEC F7).

        ``docs`` defaults to the last filter run's matches. ``deep`` adds query
        decomposition and iterative retrieval (Doc-Researcher). Returns a
        :class:`~docmaster_core.retrieval.qa.QAResult`.

        Raises:
            RetrievalError: empty question, ``top_k`` < 1, unknown documents, nothing to search.
            ConfigError: the LLM backend is unusable (e.g. no API key).
        """
        from .retrieval.qa import ask
        from .retrieval.retriever import check_top_k

        if not " ".join((question or "").split()):
            raise RetrievalError("the question is empty")
        check_top_k(top_k)
        if not getattr(self.llm, "is_offline", True):
            self.check_llm()  # before the embedder is loaded or anything is retrieved
        return ask(self.ws, self.embedder, self.llm, self.settings.retrieval, question, docs=docs, top_k=top_k,
                   deep=deep, retriever=self.retriever(), save=save, **options)
