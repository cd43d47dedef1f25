"""Exact scoring of a filter's candidate documents on Ray (issue 37).

A filter at scale (:func:`~docmaster_core.filtering.run.run_filter` over more than
``candidates.min_docs`` documents) takes candidate documents from the collection indexes
(stage one, in this process) and then collects every strategy's evidence for each
candidate (stage two, :func:`~docmaster_core.filtering.run.collect_evidence`). Stage two is
per document: every statistic it uses is either the document's own or the whole
collection's (BM25 from the persisted collection index, the FAISS-free per-document
cosines), so the candidates can be split into shards and scored anywhere the workspace
is readable, and the merged evidence is the same as one process's.

What runs where:

* **Ray actors** (``candidates.ray_workers``, default: the cluster's CPUs), one CPU each.
  Actor ``i`` owns the documents with ``crc32(doc_id) % W == i``, so its per-document
  caches (trees, hyper-edge arrays, term counts) stay warm across conditions. Each opens
  the workspace by path (it reads; only its derived per-document caches may be written) (on a cluster of several machines the workspace must
  be on storage every node mounts at the same path), builds the same retriever as the
  driver (same index parameters and retrieval settings) and returns, for its share of the
  candidates, the :class:`~docmaster_core.filtering.run.DocumentResult` evidence and the
  evidence cosines.
* **This process** (the driver): stage one, the query vectors (encoded once here and sent
  to the actors, so every shard searches with the same vectors), the merge (candidates in
  view order), the offline rule's decisions over the merged candidates (its cut is
  relative to the best documents, so it needs all of them), LLM decisions, and saving.

Only the parsing, embedding, index, retrieval, filter and candidates settings travel to
the actors (``model_dump``), never the LLM settings or an API key. A filter that runs
without the candidate stage (at most ``min_docs`` documents) is scored in this process,
and the run says so.
"""
from __future__ import annotations

import zlib
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError, RetrievalError
from ..ray_cluster import check_address, connect, disconnect, one_line

__all__ = ["RayCandidateScoring", "ShardScorer", "shard_of", "check_ray_scoring", "SETTINGS_SENT"]

#: The settings sections an actor receives.
SETTINGS_SENT = ("parsing", "embedding", "index", "retrieval", "filter", "candidates")


def shard_of(doc_ids: Sequence[str], n_shards: int) -> np.ndarray:
    """The shard of each document: int64 (len(doc_ids),) ``crc32(doc_id) % n_shards`` (stable
    across runs, processes and workspace changes)."""
    return np.fromiter((zlib.crc32(d.encode("utf-8")) % n_shards for d in doc_ids), dtype=np.int64,
                       count=len(doc_ids))


class _PinnedQueries:
    """An :class:`~docmaster_core.protocols.Embedder` that returns the driver's query
    vectors for the texts it was given (:meth:`pin`) and loads the settings' model only
    for other texts (e.g. the flat baseline's chunks when they are not cached)."""

    def __init__(self, name: str, dim: int, embedding: dict[str, Any]):
        self.name, self.dim = name, dim
        self._embedding = embedding
        self._pinned: dict[str, np.ndarray] = {}
        self._model = None

    def pin(self, vectors: dict[str, np.ndarray]) -> None:
        self._pinned = {t: np.asarray(v, dtype=np.float32) for t, v in vectors.items()}

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        texts = list(texts)
        if texts and all(t in self._pinned for t in texts):
            return np.stack([self._pinned[t] for t in texts]).astype(np.float32)
        if self._model is None:
            from ..config import EmbeddingSettings
            from ..embedding.embedders import get_embedder

            self._model = get_embedder(EmbeddingSettings(**self._embedding))
        return self._model.encode(texts, batch_size=batch_size)


class ShardScorer:
    """Ray actor body: stage two of a filter for one shard of the candidates.

    Args:
        ws_path: The workspace folder (opened without creating anything; must exist on the actor's node).
        settings: ``{section: dict}`` for the :data:`SETTINGS_SENT` sections.
        embedder_name: The driver's embedder name (the stored vectors' model).
        dim: Its vector size d.
    """

    def __init__(self, ws_path: str, settings: dict[str, dict], embedder_name: str, dim: int):
        from ..config import get_settings
        from ..pipeline import DocMaster
        from ..store.workspace import Workspace

        s = get_settings(llm={"backend": "offline"}, **settings)
        self.embedder = _PinnedQueries(embedder_name, dim, settings["embedding"])
        self.dm = DocMaster(Workspace(ws_path, create=False), s, embedder=self.embedder)

    def score(self, condition: str, strategies: Sequence[str], top_k: int, doc_ids: Sequence[str],
              vectors: dict[str, np.ndarray], index_params: dict | None, retrieval: dict | None
              ) -> tuple[list, dict[str, list[np.ndarray]]]:
        """Evidence of ``doc_ids`` (:func:`~docmaster_core.filtering.run.collect_evidence`
        over their candidate view).

        Args:
            condition: The condition as the run uses it (``condition_query``).
            strategies: The strategies to collect.
            top_k: Evidence items per document and strategy.
            doc_ids: This shard's candidates.
            vectors: ``{query text: float32 (d,) unit vector}`` for every text the run encodes.
            index_params: ``IndexParams`` fields of the hyper-edges (None: the settings').
            retrieval: ``RetrievalSettings`` fields (None: the settings').

        Returns:
            ``(documents, cosines)`` as :func:`collect_evidence` returns them, in view order.

        Raises:
            RetrievalError: a document is not in the workspace the actor sees.
        """
        from ..config import RetrievalSettings
        from ..retrieval.candidates import candidate_view
        from .run import collect_evidence

        self.embedder.pin(vectors)
        r = self.dm.retriever(index_params, RetrievalSettings(**retrieval) if retrieval is not None else None)
        view = r.view
        missing = [d for d in doc_ids if not view.has(d)]
        if missing:
            raise RetrievalError(f"{len(missing)} candidate document(s) are not in the workspace this Ray worker "
                                 f"reads ({missing[0]}, ...): is the workspace on shared storage at the same path?")
        sub = candidate_view(view, [view.doc(d).index for d in doc_ids], r.ws)
        return collect_evidence(r, condition, strategies, top_k, view=sub)


