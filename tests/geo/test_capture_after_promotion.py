"""Capture of a geo-replicated namespace reads the region that is primary now
(docs/capture.md, docs/georeplication.md): after a promotion the events go to the new
primary's logs (DATA_DIR/_geo/<namespace>/<location>/), and Capture's log reader
(``LogBackend``, what both ``kafka-wire capture --data-dir`` and the broker's own
capture jobs read through) follows, a reader opened before the promotion included,
at the same offsets: what it read before is not read again."""
from __future__ import annotations

from confluent_kafka import Producer

from kafka_wire.groups_cli import offline_report
from kafka_wire.spark.backend import LogBackend
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import NAMESPACE, geo, geo_broker, stored


def send(b, values: list[str]) -> None:
    errors = []
    p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(),
                                **{"retries": 0, "message.timeout.ms": 10000}))
    for v in values:
        p.produce("orders", v.encode(), partition=0, on_delivery=lambda err, _m: errors.append(err))
    assert p.flush(30) == 0
    assert errors == [None] * len(values)


def test_capture_reads_the_new_primary_after_a_promotion_from_where_it_was(tmp_path):
    data_dir = tmp_path / "data"
    with geo_broker(tmp_path, max_lag=300, partitions=1) as b:
        send(b, [f"a-{i}" for i in range(10)])
        reader = LogBackend(str(data_dir), NAMESPACE)  # as a capture job running all along
        assert reader.end_offset("orders", 0) == 10
        captured = list(reader.read("orders", 0, 0, 10))
        assert b.call(lambda: geo(b).promote("eastus")).lost_events == 0
        b.call(lambda: geo(b).pause("westus"))  # the old primary's region takes nothing more (asynchronous: sends go on)
        send(b, [f"b-{i}" for i in range(10)])
        eastus = stored(b, "eastus")
        for backend in (reader, LogBackend(str(data_dir), NAMESPACE)):
            assert backend.partition_count("orders") == 1
            assert backend.end_offset("orders", 0) == 20
            assert backend.root == data_dir / "_geo" / NAMESPACE / "eastus"
        refs, end = reader.refs("orders", 0, 10)
        assert end == 20 and refs[0].base_offset == 10 and refs[-1].next_offset == 20
        captured += list(reader.read("orders", 0, 10, 20))
    # every event once, in order, byte for byte what the new primary holds
    assert [x.base_offset for x in captured] == sorted({x.base_offset for x in captured})
    assert b"".join(x.data for x in captured) == eastus


def test_offline_group_lag_reads_the_new_primary_after_a_promotion(tmp_path):
    # `kafka-wire groups --data-dir` read DATA_DIR/<namespace>: the old primary's ends.
    data_dir = tmp_path / "data"
    with geo_broker(tmp_path, max_lag=300, partitions=1) as b:
        send(b, [f"a-{i}" for i in range(10)])
        assert b.call(lambda: geo(b).promote("eastus")).lost_events == 0
        b.call(lambda: geo(b).pause("westus"))
        send(b, [f"b-{i}" for i in range(5)])
    [hub] = [h for h in offline_report(data_dir, NAMESPACE) if h.event_hub == "orders"]
    assert [p.last_sequence_number for g in hub.consumer_groups if g.name == "$Default"
            for p in g.partitions] == [14]
