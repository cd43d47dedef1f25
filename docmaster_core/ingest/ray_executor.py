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

``ray`` is imported only here, and only when the ``ray`` executor is used.
"""
from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError, DocMasterError
from .prepare import IngestEvent, IngestResult, PreparedDocument, failure_reason, prepare_document

__all__ = ["check_ray_ready", "ingest_on_ray", "ray_session", "parse_task", "EmbedActor"]

#: Environment variables that hold LLM credentials: hidden from a local Ray instance.
SECRET_ENV = ("OPENAI_API_KEY", "DOCMASTER_LLM__API_KEY")

#: Seconds to wait for a TCP connection to a HOST:PORT Ray address before giving up.
CONNECT_TIMEOUT = 5.0


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs the ray package: pip install ray==2.60.0") from None
    return ray


def _one_line(text: Any, limit: int = 300) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _auth_failure(err: BaseException) -> bool:
    """Whether ``err`` or an exception in its chain is Ray's token authentication refusal."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if type(err).__name__ == "AuthenticationError" or "InvalidAuthToken" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def check_ray_ready(address: str | None, stage: Any = None) -> str | None:
    """Check, before any file is touched, that the ray executor can run.

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
    _import_ray()
    if address is not None:
        address = address.strip()
        if address != "auto":
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ConfigError(f"bad Ray address {address!r}: expected auto or HOST:PORT (e.g. 127.0.0.1:6379)")
    if stage is not None:
        from ..embedding.embedders import get_embedder

        want = getattr(get_embedder(stage.settings.embedding), "name", "")
        have = getattr(stage.embedder, "name", "")
        if want != have:
            raise ConfigError(f"the ray executor embeds with the settings' embedder ({want}), "
                              f"but this DocMaster was given another one ({have})")
    return address


@contextlib.contextmanager
def ray_session(address: str | None):
    """A Ray connection for one ingest.

    If this process is already connected (``ray.is_initialized()``), that connection is
    used and left open. Otherwise ``address=None`` starts a local Ray instance with
    ``os.cpu_count()`` CPUs (no dashboard, usage stats off, the :data:`SECRET_ENV`
    variables hidden from its processes) and shuts it down on exit;
    ``"auto"`` / ``"HOST:PORT"`` connects to a running cluster and disconnects on exit
    (the cluster keeps running).

    Yields:
        The ``ray`` module.

    A local start with Ray 2.60 turns on Ray's token authentication and creates
    ``~/.ray/auth_token`` if missing (Ray's own default for new local clusters).

    Raises:
        ConfigError: a local instance cannot start; the address is unreachable, no Ray
            cluster answers there, or it refuses this client's authentication token
            (one line naming the address).
    """
    ray = _import_ray()
    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    if address is None:
        # the local raylet and its workers inherit this environment: keep API keys out
        hidden = {k: os.environ.pop(k) for k in list(os.environ) if k in SECRET_ENV}
        try:
            ray.init(address="local", num_cpus=os.cpu_count(), **quiet)
        except Exception as e:  # noqa: BLE001 - ray raises many types
            raise ConfigError(f"could not start a local Ray instance: {_one_line(e)}") from None
        finally:
            os.environ.update(hidden)
    else:
        if address != "auto":
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
            except OSError as e:
                raise ConfigError(f"cannot reach the Ray cluster at {address}: {_one_line(e.strerror or e)}") from None
        try:
            ray.init(address=address, **quiet)
        except Exception as e:  # noqa: BLE001
            if _auth_failure(e):
                raise ConfigError(f"the Ray cluster at {address} refused this client's authentication token: set "
                                  "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's "
                                  "token") from None
            raise ConfigError(f"cannot connect to the Ray cluster at {address}: {_one_line(e)}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


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

