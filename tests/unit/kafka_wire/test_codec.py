"""Every advertised (api, version) round-trips through our header parser and
the codec: a request encoded the way a client does decodes to equal values."""
from __future__ import annotations

import struct
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis import registry

registry.load_all()

_INTS = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}


def _value(field, version, draw, depth=0):
    t = field._json["type"]
    nullable = field.nullable_for_version_q(version)
    if nullable and draw(st.booleans()) and draw(st.booleans()):
        return None
    if field.is_struct_array() or (field.is_array() and t.startswith("[]") and field.is_struct()):
        n = draw(st.integers(0, 2 if depth < 2 else 0))
        return [_struct(field, version, draw, depth + 1) for _ in range(n)]
    if field.is_struct():
        return _struct(field, version, draw, depth + 1)
    if t.startswith("[]"):
        inner = t[2:]
        return [_scalar(inner, draw) for _ in range(draw(st.integers(0, 3)))]
    return _scalar(t, draw)


def _scalar(t, draw):
    if t in _INTS:
        bits = _INTS[t]
        return draw(st.integers(-(2**bits), 2**bits - 1))
    if t == "uint16":
        return draw(st.integers(0, 65535))
    if t == "string":
        return draw(st.text(max_size=12))
    if t in ("bytes", "records"):
        return draw(st.binary(max_size=24))
    if t == "bool":
        return draw(st.booleans())
    if t == "uuid":
        return uuid.UUID(int=draw(st.integers(0, 2**128 - 1)))
    if t == "float64":
        return draw(st.floats(allow_nan=False))
    if t == "bitfield":
        return draw(st.integers(0, 2**31 - 1))
    raise AssertionError(f"no strategy for {t}")


def _struct(field, version, draw, depth):
    vals = {}
    for f in field.fields.values():
        if f.for_version_q(version) and f._tag is None:
            vals[f.name] = _value(f, version, draw, depth)
    return field.data_class(version=version, **vals)


def _request(api_key, version, draw):
    cls = codec.request_class(api_key)
    vals = {f.name: _value(f, version, draw) for f in cls._struct.fields.values()
            if f.for_version_q(version) and f._tag is None}
    return cls(version=version, **vals)


CASES = [(k, v) for k, lo, hi in registry.advertised() for v in range(lo, hi + 1)]


@settings(max_examples=len(CASES) * 3, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.sampled_from(CASES), st.data(), st.one_of(st.none(), st.text(max_size=8)))
def test_requests_round_trip_through_header_parser_and_codec(case, data, client_id):
    api_key, version = case
    req = _request(api_key, version, data.draw)
    body = bytes(req.encode(version=version))
    cid = None if client_id is None else client_id.encode()
    header = struct.pack(">hhi", api_key, version, 42)
    header += struct.pack(">h", -1) if cid is None else struct.pack(">h", len(cid)) + cid
    if codec.is_flexible(api_key, version):
        header += b"\x00"
    frame = memoryview(header + body)
    parsed = codec.parse_request_header(frame)
    assert (parsed.api_key, parsed.api_version, parsed.correlation_id, parsed.client_id) == \
           (api_key, version, 42, client_id)
    decoded = codec.decode_request(parsed, frame)
    if api_key in (codec.ApiKey.Produce, codec.ApiKey.Fetch):
        # Hand-written fast paths (test_produce_decoding.py, test_fetch_decoding.py check
        # them against the codec); here the schema codec's own round trip is what is checked.
        decoded = codec.request_class(api_key).decode(frame[parsed.size:], version=version)
    decoded._header = None  # the fast decoder skips __init__
    assert bytes(decoded.encode(version=version)) == body


def test_truncated_frames_raise_codec_error_not_crash():
    for api_key, version in CASES:
        header = struct.pack(">hhih", api_key, version, 1, -1)
        if codec.is_flexible(api_key, version):
            header += b"\x00"
        frame = memoryview(header + b"\x00\x00\x00\x07")
        parsed = codec.parse_request_header(frame)
        try:
            codec.decode_request(parsed, frame)
        except codec.CodecError:
            pass


# KIP-848 messages come from kafka_wire/schemas/ (kafka-python lacks them): every
# version of both directions is checked explicitly, not left to sampling.
KIP848 = [(k, v) for k in (68, 69) for v in range(codec.max_codec_version(k) + 1)]


def _message(cls, version, draw):
    vals = {f.name: _value(f, version, draw) for f in cls._struct.fields.values()
            if f.for_version_q(version) and f._tag is None}
    return cls(version=version, **vals)


@settings(max_examples=len(KIP848) * 10, suppress_health_check=[HealthCheck.too_slow],
          deadline=None)
@given(st.sampled_from(KIP848), st.data())
def test_consumer_group_heartbeat_and_describe_round_trip_both_directions(case, data):
    api_key, version = case
    assert codec.is_flexible(api_key, version)
    for cls in (codec.request_class(api_key), codec.response_class(api_key)):
        msg = _message(cls, version, data.draw)
        body = bytes(msg.encode(version=version))
        decoded = cls.decode(body, version=version)
        decoded._header = None
        assert bytes(decoded.encode(version=version)) == body


def test_kip848_apis_are_advertised_for_every_codec_version():
    advertised = {k: (lo, hi) for k, lo, hi in registry.advertised()}
    assert advertised[68] == (0, 1) and advertised[69] == (0, 1)
