"""Raw HTTP/1.1 over a socket, for tests that send what no well-behaved client would (a
folded header line, a head past the listener's bound, two requests in one write) and
look at exactly what came back.

Example::

    from kafka_wire.testing.http_raw import answers, read_to_close

    out = read_to_close(broker.http_port, b"GET /health HTTP/1.1\\r\\nHost: x\\r\\n"
                                          b"Connection: close\\r\\n\\r\\n")
    [(status, headers, body)] = answers(out)
    assert status == 200 and headers["content-type"].startswith("text/plain")
"""
from __future__ import annotations

import socket
import threading

Answer = tuple[int, dict[str, str], bytes]  # status, headers (names lower-cased), body


def read_to_close(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """All the server at 127.0.0.1:``port`` writes after ``data``, up to its close. A
    connection left open fails with socket.timeout after ``timeout`` seconds. ``data`` is
    written from a thread: a server that stops reading (a head past its bound) never takes
    all of it, and its answer comes meanwhile; a reset for what it left unread ends the read."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        def write() -> None:
            try:
                s.sendall(data)
            except OSError:  # (the server closed while the rest was unsent)
                pass
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        writer.join(timeout)
    return out


def answers(out: bytes) -> list[Answer]:
    """Each answer in ``out`` (as read_to_close returns it), in order; each must be a
    status line, header lines and a body of exactly its Content-Length."""
    got = []
    while out:
        top, sep, out = out.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        assert sep and lines[0].startswith("HTTP/1.1 "), top[:200]
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        size = int(headers["content-length"])
        assert len(out) >= size, (headers, out)
        got.append((int(lines[0].split(" ")[1]), headers, out[:size]))
        out = out[size:]
    return got


def answer(port: int, data: bytes, timeout: float = 10.0) -> Answer:
    """The one answer to ``data``, read to the close (a second one fails the caller)."""
    got = answers(read_to_close(port, data, timeout))
    assert len(got) == 1, got
    return got[0]
