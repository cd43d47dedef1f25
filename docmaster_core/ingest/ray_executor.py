"""The Ray executor of ingest (issue 18): ``docmaster ingest PATH --executor ray``.

What runs where:

* **Ray tasks** (one per file, 1 CPU each): parse -> document tree -> embedding texts
  (:func:`docmaster_core.ingest.stage.prepare_document` without an embedder).
* **Ray actors** (``settings.ingest.ray_actors``, default ``max(1, cluster CPUs // 4)``):
  each loads ONE embedding model with
  :func:`docmaster_core.embedding.embedders.get_embedder` ``(settings.embedding)`` and embeds
  batches of up to ``settings.ingest.ray_batch_docs`` documents per call.
* **This process** (the driver, holding the workspace write lock): the LLM steps
  (summaries, per-document semantic index) and every workspace write, one
  ``add_document`` transaction per document in the order the documents complete. A
  run that is interrupted leaves the completed documents stored; running it again skips
  them by SHA-256, as with the local executor.

Only the parsing and embedding settings travel to the workers, as plain dicts
(``model_dump``): never the LLM settings or an API key (Ray keeps task arguments and
runtime environments in its GCS). Workers read the input files by path, so on a
multi-node cluster the inputs must be on a filesystem every node mounts at the same path.

``ray`` is imported only when the ``ray`` executor is used (the connection:
:mod:`docmaster_core.ray_cluster`).
"""
from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, DocMasterError
from ..ray_cluster import check_address, import_ray as _import_ray, one_line as _one_line, ray_session
from .prepare import IngestEvent, IngestResult, PreparedDocument, failure_reason, prepare_document

__all__ = ["check_ray_ready", "ingest_on_ray", "ray_session", "parse_task", "EmbedActor"]


def check_ray_ready(address: str | None, stage: Any = None) -> str | None:
    """Check, before any file is touched, that the ray executor can run (the connection
    itself: :func:`docmaster_core.ray_cluster.ray_session`).

    Args:
        address: ``None`` (start a local Ray instance), ``"auto"`` or ``"HOST:PORT"``.
        stage: The ingesting :class:`~docmaster_core.pipeline.DocMaster`; its embedder
            must be the one ``settings.embedding`` gives (that is what the actors load).

    Returns:
        The address, stripped (``None`` stays ``None``).

    Raises:
        ConfigError: ray is not installed, the address is malformed, or the facade was
            given an embedder other than the settings' one (one-line reason).
    """
    address = check_address(address)
    if stage is not None:
        from ..embedding.embedders import get_embedder

        want = getattr(get_embedder(stage.settings.embedding), "name", "")
        have = getattr(stage.embedder, "name", "")
        if want != have:
            raise ConfigError(f"the ray executor embeds with the settings' embedder ({want}), "
                              f"but this DocMaster was given another one ({have})")
    return address


def parse_task(path: str, sha: str, parsing: dict[str, Any]) -> PreparedDocument | str:
    """Ray task body: :func:`~docmaster_core.ingest.stage.prepare_document` of one file
    without vectors.

    Args:
        path: The input file, as the driver sees it (read on the worker's node).
        sha: Its SHA-256 (hex).
        parsing: ``ParsingSettings.model_dump()``.

    Returns:
        The prepared document, or the failure reason (the same text a local ingest
        records) when the file cannot be parsed. Never raises for a bad file.
    """
    from ..config import ParsingSettings

    p = Path(path)
    if not p.exists():
        return (f"{p.name}: not found on Ray node {socket.gethostname()}: the inputs must be on a "
                "filesystem every node mounts at the same path")
    try:
        return prepare_document(p, sha, ParsingSettings(**parsing))
    except Exception as e:  # noqa: BLE001 - reported per file, like the local executor
        return failure_reason(p, e)


class EmbedActor:
    """Ray actor body: ONE embedding model, loaded once with
    :func:`~docmaster_core.embedding.embedders.get_embedder` ``(EmbeddingSettings(**embedding))``.

    Args:
        embedding: ``EmbeddingSettings.model_dump()``.
    """

    def __init__(self, embedding: dict[str, Any]):
        from ..config import EmbeddingSettings
        from ..embedding.embedders import get_embedder

        self.embedder = get_embedder(EmbeddingSettings(**embedding))
        self.name = getattr(self.embedder, "name", "")

    def embed(self, batch: list[list[str]]) -> tuple[str, list[tuple[np.ndarray | None, float, str]]]:
        """Embed the texts of several documents, one encode call per document.

        One call per document, as a local ingest makes: batches (and their padding) then
        hold the same texts, so the vectors equal a local ingest's for every backend (in
        bfloat16 or int8 the result of a text depends on the batch it is padded with).

        Args:
            batch: Per document, its node texts.

        Returns:
            The embedder's name and, per document, ``(vectors, seconds, error)``: vectors
            float32 (n_texts, d) with unit rows and the encode time in seconds, or
            ``(None, 0.0, reason)`` when encoding failed (the document's own reason, as a
            local ingest would record it).
        """
        return self.name, [self._one(texts) for texts in batch]

    def _one(self, texts: list[str]) -> tuple[np.ndarray | None, float, str]:
        t0 = time.perf_counter()
        try:
            return np.asarray(self.embedder.encode(texts), dtype=np.float32), time.perf_counter() - t0, ""
        except Exception as e:  # noqa: BLE001 - the writer prefixes the file name, as locally
            return None, 0.0, str(e) if isinstance(e, DocMasterError) else f"unexpected {type(e).__name__}: {e}"


