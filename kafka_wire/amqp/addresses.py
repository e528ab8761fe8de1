"""Event Hubs' AMQP node addresses.

The SDKs write them as URLs (``amqps://ns.servicebus.windows.net/hub/...``)
or as bare paths (``hub/Partitions/0``); the host part, when present, names
the namespace the same way the connection's hostname does. Path segments are
case-insensitive, hub and group names keep their case.
"""
from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from kafka_wire.log_lines import shortened
from kafka_wire.whole_numbers import whole_number

__all__ = ["Address", "parse", "CBS", "MANAGEMENT"]

CBS = "$cbs"
MAX_ADDRESS = 2048  # a URL, a hub (256), a group (50), a publisher: far less
MANAGEMENT = "$management"


class Address(NamedTuple):
    host: str | None
    node: str                      # "$cbs", "$management", or the event hub's name
    partition: int | None = None   # .../Partitions/{id}
    consumer_group: str | None = None
    publisher: str | None = None   # .../Publishers/{name}


class AddressError(ValueError):
    """Not an Event Hubs address; the text is for the client."""


def parse(address: str | None) -> Address:
    if not address:
        raise AddressError("the link has no address")
    if len(address) > MAX_ADDRESS:  # (a refusal that echoed it would not fit a frame)
        raise AddressError(f"address {shortened(repr(address))} is longer than any Event Hubs entity's "
                           f"({MAX_ADDRESS} characters at most)")
    host = None
    path = address
    if "://" in address:
        try:
            parts = urlsplit(address)
            host, path = parts.hostname, parts.path
        except ValueError as exc:  # urllib's "Invalid IPv6 URL" and kin
            raise AddressError(f"address {shortened(repr(address))} is not a URL: {exc}") from None
    segments = [unquote(s) for s in path.strip("/").split("/") if s]
    if not segments:
        raise AddressError(f"address {shortened(repr(address))} names no entity")
    node, rest = segments[0], [s for s in segments[1:]]
    lowered = [s.lower() for s in rest]
    if node.lower() in (CBS, MANAGEMENT):
        return Address(host, node.lower())
    if not rest:
        return Address(host, node)
    if lowered[:1] == ["partitions"] and len(rest) == 2:
        return Address(host, node, partition=_partition(rest[1], address))
    if lowered[:1] == ["publishers"] and len(rest) == 2:
        return Address(host, node, publisher=rest[1])
    if lowered[:1] == ["consumergroups"] and len(rest) == 4 and lowered[2] == "partitions":
        return Address(host, node, partition=_partition(rest[3], address), consumer_group=rest[1])
    raise AddressError(f"address {shortened(repr(address))} is not an Event Hubs entity: use HUB, "
                       "HUB/Partitions/ID, HUB/Publishers/NAME or "
                       "HUB/ConsumerGroups/GROUP/Partitions/ID")


def _partition(text: str, address: str) -> int:
    number = whole_number(text, most=10)
    if number is None:
        raise AddressError(f"partition id {shortened(repr(text))} in {shortened(repr(address))} is not a number")
    return number

