"""Fast path for Produce responses: the fixed fields packed with ``struct``
straight into the frame, instead of a response object per partition encoded
by the schema codec (a fifth of the broker's CPU per one-record request).
tests/unit/kafka_wire/test_produce_encoding.py checks every served version
against the codec's bytes.
"""
from __future__ import annotations

import struct

from kafka_wire.apis.fetch_encoding import _array_len, _name, _string
from kafka_wire.raw_response import Raw

_I32 = struct.Struct(">i").pack
_V3 = struct.Struct(">ihqq").pack    # index, error, base offset, log append time
_V5 = struct.Struct(">ihqqq").pack   # ... and log start offset
_NO_RECORD_ERRORS = {False: _I32(0), True: b"\x01"}


def encode_produce(version: int, topics: list, throttle_ms: int = 0) -> Raw:
    """``topics``: [(name, topic_id, [(index, error, base_offset, append_time_ms,
    log_start_offset, error_message), ...])]."""
    flexible = version >= 9
    out = bytearray(_array_len(len(topics), flexible))
    for name, topic_id, parts in topics:
        if version >= 13:
            out += topic_id.bytes if topic_id is not None else bytes(16)
        else:
            out += _name(name, flexible)
        out += _array_len(len(parts), flexible)
        for index, error, base, append, start, message in parts:
            if version >= 5:
                out += _V5(index, error, base, append, start)
            else:
                out += _V3(index, error, base, append)
            if version >= 8:
                out += _NO_RECORD_ERRORS[flexible]
                out += _string(message, flexible)
            if flexible:
                out += b"\x00"  # partition tagged fields
        if flexible:
            out += b"\x00"  # topic tagged fields
    out += _I32(throttle_ms)
    if flexible:
        out += b"\x00"  # response tagged fields
    return Raw([out], flexible_header=flexible)
