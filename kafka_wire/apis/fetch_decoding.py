"""Fast path for Fetch requests: the fields the handler reads, unpacked with
one precompiled ``struct`` per version and block, instead of the schema
codec's objects (a consumer's small fetches are answered at the rate they
are decoded). tests/unit/kafka_wire/test_fetch_decoding.py checks every
served version decodes to what the codec decodes, and refuses what it refuses.
"""
from __future__ import annotations

import struct
import uuid

from kafka_wire import codec
from kafka_wire.apis.request_bounds import MAX_ENTRIES

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# The request's fixed fields after the header, by version.
_HEAD_V4 = struct.Struct(">iiiib")       # replica_id, max_wait, min_bytes, max_bytes, isolation
_HEAD_V7 = struct.Struct(">iiiibii")     # ... session_id, session_epoch
_HEAD_V15 = struct.Struct(">iiibii")     # no replica_id (a tagged ReplicaState instead)
# A partition's fixed fields, by version.
_PART_V4 = struct.Struct(">iqi")         # partition, fetch_offset, max_bytes
_PART_V5 = struct.Struct(">iqqi")        # partition, fetch_offset, log_start, max_bytes
_PART_V9 = struct.Struct(">iiqqi")       # partition, leader_epoch, fetch_offset, log_start, max_bytes
_PART_V12 = struct.Struct(">iiqiqi")     # ... last_fetched_epoch after fetch_offset


class FetchDecodeError(ValueError):
    pass


def _too_many(version: int) -> FetchDecodeError:
    # As every request with a list (apis/request_bounds.py): 200,000 partitions (6 MiB)
    # held other clients 0.55 s, and a frame may be 100 MiB.
    return FetchDecodeError(
        f"Fetch v{version} names more than {MAX_ENTRIES} topics and partitions: "
        f"fetch at most {MAX_ENTRIES} a request (INVALID_REQUEST)")


class FetchPartition:
    __slots__ = ("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch",
                 "log_start_offset", "partition_max_bytes")

    def __init__(self, partition, current_leader_epoch, fetch_offset, last_fetched_epoch,
                 log_start_offset, partition_max_bytes) -> None:
        self.partition = partition
        self.current_leader_epoch = current_leader_epoch
        self.fetch_offset = fetch_offset
        self.last_fetched_epoch = last_fetched_epoch
        self.log_start_offset = log_start_offset
        self.partition_max_bytes = partition_max_bytes


class FetchTopic:
    __slots__ = ("topic", "topic_id", "partitions")

    def __init__(self, topic, topic_id, partitions) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partitions = partitions


class FetchRequestView:
    """The fields the Fetch handler reads, with the codec's attribute names."""
    __slots__ = ("API_VERSION", "replica_id", "max_wait_ms", "min_bytes", "max_bytes",
                 "isolation_level", "session_id", "session_epoch", "topics",
                 "forgotten_topics_data", "rack_id", "offset_pos",
                 "one")  # the handler's plan for a one-partition request, made once (fetch._plan_one)


def _length(frame, pos: int, flexible: bool, width: struct.Struct) -> tuple[int, int]:
    if flexible:
        n = frame[pos]
        if n < 0x80:  # a one-byte varint: nearly every length
            return n - 1, pos + 1
        n, pos = codec.read_uvarint(frame, pos)
        return n - 1, pos
    return width.unpack_from(frame, pos)[0], pos + width.size


def _string(frame, pos: int, flexible: bool, what: str) -> tuple[str, int]:
    n, pos = _length(frame, pos, flexible, _I16)
    if n < 0:
        raise FetchDecodeError(f"non-nullable field {what} was serialized as null")
    if pos + n > len(frame):
        raise FetchDecodeError(f"{what} runs past the end of the frame")
    return bytes(frame[pos:pos + n]).decode(), pos + n


def _count(frame, pos: int, flexible: bool, what: str) -> tuple[int, int]:
    n, pos = _length(frame, pos, flexible, _I32)
    if n < 0:
        raise FetchDecodeError(f"non-nullable field {what} was serialized as null")
    if n > len(frame):
        raise FetchDecodeError(f"{what} count {n}")
    return n, pos


