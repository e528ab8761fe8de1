"""The Kafka protocol codec: the one module that imports ``kafka.protocol``.

Requests are decoded and responses encoded with kafka-python's schema-driven
message classes (Kafka's own JSON schemas). This module peeks at the request
header before decoding, knows which header version goes with which API
version, and builds the ApiVersions v0 fallback a client gets when it asks
for an ApiVersions version we do not serve.
"""
from __future__ import annotations

import importlib
import pkgutil
import struct
from dataclasses import dataclass
from typing import Any

import kafka.protocol as _kp
from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage

__all__ = [
    "ApiKey", "RequestHeader", "CodecError", "parse_request_header", "decode_request",
    "encode_response", "response_class", "request_class", "max_codec_version",
    "api_versions_v0_fallback",
]

_HEADER = struct.Struct(">hhih")
_INT32 = struct.Struct(">i")


class CodecError(Exception):
    """A frame that cannot be parsed: the connection that sent it is closed."""


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes of header, where the body starts


def _load_messages() -> tuple[dict[int, type], dict[int, type]]:
    for mod in pkgutil.walk_packages(_kp.__path__, "kafka.protocol."):
        if ".old" in mod.name or "generate_stubs" in mod.name:
            continue
        importlib.import_module(mod.name)
    requests: dict[int, type] = {}
    responses: dict[int, type] = {}

    def walk(cls: type) -> None:
        for sub in cls.__subclasses__():
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None):
                (requests if sub.is_request() else responses)[sub.API_KEY] = sub
            walk(sub)

    walk(ApiMessage)
    return requests, responses


_REQUESTS, _RESPONSES = _load_messages()


def register_message(request_cls: type, response_cls: type) -> None:
    """Add message classes kafka-python lacks (built from Kafka's JSON schemas)."""
    _REQUESTS[request_cls.API_KEY] = request_cls
    _RESPONSES[response_cls.API_KEY] = response_cls


def request_class(api_key: int) -> type | None:
    return _REQUESTS.get(api_key)


def response_class(api_key: int) -> type:
    return _RESPONSES[api_key]


def max_codec_version(api_key: int) -> int:
    cls = _REQUESTS.get(api_key)
    return -1 if cls is None else cls.max_version


def is_flexible(api_key: int, version: int) -> bool:
    cls = _REQUESTS.get(api_key)
    return cls is not None and cls.flexible_version_q(version)


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """An unsigned varint (compact lengths, tag numbers) at ``pos``."""
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: nearly every length and tag
        return buf[pos], pos + 1
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise CodecError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise CodecError("varint too long")


def skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Position after a tagged-fields section (flexible versions)."""
    if pos < len(buf) and buf[pos] == 0:  # none: nearly always
        return pos + 1
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise CodecError("a tagged field runs past the end of the frame")
    return pos


# (api key, version) -> flexible (header v2); only pairs the codec knows are kept,
# so hostile keys cannot grow it.
_FLEXIBLE: dict[tuple[int, int], bool] = {}


def parse_request_header(frame: memoryview) -> RequestHeader:
    """Read header v1 (or v2 for flexible versions) without decoding the body."""
    if len(frame) < _HEADER.size:
        raise CodecError(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, cid_len = _HEADER.unpack_from(frame, 0)
    pos = _HEADER.size
    client_id = None
    if cid_len >= 0:
        end = pos + cid_len
        if end > len(frame):
            raise CodecError("client_id runs past the end of the frame")
        client_id = bytes(frame[pos:end]).decode("utf-8", "replace")
        pos = end
    elif cid_len != -1:
        raise CodecError(f"invalid client_id length {cid_len}")
    flexible = _FLEXIBLE.get((api_key, api_version))
    if flexible is None:
        flexible = api_version >= 0 and is_flexible(api_key, api_version)
        if api_key in _REQUESTS and 0 <= api_version <= _REQUESTS[api_key].max_version:
            _FLEXIBLE[(api_key, api_version)] = flexible
    if flexible:
        # Header v2: tagged fields follow the (never compact) client_id.
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


# Hand-written decoders for hot requests (see apis/produce_decoding.py); each is
# checked against the schema codec by a test.
_FAST_DECODERS: dict[int, Any] = {}


def register_fast_decoder(api_key: int, decoder) -> None:
    """``decoder(frame, body_pos, version)`` returns an object with the codec's field names."""
    _FAST_DECODERS[api_key] = decoder


