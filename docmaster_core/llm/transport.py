"""Transport to an OpenAI-compatible Chat Completions endpoint (OpenAI, Azure, Ollama,
vLLM, LM Studio): client, retries, budget and key scrubbing, behind one seam.

The backend (:class:`~docmaster_core.llm.openai_backend.OpenAILLM`: tasks, response
cache, schema validation and repair, usage records) *holds* a :class:`Transport` and
sends every request through its one method, :meth:`Transport.handle` (as ``httpx``
holds a transport behind ``handle_request``); streamed answers go through the same
method, so they get the same retry, budget and unreachable-endpoint handling as every
other call. :class:`OpenAITransport` is built on the official ``openai`` client with its
own retries switched off (``max_retries=0``); it retries itself so that every request
is counted against the per-run budget and reported to the backend's usage log:

* an endpoint that cannot be reached at all (connection refused, DNS failure,
  network unreachable) fails at once with :class:`LLMUnreachable`, one line naming
  the endpoint, and every later request of the instance fails the same way without
  trying again; :meth:`OpenAITransport.check_reachable` probes the endpoint with one
  TCP connection (at most ~4 s) before a run starts;
* retries on HTTP 408/409/429/5xx, timeouts and dropped connections, at most
  ``settings.max_retries`` times, with exponential backoff and jitter
  (``backoff_base * 2**attempt * U(0.5, 1.5)`` seconds, capped at ``backoff_max``);
  a ``Retry-After`` / ``retry-after-ms`` header of a 429/503 reply is honoured
  (capped at ``backoff_max``); a stream is retried only before its first piece;
* structured outputs (``response_format={"type": "json_schema", ...}`` with the task's
  JSON schema) for every structured task where the server supports them (OpenAI,
  vLLM, recent Ollama); a server that rejects them (HTTP 400/422 naming
  ``response_format`` / ``json_schema``, or llama-cpp-python's HTTP 500 naming
  ``response_format``) gets JSON mode with the schema attached
  (``{"type": "json_object", "schema": ...}``, which llama-cpp-python enforces as a
  grammar) from then on, and plain JSON mode if that is rejected too, the schema being
  in the prompt either way (the backend validates the
  reply against the task's pydantic schema, :mod:`docmaster_core.llm.prompts`, and
  sends exactly ONE repair request quoting the validation error);
* a per-run budget (``max_calls`` requests, ``max_tokens_budget`` tokens): a request
  that would exceed it is not sent, :class:`LLMBudgetExceeded` is raised instead;
  every HTTP request sent (retries and repairs included) counts as one call; a
  request that could not connect at all (connection refused, DNS failure; not a
  timeout) is neither counted as a call nor against the budget;
* at most ``max_concurrency`` requests in flight (a semaphore; callers may use threads);
* every request sent reported to ``on_request`` (the backend's usage per task and per
  document: calls, prompt/completion tokens, cost estimate for models in
  :data:`PRICES_PER_MTOK`).

The API key is passed to the client only; it is never logged, never put in an
exception message (messages are scrubbed) and never returned in a reply.
"""
from __future__ import annotations

import logging
import random
import re
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Protocol, Sequence
from urllib.parse import urlsplit

from ..config import LLMSettings
from ..errors import ConfigError, LLMBudgetExceeded, LLMContextError, LLMError, LLMUnreachable

__all__ = ["OpenAITransport", "Transport", "ChatRequest", "ChatReply", "complete", "PRICES_PER_MTOK",
           "estimate_cost", "display_url", "scrub_key", "without_key"]

logger = logging.getLogger("docmaster_core.llm.openai_backend")

#: US dollars per 1M (prompt, completion) tokens; matched by model-name prefix
#: (``gpt-4o-mini-2024-07-18`` uses ``gpt-4o-mini``). Source: OpenAI price list.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4o": (2.50, 10.00),
}

_RETRY_STATUS = {408, 409, 429}
#: A server's "prompt too long" reply (llama-cpp-python: "Requested tokens (N) exceed context
#: window of M"; OpenAI and vLLM: "maximum context length is M tokens"; llama.cpp's own
#: server: "exceeds the available context size ... n_ctx M").
_CONTEXT_ERR = re.compile(r"context window|context length|context size|n_ctx|exceed_context", re.I)
_CONTEXT_SIZE = re.compile(
    r"(?:context window of|context length is|context size(?: of| is)?|n_ctx\W{0,4})\s*(\d{3,7})", re.I)
