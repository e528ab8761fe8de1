"""What the Python SDK (azure-eventhub, pyamqp transport) does when Event Hubs'
own faults are injected (``broker.faults.add``, kafka_wire.fault_plan): these pin
the SDK's recovery code, not ours.

- A transfer refused with com.microsoft:server-busy or amqp:resource-limit-exceeded:
  azure-eventhub 5.15 raises EventDataSendError at once, retry_total or not (its
  pyamqp transport turns every rejected delivery into a MessageException it does
  not retry, issue #34266 in its source) when sent to a partition; sent to the hub,
  the first refusal is retried at once. The next send on the same client works.
- A sender detached (amqp:link:detach-forced) or its connection forced closed
  mid-send: the SDK reattaches or reconnects and sends again; send_batch returns,
  the event is stored once.
- A receiver detached with amqp:link:detach-forced, or its connection closed with
  amqp:connection:forced: the SDK reattaches from the last event it received,
  nothing reaches on_error, every event arrives once, in order.
- A receiver detached with amqp:link:stolen: on_error gets ConnectionLostError and
  the SDK stops reading that partition (ownership lost), as against the service.
- A $management read answered 503: the SDK retries it.
- A $cbs put-token answered 503: retried; answered so every time, AuthenticationError
  after retry_total retries.

docs/faults.md's Python example (faults-python-example) is the first test here.
"""
from __future__ import annotations

import contextlib
import threading
import time

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.exceptions import ConnectionLostError, EventDataSendError
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.faults.harness import scaled

from .conftest import sdk_cs, wait_for

_hubs = iter(range(1_000_000))
# the SDK's retry backoff where a test counts tries, not times them: its default (0.8) under
# make soak, shorter in make test
BACKOFF = scaled(0.1, 0.8)


pytestmark = pytest.mark.usefixtures("no_faults")


@pytest.fixture
def hub(broker) -> str:
    name = f"faults-{next(_hubs)}"
    broker.create_hub(name, 1)
    return name


def send(producer, values) -> None:
    batch = producer.create_batch(partition_id="0")
    for v in values:
        batch.add(EventData(str(v)))
    producer.send_batch(batch)


@contextlib.contextmanager
def receiving(broker, hub: str, *, stamped: bool = False):
    """A consumer client reading partition 0 of ``hub`` from its start in a thread:
    yields (events, errors), the events' int bodies (with their arrival times when
    ``stamped``) and what reached on_error; closed on leaving."""
    client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), "$Default",
                                                           eventhub_name=hub)
    got: list = []
    errors: list = []

    def on_event(ctx, ev):
        if ev is not None:
            value = int(ev.body_as_str())
            got.append((value, time.monotonic()) if stamped else value)
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, on_error=lambda ctx, err: errors.append(err), partition_id="0",
        starting_position="-1", max_wait_time=1), daemon=True)
    thread.start()
    try:
        yield got, errors
    finally:
        client.close()
        thread.join(15)


def kafka_conf(broker, **extra) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
            "sasl.password": broker.connection_string(), **extra}


def kafka_send(broker, hub: str, values) -> None:
    """``values`` appended to partition 0 of ``hub`` in order, acknowledged, over Kafka: for
    tests of the SDK's receiving, where a second SDK client (a new producer opens its
    links in ~1 s) would only add time."""
    producer = Producer(kafka_conf(broker))
    for v in values:
        producer.produce(hub, str(v).encode(), partition=0)
    assert producer.flush(10) == 0


def read_all(broker, hub: str, count: int, timeout: float = 20.0) -> list[int]:
    """The int bodies stored in partition 0 of ``hub``, in order: at least ``count`` (waited
    for up to ``timeout``) and all that were there when it started. Read over Kafka, straight
    from the log: a second SDK receiver cost ~1.4 s a test (its handshake, and its close
    joining a keep-alive thread that sleeps 1 s); the tests above pin the SDK's receiving."""
    consumer = Consumer(kafka_conf(broker, **{"group.id": "read-all", "enable.auto.commit": False}))
    try:
        start, end = consumer.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)
        consumer.assign([TopicPartition(hub, 0, start)])
        got: list[int] = []
        deadline = time.monotonic() + timeout
        while len(got) < max(count, end - start) and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is not None:
                assert not msg.error(), msg.error()
                got.append(int(msg.value()))
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("kind,condition", [("server-busy", "com.microsoft:server-busy"),
                                            ("quota-exceeded", "amqp:resource-limit-exceeded")])
@pytest.mark.parametrize("retries", [0, 3])
def test_a_refused_transfer_raises_event_data_send_error(broker, hub, kind, condition, retries):
    broker.faults.add(kind, scope={"hub": hub}, count=1)
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub,
                                                             retry_total=retries)
    with producer:
        with pytest.raises(EventDataSendError) as caught:
            send(producer, [0])
        assert condition in str(caught.value) or condition.split(":")[-1].replace("-", "") in \
            str(caught.value).lower().replace("-", "")
        send(producer, [1])  # the fault ran out: the same client sends again
    fired = broker.faults.fired
    assert [(f["kind"], f["target"]["hub"]) for f in fired] == [(kind, hub)]
    assert fired[0]["client"].startswith("EHProducer-")
    assert read_all(broker, hub, 1) == [1]


