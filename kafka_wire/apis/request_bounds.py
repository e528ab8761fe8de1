"""How many entries one request may name, for every API that takes a list.

A request is decoded into kafka-python objects and answered entry by entry on the
event loop, which serves every client: 200,000 entries (0.4 to 5 MiB) held the
others 0.1 s (DeleteTopics) to 20 s (WriteTxnMarkers), and a frame may be 100 MiB.
So before the codec decodes a body, ``count_entries`` walks it along the request's
schema and counts the elements of every array in it (topics, partitions, groups,
resources, ids, ...), stopping once the count passes MAX_ENTRIES. Past it the
connection is closed with the reason logged, as Kafka does with a request it cannot
parse (INVALID_REQUEST): an answer would list every entry again. Produce and Fetch
have hand-written decoders that count as they go.

Tagged fields are skipped, not counted: no request schema served here puts a list
in one.
"""
from __future__ import annotations

import struct

from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

from kafka_wire import codec

__all__ = ["MAX_ENTRIES", "TooManyEntries", "count_entries", "walk", "codec_decode", "bound",
           "BOUNDED"]

# Twice Bounds.partitions_per_namespace's default (10,240), and twice
# kafka_groups_per_namespace's: every partition or group of the largest namespace,
# with room to spare. Walking an entry costs ~1 us, decoding and answering one 1-60 us.
MAX_ENTRIES = 20_480

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_FIXED = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
          "int64": 8, "float64": 8, "uuid": 16}

# Plan steps: (op, arg). A plan walks one struct's untagged fields, then its tags.
_SKIP, _STRING, _BYTES, _ARRAY, _STRUCT, _TAGS = range(6)


class TooManyEntries(ValueError):
    pass


def _plan(fields: dict, version: int, flexible: bool) -> tuple:
    steps: list = []

    def fixed(n: int) -> None:
        if steps and steps[-1][0] == _SKIP:
            steps[-1] = (_SKIP, steps[-1][1] + n)
        else:
            steps.append((_SKIP, n))

    for f in fields.values():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        if isinstance(f, StructArrayField):
            steps.append((_ARRAY, _plan(f.fields, version, flexible)))
        elif isinstance(f, ArrayField):
            inner = f.array_of.type_str
            element = ((_SKIP, _FIXED[inner]),) if inner in _FIXED else \
                ((_STRING, None),) if inner == "string" else ((_BYTES, None),)
            steps.append((_ARRAY, element))
        elif isinstance(f, StructField):
            steps.append((_STRUCT, _plan(f.fields, version, flexible)))
        elif f.type_str in _FIXED:
            fixed(_FIXED[f.type_str])
        else:
            steps.append((_STRING if f.type_str == "string" else _BYTES, None))
    if flexible:
        steps.append((_TAGS, None))
    return tuple(steps)


def _fixed_size(plan: tuple) -> int | None:
    """Bytes of one element if every step is a fixed skip (no lengths, no tags)."""
    return plan[0][1] if len(plan) == 1 and plan[0][0] == _SKIP else None


def _walk(plan: tuple, frame, pos: int, flexible: bool, seen: list) -> int:
    for op, arg in plan:
        if op == _SKIP:
            pos += arg
        elif op == _STRING or op == _BYTES:
            if flexible:
                n, pos = codec.read_uvarint(frame, pos)
                n -= 1
            elif op == _STRING:
                n = _I16.unpack_from(frame, pos)[0]
                pos += 2
            else:
                n = _I32.unpack_from(frame, pos)[0]
                pos += 4
            pos += max(n, 0)
        elif op == _ARRAY:
            if flexible:
                n, pos = codec.read_uvarint(frame, pos)
                n -= 1
            else:
                n = _I32.unpack_from(frame, pos)[0]
                pos += 4
            if n <= 0:
                continue
            seen[0] += n
            if seen[0] > MAX_ENTRIES:
                raise TooManyEntries
            size = _fixed_size(arg)
            if size is not None:
                pos += n * size
            else:
                for _ in range(n):
                    pos = _walk(arg, frame, pos, flexible, seen)
        elif op == _STRUCT:
            pos = _walk(arg, frame, pos, flexible, seen)
        else:
            pos = codec.skip_tagged_fields(frame, pos)
        if pos > len(frame):
            raise IndexError("past the end of the frame")
    return pos