_KEYLIKE = re.compile(r"\b(sk|rk|pk)-[A-Za-z0-9_\-]{6,}")
DEFAULT_ENDPOINT = "https://api.openai.com/v1"


def display_url(url: str) -> str:
    """Scheme, host, port and path of a URL: user info, query and fragment dropped
    (they may carry credentials); ``""`` for no host, ``"invalid URL"`` when unparsable."""
    try:
        u = urlsplit((url or "").strip())
        host = u.hostname or ""
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return "invalid URL"
    if not host:
        return ""
    return f"{u.scheme + '://' if u.scheme else ''}{host}{port}{u.path}"


def _resolve(host: str, port: int, timeout: float) -> tuple[str, int]:
    """The first address of ``host`` (``getaddrinfo`` in a daemon thread, so that a
    hanging resolver costs at most ``timeout`` seconds).

    Raises:
        OSError: unresolvable (``socket.gaierror``) or timed out (``TimeoutError``).
    """
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][:2])
        except OSError as e:
            out.append(e)

    th = threading.Thread(target=run, name="docmaster-resolve", daemon=True)
    th.start()
    th.join(timeout)
    if not out:
        raise TimeoutError(f"name resolution of {host} timed out")
    if isinstance(out[0], OSError):
        e = out[0]
        raise OSError(f"cannot resolve host {host} ({e.strerror or e})")
    return out[0]


def estimate_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Estimated cost in US dollars, or ``None`` when the model's price is unknown."""
    m = (model or "").lower()
    for name in sorted(PRICES_PER_MTOK, key=len, reverse=True):
        if m == name or m.startswith(name + "-"):
            p_in, p_out = PRICES_PER_MTOK[name]
            return (prompt_tokens * p_in + completion_tokens * p_out) / 1e6
    return None


def scrub_key(text: str, key: str | None) -> str:
    """``text`` with the API key ``key`` and anything shaped like a key (``sk-...``)
    replaced by ``***`` (for messages and logs)."""
    if key:
        text = text.replace(key, "***")
    return _KEYLIKE.sub(r"\1-***", text)


