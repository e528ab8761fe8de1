"""One Kafka group holds at most ``[limits] members_per_group`` members (1,000 by
default), in both protocols: past it a new member gets GROUP_MAX_SIZE_REACHED, as from
Kafka's group.max.size. Classic members the broker handed an id to (KIP-394, pending
until they rejoin with it) count too, so a client sending JoinGroups with empty ids in a
loop holds at most that many, not one per request until each session timeout."""
from __future__ import annotations

import time

import kafka.errors as Errors
from confluent_kafka import Consumer, KafkaError

from kafka_wire import codec
from kafka_wire.eventhubs.bounds import Bounds
from tests.rawclient import RawClient

JOIN, HEARTBEAT = codec.ApiKey.JoinGroup, 68
WAIT_S = 20


def _join_body(group: str) -> bytes:
    cls = codec.request_class(JOIN)
    return bytes(cls(version=5, group_id=group, session_timeout_ms=1_800_000,
                     rebalance_timeout_ms=60_000, member_id="", group_instance_id=None,
                     protocol_type="consumer",
                     protocols=[cls.JoinGroupRequestProtocol(name="range", metadata=b"")]
                     ).encode(version=5))


def _error_codes(client: RawClient, api: int, version: int, body: bytes, count: int) -> list:
    """``count`` copies of one request, pipelined; their answers' error codes (a JoinGroup
    v5 response is correlation id, throttle_time_ms, then error_code)."""
    client.send_raw(b"".join(client.frame(api, version, body) for _ in range(count)))
    return [int.from_bytes(client.read_frame()[8:10], "big", signed=True) for _ in range(count)]


def test_join_group_storm_stops_at_members_per_group(broker):
    group = "storm"
    with RawClient(broker.bootstrap_servers, timeout=60) as client:
        codes = _error_codes(client, JOIN, 5, _join_body(group), 1_050)
    assert codes.count(Errors.MemberIdRequiredError.errno) == 1_000
    assert codes[1_000:] == [Errors.GroupMaxSizeReachedError.errno] * 50
    groups = broker.broker.services.default.groups
    assert broker.call(lambda: len(groups.classic.get_group(group).pending_members)) == 1_000


def _poll_errors(consumer: Consumer, errors: list, until, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error():
            errors.append(m.error())


def _codes(errors: list) -> set[int]:
    return {e.code() for e in errors if isinstance(e, KafkaError)}


def test_a_full_group_refuses_a_third_consumer_in_both_protocols(broker_factory):
    broker = broker_factory(bounds=Bounds(members_per_group=2))
    broker.create_hub("orders", partitions=4)
    for protocol in ("classic", "consumer"):
        conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": f"full-{protocol}",
                "group.protocol": protocol}
        if protocol == "classic":
            conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        consumers, errors = [], []
        try:
            for _ in range(2):
                c = Consumer({**conf, "error_cb": errors.append})
                c.subscribe(["orders"])
                consumers.append(c)
            # The two members share the four partitions.
            both = lambda: sorted(len(c.assignment()) for c in consumers) == [2, 2]  # noqa: E731
            deadline = time.monotonic() + WAIT_S
            while not both() and time.monotonic() < deadline:
                for c in consumers:
                    c.poll(0.1)
            assert both(), [c.assignment() for c in consumers]
            assert not errors, errors
            third_errors: list = []
            third = Consumer({**conf, "error_cb": third_errors.append})
            consumers.append(third)
            third.subscribe(["orders"])
            max_size = KafkaError.GROUP_MAX_SIZE_REACHED

            def refused() -> bool:
                # librdkafka reports the classic refusal as such; KIP-848's is fatal to the
                # client (as against Kafka), its message naming the cause.
                return max_size in _codes(third_errors) or any(
                    "maximum size" in e.str() for e in third_errors if isinstance(e, KafkaError))

            _poll_errors(third, third_errors, refused)
            assert refused(), (protocol, third_errors)
            assert third.assignment() == []
            # The two members are untouched.
            assert sorted(len(c.assignment()) for c in consumers[:2]) == [2, 2]
        finally:
            for c in consumers:
                c.close()


def test_kip848_joins_stop_at_members_per_group(broker):
    broker.create_hub("orders", partitions=1)
    with RawClient(broker.bootstrap_servers, timeout=60) as client:
        for i in range(1_001):
            resp = client.request(HEARTBEAT, 0, group_id="kip848-storm", member_id="",
                                  member_epoch=0, instance_id=None, rack_id=None,
                                  rebalance_timeout_ms=60_000, subscribed_topic_names=["orders"],
                                  server_assignor=None, topic_partitions=[])
            if i < 1_000:
                assert resp.error_code == 0, (i, resp)
        assert resp.error_code == Errors.GroupMaxSizeReachedError.errno
        assert "1000" in resp.error_message