class RayCandidateScoring:
    """Scoring actors on a Ray cluster for one workspace, kept across filter runs.

    Args:
        ws_path: The workspace folder.
        settings: The facade's :class:`~docmaster_core.config.Settings` (only
            :data:`SETTINGS_SENT` sections travel).
        embedder: The driver's embedder (its ``name`` and ``dim`` travel; its vectors of
            the query texts are sent with each run).
        address: ``None`` (start a local Ray instance), ``"auto"`` or ``"HOST:PORT"``.
        workers: Actors W (None: the cluster's CPUs, at least 1).

    Raises:
        ConfigError: ray is missing, the address is malformed or unreachable.
    """

    def __init__(self, ws_path: str, settings, embedder, address: str | None = None, workers: int | None = None):
        self.address = check_address(address)
        self._ray, self._owned = connect(self.address)
        ray = self._ray
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, int(workers) if workers else cpus)
        sent = {k: getattr(settings, k).model_dump() for k in SETTINGS_SENT}
        actor = ray.remote(num_cpus=1 if cpus >= self.workers else 0, max_restarts=1, max_task_retries=1)(ShardScorer)
        self._actors = [actor.remote(str(ws_path), sent, getattr(embedder, "name", ""), int(getattr(embedder, "dim", 0)))
                        for _ in range(self.workers)]

    def collect(self, retr, condition: str, strategies: Sequence[str], top_k: int, view,
                index_params: dict | None = None, retrieval: dict | None = None
                ) -> tuple[list, dict[str, list[np.ndarray]]]:
        """:func:`~docmaster_core.filtering.run.collect_evidence` of ``view``'s documents
        (the candidates), fanned out over the actors and merged in view order.

        Args:
            retr: The driver's retriever (encodes the query texts).
            condition: The condition (``condition_query``).
            strategies, top_k: As for :func:`collect_evidence`.
            view: The candidate view (its documents are scored).
            index_params, retrieval: The retriever's index parameters and retrieval
                settings as dicts (the actors build the same retriever).

        Raises:
            RetrievalError: an actor failed (one line naming the cause).
        """
        from .evidence import search_query

        texts = list(dict.fromkeys([condition, search_query(condition)]))
        vectors = {t: retr.encode(t) for t in texts}
        ids = [dv.doc_id for dv in view.docs]
        shard = shard_of(ids, self.workers)
        refs = []
        for w in range(self.workers):
            mine = [ids[i] for i in np.flatnonzero(shard == w)]
            if mine:
                refs.append(self._actors[w].score.remote(condition, list(strategies), int(top_k), mine, vectors,
                                                         index_params, retrieval))
        try:
            parts = self._ray.get(refs)
        except Exception as e:  # noqa: BLE001 - a remote failure arrives wrapped
            raise RetrievalError(f"scoring the candidates on Ray failed: {one_line(e, 400)}") from None
        by_id: dict[str, tuple] = {}
        for docs, cos in parts:
            for j, d in enumerate(docs):
                by_id[d.doc_id] = (d, {s: cos[s][j] for s in cos})
        docs = [by_id[d][0] for d in ids]
        cos_by = {s: [by_id[d][1][s] for d in ids] for s in strategies}
        return docs, cos_by

    def for_run(self, index_params: dict | None, retrieval: dict | None) -> "_BoundScoring":
        """This scoring bound to a run's retriever (what :func:`run_filter`'s ``scorer`` takes)."""
        return _BoundScoring(self, index_params, retrieval)

    def close(self) -> None:
        """Stop the actors and end the connection this object made (a cluster keeps running)."""
        for a in self._actors:
            try:
                self._ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors = []
        disconnect(self._ray, self._owned)


class _BoundScoring:
    """:class:`RayCandidateScoring` with a run's index parameters and retrieval settings (a
    :class:`~docmaster_core.protocols.CandidateScorer`)."""

    def __init__(self, scoring: RayCandidateScoring, index_params: dict | None, retrieval: dict | None):
        self._scoring, self._index_params, self._retrieval = scoring, index_params, retrieval
        self.where = f"ray ({scoring.workers} workers)"

    def collect(self, retr, condition: str, strategies: Sequence[str], top_k: int, view):
        return self._scoring.collect(retr, condition, strategies, top_k, view, self._index_params, self._retrieval)


def check_ray_scoring(candidates) -> None:
    """Raise a one-line :class:`ConfigError` when ``candidates.executor`` is ``ray`` but
    ray is not installed or the address is malformed (before anything is searched)."""
    if getattr(candidates, "executor", "local") == "ray":
        check_address(candidates.ray_address)
    elif getattr(candidates, "ray_address", None):
        raise ConfigError("candidates.ray_address is only used with candidates.executor = ray")
