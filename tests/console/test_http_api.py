"""The HTTP listener: health like the official emulator, Prometheus metrics whose
numbers match the traffic a test made, and the console's JSON API."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_wire.console.capture_files import EVENTS_FILE, CaptureFiles
from kafka_wire.httpd.listener import HttpListener
from kafka_wire.console.metrics import BrokerMetrics
from kafka_wire.rest.http import Request
from kafka_wire.testing import EmulatedBroker
from tests.console.helpers import commit, consume_all, http_get, produce

NS = "emulatorNs1"


@pytest.fixture
def http_broker(tmp_path):
    capture = tmp_path / "capture"
    capture.mkdir()
    with EmulatedBroker(tmp_path / "data", http=True, capture_dir=capture) as b:
        b.capture_path = capture
        yield b


def scrape(broker) -> dict[tuple[str, tuple], float]:
    """/metrics parsed by prometheus_client: {(sample name, sorted labels): value}."""
    status, ctype, text = http_get(broker.http_url + "/metrics")
    assert status == 200
    assert ctype.startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples, name, **labels) -> float:
    return samples[(name, tuple(sorted((k, str(v)) for k, v in labels.items())))]


def test_http_is_off_by_default_for_test_brokers(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        assert b.broker.http_address is None
        assert b.broker.services.observer is None
        with pytest.raises(RuntimeError, match="http=True"):
            _ = b.http_url


def test_health_answers_exactly_like_the_official_emulator(http_broker):
    status, ctype, body = http_get(http_broker.http_url + "/health")
    assert status == 200
    assert ctype.startswith("application/json")
    assert json.loads(body) == {"status": "healthy", "message": "Service is healthy."}


def test_health_is_503_with_the_emulators_message_while_not_serving():
    server = HttpListener(SimpleNamespace(), ready=lambda: False)
    status, body, ctype, _headers = server.route(Request("GET", "/health", {}, {}, b""))
    assert status == 503 and ctype.startswith("application/json")
    assert json.loads(body) == {"status": "unhealthy",
                                "message": "Service not available. Please try after some time."}


def test_metrics_match_what_the_test_produced_consumed_and_committed(http_broker):
    b = http_broker
    b.create_hub("orders", 2)
    sent = produce(b.bootstrap_servers, "orders", {0: 7, 1: 5}, size=100)
    consume_all(b.bootstrap_servers, "orders", 2, sent, group="reader")
    commit(b.bootstrap_servers, "orders", "billing", {0: 3, 1: 5})

    m = scrape(b)
    part = {"namespace": NS, "hub": "orders"}
    assert value(m, "kafkawire_hub_partitions", **part) == 2
    for p, n in ((0, 7), (1, 5)):
        labels = {**part, "partition": p}
        assert value(m, "kafkawire_partition_log_start_offset", **labels) == 0
        assert value(m, "kafkawire_partition_log_end_offset", **labels) == n
        assert value(m, "kafkawire_partition_incoming_messages_total", **labels) == n
        assert value(m, "kafkawire_partition_outgoing_messages_total", **labels) == n
        size = value(m, "kafkawire_partition_size_bytes", **labels)
        assert size >= n * 100  # payloads plus batch and record overhead
        assert value(m, "kafkawire_partition_incoming_bytes_total", **labels) == size
        assert value(m, "kafkawire_partition_outgoing_bytes_total", **labels) == size
    group = {"namespace": NS, "group": "billing", "hub": "orders"}
    assert value(m, "kafkawire_consumer_group_committed_offset", **group, partition=0) == 3
    assert value(m, "kafkawire_consumer_group_lag", **group, partition=0) == 4
    assert value(m, "kafkawire_consumer_group_lag", **group, partition=1) == 0
    # Every request is counted and timed, per API.
    assert value(m, "kafkawire_requests_total", api="Produce") >= 1
    assert value(m, "kafkawire_requests_total", api="OffsetCommit") == 1
    fetches = value(m, "kafkawire_request_duration_seconds_count", api="Fetch")
    assert fetches >= 1
    assert value(m, "kafkawire_request_duration_seconds_bucket", api="Fetch", le="+Inf") == fetches
    assert value(m, "kafkawire_request_duration_seconds_sum", api="Fetch") > 0
    assert ("kafkawire_connections", (("listener", "kafka"),)) in m


def test_capture_files_from_the_events_file_appear_in_api_and_metrics(http_broker):
    b = http_broker
    event = {"topic": f"/subscriptions/0/resourceGroups/rg/providers/Microsoft.EventHub/namespaces/{NS}",
             "subject": "eventhubs/orders", "eventType": "Microsoft.EventHub.CaptureFileCreated",
             "id": "a1", "eventTime": "2026-01-02T03:04:05Z",
             "data": {"fileUrl": f"file:///cap/{NS}/orders/0/2026/01/02/03/04/05.avro",
                      "fileType": "AzureBlockBlob", "partitionId": "0", "sizeInBytes": 2048,
                      "eventCount": 12, "firstSequenceNumber": 0, "lastSequenceNumber": 11}}
    path = b.capture_path / EVENTS_FILE
    path.write_text(json.dumps(event) + "\n")

    status, _, body = http_get(b.http_url + "/api/capture-files")
    files = json.loads(body)
    assert status == 200 and len(files) == 1
    assert files[0]["hub"] == "orders" and files[0]["namespace"] == NS
    assert files[0]["events"] == 12 and files[0]["size_bytes"] == 2048
    # A replay announces the same file again under the same id: counted once.
    with path.open("a") as f:
        f.write(json.dumps(event) + "\n")
    m = scrape(b)
    assert value(m, "kafkawire_capture_files_total", namespace=NS, hub="orders") == 1
    assert value(m, "kafkawire_capture_bytes_total", namespace=NS, hub="orders") == 2048
    assert value(m, "kafkawire_capture_events_total", namespace=NS, hub="orders") == 12


def test_capture_reader_keeps_a_partial_last_line_for_the_next_look(tmp_path):
    reader = CaptureFiles([tmp_path])
    line = json.dumps({"subject": "eventhubs/h", "data": {"partitionId": "1", "sizeInBytes": 5,
                                                         "eventCount": 1, "namespace": "ns"}})
    (tmp_path / EVENTS_FILE).write_text(line[:10])
    reader.refresh()
    assert list(reader.recent) == []
    with (tmp_path / EVENTS_FILE).open("a") as f:
        f.write(line[10:] + "\n")
    reader.refresh()
    assert [(e["namespace"], e["hub"], e["partition"]) for e in reader.recent] == [("ns", "h", "1")]


def test_json_api_lists_namespaces_hubs_partitions_and_lagging_groups(http_broker):
    b = http_broker
    b.create_hub("telemetry", 3)
    produce(b.bootstrap_servers, "telemetry", {0: 4, 2: 2})
    commit(b.bootstrap_servers, "telemetry", "slow", {0: 1})

    _, _, body = http_get(b.http_url + "/api/namespaces")
    (ns,) = json.loads(body)
    assert ns["name"] == NS and [h["name"] for h in ns["hubs"]] == ["telemetry"]
    assert ns["hubs"][0]["events"] == 6

    _, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/telemetry")
    hub = json.loads(body)
    assert [p["log_end_offset"] for p in hub["partition_list"]] == [4, 0, 2]
    groups = {g["name"]: g for g in hub["consumer_groups"]}
    assert "$Default" in groups
    assert groups["slow"]["total_lag"] == 3
    assert groups["slow"]["partitions"][0]["lag"] == 3

    status, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/nope")
    assert status == 404 and "does not exist" in json.loads(body)["error"]
    # a hub's name in any case, as on the AMQP and HTTPS front ends
    status, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/TELEMETRY")
    assert status == 200 and json.loads(body)["name"] == "telemetry"
    status, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/Telemetry/partitions/0/events")
    assert status == 200 and len(json.loads(body)["events"]) == 4


def test_console_page_and_its_static_files_are_served(http_broker):
    for path, ctype in (("/", "text/html"), ("/static/app.js", "text/javascript"),
                        ("/static/app.css", "text/css")):
        status, got, body = http_get(http_broker.http_url + path)
        assert status == 200 and got.startswith(ctype) and body


def test_http_refuses_methods_other_than_get_and_head(http_broker):
    req = urllib.request.Request(http_broker.http_url + "/health", method="DELETE")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 405


def test_throttled_requests_are_counted_with_their_delay_and_listed_as_events():
    metrics = BrokerMetrics(wall_ms=lambda: 1_000)
    header = SimpleNamespace(api_key=0, client_id="producer-1")
    ctx = SimpleNamespace(throttle_ms=250, namespace=SimpleNamespace(name="ns1"),
                          throttle_hubs={"orders", "audit"})
    metrics.on_request(header, 0.002, ctx)
    metrics.record_throttle("ns1", "orders", 40, api="Fetch")
    assert metrics.throttled == {("ns1", "Produce"): [1, 250], ("ns1", "Fetch"): [1, 40]}
    assert metrics.throttled_hubs == {("ns1", "audit"): [1, 250], ("ns1", "orders"): [1, 250]}
    assert [e.as_json()["hub"] for e in metrics.throttle_events] == ["audit, orders", "orders"]
    assert metrics.latency[0].count == 1


def test_cli_serves_health_and_metrics_on_http_listen(broker_process):
    import re

    proc = broker_process(extra=["--http-listen", "127.0.0.1:0"])
    deadline = time.monotonic() + 20
    while not (m := re.search(r"console and metrics on (http://[\d.]+:\d+)/", proc.output())):
        assert time.monotonic() < deadline, f"no HTTP listener line in:\n{proc.output()}"
        time.sleep(0.05)
    status, _, body = http_get(m.group(1) + "/health")
    assert (status, json.loads(body)["status"]) == (200, "healthy")
    status, _, text = http_get(m.group(1) + "/metrics")
    assert status == 200 and "kafkawire_uptime_seconds" in text


def test_cli_without_http_opens_no_listener(broker_process):
    proc = broker_process(extra=["--no-http"])
    assert "console and metrics on" not in proc.output()


def test_throttled_produce_shows_in_metrics_and_throttling_events(tmp_path):
    from kafka_wire.eventhubs.model import EventHubsModel, Namespace

    model = EventHubsModel({"tu-ns1": Namespace("tu-ns1", units=1)}, "tu-ns1")
    with EmulatedBroker(tmp_path / "data", eventhubs=model, http=True) as b:
        b.create_hub("bulk", 1)
        produce(b.bootstrap_servers, "bulk", {0: 1200}, size=2048)  # ~2.4 MiB > 1 MiB/s
        m = scrape(b)
        assert value(m, "kafkawire_throttled_requests_total", namespace="tu-ns1", api="Produce") >= 1
        assert value(m, "kafkawire_throttle_seconds_total", namespace="tu-ns1", api="Produce") > 0
        assert value(m, "kafkawire_throughput_units", namespace="tu-ns1") == 1
        assert value(m, "kafkawire_hub_throttled_requests_total", namespace="tu-ns1",
                      hub="bulk") == value(m, "kafkawire_throttled_requests_total",
                                           namespace="tu-ns1", api="Produce")
        assert value(m, "kafkawire_hub_throttle_seconds_total", namespace="tu-ns1", hub="bulk") > 0
        _, _, body = http_get(b.http_url + "/api/throttling")
        events = json.loads(body)
        assert events and events[0]["namespace"] == "tu-ns1" and events[0]["throttle_ms"] > 0
        assert events[0]["hub"] == "bulk"
        _, _, body = http_get(b.http_url + "/api/namespaces/tu-ns1/hubs/bulk")
        assert json.loads(body)["throttled_requests"] >= 1


def test_checkpoint_blobs_name_the_last_processed_event_and_the_owners(http_broker):
    from confluent_kafka import Consumer

    b = http_broker
    b.create_hub("Ckpt", 2)
    produce(b.bootstrap_servers, "Ckpt", {0: 3})
    produce(b.bootstrap_servers, "Ckpt", {0: 2, 1: 1})  # p0: a second batch at a later position
    commit(b.bootstrap_servers, "Ckpt", "Billing", {0: 4, 1: 0})
    reader = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "Live",
                       "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        reader.subscribe(["Ckpt"])
        deadline = time.monotonic() + 20
        while len(reader.assignment()) < 2 and time.monotonic() < deadline:
            reader.poll(0.2)
        assert len(reader.assignment()) == 2
        _, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/Ckpt/checkpoint-blobs")
        blobs = {x["name"]: x for x in json.loads(body)}
        _, _, body = http_get(b.http_url + f"/api/namespaces/{NS}/hubs/Ckpt/consumer-groups")
        groups = {g["name"]: g for g in json.loads(body)}
    finally:
        reader.close()
    prefix = f"{NS.lower()}.servicebus.windows.net/ckpt"
    checkpoint = blobs.pop(f"{prefix}/billing/checkpoint/0")
    assert checkpoint["metadata"]["sequencenumber"] == "3", "the last event processed, not the next"
    # Event 3 sits in the second batch; so does event 4, the next one, whose offset the
    # group's committed position shows: each event has its own offset.
    assert int(checkpoint["metadata"]["offset"]) + 1 == int(groups["Billing"]["partitions"][0]["offset"])
    assert checkpoint["metadata"]["offset"] != "0"
    assert checkpoint["last_modified"].endswith("Z")
    (member,) = groups["Live"]["members"]
    assert blobs == {f"{prefix}/live/ownership/{p}": {"name": f"{prefix}/live/ownership/{p}",
                                                       "metadata": {"ownerid": member["member_id"]},
                                                       "last_modified": None} for p in (0, 1)}
