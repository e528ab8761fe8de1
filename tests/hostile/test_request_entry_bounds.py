"""Every request that takes a list names at most MAX_ENTRIES entries in all (topics,
partitions, groups, resources, ids...): past it the request is refused before it is
decoded (the connection closed, as Kafka does with a request it cannot parse) and other
clients are served throughout; within it, the request is answered as before."""
from __future__ import annotations

import random
import threading
import time
import uuid

import pytest
from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.request_bounds import BOUNDED, MAX_ENTRIES, walk
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

K = codec.ApiKey
registry.load_all()


def _value(rng: random.Random, t: str, nullable: bool):
    if nullable and rng.random() < 0.2:
        return None
    if t in ("string",):
        return "".join(rng.choice("abcé.-_") for _ in range(rng.randrange(0, 12)))
    if t in ("bytes", "records"):
        return rng.randbytes(rng.randrange(0, 20))
    if t == "bool":
        return rng.random() < 0.5
    if t == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if t == "float64":
        return rng.random()
    bits = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "uint32": 32, "int64": 63}[t]
    return rng.randrange(0, 2 ** bits) if t.startswith("u") else rng.randrange(-2 ** bits, 2 ** bits)


def _random_fields(rng: random.Random, fields: dict, version: int, count: list) -> dict:
    out = {}
    for f in fields.values():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        nullable = f.nullable_for_version_q(version)
        if isinstance(f, (StructArrayField, ArrayField)):
            if nullable and rng.random() < 0.2:
                out[f.name] = None
                continue
            n = rng.randrange(0, 4)
            count[0] += n
            if isinstance(f, StructArrayField):
                out[f.name] = [f.data_class(**_random_fields(rng, f.fields, version, count)) for _ in range(n)]
            else:
                out[f.name] = [_value(rng, f.array_of.type_str, False) for _ in range(n)]
        elif isinstance(f, StructField):
            out[f.name] = f.data_class(**_random_fields(rng, f.fields, version, count))
        else:
            out[f.name] = _value(rng, f.type_str, nullable)
    return out


@pytest.mark.parametrize("api_key", BOUNDED)
def test_the_walk_counts_every_entry_and_ends_where_the_body_ends(api_key):
    cls = codec.request_class(api_key)
    served = registry.lookup(api_key)
    rng = random.Random(api_key)
    for version in range(served.min_version, served.max_version + 1):
        for _ in range(30):
            count = [0]
            request = cls(version=version, **_random_fields(rng, cls._struct.fields, version, count))
            body = b"\0\0\0" + bytes(request.encode(version=version))
            assert walk(cls, memoryview(body), 3, version) == (count[0], len(body)), (cls.__name__, version)


def test_every_entry_takes_a_byte_at_least():
    """count_entries passes a body of at most MAX_ENTRIES bytes without walking it."""
    from kafka_wire.apis import request_bounds as rb

    def check(plan, where):
        for op, arg in plan:
            if op == rb._ARRAY:
                assert arg, f"{where}: an entry of no bytes"
            if op in (rb._ARRAY, rb._STRUCT):
                check(arg, where)
    for api_key in BOUNDED:
        cls = codec.request_class(api_key)
        served = registry.lookup(api_key)
        for version in range(served.min_version, served.max_version + 1):
            walk(cls, memoryview(bytes(cls(version=version).encode(version=version))), 0, version)
            check(rb._PLANS[(cls, version)], f"{cls.__name__} v{version}")


def test_every_served_request_with_a_list_is_bounded():
    def has_list(fields):
        return any(f.is_array() or (f.fields and has_list(f.fields)) for f in fields.values())
    own_counts = {K.Produce, K.Fetch}  # hand-written decoders with their own count
    listed = {key for key, _lo, _hi in registry.advertised()
              if has_list(codec.request_class(key)._struct.fields)}
    assert listed - own_counts == set(BOUNDED)


_TEXT = {"name": "t1", "topic": "t1", "resource_name": "t1", "group_id": "g", "transactional_id": "tx",
         "member_id": "", "key": "retention.ms", "value": "3600000"}
