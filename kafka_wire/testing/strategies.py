"""Hypothesis strategies for suites that test against kafka-wire.

    from hypothesis import given
    from kafka_wire.testing import strategies as kw

    @given(kw.records())
    def test_round_trip(record): ...

``records`` fit what every client can send: keys and values as bytes (or
None), headers as (str, bytes) pairs, timestamps in milliseconds within a
range Kafka accepts. ``topic_names`` are legal Kafka / Event Hubs names;
``illegal_topic_names`` are names a broker must refuse.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import string
import time
import urllib.parse
from dataclasses import dataclass

from hypothesis import strategies as st

_NAME_CHARS = string.ascii_letters + string.digits + "._-"
_EDGE = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int | None


@dataclass(frozen=True)
class Event:
    """An Event Hubs event as a Kafka client sends it."""
    body: bytes
    partition_key: str | None
    properties: dict[str, bytes]


def topic_names(max_size: int = 249) -> st.SearchStrategy[str]:
    """Legal names: Kafka's characters, first and last a letter or digit
    (Event Hubs' rule, stricter than Kafka's), never '.' or '..'."""
    edge = st.sampled_from(_EDGE)
    middle = st.text(alphabet=_NAME_CHARS, max_size=max(0, min(max_size, 249) - 2))
    one = edge
    many = st.tuples(edge, middle, edge).map("".join)
    return st.one_of(one, many).filter(lambda n: len(n) <= max_size)


def illegal_topic_names() -> st.SearchStrategy[str]:
    """Names a broker must refuse: empty, reserved, too long, path tricks, bad chars."""
    return st.one_of(
        st.sampled_from(["", ".", "..", "../x", "a/b", "a\\b", "x\x00y", "white space", "é"]),
        st.text(alphabet=_NAME_CHARS, min_size=250, max_size=300).filter(lambda s: s not in (".", "..")),
        st.text(min_size=1, max_size=20).filter(lambda s: any(c not in _NAME_CHARS for c in s)),
    )


def headers(max_size: int = 4) -> st.SearchStrategy[tuple[tuple[str, bytes], ...]]:
    # librdkafka handles header names as C strings: no NUL in them.
    names = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                    min_size=1, max_size=16)
    return st.lists(st.tuples(names, st.binary(max_size=64)), max_size=max_size).map(tuple)


def records(*, max_value: int = 1024, nullable: bool = True,
            with_timestamps: bool = True) -> st.SearchStrategy[Record]:
    maybe = (lambda s: st.one_of(st.none(), s)) if nullable else (lambda s: s)
    now = int(time.time() * 1000)
    ts = st.one_of(st.none(), st.integers(now - 86_400_000, now)) if with_timestamps else st.none()
    return st.builds(Record, key=maybe(st.binary(max_size=64)), value=maybe(st.binary(max_size=max_value)),
                     headers=headers(), timestamp_ms=ts)


def events(max_body: int = 1024) -> st.SearchStrategy[Event]:
    return st.builds(Event, body=st.binary(max_size=max_body),
                     partition_key=st.one_of(st.none(), st.text(min_size=1, max_size=32)),
                     properties=st.dictionaries(st.text(min_size=1, max_size=16), st.binary(max_size=32),
                                                max_size=4))


def namespace_names() -> st.SearchStrategy[str]:
    """6–50 chars: letters, digits, hyphens; starts with a letter, ends with letter/digit."""
    return st.tuples(st.sampled_from(string.ascii_letters),
                     st.text(alphabet=string.ascii_letters + string.digits + "-", min_size=4, max_size=48),
                     st.sampled_from(_EDGE)).map("".join)


def sas_token(resource_uri: str, policy: str, key: str, expiry: int) -> str:
    """An Event Hubs SAS token, for building connection strings."""
    encoded = urllib.parse.quote_plus(resource_uri)
    sig = base64.b64encode(hmac.new(key.encode(), f"{encoded}\n{expiry}".encode(), hashlib.sha256).digest())
    return (f"SharedAccessSignature sr={encoded}&sig={urllib.parse.quote_plus(sig.decode())}"
            f"&se={expiry}&skn={policy}")


@st.composite
def connection_strings(draw, namespace: str | None = None, policy: str = "RootManageSharedAccessKey",
                       key: str | None = None, hub: str | None = None, token: bool | None = None) -> str:
    """Connection strings in the shapes SDKs write: key or SAS token, optional
    EntityPath, trailing ';' or not, keys in any case."""
    ns = namespace or draw(namespace_names())
    host = "localhost" if ns == "localhost" else f"{ns}.servicebus.windows.net"
    key = key or draw(st.text(alphabet=string.ascii_letters + string.digits + "+/=", min_size=8, max_size=44))
    use_token = draw(st.booleans()) if token is None else token
    parts = [("Endpoint", f"sb://{host}/")]
    if use_token:
        uri = f"https://{host}/" + (hub or "")
        parts.append(("SharedAccessSignature", sas_token(uri, policy, key, int(time.time()) + 3600)))
    else:
        parts += [("SharedAccessKeyName", policy), ("SharedAccessKey", key)]
    if hub:
        parts.append(("EntityPath", hub))
    case = draw(st.sampled_from([str, str.lower, str.upper]))
    text = ";".join(f"{case(k)}={v}" for k, v in parts)
    return text + (";" if draw(st.booleans()) else "")
