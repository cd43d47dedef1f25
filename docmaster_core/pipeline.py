"""The DocMaster facade: the one way into the engine for the CLI, the app, scripts
and the Python API.

``DocMaster`` wires a :class:`~docmaster_core.store.workspace.Workspace`, a parser, the
embedder and the LLM layer together and offers every operation on them: ingest and
repair (:mod:`docmaster_core.ingest.stage`), the semantic index with its reuse policy,
retrievers, filtering, question answering (one piece or streamed) and evaluation.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .config import RetrievalSettings, Settings, get_settings
from .embedding.embedders import Embedder, get_embedder
from .errors import RetrievalError
from .filtering.options import FilterOptions
from .gc_tuning import tune_collector
from .index.params import IndexParams
from .index.reuse import GroupCache
from .index.stage import IndexStage
from .ingest.prepare import IngestEvent, IngestResult, collect_inputs, node_embedding_text
from .ingest.stage import IngestStage
from .model import DocumentTree
from .store.workspace import Workspace

#: The per-document array kinds :meth:`DocMaster.collection_indexes` writes (``collection/docinfo/<kind>``).
DOCINFO_KINDS = ("roles", "parents", "hyperedges", "terms", "names", "chars")

__all__ = ["DocMaster", "DOCINFO_KINDS", "IndexParams", "IngestEvent", "IngestResult", "collect_inputs", "node_embedding_text"]


class DocMaster(IngestStage, IndexStage):
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
        tune_collector()  # fewer, equally thorough garbage collections (docmaster_core/gc_tuning.py)
        self._embedder = embedder
        self._llm = llm
        #: one retriever per (index key, retrieval settings), see :meth:`retriever`
        self._retrievers: dict[tuple[str, str], Any] = {}
        # the index stage's state (:class:`~docmaster_core.index.stage.IndexStage`): index
        # saves serialised per facade, reusable hyper-edge groups, background saves
        self._index_lock = threading.Lock()
        self._group_cache = GroupCache()
        self._pending_saves: list[threading.Thread] = []
        # the ingest stage's parse process while a local batch runs (IngestStage._ingest_local)
        self._parse_pool = None
        # the Ray scoring actors of filters at scale (candidates.executor = ray), made on first use
        self._ray_scoring: tuple[tuple, Any] | None = None
        # the review's feedback features of the last few (view, ranking, evidence): the Filter page asks
        # for the review after every answer, and the features of a run do not change between answers
        self._feedback: OrderedDict[tuple, Any] = OrderedDict()
        self._feedback_lock = threading.Lock()

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
        """Fail fast when the configured LLM backend cannot work at all, before any
        model load or retrieval: no API key, or an endpoint that refuses connections or
        does not resolve (a TCP probe of at most a few seconds; none offline).

        Raises:
            ConfigError: the backend is not usable (one-line reason).
            LLMUnreachable: the endpoint cannot be reached (one line naming it).
        """
        self.llm.check_ready()
        self.llm.check_reachable()

    # ------------------------------------------------------------------ documents
    def documents(self) -> list:
        """The workspace's documents (:class:`~docmaster_core.store.workspace.DocumentRecord`), in the order added."""
        return self.ws.documents()

    def document(self, ref: str):
        """A document by doc_id, doc_id prefix, file name or path.

        Raises:
            WorkspaceError: no such document, or an ambiguous reference.
        """
        return self.ws.document(ref)

    def tree(self, ref: str) -> DocumentTree:
        """The stored document tree of a document (by any reference :meth:`document` takes).

        Raises:
            WorkspaceError: no such document.
        """
        return self.ws.load_tree(self.ws.document(ref).doc_id)

    @property
    def path(self) -> Path:
        """The workspace folder."""
        return self.ws.path

    def embeddings(self, doc_id: str, *, mmap: bool = False) -> np.ndarray:
        """float32 (n_nodes, 384) node embeddings of a document, row i = node i
        (memory-mapped read-only with ``mmap``).

        Raises:
            WorkspaceError: no such document or no vector file.
        """
        return self.ws.load_embeddings(doc_id, mmap=mmap)

    def failures(self) -> list[dict[str, Any]]:
        """Files that failed to ingest and were not ingested since: ``{"file_name", "reason", ...}``."""
        return self.ws.failures()

    def last_run_params(self, kind: str = "filter"):
        """``(run_id, params)`` of the latest saved run of ``kind``, or None."""
        return self.ws.last_run_params(kind)

    def recent_runs(self, kind: str = "filter", limit: int = 2) -> list[dict[str, Any]]:
        """The newest ``limit`` saved runs of ``kind``, newest first: ``[{run_id, kind,
        created_at, params, result}]`` (``created_at`` a Unix time in seconds; ``result``
        as the run was saved, e.g. ``FilterRun.to_dict()``).

        Raises:
            ValueError: ``limit`` < 1.
        """
        return self.ws.recent_runs(kind, limit)

    def preference(self, name: str, default: Any = None) -> Any:
        """A preference saved in the workspace with :meth:`save_preference` (e.g. the
        app's filter configurations, so they survive a page reload), else ``default``."""
        try:
            v = self.ws.load_preference(name)
        except sqlite3.Error:
            return default
        return default if v is None else v

    def save_preference(self, name: str, value: Any) -> bool:
        """Save a JSON value under ``name`` in the workspace (not in any run or index).

        Returns:
            True when saved; False when the workspace cannot be written (a read-only
            folder, or the database is busy for longer than its timeout).

        Raises:
            TypeError: the value is not JSON-serialisable.
        """
        try:
            self.ws.save_preference(name, value)
        except (sqlite3.Error, OSError):
            return False
        return True

    # ------------------------------------------------------------------ review (issue 33)
    def answers(self, condition: str) -> dict[str, tuple[bool, str]]:
        """The user's stored answers for ``condition``: ``{doc_id: (label, source)}``
        (:mod:`docmaster_core.store.judgements`)."""
        return self.ws.judgements(condition)

    def answer(self, condition: str, answers: Mapping[str, bool | None], source: str = "user") -> int:
        """Store the user's answers ``{doc_id: True / False}`` for ``condition`` (``None``
        removes one). Every later filter run uses them (``decided_by = "user"``).

        Returns:
            Answers written or removed.

        Raises:
            RetrievalError: an empty condition, an unknown source or document (nothing is stored).
            WorkspaceError: the workspace cannot be written.
        """
        from .errors import WorkspaceError

        try:
            return self.ws.save_judgements(condition, answers, source)
        except ValueError as e:
            raise RetrievalError(str(e)) from None
        except sqlite3.Error as e:
            raise WorkspaceError(f"could not store the answers in {self.ws.path}: {e}") from e

    def review(self, condition: str, ranking: Sequence[str], targets=None, deferred: Sequence[str] = (),
               evidence: Mapping[str, Sequence[int]] | None = None):
        """Where the rank-order review of ``condition`` stands over the documents of
        ``ranking`` (doc_ids best first, e.g. :func:`~docmaster_core.filtering.results.run_ranking`
        of a filter run), replayed over the user's stored answers.

        Args:
            condition: The condition.
            ranking: doc_ids in rank order.
            targets: :class:`~docmaster_core.filtering.review.ReviewTargets` (default: recall
                0.9, delta 0.1).
            deferred: doc_ids the user skipped.
            evidence: ``{doc_id: [node ids]}`` of the run's evidence
                (:func:`~docmaster_core.filtering.results.run_evidence_nodes`).

        Screening is re-ranked by the answers so far (relevance feedback,
        :class:`~docmaster_core.filtering.review.Feedback`, on each document's mean evidence
        embedding and evidence words, or its mean node embedding without ``evidence``).

        Returns:
            :class:`~docmaster_core.filtering.review.DocumentReview`: the next documents to
            answer, the kept set and the promise.

        Raises:
            RetrievalError: an empty ranking.
        """
        from .filtering.review import ReviewTargets, review_documents

        try:
            ranking = list(ranking)
            # a document without evidence nodes keeps its whole-document mean embedding
            fb = self._review_feedback(ranking, evidence or {}) if ranking else None
            return review_documents(ranking, self.answers(condition), targets or ReviewTargets(), deferred,
                                    feedback=fb)
        except ValueError as e:
            raise RetrievalError(str(e)) from None

    def _review_feedback(self, ranking: list[str], evidence: Mapping[str, Sequence[int]]):
        """:meth:`Feedback.from_evidence <docmaster_core.filtering.review.Feedback.from_evidence>`
        of the current view, kept for the last 4 (view, ranking, evidence)."""
        from .filtering.review import Feedback

        view = self.retriever().view
        key = (view.signature, tuple(ranking), tuple((d, tuple(int(i) for i in v)) for d, v in sorted(evidence.items())))
        with self._feedback_lock:
            fb = self._feedback.get(key)
            if fb is not None:
                self._feedback.move_to_end(key)
                return fb
        fb = Feedback.from_evidence(view, ranking, evidence)
        with self._feedback_lock:
            self._feedback[key] = fb
            while len(self._feedback) > 4:
                self._feedback.popitem(last=False)
        return fb

    def export_answers(self, condition: str, condition_id: str = "C1") -> str:
        """The user's answers for ``condition`` as a cases TSV in the format of
        ``../shared/eval`` (``docmaster eval filter --cases`` reads it)."""
        return self.ws.export_cases(condition, condition_id)

    def index_versions(self) -> list[tuple[str, str, float]]:
        """``(doc_id, index key, saved at (s since the epoch))`` of every stored index (no index is parsed)."""
        return self.ws.index_versions()

    def warm_up(self, params: Sequence[Mapping[str, Any]] = ()) -> None:
        """Load what a first filter or question needs (the corpus view, the lexical
        statistics, the BM25 index of the keyword strategy, the per-document term counts
        of the offline decision, the section index of the tree search, and the hyper-edge
        views of the given index parameters), so that the first run does not wait for it.
        Safe to call from a background thread. Past ``candidates.min_docs`` documents a
        filter scores only its candidates, so the BM25 index, term counts and section index
        of every document are not built here."""
        from .filtering.decider import lexical_stats
        from .filtering.evidence import doc_terms
        from .retrieval.keyword import keyword_index
        from .retrieval.tree_traversal import section_index

        view = self.retriever().view
        lexical_stats(view)
        if len(view.docs) <= self.settings.candidates.min_docs:
            keyword_index(view)
            doc_terms(view, self.settings.filter.related_weight)
            section_index(view)
        for ip in params or [None]:
            self.retriever(ip).hyperedges(view)

    def collection_indexes(self) -> dict[str, Any]:
        """Build or bring up to date the collection-wide indexes a filter at scale takes
        its candidate documents from (issue 25): the FAISS index over every node vector
        and the BM25 index over every node text (``collection/``). A filter over more than
        ``candidates.min_docs`` documents does this itself on first use; call it after an
        ingest to pay that one-time cost up front.

        Also writes the per-document arrays stage 2 reads
        (:mod:`~docmaster_core.store.docinfo`: section roles, tree parents, hyper-edges of
        the default index parameters, node term counts, name tokens, evidence lengths) for
        every document that lacks one of them (:data:`DOCINFO_KINDS`); documents that have
        them all are not read.

        Returns:
            ``{"rows", "dense_s", "lexical_s", "docinfo_s", "docinfo_docs", "index"}``
            (seconds; ``docinfo_docs``: documents whose arrays were missing and written;
            ``index`` is the FAISS kind), or ``{}`` for a workspace without a collection
            store (read-only folder).

        Raises:
            RetrievalError: faiss or bm25s is not installed.
            OSError: the indexes cannot be written.
        """
        import time as _time

        from .store.collection_index import collection_index, index_kind
        from .store.lexical_index import lexical_index

        view = self.retriever().view
        if view.collection is None:
            return {}
        cs = self.settings.candidates
        t0 = _time.perf_counter()
        collection_index(view.collection, cs.dense_exact_max_rows, cs.nprobe)
        t1 = _time.perf_counter()
        lexical_index(self.ws, view.collection)
        t2 = _time.perf_counter()
        # the per-document arrays stage 2 reads (roles, tree parents, hyper-edges, term
        # counts, name tokens, evidence lengths), in batches of documents so that memory stays bounded; a
        # no-op when they are on disk
        from .retrieval.corpus import evidence_chars, sub_view
        from .qa.names import doc_name_tokens
        from .retrieval.keyword import doc_term_counts
        from .retrieval.tree_traversal import section_index
        from .tree.roles import view_roles

        # a document whose files are all there is skipped (not read: at 20,000 documents reading them
        # all took 1-3 minutes and 4 GB); one whose file is stale is recomputed on its first use
        from .store.docinfo import has_arrays

        r = self.retriever()
        todo = [dv.index for dv in view.docs if not all(has_arrays(view.ws_path, k, dv.doc_id) for k in DOCINFO_KINDS)]
        for a in range(0, len(todo), 256):
            sub = sub_view(view, todo[a:a + 256])
            view_roles(sub)
            section_index(sub)
            r.hyperedges(sub)
            for dv in sub.docs:
                doc_term_counts(sub, dv)
                doc_name_tokens(sub, dv)
                evidence_chars(sub, dv.index)
        t3 = _time.perf_counter()
        return {"rows": view.collection.rows, "dense_s": t1 - t0, "lexical_s": t2 - t1, "docinfo_s": t3 - t2,
                "docinfo_docs": len(todo), "index": index_kind(view.collection.rows, cs.dense_exact_max_rows)}

    def remove(self, refs: str | Sequence[str]) -> list:
        """Remove documents from the workspace (curating the collection).

        Each reference is a file name, path, doc_id or doc_id prefix (as :meth:`document`
        takes). All references are resolved first, under the workspace's write lock: an
        unknown or ambiguous one raises and nothing is removed. Then the documents go in
        one transaction with their nodes, edges, semantic indexes and the stored
        collection-level indexes built over them; their vector files are deleted and the
        collection vector store is rebuilt from the remaining ``vectors/`` files, so
        ``docmaster check`` passes afterwards. Saved runs (filter, ask) are history and
        are kept: they still name the removed documents by file name; readers skip
        documents the workspace no longer has. Uploaded source files are not deleted.

        Returns:
            The removed :class:`~docmaster_core.store.workspace.DocumentRecord` s, in
            the order given (duplicates once).

        Raises:
            WorkspaceError: no reference given, an unknown or ambiguous reference
                (nothing removed).
            WorkspaceLockedError: another process is writing the workspace.
        """
        from .errors import WorkspaceError

        refs = [refs] if isinstance(refs, str) else list(refs or [])
        if not refs:
            raise WorkspaceError("no document to remove was named")
        with self.ws.writing(what="remove"):
            self.wait_for_saves()  # an index being saved in the background for a document about to go
            recs: dict[str, Any] = {}
            for ref in refs:
                rec = self.ws.document(str(ref))  # raises before anything changes
                recs.setdefault(rec.doc_id, rec)
            self.ws.remove_documents(list(recs))
            self._refresh_collection_store()
            from .index.layout import remove_layouts

            remove_layouts(self.ws.path, list(recs))  # their 2-D layouts and every collection layout
        return list(recs.values())

    def chat_log(self) -> list[dict[str, Any]]:
        """The app's stored chat conversation (oldest first; ``[]`` when none), see
        :mod:`docmaster_core.qa.chat_log`."""
        from .qa.chat_log import load_chat_log

        return load_chat_log(self.ws.path)

    def save_chat_log(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Store the app's chat conversation in the workspace (``[]`` clears it).

        Raises:
            OSError: the workspace is not writable.
        """
        from .qa.chat_log import save_chat_log

        save_chat_log(self.ws.path, [dict(m) for m in messages])

    def _refresh_collection_store(self) -> None:
        """Rebuild the derived collection vector store after a removal (best effort: a
        read-only store is rebuilt by the next reader that can write)."""
        from .retrieval.corpus import node_meta
        from .store.collection import sync_collection

        try:
            sync_collection(self.ws, node_meta)
        except OSError:
            pass

    # ------------------------------------------------------------------ retrieval, filter, QA (SPEC F6, F7)
    def retrieval_settings(self, **overrides: Any) -> RetrievalSettings:
        """``settings.retrieval`` with non-None ``overrides`` (top_k, gamma, type weights ...).

        Raises:
            pydantic.ValidationError: an override is out of range.
        """
        base = self.settings.retrieval.model_dump()
        base.update({k: v for k, v in overrides.items() if v is not None})
        return RetrievalSettings(**base)

    def retriever(self, params: Mapping[str, Any] | None = None, retrieval: RetrievalSettings | None = None):
        """The :class:`~docmaster_core.retrieval.retriever.Retriever` of this workspace
        for index parameters ``params`` (hyper-edges from the stored indexes built with
        them; default ``settings.index``) and retrieval settings ``retrieval`` (default
        ``settings.retrieval``). One retriever per distinct pair, kept by the facade; the
        corpus view behind them is shared and follows the workspace's changes."""
        from .retrieval.retriever import Retriever

        p = self.index_params(params)
        rs = retrieval or self.settings.retrieval
        cache = self._retrievers
        key = (p.key(), rs.model_dump_json())
        r = cache.get(key)
        if r is None:
            r = Retriever(self.ws, self.embedder, rs, load_index=lambda doc_id, p=p: self.load_index(doc_id, p),
                          index_key=p.key())
            cache[key] = r
        return r

    def filter(self, condition: str, options: FilterOptions | None = None, **overrides: Any):
        """Filter the workspace's documents by a natural-language condition (SPEC F6).

        Args:
            condition: The condition.
            options: The run's :class:`~docmaster_core.filtering.options.FilterOptions`
                (strategies, decider, cascade, top-k, documents; ``index_params`` (the
                hyper-edges' index parameters) and ``retrieval`` (top-k, gamma, type
                weights) choose the retriever and default to the settings; the
                calibration defaults to the settings' ``filter`` section).
            **overrides: Option fields replacing those of ``options`` (``dm.filter(c, top_k=5)``).

        Returns a :class:`~docmaster_core.filtering.run.FilterRun` with, per document,
        the decision, rationale, cited evidence ids and tokens of every strategy; the run
        is saved in the workspace unless ``save`` is false. Documents whose vector file
        is missing are skipped; ``run.warnings`` (list of str) names them, and says how many
        decisions had their evidence trimmed to the model's context or were read from a
        reply that was not the asked-for JSON (each decision's ``note`` says what).

        Raises:
            RetrievalError: empty condition, ``top_k`` < 1, unknown strategy, option or
                document, empty workspace.
            ConfigError: the LLM backend is unusable (e.g. no API key), raised before
                anything is loaded or retrieved.
        """
        from .filtering.decider import calibration_from_settings
        from .filtering.run import condition_query, decision_notes, run_filter
        from .qa.ask import searchable_documents

        if "params" in overrides:  # the index parameters' older name
            overrides["index_params"] = overrides.pop("params")
        try:
            opts = FilterOptions.of(options, **overrides)
        except TypeError as e:
            raise RetrievalError(str(e)) from None
        condition_query(condition)
        llm = None if opts.decider == "calibrated" else self.llm
        if llm is not None and not llm.is_offline:
            self.check_llm()  # before the embedder is loaded or anything is retrieved
        r = self.retriever(opts.index_params, opts.retrieval)
        view = r.view
        if opts.doc_ids is not None:
            doc_ids, warnings = searchable_documents(view, opts.doc_ids)
            opts = FilterOptions.of(opts, doc_ids=tuple(doc_ids))
        else:
            warnings = list(view.skipped.values())
            if view.skipped and not view.docs:
                raise RetrievalError("no document can be searched: " + warnings[0])
        if opts.calibration is None:
            opts = FilterOptions.of(opts, calibration=calibration_from_settings(self.settings.filter))
        if opts.candidates is None:
            opts = FilterOptions.of(opts, candidates=self.settings.candidates)
        from .filtering.ray_scoring import check_ray_scoring

        check_ray_scoring(opts.candidates)  # a one-line error before anything is searched
        scorer = self._candidate_scorer(opts) if opts.candidates.executor == "ray" else None
        run = run_filter(self.ws, self.embedder, llm, r.settings, condition, opts, retriever=r, scorer=scorer)
        if scorer is not None and not run.candidates:
            warnings.append(f"Scored in this process, not on Ray: only runs over more than "
                            f"{opts.candidates.min_docs} documents take candidates, and Ray scores candidates.")
        run.warnings = warnings + decision_notes(run)
        return run

    def _candidate_scorer(self, opts: FilterOptions):
        """The Ray scoring of candidates for this run's retriever (actors made on first use
        and kept until :meth:`close`; new ones when the address or worker count changes)."""
        from .filtering.ray_scoring import RayCandidateScoring

        cs = opts.candidates
        key = (cs.ray_address, cs.ray_workers)
        if self._ray_scoring is None or self._ray_scoring[0] != key:
            if self._ray_scoring is not None:
                self._ray_scoring[1].close()
                self._ray_scoring = None
            self._ray_scoring = (key, RayCandidateScoring(str(self.ws.path), self.settings, self.embedder,
                                                          cs.ray_address, cs.ray_workers))
        p = self.index_params(opts.index_params)
        return self._ray_scoring[1].for_run(p.as_dict(), (opts.retrieval or self.settings.retrieval).model_dump())

    def close(self) -> None:
        """Release what this facade started: the Ray scoring actors (and the connection
        they made). The workspace stays usable; a later filter starts them again."""
        if self._ray_scoring is not None:
            self._ray_scoring[1].close()
            self._ray_scoring = None

    @staticmethod
    def name_clusters(texts: Sequence[str], labels: Sequence[int], n_terms: int = 3,
                      doc_ids: Sequence[str] | None = None, sections: Sequence[str] | None = None
                      ) -> dict[int, list[str]]:
        """The most distinctive terms of each cluster of passages (class-based TF-IDF; with
        ``doc_ids``, the document of each passage, a term of one document's passages names
        none; with ``sections``, each passage's section title, a one-passage cluster of names
        is named by its section); see :func:`docmaster_core.index.cluster_names.cluster_names`."""
        from .index.cluster_names import cluster_names

        return cluster_names(texts, labels, n_terms, groups=doc_ids, sections=sections)

    @staticmethod
    def representative_passages(emb: Any, labels: Sequence[int], n: int = 3) -> dict[int, list[int]]:
        """Each cluster's ``n`` passages closest to its mean embedding (rows of ``emb``); see
        :func:`docmaster_core.index.cluster_names.representative_passages`."""
        from .index.cluster_names import representative_passages

        return representative_passages(emb, labels, n)

    @staticmethod
    def move_cut(run: Mapping[str, Any], kept: int | None, strategy: str | None = None) -> dict[str, Any]:
        """A filter run's dict (``FilterRun.to_dict()`` or a saved run's result) with the
        cut of its ranking moved to keep the ``kept`` best-ranked documents; nothing is
        retrieved or decided again. See :func:`docmaster_core.filtering.results.move_cut`."""
        from .filtering.results import move_cut

        return move_cut(run, kept, strategy)

    @staticmethod
    def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any], strategy: str | None = None, *,
                     documents: bool = False) -> dict[str, Any]:
        """Compare two filter runs (saved runs or run dicts): documents kept by one only
        or by both, agreement, changed parameters and, with ``documents``, every document
        side by side. See :func:`docmaster_core.filtering.results.compare_runs`."""
        from .filtering.results import compare_runs

        return compare_runs(a, b, strategy, documents=documents)

    def ask(self, question: str, *, docs: Sequence[str] | None = None, top_k: int | None = None,
            deep: bool = False, save: bool = True, params: Mapping[str, Any] | None = None,
            retrieval: RetrievalSettings | None = None, **options):
        """Answer a question over chosen documents with cited passages (SPEC F7).

        ``docs`` defaults to the last filter run's matches (``all_docs=True``: every
        document; ``QAResult.source_run`` names the filter run used). ``deep`` adds query
        decomposition and iterative retrieval (Doc-Researcher). ``follow=`` the documents the
        previous question named (:meth:`last_routed`) answers a follow-up that refers back
        to them ("Can it be terminated early?") from them. Returns a
        :class:`~docmaster_core.qa.ask.QAResult`.

        Raises:
            RetrievalError: empty question, ``top_k`` < 1, unknown documents, nothing to search.
            ConfigError: the LLM backend is unusable (e.g. no API key).
        """
        from .qa.ask import ask
        from .retrieval.retriever import check_top_k

        if not " ".join((question or "").split()):
            raise RetrievalError("the question is empty")
        check_top_k(top_k)
        if not self.llm.is_offline:
            self.check_llm()  # before the embedder is loaded or anything is retrieved
        r = self.retriever(params, retrieval)
        options.setdefault("candidates", self.settings.candidates)
        return ask(self.ws, self.embedder, self.llm, r.settings, question, docs=docs, top_k=top_k,
                   deep=deep, retriever=r, save=save, **options)

    def last_routed(self) -> list[str]:
        """Doc ids the newest saved question was answered from because it named them (or
        followed up on them); a follow-up passes them as ``ask(..., follow=...)``. Empty when
        it named none (:func:`~docmaster_core.qa.ask.last_routed`)."""
        from .qa.ask import last_routed

        return last_routed(self.ws)

    def ask_stream(self, question: str, *, docs: Sequence[str] | None = None, top_k: int | None = None,
                   deep: bool = False, save: bool = True, params: Mapping[str, Any] | None = None,
                   retrieval: RetrievalSettings | None = None, **options):
        """:meth:`ask`, streamed: iterate the returned
        :class:`~docmaster_core.qa.stream.AnswerStream` for the answer's
        text pieces (a chat model's tokens as they come), then read its ``result``:
        the same :class:`~docmaster_core.qa.ask.QAResult` :meth:`ask` returns.

        Raises:
            RetrievalError, ConfigError: as :meth:`ask`, at once (before any piece).
        """
        from .qa.stream import AnswerStream
        from .retrieval.retriever import check_top_k

        if not " ".join((question or "").split()):
            raise RetrievalError("the question is empty")
        check_top_k(top_k)
        self.check_llm()
        return AnswerStream(lambda on_piece: self.ask(question, docs=docs, top_k=top_k, deep=deep, save=save,
                                                      params=params, retrieval=retrieval, on_piece=on_piece,
                                                      **options))

    # ------------------------------------------------------------------ evaluation
    def eval_filter(self, cases, texts: dict[str, str], *, decider: str = "auto", **options):
        """P/R/F1, AP and leave-one-condition-out F1 of the filter on labelled cases, with
        this facade's retriever; see :func:`docmaster_core.evaluation.harness.eval_filter`.

        Raises:
            RetrievalError: no labelled file is in the workspace, or an unknown strategy.
        """
        from .evaluation import harness as ev

        r = self.retriever()
        llm = None if decider == "calibrated" else self.llm
        return ev.eval_filter(self.ws, self.embedder, llm, r.settings, cases, texts, decider=decider, retriever=r,
                              **options)

    def calibrate_filter(self, cases, texts: dict[str, str], **options):
        """Choose the offline rule's parameters on some conditions and report the others;
        see :func:`docmaster_core.evaluation.harness.calibrate_filter`.

        Raises:
            RetrievalError: no labelled file is in the workspace.
        """
        from .evaluation import harness as ev

        r = self.retriever()
        return ev.calibrate_filter(self.ws, self.embedder, r.settings, cases, texts, retriever=r, **options)

    def eval_retrieval(self, bench: str, **options):
        """Evidence-page recall@k on a benchmark (mmlongbench, financebench); see
        :func:`docmaster_core.evaluation.harness.eval_retrieval`.

        Raises:
            RetrievalError: unknown benchmark, or none of its documents is in the workspace.
        """
        from .evaluation import harness as ev

        r = self.retriever()
        return ev.eval_retrieval(self.ws, self.embedder, r.settings, bench, retriever=r, **options)