_INTS = {"generation_id_or_member_epoch": -1, "generation_id": -1, "resource_type": 2, "replica_id": -1,
         "timeout_ms": 1000, "producer_id": -1, "producer_epoch": -1, "retention_time_ms": -1,
         "committed_leader_epoch": -1, "current_leader_epoch": -1, "count": 2, "num_partitions": 1,
         "replication_factor": 1}


def _fill(fields: dict, version: int, path: str, n: int, prefix: str = "") -> dict:
    """A request whose list at ``path`` has n entries and every other list one."""
    out = {}
    for f in fields.values():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        here = prefix + f.name
        count = n if here == path else 1
        if isinstance(f, StructArrayField):
            out[f.name] = [f.data_class(**_fill(f.fields, version, path, n, here + "."))] * count
        elif isinstance(f, ArrayField):
            t = f.array_of.type_str
            out[f.name] = [0 if t.startswith(("int", "uint")) else "t1" if "topic" in f.name else "g"] * count
        elif isinstance(f, StructField):
            out[f.name] = f.data_class(**_fill(f.fields, version, path, n, here + "."))
        elif f.name in _TEXT or f.name in _INTS:
            out[f.name] = _TEXT.get(f.name, _INTS.get(f.name))
        else:
            out[f.name] = {"string": "x", "bytes": b"", "bool": False, "uuid": uuid.UUID(int=0),
                           "float64": 0.0}.get(f.type_str, 0)
    return out


def _body(api_key: int, version: int, path: str, n: int) -> bytes:
    cls = codec.request_class(api_key)
    return bytes(cls(version=version, **_fill(cls._struct.fields, version, path, n)).encode(version=version))


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("entry-bounds") / "data") as b:
        b.create_hub("t1", 2)
        yield b


def _answer(client: RawClient, api_key: int, version: int, body: bytes) -> bytes | None:
    client.send_raw(client.frame(api_key, version, body))
    try:
        return client.read_frame()
    except ConnectionError:
        return None


# (api, version, the list made long); each list's own entries and its parents' count.
PAST = [(K.OffsetCommit, 2, "topics.partitions"), (K.OffsetCommit, 8, "topics.partitions"),
        (K.TxnOffsetCommit, 0, "topics.partitions"), (K.TxnOffsetCommit, 3, "topics.partitions"),
        (K.OffsetFetch, 1, "topics.partition_indexes"), (K.OffsetFetch, 7, "topics.partition_indexes"),
        (K.OffsetFetch, 8, "groups"), (K.OffsetFetch, 8, "groups.topics.partition_indexes"),
        (K.OffsetFetch, 9, "groups.topics"),
        (K.OffsetForLeaderEpoch, 2, "topics.partitions"), (K.OffsetForLeaderEpoch, 4, "topics.partitions"),
        (K.DeleteRecords, 0, "topics.partitions"), (K.DeleteRecords, 2, "topics.partitions"),
        (K.DescribeConfigs, 1, "resources"), (K.DescribeConfigs, 4, "resources.configuration_keys"),
        (K.AlterConfigs, 1, "resources"), (K.AlterConfigs, 2, "resources.configs"),
        (K.IncrementalAlterConfigs, 1, "resources"), (K.CreateTopics, 5, "topics"),
        (K.CreateTopics, 5, "topics.configs"), (K.DeleteTopics, 4, "topic_names"),
        (K.DeleteTopics, 6, "topics"), (K.CreatePartitions, 1, "topics"), (K.DescribeGroups, 5, "groups"),
        (K.DeleteGroups, 2, "groups_names"), (K.ListGroups, 4, "states_filter"),
        (K.DescribeProducers, 0, "topics.partition_indexes"),
        (K.DescribeTransactions, 0, "transactional_ids"),
        (K.AddPartitionsToTxn, 3, "v3_and_below_topics.partitions"), (K.AddPartitionsToTxn, 4, "transactions"),
        (K.Metadata, 1, "topics"), (K.Metadata, 12, "topics"), (69, 0, "group_ids"),
        (K.OffsetDelete, 0, "topics.partitions"), (K.DescribeLogDirs, 1, "topics.partitions"),
        (K.ListTransactions, 1, "producer_id_filters"), (K.CreateAcls, 2, "creations"),
        (K.WriteTxnMarkers, 1, "markers"), (K.LeaveGroup, 3, "members"), (K.JoinGroup, 5, "protocols"),
        (K.SyncGroup, 3, "assignments"), (K.FindCoordinator, 4, "coordinator_keys"),
        (68, 0, "subscribed_topic_names"), (K.Fetch, 4, "topics.partitions"), (K.Fetch, 12, "topics"),
        (K.Fetch, 13, "topics.partitions"), (K.Fetch, 7, "forgotten_topics_data.partitions"),
        (K.Fetch, 15, "forgotten_topics_data")]


