"""Replication inside one broker (docs/georeplication.md), driven by confluent-kafka:
events are copied byte for byte at the same offsets; hubs, partition counts,
checkpoints and settings follow; asynchronous replication lags while a replica is
paused and refuses sends past maxReplicationLagDurationInSeconds (NOT_ENOUGH_REPLICAS);
synchronous replication has every acknowledged event on the replica already and
refuses sends while the quorum cannot take them."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import geo, geo_broker, stored


def conf(b, **extra):
    return confluent_conf(b.bootstrap_servers, b.connection_string(), **extra)


def send(b, n: int, *, start: int = 0, **extra) -> list:
    """Produce ``n`` events over both partitions; the delivery reports' errors (None: acked)."""
    errors = []
    p = Producer(conf(b, **extra))
    for i in range(start, start + n):
        p.produce("orders", f"event-{i}".encode(), partition=i % 2,
                  on_delivery=lambda err, _msg: errors.append(err))
    assert p.flush(30) == 0
    return errors


def wait_until(predicate, what: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def ends(b, location: str) -> dict:
    return b.call(lambda: geo(b)._stores[location].ends())


def test_events_are_copied_byte_for_byte_at_the_same_offsets(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        assert send(b, 300, **{"enable.idempotence": True, "compression.type": "lz4",
                               "linger.ms": 5}) == [None] * 300
        wait_until(lambda: ends(b, "eastus") == ends(b, "westus"), "eastus to catch up")
        assert ends(b, "eastus") == {("orders", 0): 150, ("orders", 1): 150}
        for partition in (0, 1):
            primary = stored(b, "westus", partition=partition)
            assert primary and stored(b, "eastus", partition=partition) == primary
        assert [r.lag_events for r in b.call(lambda: geo(b).replicas)] == [0, 0]


def test_hubs_partition_counts_checkpoints_and_settings_follow(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        admin = AdminClient(conf(b))
        for fut in admin.create_topics([NewTopic("audit", 1)]).values():
            fut.result(30)
        for fut in admin.create_partitions([NewPartitions("audit", 3)]).values():
            fut.result(30)
        send(b, 10)
        consumer = Consumer(conf(b, **{"group.id": "billing", "enable.auto.commit": False}))
        consumer.assign([TopicPartition("orders", 0, 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 5 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        assert len(got) == 5
        consumer.commit(offsets=[TopicPartition("orders", 0, 4)], asynchronous=False)
        consumer.close()

        def replica_state():
            store = geo(b)._stores["eastus"]
            return ({n: t.partitions for n, t in store.logs.topics().items()},
                    store.offsets.get("billing"), (store.settings or {}).get("tier"))
        wait_until(lambda: replica_state() == ({"orders": 2, "audit": 3},
                                               {("orders", 0): (4, "")}, "Premium"),
                   "hubs, the checkpoint and the settings on eastus")
        for fut in admin.delete_topics(["audit"]).values():
            fut.result(30)
        wait_until(lambda: "audit" not in replica_state()[0], "audit deleted on eastus")


def test_a_paused_replica_lags_and_past_the_limit_sends_fail(tmp_path):
    with geo_broker(tmp_path, max_lag=300, virtual_clock=True) as b:
        quick = {"retries": 0, "message.timeout.ms": 10000}
        b.call(lambda: geo(b).pause("eastus"))
        assert send(b, 6, **quick) == [None] * 6
        b.clock.advance(seconds=200)
        east = b.call(lambda: geo(b).replica("eastus"))
        assert (east.paused, east.state, east.lag_events) == (True, "Paused", 6)
        assert east.lag_seconds == pytest.approx(200, abs=1)
        assert send(b, 2, start=6, **quick) == [None] * 2  # 200 s < 300 s: still taken
        b.clock.advance(seconds=101)
        errors = send(b, 2, start=8, **quick)
        assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS] * 2
        why = b.call(lambda: geo(b).admission()).message  # librdkafka shows only the code
        assert "replication lag 301 s" in why and "300" in why
        b.call(lambda: geo(b).resume("eastus"))
        east = b.call(lambda: geo(b).replica("eastus"))
        assert (east.lag_seconds, east.lag_events, east.state) == (0, 0, "Ready")
        assert send(b, 2, start=10, **quick) == [None] * 2
        assert ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 5, ("orders", 1): 5}


def test_synchronous_replication_acknowledges_only_what_the_replica_has(tmp_path):
    with geo_broker(tmp_path, max_lag=0, virtual_clock=True) as b:
        quick = {"retries": 0, "message.timeout.ms": 10000}
        for round_ in range(3):  # no waiting: acknowledged means on eastus already
            assert send(b, 20, start=20 * round_, **quick) == [None] * 20
            assert ends(b, "eastus") == ends(b, "westus")
        b.call(lambda: geo(b).pause("eastus"))
        errors = send(b, 2, start=100, **quick)
        assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS] * 2
        why = b.call(lambda: geo(b).admission()).message
        assert "synchronously" in why and "eastus" in why
        assert ends(b, "westus") == {("orders", 0): 30, ("orders", 1): 30}  # nothing appended
        b.call(lambda: geo(b).resume("eastus"))
        assert send(b, 2, start=102, **quick) == [None] * 2
        assert ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 31, ("orders", 1): 31}
        for partition in (0, 1):
            assert stored(b, "eastus", partition=partition) == stored(b, "westus", partition=partition)


def test_synchronous_with_three_replicas_needs_a_quorum_of_secondaries(tmp_path):
    with geo_broker(tmp_path, max_lag=0, locations=("westus", "eastus", "northeurope"),
                    virtual_clock=True) as b:
        quick = {"retries": 0, "message.timeout.ms": 10000}
        b.call(lambda: geo(b).pause("northeurope"))  # 1 of 2 secondaries is a quorum of 3 replicas
        assert send(b, 4, **quick) == [None] * 4
        assert ends(b, "eastus") == ends(b, "westus") != ends(b, "northeurope")
        b.call(lambda: geo(b).pause("eastus"))
        assert [e.code() for e in send(b, 1, **quick)] == [KafkaError.NOT_ENOUGH_REPLICAS]
        b.call(lambda: geo(b).resume("northeurope"))
        assert send(b, 1, start=4, **quick) == [None]
        assert ends(b, "northeurope") == ends(b, "westus")


def test_replicas_and_roles_survive_a_restart(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        send(b, 10)
        b.call(lambda: geo(b).pause("eastus"))
        send(b, 4, start=10)
        b.call(lambda: geo(b).promote("eastus", forced=True))
    with geo_broker(tmp_path, max_lag=300) as b:
        g = b.call(lambda: geo(b).to_json())
        assert (g["primary"], g["segment"]) == ("eastus", 1)
        assert [(r["location"], r["role"]) for r in g["replicas"]] == [("eastus", "Primary"),
                                                                        ("westus", "Secondary")]
        assert b.call(lambda: geo(b).segment_starts("orders", 0)) == [(0, 0), (1, 5)]
        consumer = Consumer(conf(b, **{"group.id": "g", "auto.offset.reset": "earliest"}))
        consumer.assign([TopicPartition("orders", 0, 0), TopicPartition("orders", 1, 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        consumer.close()
        assert sorted(got) == sorted(f"event-{i}".encode() for i in range(10))


def test_secondaries_drop_what_retention_removed_from_the_primary(tmp_path):
    with geo_broker(tmp_path, max_lag=300, virtual_clock=True, retention_hours=1) as b:
        assert send(b, 10, retries=0) == [None] * 10
        wait_until(lambda: ends(b, "eastus") == ends(b, "westus"), "eastus to catch up")

        def starts(location):
            logs = geo(b)._stores[location].logs
            return [logs.get_log("orders", p).log_start_offset for p in (0, 1)]
        assert b.call(lambda: starts("eastus")) == [0, 0]
        b.clock.advance(seconds=2 * 3600)  # the retention pass and the replication tick run
        assert b.call(lambda: starts("westus")) == [5, 5]
        assert b.call(lambda: starts("eastus")) == [5, 5]
        assert send(b, 2, start=10, retries=0) == [None] * 2
        wait_until(lambda: ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 6, ("orders", 1): 6},
                   "eastus to catch up after retention")


def test_rest_send_gets_503_past_the_limit_and_201_once_caught_up(tmp_path):
    import requests

    from kafka_wire.eventhubs import sas
    from tests.geo.conftest import KEY, NAMESPACE

    with geo_broker(tmp_path, max_lag=300, virtual_clock=True, http=True) as b:
        host = f"{NAMESPACE}.servicebus.windows.net"

        def post() -> requests.Response:
            token = sas.generate(sas.resource_uri(host, None), "RootManageSharedAccessKey", KEY,
                                 b.clock.now_ms() // 1000 + 600)
            return requests.post(f"{b.http_url}/orders/partitions/0/messages", data=b"rest",
                                 headers={"Host": host, "Authorization": token}, timeout=30)
        assert post().status_code == 201
        b.call(lambda: geo(b).pause("eastus"))
        assert post().status_code == 201
        b.clock.advance(seconds=301)
        refused = post()
        assert refused.status_code == 503 and "replication lag" in refused.text, refused.text
        b.call(lambda: geo(b).resume("eastus"))
        assert post().status_code == 201
        assert ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 3, ("orders", 1): 0}


def test_replicas_added_and_removed_at_runtime_and_listeners_hear_each_change(tmp_path):
    from kafka_wire.eventhubs.refusals import Refusal
    from kafka_wire.replication import GeoError

    with geo_broker(tmp_path, max_lag=300, virtual_clock=True) as b:
        heard = []
        b.call(lambda: geo(b).add_listener(lambda change: heard.append((change.kind, change.location))))
        assert send(b, 8, retries=0) == [None] * 8
        view = b.call(lambda: geo(b).add_replica("North Europe"))  # ARM's display name is folded
        assert (view.location, view.role, view.lag_events) == ("northeurope", "Secondary", 0)
        assert ends(b, "northeurope") == ends(b, "westus")
        assert stored(b, "northeurope") == stored(b, "westus")
        region = tmp_path / "data" / "_geo" / "geonamespace1" / "northeurope"
        assert region.is_dir()
        b.call(lambda: geo(b).set_max_lag(0))
        assert b.call(lambda: geo(b).synchronous)
        b.call(lambda: geo(b).remove_replica("northeurope"))
        assert not region.exists() and b.call(lambda: geo(b).locations) == ["westus", "eastus"]
        for call, reason in [(lambda: geo(b).set_max_lag(60), Refusal.INVALID),
                             (lambda: geo(b).add_replica("eastus"), Refusal.INVALID),
                             (lambda: geo(b).add_replica("../x"), Refusal.INVALID),
                             (lambda: geo(b).remove_replica("westus"), Refusal.INVALID),
                             (lambda: geo(b).pause("moon"), Refusal.NOT_FOUND),
                             (lambda: geo(b).promote("westus"), Refusal.INVALID)]:
            with pytest.raises(GeoError) as info:
                b.call(call)
            assert info.value.reason is reason
        assert heard == [("added", "northeurope"), ("max-lag", None), ("removed", "northeurope")]
        b.call(lambda: geo(b).pause("eastus"))
        b.call(lambda: geo(b).promote("eastus", forced=True))
        assert heard[-2:] == [("paused", "eastus"), ("promoted", "eastus")]


def test_an_unreadable_state_file_falls_back_to_the_config(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        b.call(lambda: geo(b).pause("eastus"))
    (tmp_path / "data" / "_geo" / "geonamespace1" / "_state.json").write_text("{not json")
    with geo_broker(tmp_path, max_lag=300) as b:
        g = b.call(lambda: geo(b).to_json())
        assert g["primary"] == "westus" and not g["replicas"][1]["paused"]


def test_a_producer_retrying_through_a_stalled_synchronous_replica_is_acknowledged_once_it_resumes(tmp_path):
    with geo_broker(tmp_path, max_lag=0, policy=False) as b:  # open namespace: no sign-in
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "enable.idempotence": True,
                      "message.timeout.ms": 30000, "retry.backoff.ms": 50})
        p.produce("orders", b"first", partition=0)
        assert p.flush(30) == 0
        b.call(lambda: geo(b).pause("eastus"))
        reports = []
        p.produce("orders", b"held", partition=0, on_delivery=lambda err, msg: reports.append(err))
        p.poll(1.0)  # refused with NOT_ENOUGH_REPLICAS and retried: not acknowledged yet
        assert reports == [] and ends(b, "westus")[("orders", 0)] == 1
        b.call(lambda: geo(b).resume("eastus"))
        assert p.flush(30) == 0 and reports == [None]
        assert ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 2, ("orders", 1): 0}
        # a promotion closes the connections of clients that never signed in too
        connections = lambda: {id(c) for c in b.broker.server.connections}  # noqa: E731
        before = b.call(connections)
        assert before
        b.call(lambda: geo(b).promote("eastus"))
        assert not before & b.call(connections)  # (the client may have reconnected since)
