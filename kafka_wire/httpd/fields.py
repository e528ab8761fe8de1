"""An HTTP/1.1 request head's header fields, read strictly: the one parser the HTTP
listener and the AMQP port's WebSocket door share, so no two doors of the broker read one
head two ways (nor the broker and a proxy in front of it: a lenient read let a
Content-Length a proxy never saw carry the next request in as a body)."""
from __future__ import annotations

import re

__all__ = ["MalformedHead", "header_fields", "header_map", "ONCE"]

# Header fields a request may send once only (RFC 9112 3.2 and 6.3; a credential is one
# value, not a list): two that disagree would let this listener and a proxy in front of
# it read different requests, or check one token and log another.
ONCE = ("host", "content-length", "authorization")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 5.6.2's tchar
_NOT_IN_A_VALUE = re.compile(r"[\r\n\x00]")  # RFC 9110 5.5: refuse, or read as SP


class MalformedHead(ValueError):
    """A header line this listener will not read one way while a proxy reads another
    (RFC 9112 5.1, 5.2, 2.2): answered 400, its connection closed."""


def header_fields(lines: list[str]) -> list[tuple[str, str]]:
    """The header fields of a head's lines (read as Latin-1): (name in its case, value), in
    order; raises :class:`MalformedHead` for a line another parser could read otherwise:
    an obs-fold (a line led by a space or tab, RFC 9112 5.2), a name that is not a token
    (whitespace before the colon, RFC 9112 5.1; RFC 9110 5.1), a line without a colon, a
    CR, LF or NUL in a value (RFC 9110 5.5; a bare CR is a line end to some, RFC 9112 2.2).
    Only spaces and tabs are trimmed from a value (RFC 9110 5.5): U+00A0 is one byte of a
    UTF-8 character ("à" ends in 0xA0) that ``str.strip`` would cut."""
    out = []
    for line in lines:
        if line[:1] in (" ", "\t"):
            raise MalformedHead(f"a header line begins with whitespace (a folded line is not "
                                f"taken): {line[:40]!r}")
        name, sep, value = line.partition(":")
        if not sep:
            raise MalformedHead(f"a header line without a colon: {line[:40]!r}")
        if not _TOKEN.fullmatch(name):
            raise MalformedHead(f"{name[:40]!r} is not an HTTP field name: a token (letters, "
                                f"digits and !#$%&'*+-.^_`|~), no whitespace before the colon")
        if _NOT_IN_A_VALUE.search(value):
            raise MalformedHead(f"the {name[:40]} header's value holds a CR, LF or NUL")
        out.append((name, value.strip(" \t")))
    return out


def header_map(fields: list[tuple[str, str]]) -> tuple[dict[str, str], str | None]:
    """(lower-case name -> value, a repeated one's values joined with ", " as RFC 9110 5.3
    combines them; the first of :data:`ONCE` sent more than once, else None)."""
    values: dict[str, list[str]] = {}
    for name, value in fields:
        values.setdefault(name.lower(), []).append(value)
    repeated = next((n for n in ONCE if len(values.get(n, ())) > 1), None)
    return {name: ", ".join(v) for name, v in values.items()}, repeated