def decode_request(header: RequestHeader, frame: memoryview) -> Any:
    fast = _FAST_DECODERS.get(header.api_key)
    if fast is not None:
        try:
            return fast(frame, header.size, header.api_version)
        except ValueError as exc:
            raise CodecError(str(exc)) from exc
    cls = _REQUESTS.get(header.api_key)
    if cls is None:
        raise CodecError(f"unknown api key {header.api_key}")
    try:
        request = cls.decode(frame[header.size:], version=header.api_version)
    except CodecError:
        raise
    except Exception as exc:  # the codec raises many types on hostile input
        raise CodecError(f"cannot decode {cls.__name__} v{header.api_version}: {exc!r}") from exc
    _null_check(cls, header.api_version)(request)
    return request


# Kafka refuses a null (length -1) where the schema does not allow one ("non-nullable
# field X was serialized as null"); kafka-python decodes it to None, which handlers
# would trip over. One checker per (message, version), built on first use.
_NULL_CHECKS: dict[tuple[type, int], Any] = {}
_MAY_BE_NULL = ("string", "bytes", "records")


def _null_check(cls: type, version: int):
    key = (cls, version)
    check = _NULL_CHECKS.get(key)
    if check is None:
        check = _NULL_CHECKS[key] = _build_null_check(cls.__name__, cls._struct.fields, version)
        if check is None:
            check = _NULL_CHECKS[key] = _no_check
    return check


def _no_check(_obj) -> None:
    return None


def _build_null_check(where: str, fields: dict, version: int):
    """A function raising CodecError where a non-nullable field is None, or
    None when nothing in ``fields`` can be null."""
    plan = []
    for f in fields.values():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        t = f.type_str
        nested = (_build_null_check(f"{where}.{f.name}", f.fields, version)
                  if f.fields else None)
        can_be_null = f.is_array() or f.is_struct() or t in _MAY_BE_NULL
        nullable = f.nullable_for_version_q(version)
        null_items = t[2:] in _MAY_BE_NULL if t.startswith("[]") else False  # never allowed
        if (can_be_null and not nullable) or nested is not None or null_items:
            plan.append((f.name, nullable, nested, f.is_array(), null_items))
    if not plan:
        return None

    def check(obj) -> None:
        for name, nullable, nested, is_array, null_items in plan:
            value = getattr(obj, name, None)
            if value is None:
                if nullable:
                    continue
                raise CodecError(f"non-nullable field {where}.{name} was serialized as null")
            if null_items and None in value:
                raise CodecError(f"an element of {where}.{name} was serialized as null")
            if nested is not None:
                if is_array:
                    for item in value:
                        nested(item)
                else:
                    nested(value)
    return check


def encode_response(response: Any, header: RequestHeader) -> bytearray:
    """Frame a response: size, header (v0, or v1 for flexible versions), body."""
    version = header.api_version
    flexible = response.flexible_version_q(version)
    if header.api_key == ApiKey.ApiVersions:
        flexible_header = False  # ApiVersions responses always use header v0
    else:
        flexible_header = flexible
    body = response.encode(version=version)
    out = bytearray(8 + (1 if flexible_header else 0))
    struct.pack_into(">ii", out, 0, len(out) - 4 + len(body), header.correlation_id)
    out += body
    return out


def api_versions_v0_fallback(header: RequestHeader, api_keys: list[tuple[int, int, int]],
                             error_code: int) -> bytearray:
    """The reply a client gets when it asks for an ApiVersions version we lack.

    Kafka answers in v0 so that any client can read it and retry with a
    version from the list.
    """
    cls = _RESPONSES[ApiKey.ApiVersions]
    resp = cls(version=0, error_code=error_code, api_keys=[
        cls.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in api_keys
    ])
    body = resp.encode(version=0)
    out = bytearray(_INT32.pack(len(body) + 4) + _INT32.pack(header.correlation_id))
    out += body
    return out


import kafka_wire.schemas  # noqa: E402,F401  registers the messages kafka-python lacks
