"""Connecting to a Ray cluster: shared by the Ray executor of ingest
(:mod:`docmaster_core.ingest.ray_executor`) and the Ray scoring of filter candidates
(:mod:`docmaster_core.filtering.ray_scoring`).

``ray`` is imported only here, and only when a Ray path is used. A local instance is
started without the LLM credentials in its environment (:data:`SECRET_ENV`).
"""
from __future__ import annotations

import contextlib
import os
import socket
from typing import Any

from .errors import ConfigError

__all__ = ["SECRET_ENV", "CONNECT_TIMEOUT", "import_ray", "one_line", "check_address", "connect", "disconnect",
           "ray_session"]

#: Environment variables that hold LLM credentials: hidden from a local Ray instance.
SECRET_ENV = ("OPENAI_API_KEY", "DOCMASTER_LLM__API_KEY")

#: Seconds to wait for a TCP connection to a HOST:PORT Ray address before giving up.
CONNECT_TIMEOUT = 5.0


def import_ray():
    """The ``ray`` module.

    Raises:
        ConfigError: ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("the ray executor needs the ray package: pip install ray==2.60.0") from None
    return ray


def one_line(text: Any, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (error messages)."""
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


def check_address(address: str | None) -> str | None:
    """A Ray address checked for form (nothing is contacted).

    Args:
        address: ``None`` (start a local Ray instance), ``"auto"`` or ``"HOST:PORT"``.

    Returns:
        The address, stripped (``None`` stays ``None``).

    Raises:
        ConfigError: ray is not installed, or the address is malformed.
    """
    import_ray()
    if address is not None:
        address = address.strip()
        if address != "auto":
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ConfigError(f"bad Ray address {address!r}: expected auto or HOST:PORT (e.g. 127.0.0.1:6379)")
    return address


def connect(address: str | None) -> tuple[Any, bool]:
    """Connect this process to Ray.

    If this process is already connected (``ray.is_initialized()``), that connection is
    used. Otherwise ``address=None`` starts a local Ray instance with ``os.cpu_count()``
    CPUs (no dashboard, usage stats off, the :data:`SECRET_ENV` variables hidden from its
    processes); ``"auto"`` / ``"HOST:PORT"`` connects to a running cluster. A local start
    with Ray 2.60 turns on Ray's token authentication and creates ``~/.ray/auth_token`` if
    missing (Ray's own default for new local clusters).

    Returns:
        ``(ray module, owned)``: ``owned`` is True when this call made the connection
        (:func:`disconnect` then ends it).

    Raises:
        ConfigError: a local instance cannot start; the address is unreachable, no Ray
            cluster answers there, or it refuses this client's authentication token
            (one line naming the address).
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    quiet = dict(include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    if address is None:
        # the local raylet and its workers inherit this environment: keep API keys out
        hidden = {k: os.environ.pop(k) for k in list(os.environ) if k in SECRET_ENV}
        try:
            ray.init(address="local", num_cpus=os.cpu_count(), **quiet)
        except Exception as e:  # noqa: BLE001 - ray raises many types
            raise ConfigError(f"could not start a local Ray instance: {one_line(e)}") from None
        finally:
            os.environ.update(hidden)
    else:
        if address != "auto":
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
            except OSError as e:
                raise ConfigError(f"cannot reach the Ray cluster at {address}: {one_line(e.strerror or e)}") from None
        try:
            ray.init(address=address, **quiet)
        except Exception as e:  # noqa: BLE001
            if _auth_failure(e):
                raise ConfigError(f"the Ray cluster at {address} refused this client's authentication token: set "
                                  "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) to the cluster's "
                                  "token") from None
            raise ConfigError(f"cannot connect to the Ray cluster at {address}: {one_line(e)}") from None
    return ray, True


def disconnect(ray, owned: bool) -> None:
    """End a connection :func:`connect` made (``owned``); a borrowed one stays open."""
    if owned:
        ray.shutdown()


@contextlib.contextmanager
def ray_session(address: str | None):
    """A Ray connection for one job (:func:`connect`, then :func:`disconnect` on exit;
    the cluster itself keeps running).

    Yields:
        The ``ray`` module.

    Raises:
        ConfigError: see :func:`connect`.
    """
    ray, owned = connect(address)
    try:
        yield ray
    finally:
        disconnect(ray, owned)