_IDS: dict[bytes, uuid.UUID] = {}  # topic ids seen: a consumer sends the same ones on every Fetch


def _uuid(frame, pos: int) -> tuple[uuid.UUID, int]:
    if pos + 16 > len(frame):
        raise FetchDecodeError("topic id runs past the end of the frame")
    raw = bytes(frame[pos:pos + 16])
    found = _IDS.get(raw)
    if found is None:
        found = uuid.UUID(bytes=raw)
        if len(_IDS) < 4096:
            _IDS[raw] = found
    return found, pos + 16


def _topic(frame, pos: int, version: int, flexible: bool, what: str) -> tuple[object, object, int, int]:
    """(name, topic id, partition count, pos) of a topic entry: by id from v13, by name before."""
    name = topic_id = None
    if version >= 13:
        topic_id, pos = _uuid(frame, pos)
    else:
        name, pos = _string(frame, pos, flexible, what)
    count, pos = _count(frame, pos, flexible, f"{what} partitions")
    return name, topic_id, count, pos


def decode_fetch(frame: memoryview, pos: int, version: int) -> FetchRequestView:
    """Decode the body at ``pos`` of a Fetch request of ``version`` (4–18)."""
    flexible = version >= 12
    req = FetchRequestView()
    req.API_VERSION = version
    req.one = None
    try:
        if version >= 15:
            (req.max_wait_ms, req.min_bytes, req.max_bytes, req.isolation_level, req.session_id,
             req.session_epoch) = _HEAD_V15.unpack_from(frame, pos)
            req.replica_id = -1
            pos += _HEAD_V15.size
        elif version >= 7:
            (req.replica_id, req.max_wait_ms, req.min_bytes, req.max_bytes, req.isolation_level,
             req.session_id, req.session_epoch) = _HEAD_V7.unpack_from(frame, pos)
            pos += _HEAD_V7.size
        else:
            (req.replica_id, req.max_wait_ms, req.min_bytes, req.max_bytes,
             req.isolation_level) = _HEAD_V4.unpack_from(frame, pos)
            req.session_id, req.session_epoch = 0, -1
            pos += _HEAD_V4.size
        part_struct = (_PART_V12 if version >= 12 else _PART_V9 if version >= 9
                       else _PART_V5 if version >= 5 else _PART_V4)
        psize = part_struct.size
        unpack = part_struct.unpack_from
        count, pos = _count(frame, pos, flexible, "topics")
        named = count  # topics and partitions named so far
        topics = []
        req.offset_pos = -1
        for _ in range(count):
            if named > MAX_ENTRIES:
                raise _too_many(version)
            name, topic_id, pcount, pos = _topic(frame, pos, version, flexible, "topic")
            named += pcount
            if named > MAX_ENTRIES:
                raise _too_many(version)
            parts = []
            if count == 1 and pcount == 1:  # where the one fetch_offset is (RepeatedFetch)
                req.offset_pos = pos + (8 if version >= 9 else 4)
            for _ in range(pcount):
                fields = unpack(frame, pos)
                pos += psize
                if version >= 12:
                    p, epoch, offset, last_epoch, start, max_bytes = fields
                elif version >= 9:
                    (p, epoch, offset, start, max_bytes), last_epoch = fields, -1
                elif version >= 5:
                    (p, offset, start, max_bytes), epoch, last_epoch = fields, -1, -1
                else:
                    (p, offset, max_bytes), epoch, last_epoch, start = fields, -1, -1, -1
                parts.append(FetchPartition(p, epoch, offset, last_epoch, start, max_bytes))
                if flexible:
                    pos = codec.skip_tagged_fields(frame, pos)
            if flexible:
                pos = codec.skip_tagged_fields(frame, pos)
            topics.append(FetchTopic(name, topic_id, parts))
        req.topics = topics
        forgotten = None
        if version >= 7:
            count, pos = _count(frame, pos, flexible, "forgotten_topics_data")
            named += count
            forgotten = []
            for _ in range(count):
                if named > MAX_ENTRIES:
                    raise _too_many(version)
                name, topic_id, pcount, pos = _topic(frame, pos, version, flexible, "forgotten topic")
                named += pcount
                if named > MAX_ENTRIES:
                    raise _too_many(version)
                parts = list(struct.unpack_from(f">{pcount}i", frame, pos))
                pos += 4 * pcount
                if flexible:
                    pos = codec.skip_tagged_fields(frame, pos)
                forgotten.append(FetchTopic(name, topic_id, parts))
        req.forgotten_topics_data = forgotten
        req.rack_id = ""
        if version >= 11:
            req.rack_id, pos = _string(frame, pos, flexible, "rack_id")
        if flexible:
            pos = _request_tags(frame, pos, version, req)
        if pos > len(frame):
            raise FetchDecodeError("truncated request")
    except FetchDecodeError:
        raise
    except (codec.CodecError, IndexError, struct.error, ValueError) as exc:  # ValueError: bad UTF-8
        raise FetchDecodeError(f"malformed Fetch v{version}: {exc}") from exc
    return req