def ingest_on_ray(stage: Any, todo: list[tuple[int, Path, str]], total: int, emit: Callable[[IngestEvent], None],
                  build_index: bool, summaries: bool, address: str | None) -> list[IngestResult]:
    """Run the files of ``todo`` (``[(input index, path, sha256)]``, none stored yet)
    through Ray and store them from this process.

    Called by :meth:`~docmaster_core.ingest.stage.IngestStage.ingest` inside its write lock.
    Emits the same :class:`IngestEvent` stages as the local executor (``parsing`` when
    a file's task is submitted, ``embedding`` when it goes to an actor, then the
    driver's ``summarising``, ``storing``, ``indexing`` and ``done``/``failed``;
    ``elapsed`` counts seconds from the submission).

    Returns:
        One :class:`IngestResult` per ``todo`` entry, in ``todo`` order (the stores
        happen in completion order).

    Raises:
        ConfigError: Ray cannot be started or reached (see :func:`ray_session`).
    """
    st = stage.settings
    parsing = st.parsing.model_dump()
    embedding = st.embedding.model_dump()  # never st.llm: no key leaves this process
    results: dict[int, IngestResult] = {}
    with ray_session(address) as ray:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n_actors = min(len(todo), st.ingest.ray_actors or max(1, cpus // 4))
        parse = ray.remote(num_cpus=1, max_retries=1)(parse_task)
        actor_cls = ray.remote(num_cpus=1 if cpus >= 2 else 0, max_restarts=1, max_task_retries=1)(EmbedActor)
        actors = [actor_cls.remote(embedding) for _ in range(n_actors)]
        busy = {k: 0 for k in range(n_actors)}  # batches in flight per actor
        window = 2 * cpus  # parse tasks in flight: bounded memory for big batches
        t_start: dict[int, float] = {}
        parsing_refs: dict[Any, int] = {}
        embedding_refs: dict[Any, tuple[int, list[tuple[int, PreparedDocument]]]] = {}
        ready: list[tuple[int, PreparedDocument]] = []
        nxt = 0

        def finish(j: int, prep: PreparedDocument | str) -> None:
            i, p, sha = todo[j]
            results[j] = stage._complete(prep, p, sha, i, total, t_start[j], emit, build_index, summaries)

        def flush() -> None:
            while ready and (len(ready) >= st.ingest.ray_batch_docs or not parsing_refs or min(busy.values()) == 0):
                k = min(busy, key=busy.get)
                batch, ready[:] = ready[: st.ingest.ray_batch_docs], ready[st.ingest.ray_batch_docs:]
                for j, _ in batch:
                    i, p, _sha = todo[j]
                    emit(IngestEvent(str(p), i, total, "embedding", time.perf_counter() - t_start[j]))
                embedding_refs[actors[k].embed.remote([prep.texts for _, prep in batch])] = (k, batch)
                busy[k] += 1

        try:
            while nxt < len(todo) or parsing_refs or embedding_refs or ready:
                while nxt < len(todo) and len(parsing_refs) < window:
                    i, p, sha = todo[nxt]
                    t_start[nxt] = time.perf_counter()
                    emit(IngestEvent(str(p), i, total, "parsing", 0.0))
                    parsing_refs[parse.remote(str(p), sha, parsing)] = nxt
                    nxt += 1
                flush()
                done, _ = ray.wait([*parsing_refs, *embedding_refs], num_returns=1)
                ref = done[0]
                if ref in parsing_refs:
                    j = parsing_refs.pop(ref)
                    try:
                        out = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - a crashed worker fails its file only
                        out = f"{todo[j][1].name}: Ray parse task failed: {type(e).__name__}: {_one_line(e, 200)}"
                    if isinstance(out, str):
                        finish(j, out)
                    else:
                        ready.append((j, out))
                    continue
                k, batch = embedding_refs.pop(ref)
                busy[k] -= 1
                try:
                    name, vecs = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - the actor died (twice): fail its batch
                    name, why = "", f"Ray embedding actor failed: {type(e).__name__}: {_one_line(e, 200)}"
                    vecs = [(None, 0.0, why)] * len(batch)
                for (j, prep), (emb, dt, err) in zip(batch, vecs):
                    if emb is None:
                        finish(j, err)
                        continue
                    prep.embeddings, prep.embedding_model = emb, name
                    prep.timings["embed"] = dt
                    finish(j, prep)
        finally:
            for ref in parsing_refs:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            for a in actors:
                with contextlib.suppress(Exception):
                    ray.kill(a)
    return [results[j] for j in range(len(todo))]