_PLANS: dict[tuple[type, int], tuple] = {}


def walk(cls: type, frame, pos: int, version: int) -> tuple[int, int]:
    """(entries, end) of the body at ``pos``; raises TooManyEntries (walking no
    further) once the entries pass MAX_ENTRIES, IndexError, struct.error or
    CodecError where the body is malformed."""
    key = (cls, version)
    plan = _PLANS.get(key)
    flexible = cls.flexible_version_q(version)
    if plan is None:
        if not 0 <= version <= cls.max_version:
            raise IndexError(f"no schema for v{version}")
        plan = _PLANS[key] = _plan(cls._struct.fields, version, flexible)
    seen = [0]
    end = _walk(plan, frame, pos, flexible, seen)
    return seen[0], end


def count_entries(cls: type, frame, pos: int, version: int) -> None:
    """Raise TooManyEntries if the body at ``pos`` names more than MAX_ENTRIES
    entries in all; walks at most that many. Malformed bodies pass: the codec
    says what is wrong with them."""
    if len(frame) - pos <= MAX_ENTRIES:
        return  # every entry takes a byte at least: nearly every request ends here
    try:
        walk(cls, frame, pos, version)
    except (IndexError, struct.error, codec.CodecError):
        return
    except TooManyEntries:
        raise TooManyEntries(
            f"{cls.__name__.removesuffix('Request')} v{version} names more than {MAX_ENTRIES} "
            f"entries (topics, partitions, groups, resources, ids): send at most {MAX_ENTRIES} "
            f"a request (INVALID_REQUEST)") from None


def codec_decode(cls: type, frame, pos: int, version: int):
    """What codec.decode_request does, for a fast decoder once it has counted."""
    try:
        request = cls.decode(frame[pos:], version=version)
    except Exception as exc:  # the codec raises many types on hostile input
        raise ValueError(f"cannot decode {cls.__name__} v{version}: {exc!r}") from exc
    codec._null_check(cls, version)(request)
    return request


def bound(api_key: int) -> None:
    """Decode ``api_key``'s requests through count_entries, then the codec as before."""
    cls = codec.request_class(api_key)

    def decode(frame, pos: int, version: int):
        count_entries(cls, frame, pos, version)
        return codec_decode(cls, frame, pos, version)

    codec.register_fast_decoder(api_key, decode)


_K = codec.ApiKey
# Every served API whose request holds a list, but Produce and Fetch.
BOUNDED = (_K.ListOffsets, _K.Metadata, _K.OffsetCommit, _K.OffsetFetch, _K.FindCoordinator, _K.JoinGroup,
             _K.SyncGroup, _K.DescribeGroups, _K.ListGroups, _K.LeaveGroup, _K.CreateTopics,
             _K.DeleteTopics, _K.DeleteRecords, _K.OffsetForLeaderEpoch, _K.AddPartitionsToTxn,
             _K.WriteTxnMarkers, _K.TxnOffsetCommit, _K.CreateAcls,
             _K.DeleteAcls, _K.DescribeConfigs, _K.AlterConfigs, _K.DescribeLogDirs,
             _K.CreatePartitions, _K.DeleteGroups, _K.IncrementalAlterConfigs, _K.OffsetDelete,
             _K.DescribeProducers, _K.DescribeTransactions,
             _K.ListTransactions, 68, 69)  # ConsumerGroupHeartbeat, ConsumerGroupDescribe
for _key in BOUNDED:
    bound(_key)
