"""A free TCP port on 127.0.0.1, for a server a test or benchmark starts as a
subprocess (one in-process takes port 0 and reports what it got)."""
from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