@pytest.mark.parametrize("api_key,version,path", PAST, ids=[f"{a}v{v}-{p}" for a, v, p in PAST])
def test_a_request_past_the_bound_is_refused_before_it_is_decoded(broker, api_key, version, path):
    parents = path.count(".")  # each enclosing list holds one entry
    with RawClient(broker.bootstrap_servers, timeout=30) as c:
        answer = _answer(c, api_key, version, _body(api_key, version, path, MAX_ENTRIES + 1 - parents))
        assert answer is None, f"answered in {len(answer)} bytes"
    with RawClient(broker.bootstrap_servers) as other:
        assert other.request(K.ApiVersions, 0).error_code == 0


# (api, version, the list made long, its length at the bound)
WITHIN = [(K.OffsetCommit, 8, "topics.partitions", MAX_ENTRIES - 1),
          (K.TxnOffsetCommit, 3, "topics.partitions", MAX_ENTRIES - 1),
          (K.OffsetFetch, 7, "topics.partition_indexes", MAX_ENTRIES - 1),
          (K.OffsetFetch, 8, "groups.topics.partition_indexes", MAX_ENTRIES - 2),
          (K.OffsetFetch, 8, "groups", MAX_ENTRIES // 3),  # a group, its topic, its partition
          (K.OffsetForLeaderEpoch, 4, "topics.partitions", MAX_ENTRIES - 1),
          (K.DeleteRecords, 2, "topics.partitions", MAX_ENTRIES - 1),  # (one answer a partition)
          (K.DescribeConfigs, 4, "resources", MAX_ENTRIES // 2)]  # a resource, its key


@pytest.mark.parametrize("api_key,version,path,n", WITHIN, ids=[f"{a}v{v}-{p}" for a, v, p, _ in WITHIN])
def test_a_request_at_the_bound_is_answered(broker, api_key, version, path, n):
    with RawClient(broker.bootstrap_servers, timeout=60) as c:
        answer = _answer(c, api_key, version, _body(api_key, version, path, n))
        assert answer is not None
        if api_key != K.DeleteRecords:  # each entry answered (the same partition each time)
            assert len(answer) > 4 * n


def test_other_clients_are_served_while_two_million_entries_are_refused(broker):
    """OffsetFetch v5 naming 2 million partitions (8 MiB) held everyone ~10 s before the bound."""
    import struct
    n = 2_000_000
    body = (struct.pack(">h", 1) + b"g" + struct.pack(">i", 1) + struct.pack(">h", 2) + b"t1"
            + struct.pack(">i", n) + bytes(4 * n))  # group, [topic, [partition]]
    waits, done = [], threading.Event()

    def ping():
        with RawClient(broker.bootstrap_servers) as other:
            while not done.is_set() and len(waits) < 10_000:
                t = time.perf_counter()
                assert other.request(K.ApiVersions, 0).error_code == 0
                waits.append(time.perf_counter() - t)

    pinger = threading.Thread(target=ping)
    pinger.start()
    try:
        with RawClient(broker.bootstrap_servers, timeout=60) as c:
            answer = _answer(c, K.OffsetFetch, 5, body)
            assert answer is None, f"answered in {len(answer)} bytes"
    finally:
        done.set()
        pinger.join(30)
    assert waits and max(waits) < 2.0, max(waits)
