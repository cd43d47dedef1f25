"""A fake OpenAI-compatible server for tests: the real Chat Completions HTTP protocol on 127.0.0.1.

The real ``openai`` client talks to it over HTTP, so tests exercise the real request
encoding, status handling, timeouts and server-sent-event streaming; nothing is mocked.

Usage::

    with FakeOpenAIServer() as server:
        server.enqueue(Reply(status=429, headers={"retry-after": "0"}), Reply(content='{"summary": "x"}'))
        llm = OpenAILLM(LLMSettings(backend="openai", base_url=server.base_url, api_key="sk-test"))
        ...
        assert server.count == 2
        server.requests[0].body["messages"]

Replies come from the scripted queue first, then from ``responder(request)`` (a
callable returning a :class:`Reply` or a content string), else an HTTP 500.
"""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

__all__ = ["Reply", "RecordedRequest", "FakeOpenAIServer", "documents_in", "user_text"]


@dataclass
class Reply:
    """One scripted server reply.

    Attributes:
        content: Assistant message content of a 200 reply (JSON text for JSON tasks).
        status: HTTP status; non-200 replies send ``body`` or an OpenAI-style error.
        body: Raw JSON body to send instead of a chat completion.
        headers: Extra response headers (e.g. ``{"retry-after": "0"}``).
        delay: Seconds to wait before replying (for client timeouts).
        chunks: Content pieces for ``stream=True`` (default: ``content`` in 3 pieces).
        drop_after: With streaming, close the connection abruptly after this many chunks.
        prompt_tokens: Usage reported to the client.
        completion_tokens: Usage reported to the client.
        finish_reason: Finish reason of the choice.
        drop: Close the connection at once, without any response (a dropped connection).
        truncate_body: Send the status line, headers (with the full content-length) and
            only this many bytes of a non-streamed JSON body, then close (a reply cut
            off in transit).
    """

    content: str | None = None
    status: int = 200
    body: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: list[str] | None = None
    drop_after: int | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    finish_reason: str = "stop"
    drop: bool = False
    truncate_body: int | None = None


@dataclass
class RecordedRequest:
    """One request the server received (``body`` is the decoded JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])


def user_text(request: RecordedRequest | dict) -> str:
    """Concatenated content of the user messages of a request."""
    body = request.body if isinstance(request, RecordedRequest) else request
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")


_DOC = re.compile(r"<document\b([^>]*)>(.*?)</document>", re.S)


def documents_in(text: str) -> list[tuple[dict[str, str], str]]:
    """The ``<document ...>...</document>`` blocks of a prompt: (attributes, raw inner text)."""
    out = []
    for attrs, inner in _DOC.findall(text):
        out.append((dict(re.findall(r'(\w+)="([^"]*)"', attrs)), inner))
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        req = RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        reply = fake._next_reply(req)
        with fake._lock:
            fake._in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
        try:
            if reply.delay:
                fake._stop.wait(reply.delay)
            if reply.drop:
                self._abort()
            elif not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
            elif reply.status != 200 or reply.body is not None:
                payload = reply.body or {
                    "error": {"message": f"scripted HTTP {reply.status}", "type": "server_error", "code": None}
                }
                self._send_json(reply.status, payload, reply.headers)
            elif body.get("stream"):
                self._send_stream(body, reply)
            else:
                self._send_json(200, _completion(body, reply), reply.headers, truncate=reply.truncate_body)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout):
            pass  # the client gave up (timeout) before we answered
        finally:
            with fake._lock:
                fake._in_flight -= 1

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None,
                   truncate: int | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if truncate is not None:
            self.wfile.write(data[: max(0, truncate)])
            self._abort()
            return
        self.wfile.write(data)
        self.wfile.flush()

    def _abort(self) -> None:
        """Close the connection abruptly (no further bytes)."""
        try:
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_stream(self, body: dict, reply: Reply) -> None:
        content = reply.content or ""
        chunks = reply.chunks
        if chunks is None:
            step = max(1, len(content) // 3 + 1)
            chunks = [content[i : i + step] for i in range(0, len(content), step)] or [""]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": body.get("model", "")}
        events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": c}, "finish_reason": None}]} for c in chunks]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({**base, "choices": [], "usage": _usage(reply)})
        for i, ev in enumerate(events):
            if reply.drop_after is not None and i >= reply.drop_after:
                # abrupt close mid-stream: no terminating chunk, no [DONE]
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._chunk(f"data: {json.dumps(ev)}\n\n".encode())
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _completion(body: dict, reply: Reply) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": _usage(reply),
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: "FakeOpenAIServer"


class FakeOpenAIServer:
    """A threaded HTTP server on 127.0.0.1 (free port) speaking Chat Completions.

    Args:
        responder: Called with each :class:`RecordedRequest` when the scripted queue is
            empty; returns a :class:`Reply` or a content string.

    Attributes:
        requests: Every request received, in arrival order.
        max_in_flight: Highest number of requests handled at the same time.
    """

    def __init__(self, responder: Callable[[RecordedRequest], Reply | str] | None = None):
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> "FakeOpenAIServer":
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- scripting and inspection
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        """Number of requests received."""
        with self._lock:
            return len(self.requests)

    def enqueue(self, *replies: Reply | str) -> None:
        """Script the next replies (a string is the content of a 200 reply)."""
        with self._lock:
            for r in replies:
                self._queue.append(Reply(content=r) if isinstance(r, str) else r)

    def _next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(req)
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            r = self.responder(req)
            return Reply(content=r) if isinstance(r, str) else r
        return Reply(status=500, body={"error": {"message": "no scripted reply", "type": "server_error"}})
