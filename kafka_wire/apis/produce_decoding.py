"""Fast path for Produce requests: record batches stay views of the request
frame (which the server owns and nobody else reads), so the log can patch
base offsets in place and write them without the two copies the schema
codec and a mutable copy would cost (most of the broker's user time at
10 KiB records). tests/unit/kafka_wire/test_produce_decoding.py checks that
every served version decodes to what the codec decodes.
"""
from __future__ import annotations

import struct
import uuid

from kafka_wire import codec

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_HEAD = struct.Struct(">hi").unpack_from  # acks, timeout_ms


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


def _uvarint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ProduceDecodeError("varint too long")


def _skip_tags(buf, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def decode_produce(frame: memoryview, pos: int, version: int) -> ProduceRequestView:
    """Decode the body at ``pos`` of a Produce request of ``version`` (3–13)."""
    end = len(frame)
    try:
        flexible = version >= 9
        if flexible:
            n, pos = _uvarint(frame, pos)
            tid = None if n == 0 else bytes(frame[pos:pos + n - 1]).decode()
            pos += max(n - 1, 0)
        else:
            (n,) = _I16(frame, pos)
            pos += 2
            tid = None if n < 0 else bytes(frame[pos:pos + n]).decode()
            pos += max(n, 0)
        acks, timeout = _HEAD(frame, pos)
        pos += 6
        if flexible:
            count, pos = _uvarint(frame, pos)
            count -= 1
        else:
            (count,) = _I32(frame, pos)
            pos += 4
        if count < 0 or count > end:
            raise ProduceDecodeError(f"topic count {count}")
        topics = []
        for _ in range(count):
            name = topic_id = None
            if version >= 13:
                topic_id = uuid.UUID(bytes=bytes(frame[pos:pos + 16]))
                pos += 16
            elif flexible:
                n, pos = _uvarint(frame, pos)
                name = bytes(frame[pos:pos + n - 1]).decode()
                pos += n - 1
            else:
                (n,) = _I16(frame, pos)
                pos += 2
                name = bytes(frame[pos:pos + n]).decode()
                pos += n
            if flexible:
                pcount, pos = _uvarint(frame, pos)
                pcount -= 1
            else:
                (pcount,) = _I32(frame, pos)
                pos += 4
            if pcount < 0 or pcount > end:
                raise ProduceDecodeError(f"partition count {pcount}")
            parts = []
            for _ in range(pcount):
                (index,) = _I32(frame, pos)
                pos += 4
                if flexible:
                    n, pos = _uvarint(frame, pos)
                    n -= 1
                else:
                    (n,) = _I32(frame, pos)
                    pos += 4
                if n > end - pos:
                    raise ProduceDecodeError("records run past the end of the frame")
                records = None if n < 0 else frame[pos:pos + n]
                pos += max(n, 0)
                if flexible:
                    pos = _skip_tags(frame, pos)
                parts.append(PartitionData(index, records))
            if flexible:
                pos = _skip_tags(frame, pos)
            topics.append(TopicData(name, topic_id, parts))
        if flexible:
            pos = _skip_tags(frame, pos)
        if pos > end:
            raise ProduceDecodeError("truncated request")
    except ProduceDecodeError:
        raise
    except (IndexError, struct.error, ValueError) as exc:  # ValueError: UnicodeDecodeError, bad UUID
        raise ProduceDecodeError(f"malformed Produce v{version}: {exc}") from exc
    return ProduceRequestView(version, tid, acks, timeout, topics)


codec.register_fast_decoder(codec.ApiKey.Produce, decode_produce)