def without_key(text: str, key: str | None) -> str:
    """``text`` with the exact API key replaced by ``***`` (an endpoint that echoes the
    key must not get it into summaries, the cache or the workspace)."""
    return text.replace(key, "***") if key and len(key) >= 8 and key in text else text


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion asked of a :class:`Transport`.

    Attributes:
        task: Task name (usage records, log lines, error messages; the JSON schema's name).
        doc_id: Document the request is about (usage per document), or None.
        messages: ``[{"role", "content"}]`` chat messages.
        schema: JSON schema of a structured reply (``response_format`` json_schema, JSON
            mode where the server rejects it); None: JSON mode.
        stream: Plain text streamed as server-sent events (no ``response_format``).
    """

    task: str
    doc_id: str | None
    messages: list[dict[str, str]] = field(default_factory=list)
    schema: dict | None = None
    stream: bool = False


@dataclass(frozen=True)
class ChatReply:
    """A completed request: ``content`` (the reply text, API key removed) and ``tokens``
    (prompt + completion tokens the server reported; 0 when it did not)."""

    content: str
    tokens: int


class Transport(Protocol):
    """The one seam between an LLM backend and the wire (as ``httpx`` holds a transport
    behind ``handle_request``): every request of the backend, streamed or not, goes
    through :meth:`handle`."""

    def handle(self, request: ChatRequest) -> Generator[str, None, ChatReply]:
        """Send ``request``; yield the reply's text pieces as they come (streamed
        requests only) and return the :class:`ChatReply`.

        Raises:
            LLMError (and its subclasses LLMBudgetExceeded, LLMUnreachable).
        """
        ...


def complete(transport: Transport, request: ChatRequest) -> ChatReply:
    """:meth:`Transport.handle` run to its end (pieces, if any, dropped): the reply of
    a request that is not consumed piece by piece.

    Raises:
        LLMError (and its subclasses), as :meth:`Transport.handle`.
    """
    gen = transport.handle(request)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


class OpenAITransport:
    """The :class:`Transport` to an OpenAI-compatible Chat Completions endpoint: one
    client, bounded retries, the per-run budget, structured outputs and key scrubbing
    (see the module docstring), the same for streamed and whole replies. The backend
    (:class:`~docmaster_core.llm.openai_backend.OpenAILLM`) holds one.

    Args:
        settings: LLM settings (model, base URL, key, temperature, timeout in seconds,
            max_retries, max_concurrency, max_calls, max_tokens_budget).
        on_request: Called once per HTTP request sent (retries and failures included)
            with ``(task, doc_id, prompt_tokens, completion_tokens)``: the backend's
            usage records. None: not recorded.
        backoff_base: First retry delay in seconds (before jitter).
        backoff_max: Cap of any retry delay in seconds (also caps ``Retry-After``).
        seed: Seed of the private jitter generator (no global random state).

    Raises:
        ConfigError: on first use when no API key is available for api.openai.com.
    """

    is_offline = False

    def __init__(
        self,
        settings: LLMSettings,
        *,
        on_request: Callable[[str, str | None, int, int], None] | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        seed: int | None = None,
    ):
        self.settings = settings
        self.model = settings.model
        self.max_concurrency = int(settings.max_concurrency)
        self.on_request = on_request
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self._rng = random.Random(seed)
        self._sem = threading.BoundedSemaphore(self.max_concurrency)
        self._budget_lock = threading.Lock()
        self._calls_sent = 0
        self._tokens_used = 0
        self._client = None
        self._client_lock = threading.Lock()
        self._unreachable: str | None = None  # set once the endpoint refused a connection
        self._reachable = False  # set once check_reachable() connected
        # response_format: json_schema until the server rejects it, then JSON mode with the schema
        # attached (llama-cpp-python's grammar), then plain JSON mode
        self._structured = "json_schema"

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAITransport(model={self.model!r}, base_url={self.settings.resolved_base_url()!r})"

    # ------------------------------------------------------------------ plumbing
    @property
    def calls_sent(self) -> int:
        """HTTP requests sent by this instance (this run)."""
        return self._calls_sent

    @property
    def tokens_used(self) -> int:
        """Tokens counted against the budget by this instance (this run)."""
        return self._tokens_used

    def check_ready(self) -> None:
        """Cheap up-front check (no request sent): an API key is available, or a
        ``base_url`` names a local endpoint that needs none.

        Raises:
            ConfigError: no API key for api.openai.com.
        """
        if not self.settings.resolved_api_key() and not self.settings.resolved_base_url():
            raise ConfigError(
                "no API key for the OpenAI backend: set OPENAI_API_KEY or DOCMASTER_LLM__API_KEY, "
                "or set a base_url for a local endpoint"
            )

    @property
    def endpoint(self) -> str:
        """The endpoint for messages: scheme, host, port and path, never credentials."""
        return display_url(self.settings.resolved_base_url() or DEFAULT_ENDPOINT) or "invalid URL"

    def check_reachable(self, timeout: float = 3.0) -> None:
        """Probe the endpoint with one TCP connection (no HTTP request), so that a run
        on a dead endpoint fails in seconds, before any model load or retrieval.
        Skipped when a proxy carries the requests; done once per instance.

        Args:
            timeout: Seconds for name resolution and for the connection, each.

        Raises:
            ConfigError: the base URL has no host.
            LLMUnreachable: refused, unresolvable or timed out (one line naming the endpoint).
        """
        if self._unreachable:
            raise LLMUnreachable(self._unreachable)
        if self._reachable:
            return
        u = urlsplit(self.settings.resolved_base_url() or DEFAULT_ENDPOINT)
        try:
            host, port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        except ValueError:
            host, port = None, None
        if not host:
            raise ConfigError(f"the LLM base URL {self.endpoint!r} has no host (expected e.g. http://localhost:11434/v1)")
        if urllib.request.getproxies().get(u.scheme) and not urllib.request.proxy_bypass(host):
            self._reachable = True
            return
        try:
            addr = _resolve(host, port, timeout)
            socket.create_connection(addr, timeout=timeout).close()
        except OSError as e:
            why = "connection timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e) or type(e).__name__)
            self._unreachable = f"cannot reach the LLM endpoint {self.endpoint}: {why}"
            raise LLMUnreachable(self._unreachable) from None
        self._reachable = True

    def _get_client(self):
        if self._client is not None:
            return self._client
        with self._client_lock:
            if self._client is None:
                try:
                    from openai import OpenAI
                except ImportError as e:  # pragma: no cover - install problem
                    raise ConfigError("the openai package is not installed (pip install openai)") from e
                self.check_ready()
                base_url = self.settings.resolved_base_url()
                key = self.settings.resolved_api_key()
                if not key:
                    key = "not-needed"  # local OpenAI-compatible servers ignore the key
                self._client = OpenAI(base_url=base_url, api_key=key, timeout=self.settings.timeout, max_retries=0)
        return self._client

    def _scrub(self, text: str) -> str:
        return scrub_key(text, self.settings.resolved_api_key())

    def _describe(self, err: Exception) -> str:
        import openai

        if isinstance(err, openai.APITimeoutError):
            return f"request timed out after {self.settings.timeout:g} s"
        if isinstance(err, openai.APIConnectionError):
            cause = err.__cause__ or err
            return "connection error: " + self._scrub(f"{type(cause).__name__}: {cause}")[:200]
        if isinstance(err, openai.APIStatusError):
            return f"HTTP {err.status_code}: " + self._scrub(str(getattr(err, "message", "") or err))[:200]
        return self._scrub(f"{type(err).__name__}: {err}")[:200]

    def _unreachable_reason(self, err: Exception) -> str | None:
        """A one-line reason when ``err`` means the endpoint cannot be reached at all
        (the connection itself failed: refused, DNS, no route), else None. Timeouts and
        connections dropped after they were made are not this (they are retried)."""
        import openai

        if not isinstance(err, openai.APIConnectionError) or isinstance(err, openai.APITimeoutError):
            return None
        c: BaseException | None = err.__cause__ or err.__context__
        while c is not None:
            # the HTTP library's ConnectError (httpx or the client's bundled copy), or the
            # socket error itself: the connection was never made
            if type(c).__name__ == "ConnectError" or isinstance(c, (ConnectionRefusedError, socket.gaierror)):
                inner = c.__cause__ or c.__context__ or c
                why = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
                return f"cannot reach the LLM endpoint {self.endpoint}: " + self._scrub(" ".join(str(why).split()))[:160]
            c = c.__cause__ or c.__context__
        return None

    def _context_overflow(self, err: Exception) -> int | None:
        """The context size (tokens; 0 when the message does not say) when ``err`` is a
        400/413/422 reply saying the prompt does not fit the model's context, else None."""
        import openai

        if not isinstance(err, openai.APIStatusError) or err.status_code not in (400, 413, 422):
            return None
        text = str(getattr(err, "message", "") or err)
        if not _CONTEXT_ERR.search(text):
            return None
        m = _CONTEXT_SIZE.search(text)
        return int(m.group(1)) if m else 0

    def _context_message(self, request: ChatRequest, estimate: int, ctx: int) -> str:
        size = f"context window of {ctx} tokens" if ctx else "context window"
        return (f"{request.task}: the prompt (about {estimate} tokens by the client's estimate) does not fit "
                f"{self.model}'s {size}; the server refused it. Set llm.context_tokens "
                f"(DOCMASTER_LLM__CONTEXT_TOKENS{'=' + str(ctx) if ctx else ''}) so evidence is trimmed to fit, "
                f"or give the server a larger context (llama.cpp --n_ctx, Ollama num_ctx)")

    def _rejects_structured(self, err: Exception) -> bool:
        """True when a 400/422 reply rejects the response format, or a 500 reply names
        ``response_format`` (llama-cpp-python answers an unknown ``json_schema`` type
        with HTTP 500 and its validation error; retrying it would only repeat it)."""
        import openai

        if not isinstance(err, openai.APIStatusError) or err.status_code not in (400, 422, 500):
            return False
        text = str(getattr(err, "message", "") or err).lower()
        if err.status_code == 500:
            return "response_format" in text
        return any(w in text for w in ("response_format", "json_schema", "schema", "structured"))

    def _response_format(self, task: str, schema: dict | None) -> dict[str, Any]:
        """The request's ``response_format``: ``json_schema`` with the task's schema;
        after a server rejected that, JSON mode carrying the schema as ``schema``
        (llama-cpp-python turns it into a grammar; others may ignore it); after that
        was rejected too, plain JSON mode."""
        if schema is not None and self._structured == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": task, "schema": schema, "strict": False}}
        if schema is not None and self._structured == "json_object+schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _retryable(self, err: Exception) -> bool:
        import openai

        if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
            return True
        if isinstance(err, openai.APIStatusError):
            return err.status_code in _RETRY_STATUS or err.status_code >= 500
        return False

    def _delay(self, attempt: int, err: Exception) -> float:
        """Seconds to wait before retry ``attempt + 1`` (Retry-After honoured, capped)."""
        headers = getattr(getattr(err, "response", None), "headers", None)
        if headers is not None:
            for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
                val = headers.get(name)
                if val is not None:
                    try:
                        return max(0.0, min(float(val) / div, self.backoff_max))
                    except ValueError:
                        pass
        return min(self.backoff_max, self.backoff_base * (2**attempt) * (0.5 + self._rng.random()))

    @staticmethod
    def _estimate_tokens(messages: Sequence[dict[str, str]]) -> int:
        return sum(len(m.get("content") or "") for m in messages) // 4 + 8 * len(messages)

    def _reserve(self, estimate: int) -> None:
        """Count one request against the budget before it is sent; raise when over budget."""
        s = self.settings
        with self._budget_lock:
            if s.max_calls is not None and self._calls_sent + 1 > s.max_calls:
                raise LLMBudgetExceeded(f"call budget spent: {self._calls_sent} of {s.max_calls} calls used")
            if s.max_tokens_budget is not None and self._tokens_used + estimate > s.max_tokens_budget:
                raise LLMBudgetExceeded(
                    f"token budget spent: {self._tokens_used} of {s.max_tokens_budget} tokens used, "
                    f"next request needs about {estimate}"
                )
            self._calls_sent += 1
            self._tokens_used += estimate

    def _unreserve(self) -> None:
        """Give back the call counted by :meth:`_reserve` for a request that never
        reached the server (its tokens were already given back by :meth:`_settle`)."""
        with self._budget_lock:
            self._calls_sent = max(0, self._calls_sent - 1)

    @staticmethod
    def _never_reached(err: Exception) -> bool:
        """True for a connection error (refused, DNS, reset before a reply) that is not a
        timeout: the request got no response and is not counted as a call. A timeout
        may have been processed (and billed) by the server, so it still counts."""
        try:
            import openai
        except ImportError:  # pragma: no cover - install problem
            return False
        return isinstance(err, openai.APIConnectionError) and not isinstance(err, openai.APITimeoutError)

    def _settle(self, estimate: int, actual: int) -> None:
        with self._budget_lock:
            self._tokens_used += actual - estimate

    def _recorded(self, task: str, doc_id: str | None, pt: int, ct: int) -> None:
        if self.on_request is not None:
            self.on_request(task, doc_id, pt, ct)

    def handle(self, request: ChatRequest) -> Generator[str, None, ChatReply]:
        """One chat completion, whole or streamed, with the one retry and budget loop:
        every attempt is reserved against the budget before it is sent, a connection
        that was never made is not counted, an unreachable endpoint fails at once (and
        every later request of this instance too), retryable errors (408/409/429/5xx,
        timeouts, dropped connections) are retried with backoff. A streamed request is
        retried only before its first piece; one whose server rejects
        ``stream_options`` (HTTP 400) is asked again without usage reporting; a whole
        request whose server rejects structured outputs is asked again in JSON mode.

        Yields:
            The reply's text pieces as they arrive (streamed requests only).

        Returns:
            The :class:`ChatReply` (content with the API key removed; tokens reported).

        Raises:
            LLMBudgetExceeded: before a request that would exceed the budget.
            LLMUnreachable: the endpoint cannot be reached (not retried).
            LLMError: after the retries, at once on a non-retryable HTTP error, a
                stream broken after its first piece, or a stream that ends without a
                finish reason.
        """
        if self._unreachable:
            raise LLMUnreachable(self._unreachable)
        client = self._get_client()
        task, doc_id = request.task, request.doc_id
        estimate = self._estimate_tokens(request.messages)
        attempts = self.settings.max_retries + 1
        last: Exception | None = None
        attempt = 0
        include_usage = True
        while attempt < attempts:
            self._reserve(estimate)
            parts: list[str] = []
            fmt = None if request.stream else self._response_format(task, request.schema)
            finish: str | None = "stop"
            try:
                with self._sem:
                    if request.stream:
                        pt, ct, finish = yield from self._stream_once(client, request, include_usage, parts)
                        content = "".join(parts)
                    else:
                        content, pt, ct = self._complete_once(client, request, fmt)
            except Exception as err:  # noqa: BLE001 - classified below, re-raised as LLMError
                self._settle(estimate, 0)
                if not parts and self._never_reached(err):
                    self._unreserve()  # no connection: not a call, not counted against the budget
                else:
                    self._recorded(task, doc_id, 0, 0)
                if not self._is_openai_error(err):
                    raise
                unreachable = None if parts else self._unreachable_reason(err)
                if unreachable:
                    self._unreachable = unreachable
                    raise LLMUnreachable(unreachable) from None
                ctx = None if parts else self._context_overflow(err)
                if ctx is not None:
                    raise LLMContextError(self._context_message(request, estimate, ctx), ctx or None) from None
                if fmt is not None and self._rejects_structured(err) and (
                        fmt["type"] == "json_schema" or "schema" in fmt):
                    nxt = "json_object+schema" if fmt["type"] == "json_schema" else "json_object"
                    logger.info("%s: %s rejects response_format %s; %s from now on", task, self.endpoint,
                                "json_schema" if fmt["type"] == "json_schema" else "json_object with a schema",
                                "JSON mode with the schema" if nxt == "json_object+schema" else "plain JSON mode")
                    self._structured = nxt  # the same attempt again, in the next mode
                    continue
                if request.stream and not parts and include_usage and getattr(err, "status_code", None) == 400:
                    include_usage = False  # endpoint without stream_options support: ask again without
                    continue
                if parts or not self._retryable(err):
                    raise LLMError(self._failure(request, err, parts)) from None
                last = err
                if attempt + 1 < attempts:
                    delay = self._delay(attempt, err)
                    logger.warning(
                        "%s: %s (attempt %d/%d), retrying in %.2f s", task, self._describe(err), attempt + 1, attempts, delay
                    )
                    time.sleep(delay)
                attempt += 1
                continue
            self._settle(estimate, pt + ct)
            self._recorded(task, doc_id, pt, ct)
            if finish is None:
                raise LLMError(f"{task}: {self.model} stream ended before the model finished")
            return ChatReply(without_key(content, self.settings.resolved_api_key()), pt + ct)
        assert last is not None
        if request.stream:
            raise LLMError(self._failure(request, last, [])) from None
        raise LLMError(
            f"{task}: {self.model} failed after {attempts} attempt(s): {self._describe(last)}"
        ) from None

    def _failure(self, request: ChatRequest, err: Exception, parts: list[str]) -> str:
        if request.stream:
            where = "mid-stream" if parts else "before the first token"
            return f"{request.task}: {self.model} stream failed {where}: {self._describe(err)}"
        return f"{request.task}: {self.model} request failed: {self._describe(err)}"

    def _complete_once(self, client: Any, request: ChatRequest, fmt: dict[str, Any]) -> tuple[str, int, int]:
        """One whole request: ``(content, prompt tokens, completion tokens)``."""
        resp = client.chat.completions.create(
            model=self.model,
            messages=request.messages,
            temperature=self.settings.temperature,
            response_format=fmt,
            **self._max_tokens(),
        )
        usage = getattr(resp, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            content = resp.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError):
            content = ""
        return content, pt, ct

    def _stream_once(self, client: Any, request: ChatRequest, include_usage: bool,
                     parts: list[str]) -> Generator[str, None, tuple[int, int, str | None]]:
        """One streamed request: yields its pieces (also appended to ``parts``) and
        returns ``(prompt tokens, completion tokens, finish reason or None)``."""
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
        stream = client.chat.completions.create(
            model=self.model,
            messages=request.messages,
            temperature=self.settings.temperature,
            stream=True,
            **extra,
            **self._max_tokens(),
        )
        pt = ct = 0
        finish = None
        try:
            for chunk in stream:
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    pt = int(getattr(usage, "prompt_tokens", 0) or 0)
                    ct = int(getattr(usage, "completion_tokens", 0) or 0)
                for choice in chunk.choices or []:
                    piece = getattr(choice.delta, "content", None) if choice.delta else None
                    if piece:
                        parts.append(piece)
                        yield piece
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            stream.close()
        return pt, ct, finish

    def _max_tokens(self) -> dict[str, int]:
        """``{"max_tokens": n}`` when ``settings.max_tokens`` caps the completion, else ``{}``."""
        n = getattr(self.settings, "max_tokens", None)
        return {"max_tokens": int(n)} if n else {}

    @staticmethod
    def _is_openai_error(err: Exception) -> bool:
        import openai

        return isinstance(err, openai.OpenAIError)