@pytest.mark.parametrize("kind", ["detach-sender", "connection-forced"])
def test_a_sender_cut_off_mid_send_is_retried_and_loses_nothing(broker, hub, kind):
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub)
    with producer:
        send(producer, [0, 1])
        broker.faults.add(kind, scope={"hub": hub})
        send(producer, [2])  # the SDK reattaches (or reconnects) and sends again
        send(producer, [3, 4])
    assert [f["kind"] for f in broker.faults.fired] == [kind]
    assert read_all(broker, hub, 5) == [0, 1, 2, 3, 4]  # once each, in order


@pytest.mark.parametrize("kind,condition", [("detach-receiver", None),
                                            ("detach-receiver", "amqp:link:detach-forced"),
                                            ("connection-forced", None)])
def test_a_receiver_cut_off_reconnects_and_loses_nothing(broker, hub, kind, condition):
    with receiving(broker, hub) as (got, errors):
        kafka_send(broker, hub, range(5))
        assert wait_for(lambda: len(got) >= 5, 20), got
        broker.faults.add(kind, scope={"hub": hub, "consumer_group": "$Default"},
                          params={"condition": condition} if condition else None)
        kafka_send(broker, hub, range(5, 10))
        assert wait_for(lambda: len(got) >= 10, 30), got
    assert got == list(range(10)) and errors == []
    fired = broker.faults.fired
    assert [f["kind"] for f in fired] == [kind]
    assert fired[0]["target"]["consumer_group"] == "$default"


def test_a_stolen_receiver_reports_connection_lost_and_stops(broker, hub):
    with receiving(broker, hub) as (got, errors):
        kafka_send(broker, hub, range(3))
        assert wait_for(lambda: len(got) >= 3, 20), got
        broker.faults.add("link-stolen", scope={"hub": hub})
        kafka_send(broker, hub, range(3, 6))
        assert wait_for(lambda: errors, 20)
    assert got == [0, 1, 2]  # the batch read when the link was taken is not delivered
    assert isinstance(errors[0], ConnectionLostError) and "amqp:link:stolen" in str(errors[0])
    assert [f["kind"] for f in broker.faults.fired] == ["link-stolen"]


def test_a_failed_management_read_is_retried(broker, hub):
    broker.faults.add("management-fail", scope={"hub": hub}, count=1, params={"status": 503})
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub,
                                                             retry_backoff_factor=BACKOFF)
    with producer:
        assert producer.get_partition_ids() == ["0"]
    fired = broker.faults.fired
    assert [(f["kind"], f["target"]["hub"]) for f in fired] == [("management-fail", hub)]


def test_a_seeded_server_busy_fires_at_the_same_sends(broker, hub):
    def run() -> list[int]:
        broker.faults.clear()
        broker.faults.add("server-busy", scope={"hub": hub}, count=1000, probability=0.4, seed=11)
        refused = []
        producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub,
                                                                 retry_total=0)
        with producer:
            for i in range(12):
                try:
                    send(producer, [i])
                except EventDataSendError:
                    refused.append(i)
        return refused
    first = run()
    assert first == run() and 0 < len(first) < 12


def test_a_failed_put_token_is_retried_and_a_lasting_one_raises_authentication_error(broker, hub):
    from azure.eventhub.exceptions import AuthenticationError

    broker.faults.add("cbs-fail", scope={"hub": hub}, count=1, params={"status": 503})
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub,
                                                             retry_total=2, retry_backoff_factor=BACKOFF)
    with producer:
        send(producer, [0])  # the SDK put its token again and sent
    assert [f["kind"] for f in broker.faults.fired] == ["cbs-fail"]
    broker.faults.clear()
    broker.faults.add("cbs-fail", scope={"hub": hub}, count=100, params={"status": 503})
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub,
                                                             retry_total=2, retry_backoff_factor=BACKOFF)
    with producer, pytest.raises(AuthenticationError, match="503"):
        send(producer, [1])
    assert len(broker.faults.fired) == 3  # the first try and retry_total=2 retries
    broker.faults.clear()
    assert read_all(broker, hub, 1) == [0]


@pytest.mark.parametrize("count,stored", [(1, True), (2, False)])
def test_server_busy_on_a_send_to_the_hub_is_retried_once(broker, hub, count, stored):
    """Sent to the hub (no partition id), pyamqp's first refusal is retried at once; a
    second one fails the send."""
    broker.faults.add("server-busy", scope={"hub": hub}, count=count)
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub)
    with producer:
        if stored:
            producer.send_event(EventData(b"7"))
        else:
            with pytest.raises(EventDataSendError):
                producer.send_event(EventData(b"7"))
    assert len(broker.faults.fired) == count
    broker.faults.clear()
    kafka_send(broker, hub, [8])   # what follows the event 7 if it was stored
    assert read_all(broker, hub, 2 if stored else 1) == ([7, 8] if stored else [8])