def _request_tags(frame, pos: int, version: int, req: FetchRequestView) -> int:
    """The request's tagged fields: ReplicaState (tag 1, v15+) carries the replica id."""
    count, pos = codec.read_uvarint(frame, pos)
    for _ in range(count):
        tag, pos = codec.read_uvarint(frame, pos)
        size, pos = codec.read_uvarint(frame, pos)
        if pos + size > len(frame):
            raise FetchDecodeError("a tagged field runs past the end of the frame")
        if tag == 1 and version >= 15 and size >= 4:
            (req.replica_id,) = _I32.unpack_from(frame, pos)
        pos += size
    return pos


class RepeatedFetch:
    """A connection's last one-partition Fetch, kept to decode the next one like it.

    A consumer sends the same request over and over (librdkafka: one Fetch in
    flight per partition, no fetch session), only its correlation id and fetch
    offset changing. A frame equal to the kept one in every other byte decodes
    to the kept header and request with those two fields read anew, without
    parsing anything else; any other frame is None (decode it in full).

    The kept header and request objects are handed out again with the correlation
    id and offset changed: a connection handles its requests one at a time (a long
    poll's answer is written before the next request is decoded), and nothing keeps
    a header or request once it is answered. tests/unit/kafka_wire/test_repeated_fetch.py holds it
    to :func:`decode_fetch` and the codec.
    """
    __slots__ = ("size", "key", "middle", "tail", "offset_pos", "header", "request", "partition")

    def __init__(self, frame, header: codec.RequestHeader, request: FetchRequestView) -> None:
        pos = request.offset_pos
        self.size = len(frame)
        self.key = bytes(frame[:4])         # api key and version
        self.middle = bytes(frame[8:pos])   # from after the correlation id to the offset
        self.tail = bytes(frame[pos + 8:])  # all after the offset
        self.offset_pos = pos
        self.header = header
        self.request = request
        self.partition = request.topics[0].partitions[0]

    @staticmethod
    def of(frame, header: codec.RequestHeader, request) -> "RepeatedFetch | None":
        """One to keep for ``request`` (decoded from ``frame``), if it is a
        fast-decoded one-partition Fetch."""
        if header.api_key != codec.ApiKey.Fetch or getattr(request, "offset_pos", -1) < 0:
            return None
        return RepeatedFetch(frame, header, request)

    def decode(self, frame) -> tuple[codec.RequestHeader, FetchRequestView] | None:
        # (compared in place: a frame of the kept size holding the middle at 8 and ending
        # with the tail has them exactly where the kept one had them)
        if (len(frame) != self.size or not frame.startswith(self.middle, 8)
                or not frame.endswith(self.tail) or not frame.startswith(self.key)):
            return None
        self.partition.fetch_offset = _I64.unpack_from(frame, self.offset_pos)[0]
        header = self.header  # handed out again too, as the request is
        header.correlation_id = _I32.unpack_from(frame, 4)[0]
        return header, self.request


codec.register_fast_decoder(codec.ApiKey.Fetch, decode_fetch)
