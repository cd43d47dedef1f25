"""Ingest: files -> parsed documents -> document trees -> summaries -> embeddings ->
one atomic store -> per-document semantic index (SPEC F1, F2, F9).

Ingest of one file: hash -> skip if already stored -> parse -> document tree ->
bottom-up summaries -> node embeddings -> one atomic store -> per-document semantic
index. A file that fails at any stage is reported with a one-line reason and skipped;
the batch goes on. :class:`IngestStage` is mixed into the
:class:`~docmaster_core.pipeline.DocMaster` facade, the only way in.

The per-document work that touches no workspace (parse -> tree -> embedding texts ->
vectors) is :func:`prepare_document` / :func:`embed_prepared`; both executors call it:
``local`` (this process, a parse thread overlapping the embedding) and ``ray``
(:mod:`docmaster_core.ingest_ray`: parse tasks and embedding actors on a Ray cluster).
The LLM steps and every workspace write stay in the calling process either way.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import ConfigError, DocMasterError, ParseError
from .model import DocumentTree, NodeType, ParsedDocument
from .store import file_sha256, storable_text

__all__ = [
    "EXECUTORS",
    "IngestEvent",
    "IngestResult",
    "IngestStage",
    "PreparedDocument",
    "collect_inputs",
    "embed_prepared",
    "failure_reason",
    "node_embedding_text",
    "parse_file",
    "prepare_document",
]

INPUT_SUFFIXES = (".pdf",)
#: The ingest executors (``settings.ingest.executor``).
EXECUTORS = ("local", "ray")
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
    #: LLM-dependent steps that failed for a stored document ("summaries", "index")
    llm_gaps: list[str] = field(default_factory=list)

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
            "llm_gaps": list(self.llm_gaps),
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


@dataclass
class PreparedDocument:
    """One document ready to store: everything ingest computes before the LLM steps
    and the workspace write, with no workspace access (so it can run on a Ray worker).

    Attributes:
        tree: The document tree (``doc_id`` = first 16 hex digits of the SHA-256;
            pages 1-based, boxes in PDF points; summaries not yet filled).
        texts: The embedded text of each node (:func:`node_embedding_text`), len |V|.
        parser: The parser backend that produced it.
        page_sizes: ``[(width, height)]`` per page in PDF points.
        timings: Seconds per stage so far: ``parse``, ``tree`` and, once embedded, ``embed``.
        embeddings: float32 array (|V|, d) of unit rows, row i = node i; ``None`` until
            :func:`embed_prepared`.
        embedding_model: Name of the embedder that made ``embeddings``.
    """

    tree: DocumentTree
    texts: list[str]
    parser: str
    page_sizes: list[tuple[float, float]]
    timings: dict[str, float]
    embeddings: np.ndarray | None = None
    embedding_model: str = ""


def parse_file(path: Path, parsing) -> tuple[ParsedDocument, float]:
    """Parse one file with the backend ``parsing.parser``.

    Args:
        path: A PDF or a MinerU ``*_content_list.json``.
        parsing: :class:`~docmaster_core.config.ParsingSettings`.

    Returns:
        The parsed document and the parse time in seconds.

    Raises:
        ParseError: the file cannot be parsed (one-line reason naming the file).
        ConfigError: unknown parser backend.
    """
    from .parsing import parse_document

    t0 = time.perf_counter()
    parsed = parse_document(path, settings=parsing, parser=parsing.parser)
    return parsed, time.perf_counter() - t0


def build_prepared(parsed: ParsedDocument, path: Path, sha: str, parsing, t_parse: float = 0.0) -> PreparedDocument:
    """Document tree and embedding texts of a parsed file (no vectors yet).

    Args:
        parsed: The parser's output for ``path``.
        path: The input file (its name becomes the tree's ``source``).
        sha: The file's SHA-256 (hex); ``doc_id`` is its first 16 digits.
        parsing: :class:`~docmaster_core.config.ParsingSettings`.
        t_parse: Seconds the parse took (recorded in ``timings``).

    Raises:
        ParseError: the tree has no content node (``<name>: no content found``).
    """
    from .tree import build_tree

    t0 = time.perf_counter()
    tree = build_tree(parsed, sha[:16], parsing)
    tree.source = tree.source or (path.name if path.suffix.lower() == ".pdf" else Path(parsed.path).name)
    t_tree = time.perf_counter() - t0
    if not any(n.type.is_content for n in tree.nodes):
        raise ParseError(f"{path.name}: no content found")
    texts = [node_embedding_text(tree, n.id) for n in tree.nodes]
    return PreparedDocument(tree, texts, parsed.parser, list(parsed.page_sizes), {"parse": t_parse, "tree": t_tree})


def embed_prepared(prep: PreparedDocument, embedder) -> PreparedDocument:
    """Fill ``prep.embeddings`` (float32 (|V|, d)) from ``prep.texts`` with ``embedder``
    and record ``timings["embed"]`` (seconds); returns ``prep``.

    Raises:
        EmbeddingError: the embedder failed.
    """
    t0 = time.perf_counter()
    prep.embeddings = np.asarray(embedder.encode(prep.texts), dtype=np.float32)
    prep.embedding_model = getattr(embedder, "name", "")
    prep.timings["embed"] = time.perf_counter() - t0
    return prep


def prepare_document(path: Path, sha: str, parsing, embedder=None) -> PreparedDocument:
    """Parse -> tree -> embedding texts (-> vectors when ``embedder`` is given) of one
    file: the pure per-document work of ingest, shared by every executor.

    Raises:
        ParseError, ConfigError: as :func:`parse_file` and :func:`build_prepared`.
        EmbeddingError: the embedder failed.
    """
    parsed, t_parse = parse_file(path, parsing)
    prep = build_prepared(parsed, path, sha, parsing, t_parse)
    return embed_prepared(prep, embedder) if embedder is not None else prep


def failure_reason(path: Path, err: BaseException) -> str:
    """The reason recorded for a file whose ingest raised ``err`` (before the file
    name prefix and one-line clean-up of :meth:`IngestStage._fail`): ``str(err)`` for a
    DocMaster error, else ``<name>: unexpected <Type>: <message>``."""
    if isinstance(err, DocMasterError):
        return str(err)
    return f"{path.name}: unexpected {type(err).__name__}: {err}"


class IngestStage:
    """The ingest and repair half of the :class:`~docmaster_core.pipeline.DocMaster`
    facade (a mixin: it uses the facade's ``settings``, ``ws``, ``embedder``, ``llm``,
    ``check_llm``, ``index_params`` and ``index_document``)."""

    def _parse(self, path: Path):
        return parse_file(path, self.settings.parsing)

    def ingest(
        self,
        paths: Sequence[str | os.PathLike],
        *,
        on_progress: Callable[[IngestEvent], None] | None = None,
        build_index: bool = True,
        summaries: bool = True,
        executor: str | None = None,
        ray_address: str | None = None,
    ) -> list[IngestResult]:
        """Ingest files/folders into the workspace; returns one result per input.

        Holds the workspace write lock for the whole batch. Already-stored documents
        (same SHA-256) are skipped without parsing. With the ``local`` executor, parsing
        of the next file overlaps the embedding of the current one (one background
        thread). With ``ray`` (:func:`docmaster_core.ingest_ray.ingest_on_ray`), parsing
        and tree building run as Ray tasks and embedding in Ray actors; the LLM steps
        and the stores stay in this process, one ``add_document`` transaction per
        document in completion order. Results are in the same order either way.

        Args:
            executor: ``"local"`` or ``"ray"`` (default ``settings.ingest.executor``).
            ray_address: For ``ray``: ``None`` starts a local Ray instance for this call
                (default ``settings.ingest.ray_address``); ``"auto"`` or ``HOST:PORT``
                connects to a running cluster, which is left running.

        A file whose content is already stored under another name is skipped with the
        reason ``same content as <stored file>, already in workspace``. A stored
        document whose vector file is missing gets it rebuilt from the stored tree.

        Raises:
            WorkspaceLockedError: another process is writing to the workspace.
            ConfigError: the LLM backend is unusable (e.g. no API key) and summaries or
                the index were asked for; an unknown executor; ``ray`` without the ray
                package, with a malformed or unreachable address, or with an embedder
                other than the settings' one. Raised before any file is stored.
        """
        executor = executor or self.settings.ingest.executor
        if executor not in EXECUTORS:
            raise ConfigError(f"unknown ingest executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
        if ray_address is not None and executor != "ray":
            raise ConfigError(f"a Ray address ({ray_address}) is only used by the ray executor, not {executor}")
        if executor == "ray":
            from .ingest_ray import check_ray_ready

            ray_address = check_ray_ready(ray_address or self.settings.ingest.ray_address, self)
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
            if executor == "ray" and todo:
                from .ingest_ray import ingest_on_ray

                results.extend(ingest_on_ray(self, todo, total, emit, build_index, summaries, ray_address))
            else:
                results.extend(self._ingest_local(todo, total, emit, build_index, summaries))
        return results

    def _ingest_local(self, todo: list[tuple[int, Path, str]], total: int, emit, build_index: bool,
                      summaries: bool) -> list[IngestResult]:
        """The local executor: ``todo`` = ``[(input index, path, sha256)]``, parsed in one
        background thread while the current file is embedded and stored."""
        out = []
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
                    prep = build_prepared(parsed, p, sha, self.settings.parsing, t_parse)
                    emit(IngestEvent(str(p), i, total, "embedding", time.perf_counter() - t_start))
                    embed_prepared(prep, self.embedder)
                except Exception as e:  # noqa: BLE001 - one bad file must not stop the batch
                    prep = failure_reason(p, e)
                out.append(self._complete(prep, p, sha, i, total, t_start, emit, build_index, summaries))
        return out

    def _complete(self, prep: PreparedDocument | str, p: Path, sha: str, i: int, total: int, t_start: float,
                  emit, build_index: bool, summaries: bool) -> IngestResult:
        """Finish one file on the writer: a failure reason (str) is recorded; a prepared
        document gets its LLM steps, its store and its index. Emits the final event."""
        if isinstance(prep, str):
            res = self._fail(p, sha, prep)
        else:
            try:
                res = self._store_prepared(prep, p, sha, i, total, t_start, emit, build_index, summaries)
            except Exception as e:  # noqa: BLE001 - one bad file must not stop the batch
                res = self._fail(p, sha, failure_reason(p, e))
        emit(IngestEvent(str(p), i, total, res.status if res.status != "ingested" else "done",
                         time.perf_counter() - t_start, res.reason))
        return res

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

    def _store_prepared(self, prep: PreparedDocument, p: Path, sha: str, i: int, total: int, t_start: float,
                        emit, build_index: bool, summaries: bool) -> IngestResult:
        """Summaries (LLM), the atomic store and the semantic index of one prepared,
        embedded document; runs in the process holding the write lock."""
        tree, emb = prep.tree, prep.embeddings
        timings = dict(prep.timings)
        gaps: list[str] = []
        if summaries:
            emit(IngestEvent(str(p), i, total, "summarising", time.perf_counter() - t_start))
            t0 = time.perf_counter()
            from .llm.summaries import summarize_tree

            if summarize_tree(tree, self.llm):
                gaps.append("summaries")
            timings["summarise"] = time.perf_counter() - t0

        emit(IngestEvent(str(p), i, total, "storing", time.perf_counter() - t_start))
        t0 = time.perf_counter()
        rec = self.ws.add_document(
            tree, emb, sha256=sha, source_path=str(p), parser=prep.parser, page_sizes=prep.page_sizes,
            embedding_model=prep.embedding_model or self.embedder.name, timings=timings,
        )
        timings["store"] = time.perf_counter() - t0
        if build_index:
            emit(IngestEvent(str(p), i, total, "indexing", time.perf_counter() - t_start))
            t0 = time.perf_counter()
            try:
                self.index_document(tree.doc_id, tree=tree, embeddings=emb)
            except DocMasterError as e:
                rec_reason = f"stored, but the semantic index failed: {e}"
                return IngestResult(str(p), "ingested", rec.doc_id, rec_reason, rec.n_pages, rec.n_nodes, rec.counts,
                                    timings, [*gaps, "index"])
            timings["index"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        self.ws.update_timings(rec.doc_id, timings)
        why = "stored with fallback summaries: LLM calls failed" if gaps else ""
        return IngestResult(str(p), "ingested", rec.doc_id, why, rec.n_pages, rec.n_nodes, rec.counts, timings, gaps)

    def resummarize(self, doc_ids: Sequence[str] | None = None) -> dict[str, int]:
        """Summarise stored documents again with the configured LLM (SPEC F2), e.g.
        after an ingest whose LLM calls failed; answers already cached cost nothing.
        Holds the workspace write lock.

        Args:
            doc_ids: Documents (default all).

        Returns:
            ``{doc_id: failed LLM calls}`` (0 = every summary came from the LLM).

        Raises:
            WorkspaceLockedError: another process is writing the workspace.
            WorkspaceError: an unknown document.
            ConfigError, LLMUnreachable: the LLM cannot be used at all (checked first).
        """
        from .llm.summaries import summarize_tree

        self.check_llm()
        out: dict[str, int] = {}
        with self.ws.writing():
            for ref in (doc_ids if doc_ids is not None else [d.doc_id for d in self.ws.documents()]):
                rec = self.ws.document(ref)
                tree = self.ws.load_tree(rec.doc_id)
                out[rec.doc_id] = summarize_tree(tree, self.llm)
                self.ws.update_summaries(rec.doc_id, {n.id: n.summary for n in tree.nodes})
        return out

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
