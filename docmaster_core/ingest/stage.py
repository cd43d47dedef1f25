"""Ingest: files -> parsed documents -> document trees -> summaries -> embeddings ->
one atomic store -> per-document semantic index (SPEC F1, F2, F9).

Ingest of one file: hash -> skip if already stored -> parse -> document tree ->
bottom-up summaries -> node embeddings -> one atomic store -> per-document semantic
index. A file that fails at any stage is reported with a one-line reason and skipped;
the batch goes on. :class:`IngestStage` is mixed into the
:class:`~docmaster_core.pipeline.DocMaster` facade, the only way in.

The per-document work that touches no workspace (parse -> tree -> embedding texts ->
vectors) is :func:`prepare_document` / :func:`embed_prepared`; both executors call it:
``local`` (this process embeds and stores; the next file is parsed meanwhile in a
separate parse process, or a thread with ``settings.ingest.parse_process`` off) and ``ray``
(:mod:`docmaster_core.ingest.ray_executor`: parse tasks and embedding actors on a Ray cluster).
The LLM steps and every workspace write stay in the calling process either way.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError, DocMasterError, ParseError
from .prepare import (
    EXECUTORS,
    IngestEvent,
    IngestResult,
    PreparedDocument,
    build_prepared,
    collect_inputs,
    embed_prepared,
    failure_reason,
    node_embedding_text,
    parse_file,
)
from ..store.workspace import file_sha256, storable_text

__all__ = ["IngestStage"]


def _start_parse_process() -> cf.ProcessPoolExecutor:
    """One spawned worker process for parsing (spawn, not fork: the parent holds ONNX
    Runtime / torch thread pools that a forked child must not inherit). The worker ends
    itself when the ingesting process dies (e.g. ``kill -9``), so none is left behind."""
    return cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_exit_with_parent, initargs=(os.getpid(),))


def _exit_with_parent(parent_pid: int, poll_s: float = 1.0) -> None:
    """Parse-process initializer: a daemon thread that ends this process within
    ``poll_s`` seconds once ``parent_pid`` is no longer its parent (the parent died and
    the process was re-parented)."""
    import threading

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        os._exit(0)

    threading.Thread(target=watch, name="docmaster-parent-watch", daemon=True).start()


class IngestStage:
    """The ingest and repair half of the :class:`~docmaster_core.pipeline.DocMaster`
    facade (a mixin: it uses the facade's ``settings``, ``ws``, ``embedder``, ``llm``,
    ``check_llm``, ``index_params`` and ``index_document``)."""

    def _parse(self, path: Path):
        """:func:`parse_file` of ``path``: in the parse process while a batch holds one
        (:meth:`_ingest_local`), else here. Returns ``(ParsedDocument, seconds)``.

        Raises:
            ParseError, ConfigError: as :func:`parse_file`.
            ParseError: the parse process died (e.g. the PDF library crashed on this
                file); the pool is replaced for the next file.
        """
        pool = self._parse_pool
        if pool is None:
            return parse_file(path, self.settings.parsing)
        try:
            return pool.submit(parse_file, path, self.settings.parsing).result()
        except BrokenProcessPool:
            pool.shutdown(wait=False, cancel_futures=True)
            self._parse_pool = _start_parse_process()
            raise ParseError(f"{path.name}: the parser process crashed on this file") from None

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
        thread). With ``ray`` (:func:`docmaster_core.ingest.ray_executor.ingest_on_ray`), parsing
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
            from .ray_executor import check_ray_ready

            ray_address = check_ray_ready(ray_address or self.settings.ingest.ray_address, self)
        inputs, results = collect_inputs(paths)
        if inputs and (summaries or build_index):
            self.check_llm()  # e.g. no API key: fail once, not once per file
        emit = on_progress or (lambda e: None)
        total = len(inputs)
        with self.ws.writing(what="ingest"):
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
                from .ray_executor import ingest_on_ray

                results.extend(ingest_on_ray(self, todo, total, emit, build_index, summaries, ray_address))
            else:
                results.extend(self._ingest_local(todo, total, emit, build_index, summaries))
        return results

    def _ingest_local(self, todo: list[tuple[int, Path, str]], total: int, emit, build_index: bool,
                      summaries: bool) -> list[IngestResult]:
        """The local executor: ``todo`` = ``[(input index, path, sha256)]``. A background
        thread parses the next file while the current one is embedded and stored; with
        ``settings.ingest.parse_process`` and 2+ files the thread hands the parse to one
        spawned parse process (:meth:`_parse`), so parser and embedder never share the
        interpreter lock."""
        if self.settings.ingest.parse_process and len(todo) > 1:
            self._parse_pool = _start_parse_process()
        try:
            return self._ingest_local_overlapped(todo, total, emit, build_index, summaries)
        finally:
            pool, self._parse_pool = self._parse_pool, None
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _ingest_local_overlapped(self, todo, total, emit, build_index, summaries) -> list[IngestResult]:
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
            from ..tree.summaries import summarize_tree

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
        why = "; ".join(x for x in ("stored with fallback summaries: LLM calls failed" if gaps else "",
                                     prep.parser_note) if x)
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
        from ..tree.summaries import summarize_tree

        self.check_llm()
        out: dict[str, int] = {}
        with self.ws.writing(what="summaries"):
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
        from ..errors import ConfigError

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
        with self.ws.writing(what="vector repair"):
            for d in self.ws.documents():
                if self.ws.vectors_ok(d.doc_id):
                    continue
                try:
                    n = self.reembed_document(d.doc_id)
                    out.append(f"rebuilt vectors/{d.doc_id}.npy of {d.file_name} ({n} node vectors re-embedded)")
                except DocMasterError as e:
                    out.append(f"could not rebuild the vectors of {d.file_name}: {e}")
        return out
