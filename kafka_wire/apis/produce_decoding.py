"""Fast path for Produce requests: record batches stay views of the request
frame (which the server owns and nobody else reads), so the log can patch
base offsets in place and write them without the two copies the schema
codec and a mutable copy would cost (most of the broker's user time at
10 KiB records). tests/unit/kafka_wire/test_produce_decoding.py checks that
every served version decodes to what the codec decodes.
"""
from __future__ import annotations

import struct

from kafka_wire import codec
from kafka_wire.apis.fetch_decoding import _uuid as topic_uuid
from kafka_wire.apis.request_bounds import MAX_ENTRIES

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hi")  # acks, timeout_ms
# Partitions a request may name, the bound of every request with a list. Past it the
# request is not decoded further and the connection is closed: 500,000 entries of one
# 61-byte batch each (33 MiB) held the event loop for 13 s, each walked, admitted and
# appended in turn.
MAX_PARTITIONS = MAX_ENTRIES


class ProduceDecodeError(ValueError):
    pass


class PartitionData:
    __slots__ = ("index", "records")

    def __init__(self, index: int, records) -> None:
        self.index = index
        self.records = records


class TopicData:
    __slots__ = ("name", "topic_id", "partition_data")

    def __init__(self, name, topic_id, partition_data) -> None:
        self.name = name
        self.topic_id = topic_id
        self.partition_data = partition_data


class ProduceRequestView:
    """The fields the Produce handler reads, with the codec's attribute names."""
    __slots__ = ("API_VERSION", "transactional_id", "acks", "timeout_ms", "topic_data")

    def __init__(self, version, transactional_id, acks, timeout_ms, topic_data) -> None:
        self.API_VERSION = version
        self.transactional_id = transactional_id
        self.acks = acks
        self.timeout_ms = timeout_ms
        self.topic_data = topic_data


def _length(frame, pos: int, flexible: bool, width: struct.Struct) -> tuple[int, int]:
    """A string/bytes/array length: compact (varint, +1) or fixed width; -1 is null."""
    if flexible:
        n, pos = codec.read_uvarint(frame, pos)
        return n - 1, pos
    return width.unpack_from(frame, pos)[0], pos + width.size


def _string(frame, pos: int, flexible: bool) -> tuple[str | None, int]:
    n, pos = _length(frame, pos, flexible, _I16)
    if n < 0:
        return None, pos
    return bytes(frame[pos:pos + n]).decode(), pos + n


def _count(frame, pos: int, flexible: bool, what: str) -> tuple[int, int]:
    n, pos = _length(frame, pos, flexible, _I32)
    if n < 0 or n > len(frame):
        raise ProduceDecodeError(f"{what} count {n}")
    return n, pos


def decode_produce(frame: memoryview, pos: int, version: int) -> ProduceRequestView:
    """Decode the body at ``pos`` of a Produce request of ``version`` (3–13).

    librdkafka sends one partition a request, so this runs once per batch: the
    one-byte compact lengths and empty tagged fields of flexible versions (nearly
    all of them) are read inline, the rest through the general helpers."""
    end = len(frame)
    flexible = version >= 9
    unpack_i32 = _I32.unpack_from
    try:
        if flexible and frame[pos] < 0x80:  # transactional id: null (0) or short
            n = frame[pos] - 1
            pos += 1
        else:
            n, pos = _length(frame, pos, flexible, _I16)
        tid = None
        if n >= 0:
            tid = bytes(frame[pos:pos + n]).decode()
            pos += n
        acks, timeout = _HEAD.unpack_from(frame, pos)
        pos += _HEAD.size
        count, pos = _count(frame, pos, flexible, "topic")
        topics = []
        named = count  # topics and partitions named so far
        for _ in range(count):
            name = topic_id = None
            if version >= 13:
                topic_id, pos = topic_uuid(frame, pos)  # the ids seen kept: one per request, the same each time
            elif flexible and 0 < frame[pos] < 0x80:
                n = frame[pos] - 1
                name = bytes(frame[pos + 1:pos + 1 + n]).decode()
                pos += 1 + n
            else:
                name, pos = _string(frame, pos, flexible)
            if flexible and frame[pos] < 0x80:
                pcount = frame[pos] - 1
                pos += 1
                if pcount < 0:
                    raise ProduceDecodeError(f"partition count {pcount}")
            else:
                pcount, pos = _count(frame, pos, flexible, "partition")
            named += pcount
            if named > MAX_PARTITIONS:
                raise ProduceDecodeError(
                    f"Produce v{version} names more than {MAX_PARTITIONS} topics and partitions: "
                    f"send at most {MAX_PARTITIONS} a request (INVALID_REQUEST)")
            parts = []
            for _ in range(pcount):
                (index,) = unpack_i32(frame, pos)
                pos += 4
                if flexible and frame[pos] < 0x80:
                    n = frame[pos] - 1
                    pos += 1
                else:
                    n, pos = _length(frame, pos, flexible, _I32)
                if n > end - pos:
                    raise ProduceDecodeError("records run past the end of the frame")
                parts.append(PartitionData(index, None if n < 0 else frame[pos:pos + n]))
                if n > 0:
                    pos += n
                if flexible:
                    pos = pos + 1 if frame[pos] == 0 else codec.skip_tagged_fields(frame, pos)
            if flexible:
                pos = pos + 1 if frame[pos] == 0 else codec.skip_tagged_fields(frame, pos)
            topics.append(TopicData(name, topic_id, parts))
        if flexible:
            pos = codec.skip_tagged_fields(frame, pos)
        if pos > end:
            raise ProduceDecodeError("truncated request")
    except ProduceDecodeError:
        raise
    except (codec.CodecError, IndexError, struct.error, ValueError) as exc:  # ValueError: bad UTF-8, UUID
        raise ProduceDecodeError(f"malformed Produce v{version}: {exc}") from exc
    return ProduceRequestView(version, tid, acks, timeout, topics)

codec.register_fast_decoder(codec.ApiKey.Produce, decode_produce)
