"""The request and response of the REST endpoints, and the service's error shape."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple
from xml.sax.saxutils import escape


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str                       # decoded, without the query
    query: dict[str, str]
    # lower-case names, for the protocol's lookups; a repeated field's values joined with
    # ", " (RFC 9110 5.3)
    headers: dict[str, str]
    body: bytes
    peer: str = ""
    segments: list[str] = field(default_factory=list)
    scheme: str = "http"            # "https" on the TLS listener (URLs the answer names)
    # the header fields as sent: (name in the client's case, value) in order, a repeated
    # one as often as sent (REST send's user properties keep the names' case)
    fields: tuple[tuple[str, str], ...] = ()
    # the door's answer by namespace, once it let this request in: a large body's head
    # is signed in before the body is read, and the whole request is not signed in again
    signed_in: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def host(self) -> str:
        """The Host header's name, without the port (it selects the namespace)."""
        host = self.headers.get("host", "")
        if host.startswith("["):  # an IPv6 literal
            return host[1:host.find("]")] if "]" in host else host
        return host.rsplit(":", 1)[0] if ":" in host else host


class Response(NamedTuple):
    status: int
    body: bytes = b""
    content_type: str = "application/xml; charset=utf-8"
    headers: dict[str, str] | None = None


class Later(NamedTuple):
    """An answer to give ``wait_ms`` later (on the broker's clock): a throttled send."""
    wait_ms: int
    response: Response


def error(status: int, detail: str) -> Response:
    """The data plane's error body, as the service writes it."""
    text = f"<Error><Code>{status}</Code><Detail>{escape(detail)}</Detail></Error>"
    return Response(status, text.encode())


def nesting(text: str) -> int:
    """The deepest nesting of JSON arrays and objects in ``text`` (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest
