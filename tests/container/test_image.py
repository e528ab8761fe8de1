"""The image as its users run it: the official compose file's settings (ACCEPT_EULA,
BLOB_SERVER, METADATA_SERVER, Config.json mounted at /Eventhubs_Emulator/ConfigFiles/Config.json),
the waits of the Testcontainers modules, the Azure SDKs on AMQP (Python and JavaScript,
sending, receiving and their processors), a Kafka client through a mapped
port (KAFKA_ADVERTISED_ADDRESS), the management API, `docker stop` and a restart on the same
volume, and Testcontainers for Python swapping the official image for this one.

Containers run with `--network host`, every listener on 127.0.0.1 and on free ports (see
harness.py); a forwarder stands for the host side of `-p HOST:9092`."""
from __future__ import annotations

import time
import uuid

import pytest
import requests

from kafka_wire.eventhubs import sas
from tests.container.conftest import FIGURES
from tests.amqp.conftest import node  # noqa: F401  (the fixture: node with @azure/event-hubs)
from tests.docs.doc_blocks import blocks_of
from tests.container.harness import (
    OFFICIAL_ENV, READY_LINE, Container, Forwarder, Ports, health, kafka_round_trip_through,
    wait_for, write_config,
)

pytestmark = pytest.mark.timeout(600)

SUB, RG = "00000000-0000-0000-0000-000000000000", "any-group"


@pytest.fixture(scope="module")
def emulator(image, tmp_path_factory):
    """One container of the image, Kafka advertised at a forwarder's port (a mapped port)."""
    ports = Ports()
    forwarder = Forwarder(ports.kafka)
    config = write_config(tmp_path_factory.mktemp("config"))
    container = Container(ports, config, {"KAFKA_ADVERTISED_ADDRESS": f"127.0.0.1:{forwarder.port}"},
                          image=image)
    container.forwarder = forwarder
    try:
        times = container.wait_ready()
        FIGURES["docker_run_to_ready_line_s"] = round(times["ready_line"], 2)
        FIGURES["docker_run_to_health_200_s"] = round(times["health_200"], 2)
        yield container
    finally:
        print(container.logs()[-4000:])
        container.remove()
        forwarder.close()


def _producer(ports: Ports, hub: str):
    from azure.eventhub import EventHubProducerClient
    return EventHubProducerClient.from_connection_string(ports.connection_string, eventhub_name=hub)


def _consumer(ports: Ports, hub: str, group: str = "$Default"):
    from azure.eventhub import EventHubConsumerClient
    return EventHubConsumerClient.from_connection_string(
        ports.connection_string, consumer_group=group, eventhub_name=hub, load_balancing_interval=1)


def _send(ports: Ports, hub: str, bodies: list[str], partition_id: str = "0") -> None:
    from azure.eventhub import EventData
    with _producer(ports, hub) as producer:
        batch = producer.create_batch(partition_id=partition_id)
        for body in bodies:
            batch.add(EventData(body))
        producer.send_batch(batch)


def _receive(ports: Ports, hub: str, count: int, group: str = "$Default", partition_id: str = "0") -> list[str]:
    from tests.amqp.conftest import receive
    got = receive(_consumer(ports, hub, group), count, timeout=30, partition_id=partition_id,
                  starting_position="-1")
    return [event.body_as_str() for _, event in got]


def _management(ports: Ports, method: str, path: str, **kwargs) -> requests.Response:
    """The management (ARM) API on the HTTP port, with a SAS token of the Manage policy."""
    token = sas.generate(f"http://localhost:{ports.health}/", "RootManageSharedAccessKey",
                         "SAS_KEY_VALUE", int(time.time()) + 600)
    url = (f"http://127.0.0.1:{ports.health}/subscriptions/{SUB}/resourceGroups/{RG}/providers/"
           f"Microsoft.EventHub/namespaces/emulatorNs1{path}?api-version=2024-01-01")
    return requests.request(method, url, headers={"Authorization": token}, timeout=30, **kwargs)


def test_waits_as_the_testcontainers_modules_do(emulator):
    logs = emulator.logs()
    assert logs.count(READY_LINE) == 1
    assert "ACCEPT_EULA=Y" in logs and "BLOB_SERVER=azurite and METADATA_SERVER=azurite not contacted" in logs
    reply = requests.get(f"http://127.0.0.1:{emulator.ports.health}/health", timeout=5)
    assert (reply.status_code, reply.json()) == (200, {"status": "healthy", "message": "Service is healthy."})


def test_azure_sdk_sends_and_receives_with_the_official_connection_string(emulator):
    ports = emulator.ports
    with _producer(ports, "eh1") as producer:
        assert producer.get_partition_ids() == ["0", "1"]
    bodies = [f"sdk event {i}" for i in range(20)]
    _send(ports, "eh1", bodies, partition_id="1")
    assert _receive(ports, "eh1", 20, group="cg1", partition_id="1") == bodies


def test_kafka_client_through_the_advertised_address(emulator):
    forwarder = emulator.forwarder
    seen = kafka_round_trip_through(f"127.0.0.1:{forwarder.port}", emulator.ports.connection_string,
                                    topic="orders")
    FIGURES["kafka_metadata_brokers"] = seen["brokers"]
    FIGURES["kafka_broker_port_in_container"] = emulator.ports.kafka
    assert seen["brokers"] == [f"127.0.0.1:{forwarder.port}"]
    assert len(seen["values"]) == 10 and seen["committed"] == 10


def test_management_api_creates_a_hub_that_every_protocol_sees(emulator):
    ports = emulator.ports
    reply = _management(ports, "PUT", "/eventhubs/made-at-runtime",
                        json={"properties": {"partitionCount": 3}})
    assert reply.status_code in (200, 201), reply.text
    listed = _management(ports, "GET", "/eventhubs").json()["value"]
    assert {"eh1", "orders", "made-at-runtime"} <= {hub["name"] for hub in listed}
    _send(ports, "made-at-runtime", ["made at runtime"], partition_id="2")
    assert _receive(ports, "made-at-runtime", 1, partition_id="2") == ["made at runtime"]


def test_javascript_and_python_processors_read_each_others_events(emulator, node):
    """@azure/event-hubs sends by partition key and subscribes to every partition (its
    processor's load balancing); the Python SDK's processor (receive without a partition) reads
    the same events, and the JavaScript one reads the Python SDK's."""
    from tests.amqp.test_sdk_js import run_js

    ports = emulator.ports
    assert run_js(node, "properties", ports.connection_string, "orders")["ids"] == ["0", "1", "2", "3"]
    keys = [f"device-{i}" for i in range(12)]
    sent = run_js(node, "send", ports.connection_string, "orders", stdin={"batches": [
        {"partitionKey": key, "events": [{"body": f"js {key}"}]} for key in keys]})
    assert sent == {"sent": 12}
    from tests.amqp.conftest import receive
    got = receive(_consumer(ports, "orders", "billing"), 12 + 10, timeout=30, starting_position="-1")
    bodies = {event.body_as_str() for _, event in got}
    assert {f"js {key}" for key in keys} <= bodies
    assert len({pid for pid, event in got if event.body_as_str().startswith("js ")}) > 1
    _send(ports, "orders", ["python to js"], partition_id="3")
    events = run_js(node, "receive", ports.connection_string, "orders", 1 + 12 + 10)["events"]
    assert "python to js" in {e["body"] for e in events}


def test_docker_stop_then_start_keeps_events_checkpoints_and_management_changes(emulator):
    from confluent_kafka import Consumer, TopicPartition

    ports, forwarder = emulator.ports, emulator.forwarder
    marker = f"before the restart {uuid.uuid4()}"
    _send(ports, "eh1", [marker], partition_id="0")
    stopped_in = emulator.stop(timeout=10)
    FIGURES["docker_stop_s"] = round(stopped_in, 2)
    assert stopped_in < 10 and emulator.exit_code() == 0  # SIGTERM ended it, no SIGKILL (137)
    assert health(ports.health, timeout=1) is None
    emulator.start()
    times = emulator.wait_ready()
    FIGURES["docker_start_to_ready_line_s"] = round(times["ready_line"], 2)
    assert emulator.logs().count(READY_LINE) == 2
    # Events (both protocols' writes), the Kafka group's checkpoint, the runtime hub.
    assert marker in _receive(ports, "eh1", 1, partition_id="0")
    assert _receive(ports, "eh1", 20, group="cg1", partition_id="1") == [f"sdk event {i}" for i in range(20)]
    assert _receive(ports, "made-at-runtime", 1, partition_id="2") == ["made at runtime"]
    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{forwarder.port}",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "$ConnectionString", "sasl.password": ports.connection_string,
                         "group.id": "cg1"})
    try:
        assert consumer.committed([TopicPartition("orders", 0)], timeout=20)[0].offset == 10
    finally:
        consumer.close()


def test_testcontainers_python_swaps_the_image(image, tmp_path, monkeypatch):
    """docs/container.md's Testcontainers for Python block (marked testcontainers-python), run
    with this test's Config.json, ports and image tag put in, and the SDK where it has `...`."""
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "true")  # no reaper image here
    from azure.eventhub import EventData, EventHubProducerClient

    [block] = [b for b in blocks_of("docs/container.md")
               if b.marker and "testcontainers-python" in b.marker[1]]
    ports = Ports()
    config = write_config(tmp_path)
    code = (block.text.replace("/path/to/Config.json", str(config))
            .replace('DockerContainer("kafka-wire:dev")', f"DockerContainer({image!r})")
            .replace('.with_env("ACCEPT_EULA", "Y")', "".join(
                f".with_env({k!r}, {v!r})" for k, v in {**OFFICIAL_ENV, **ports.env()}.items())))
    assert code.count("    ...  #") == 1
    code = code.replace("    ...  #", "    use_it(container)  #")

    def use_it(container) -> None:
        assert health(ports.health) == 200
        with EventHubProducerClient.from_connection_string(ports.connection_string,
                                                           eventhub_name="eh1") as producer:
            producer.send_batch([EventData("from testcontainers")], partition_id="0")
        assert _receive(ports, "eh1", 1, partition_id="0") == ["from testcontainers"]
        used.append(container)

    used: list = []
    exec(compile(code, "docs/container.md", "exec"), {"use_it": use_it})
    assert len(used) == 1
