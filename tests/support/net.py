"""Network helpers for tests."""
from __future__ import annotations

import socket


def closed_port() -> int:
    """A loopback TCP port nothing listens on (bound, read, released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
