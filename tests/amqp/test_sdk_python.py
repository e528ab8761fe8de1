"""The Azure Event Hubs Python SDK (azure-eventhub, its own pyamqp stack) against
the AMQP endpoint: properties, sending to a partition, by key and round robin,
every starting position, batches, and the SDK's own errors for refused clients."""
from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub._buffered_producer._partition_resolver import generate_hash_code
from azure.eventhub.exceptions import AuthenticationError, ConnectionLostError
from confluent_kafka import Producer

from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.partition_key import key_hash, partition_for_key

from tests.capture.helpers import log_positions

from .conftest import LISTENER, ROOT, SENDER, receive, sdk_cs, wait_for


def producer(broker, hub: str, **kwargs) -> EventHubProducerClient:
    if kwargs.get("retry_total") == 0:
        # The SDK sleeps one backoff (0.8 s by default) after a failed operation before it
        # looks at retry_total: with no retries that sleep only delays the error.
        kwargs.setdefault("retry_backoff_factor", 0.01)
    return EventHubProducerClient.from_connection_string(sdk_cs(broker, kwargs.pop("policy", ROOT)),
                                                         eventhub_name=hub, **kwargs)


def consumer(broker, hub: str, group: str = "$Default", **kwargs) -> EventHubConsumerClient:
    # The SDK's receive loop sleeps one load-balancing interval (30 s by default) before it
    # sees close(); a short one lets the test end as soon as the client is closed.
    kwargs.setdefault("load_balancing_interval", 1)
    return EventHubConsumerClient.from_connection_string(
        sdk_cs(broker, kwargs.pop("policy", ROOT)), consumer_group=group, eventhub_name=hub, **kwargs)


def attached(broker, hub: str, partition: int = 0, group: str = "$default",
             timeout: float = 15.0) -> bool:
    """Whether a receiver of ``hub``'s partition in ``group`` is attached (admitted, its
    start position chosen) within ``timeout``."""
    readers = broker.broker.amqp_server.readers
    return bool(wait_for(lambda: readers.get(("contoso", hub, group, partition)), timeout=timeout))


def send_one_by_one(broker, hub: str, bodies: list[str], partition_id: str = "0") -> None:
    """Each body acknowledged before the next, over Kafka: the tests that call this read with
    the SDK (its sending is pinned above), and a new SDK producer takes ~1 s to open."""
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                  "sasl.password": broker.connection_string(), "linger.ms": 0})
    for body in bodies:
        p.produce(hub, body.encode(), partition=int(partition_id))
        assert p.flush(10) == 0
        time.sleep(0.003)  # distinct enqueued times


def test_hub_and_partition_properties(broker):
    broker.create_hub("props", 3)
    with producer(broker, "props") as p:
        hub = p.get_eventhub_properties()
        assert hub["eventhub_name"] == "props"
        assert hub["partition_ids"] == ["0", "1", "2"]
        assert abs(hub["created_at"] - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=5)
        assert p.get_partition_ids() == ["0", "1", "2"]
        empty = p.get_partition_properties("2")
        assert empty["is_empty"] and empty["last_enqueued_sequence_number"] == -1
        p.send_batch([EventData("a"), EventData("b"), EventData("c")], partition_id="2")
        full = p.get_partition_properties("2")
    assert not full["is_empty"]
    assert (full["beginning_sequence_number"], full["last_enqueued_sequence_number"]) == (0, 2)
    assert abs(full["last_enqueued_time_utc"] - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=1)


def test_batch_to_a_partition_is_read_back_with_properties(broker):
    broker.create_hub("batches", 2)
    with producer(broker, "batches") as p:
        batch = p.create_batch(partition_id="1")
        for i in range(5):
            event = EventData(f"event {i}")
            event.properties = {"n": i, "kind": "test", "ratio": 0.5, "flag": True}
            batch.add(event)
        p.send_batch(batch)
    got = receive(consumer(broker, "batches"), 5, partition_id="1", starting_position="-1")
    assert [e.body_as_str() for _, e in got] == [f"event {i}" for i in range(5)]
    assert {pid for pid, _ in got} == {"1"}
    assert [e.sequence_number for _, e in got] == [0, 1, 2, 3, 4]
    assert [e.properties for _, e in got] == [
        {b"n": i, b"kind": b"test", b"ratio": 0.5, b"flag": True} for i in range(5)]
    first = got[0][1]
    assert abs(first.enqueued_time - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=1)
    assert first.offset is not None and int(first.offset) >= 0


def test_partition_key_lands_where_event_hubs_hashes_it(broker):
    broker.create_hub("keyed", 8)
    keys = [f"device-{i}" for i in range(24)]
    with producer(broker, "keyed") as p:
        for key in keys:
            p.send_batch([EventData(key)], partition_key=key)
    # One thread serves all eight partitions in turn, blocking socket_timeout (0.2 s by
    # default) on each that has nothing more; a shorter one only shortens those turns.
    got = receive(consumer(broker, "keyed", socket_timeout=0.05), len(keys), starting_position="-1")
    where = {e.body_as_str(): int(pid) for pid, e in got}
    assert set(where) == set(keys)
    for key in keys:
        # The SDK's own lookup3 hash, and the remainder sign the service (C#) uses.
        assert key_hash(key) == generate_hash_code(key)
        assert where[key] == partition_for_key(key, 8) == abs(generate_hash_code(key)) % 8
    # pyamqp hands AMQP strings over as bytes
    assert all(e.partition_key == e.body_as_str().encode() for _, e in got)
    assert len(set(where.values())) > 3  # the keys spread


def test_sends_without_a_key_go_round_robin(broker):
    broker.create_hub("spread", 4)
    with producer(broker, "spread") as p:
        for i in range(8):
            p.send_batch([EventData(str(i))])
        counts = [p.get_partition_properties(str(n))["last_enqueued_sequence_number"] + 1
                  for n in range(4)]
    assert counts == [2, 2, 2, 2]


def test_starting_positions(broker):
    broker.create_hub("positions", 1)
    send_one_by_one(broker, "positions", [str(i) for i in range(10)])
    every = receive(consumer(broker, "positions"), 10, partition_id="0", starting_position="-1")
    events = [e for _, e in every]
    assert [e.body_as_str() for e in events] == [str(i) for i in range(10)]
    offsets = [int(e.offset) for e in events]
    assert offsets == sorted(offsets) and len(set(offsets)) == 10

    def first(position, inclusive=False) -> str:
        got = receive(consumer(broker, "positions"), 1, partition_id="0",
                      starting_position=position, starting_position_inclusive=inclusive)
        return got[0][1].body_as_str()

    # Each reader is its own client, independent of the others: they run side by side,
    # as opening each one's connection and link takes most of a second.
    cases = [(3, True, "3"), (3, False, "4"),                                  # a sequence number
             (events[5].offset, True, "5"), (events[5].offset, False, "6"),        # an offset
             (events[7].enqueued_time, True, "7"), (events[7].enqueued_time, False, "8")]  # a time
    with ThreadPoolExecutor(len(cases)) as pool:
        firsts = list(pool.map(lambda case: first(case[0], case[1]), cases))
    assert firsts == [want for _, _, want in cases]


def test_events_of_one_batch_have_their_own_offsets(broker):
    """Every event has its own offset, as on Azure, also inside one batch; a
    receiver started at one starts exactly there, and Capture and Kafka
    checkpoints use the same numbers."""
    broker.create_hub("batched", 1)
    with producer(broker, "batched") as p:
        p.send_batch([EventData(f"b{i}") for i in range(6)], partition_id="0")
    events = [e for _, e in receive(consumer(broker, "batched"), 6, partition_id="0",
                                    starting_position="-1")]
    offsets = [int(e.offset) for e in events]
    assert offsets == sorted(set(offsets)) and len(offsets) == 6
    def bodies_from(inclusive, want) -> list[str]:
        got = receive(consumer(broker, "batched"), len(want), partition_id="0",
                      starting_position=events[3].offset, starting_position_inclusive=inclusive)
        return [e.body_as_str() for _, e in got]

    cases = ((True, ["b3", "b4", "b5"]), (False, ["b4", "b5"]))
    with ThreadPoolExecutor(len(cases)) as pool:   # two independent readers, side by side
        read = list(pool.map(lambda case: bodies_from(*case), cases))
    assert read == [want for _, want in cases]
    # Capture reads the same offsets from the log files.
    stored = log_positions(broker.data_dir, "contoso", "batched", 1)
    assert [str(stored[(0, o)][0]) for o in range(6)] == [e.offset for e in events]


def test_runtime_metric_reports_the_last_enqueued_event(broker):
    broker.create_hub("metric", 1)
    send_one_by_one(broker, "metric", ["m0", "m1", "m2"])
    seen: list = []
    client = consumer(broker, "metric")
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=lambda ctx, e: seen.append((e, ctx.last_enqueued_event_properties)),
        partition_id="0", starting_position="-1", track_last_enqueued_event_properties=True),
        daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    client.close()
    thread.join(15)
    assert [e.body_as_str() for e, _ in seen] == ["m0", "m1", "m2"]
    last_event = seen[-1][0]
    for _, props in seen:  # every delivery knows where the partition ends
        assert props["sequence_number"] == 2
        assert props["offset"] == last_event.offset
        assert props["enqueued_time"] == last_event.enqueued_time
        assert props["retrieval_time"] is not None


def test_latest_reads_only_what_comes_after(broker):
    broker.create_hub("latest", 1)
    send_one_by_one(broker, "latest", ["old"])
    client = consumer(broker, "latest")
    got: list = []
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=lambda ctx, e: got.append(e.body_as_str()), partition_id="0",
        starting_position="@latest"), daemon=True)
    thread.start()
    assert attached(broker, "latest")  # the link is attached at the end
    send_one_by_one(broker, "latest", ["new"])
    deadline = time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        time.sleep(0.1)
    client.close()
    thread.join(10)
    assert got == ["new"]


def test_receive_batch(broker):
    broker.create_hub("rbatch", 1)
    send_one_by_one(broker, "rbatch", [str(i) for i in range(30)])
    client = consumer(broker, "rbatch")
    batches: list = []
    thread = threading.Thread(target=client.receive_batch, kwargs=dict(
        on_event_batch=lambda ctx, events: events and batches.append([e.body_as_str() for e in events]),
        max_batch_size=10, partition_id="0", starting_position="-1"), daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while sum(map(len, batches)) < 30 and time.monotonic() < deadline:
        time.sleep(0.1)
    client.close()
    thread.join(10)
    assert [x for b in batches for x in b] == [str(i) for i in range(30)]
    assert max(map(len, batches)) <= 10


def test_async_clients(broker):
    import asyncio

    from azure.eventhub.aio import EventHubConsumerClient as AioConsumer
    from azure.eventhub.aio import EventHubProducerClient as AioProducer

    broker.create_hub("aio", 2)

    async def main():
        p = AioProducer.from_connection_string(sdk_cs(broker), eventhub_name="aio")
        async with p:
            batch = await p.create_batch(partition_key="k")
            for i in range(4):
                batch.add(EventData(f"a{i}"))
            await p.send_batch(batch)
        c = AioConsumer.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                               eventhub_name="aio", load_balancing_interval=1)
        got: list = []
        done = asyncio.Event()

        async def on_event(ctx, event):
            got.append((ctx.partition_id, event.body_as_str()))
            if len(got) == 4:
                done.set()

        task = asyncio.create_task(c.receive(on_event=on_event, starting_position="-1"))
        await asyncio.wait_for(done.wait(), 20)
        await c.close()
        await asyncio.wait_for(task, 10)
        return got

    got = asyncio.run(main())
    assert [body for _, body in got] == ["a0", "a1", "a2", "a3"]
    assert {pid for pid, _ in got} == {str(partition_for_key("k", 2))}


# -- refusals, with the SDK's own exception types ------------------------------------------
def _send(broker, hub="orders", **kwargs):
    with producer(broker, hub, retry_total=0, **kwargs) as p:
        p.send_batch([EventData("x")])


def test_wrong_key_is_an_authentication_error(broker):
    with pytest.raises(AuthenticationError, match="signature does not match"):
        _send(broker, policy=("RootManageSharedAccessKey", "d3Jvbmcta2V5"))


def test_expired_token_is_an_authentication_error(broker):
    token = sas.generate(f"sb://127.0.0.1:{broker.amqp_port}/orders", *ROOT, int(time.time()) - 10)
    with pytest.raises(AuthenticationError):
        p = EventHubProducerClient.from_connection_string(sdk_cs(broker, signature=token, hub="orders"),
                                                          retry_total=0)
        with p:
            p.send_batch([EventData("x")])


def test_listen_only_policy_cannot_send(broker):
    with pytest.raises(ConnectionLostError, match="unauthorized-access"):
        _send(broker, policy=LISTENER)


def test_unknown_hub_is_not_found(broker):
    # The refused attach (null terminus, then a detach with amqp:not-found) is a link
    # error, which the SDK raises as ConnectionLostError, naming the hub.
    with pytest.raises(ConnectionLostError, match="not-found") as caught:
        _send(broker, hub="no-such-hub")
    assert "'contoso/no-such-hub' could not be found" in str(caught.value)


def _receive_errors(broker, group="$Default", policy=ROOT, served=None) -> list:
    """What on_error got within 10 s (or until ``served()``) of a receiver of orders/0."""
    errors: list = []
    client = consumer(broker, "orders", group, policy=policy, retry_total=0)
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=lambda ctx, e: None, on_error=lambda ctx, e: errors.append(e), partition_id="0",
        starting_position="-1"), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline and not (served and served()):
        time.sleep(0.1)
    client.close()
    thread.join(10)
    return errors


def test_unknown_consumer_group_is_not_found(broker):
    errors = _receive_errors(broker, "no-such-group")
    assert errors and isinstance(errors[0], ConnectionLostError)
    assert "not-found" in str(errors[0]) and "no-such-group" in str(errors[0])


def test_configured_consumer_group_is_served(broker):
    # Served once the broker holds its link (a refused attach is never registered, and
    # reaches on_error instead), not after 10 s without an error.
    held: list = []

    def served() -> bool:
        if attached(broker, "orders", group="billing", timeout=0):
            held.append(True)
        return bool(held)
    assert _receive_errors(broker, "billing", served=served) == []
    assert held, "the receiver in billing was never attached"


def test_send_only_policy_cannot_receive(broker):
    errors = _receive_errors(broker, policy=SENDER)
    assert errors and "unauthorized-access" in str(errors[0])


def test_an_equal_owner_level_takes_over_and_the_partition_stays_owned(broker):
    """As the service does (and SDK processors rely on when one takes a partition
    over at level 0): the newer receiver of two with the same owner level wins;
    then a receiver without an owner level is still refused."""
    broker.create_hub("handover", 1)
    send_one_by_one(broker, "handover", ["x"])
    first_errors: list = []
    first = consumer(broker, "handover", retry_total=0)
    t1 = threading.Thread(target=first.receive, kwargs=dict(
        on_event=lambda ctx, e: None, on_error=lambda ctx, e: first_errors.append(e),
        partition_id="0", owner_level=0, starting_position="-1"), daemon=True)
    t1.start()
    assert attached(broker, "handover")
    second = consumer(broker, "handover")
    second_got: list = []
    t2 = threading.Thread(target=second.receive, kwargs=dict(
        on_event=lambda ctx, e: second_got.append(e), partition_id="0", owner_level=0,
        starting_position="-1"), daemon=True)
    t2.start()
    deadline = time.monotonic() + 10
    while not (first_errors and second_got) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert first_errors and "amqp:link:stolen" in str(first_errors[0])
    first.close()
    t1.join(10)
    third_errors: list = []
    third = consumer(broker, "handover", retry_total=0)
    t3 = threading.Thread(target=third.receive, kwargs=dict(
        on_event=lambda ctx, e: None, on_error=lambda ctx, e: third_errors.append(e),
        partition_id="0", starting_position="-1"), daemon=True)
    t3.start()
    deadline = time.monotonic() + 10
    while not third_errors and time.monotonic() < deadline:
        time.sleep(0.1)
    for client, thread in ((third, t3), (second, t2)):
        client.close()
        thread.join(10)
    # The first client's receive loop re-attaches after its error (at the same level, so it
    # takes the partition back once, and the second then again, from -1) until it is
    # closed: the second may read the event more than once, but reads nothing else.
    assert second_got and {e.body_as_str() for e in second_got} == {"x"}
    assert third_errors, "a receiver without an owner level joined an owned partition"


def test_a_sixth_reader_of_a_partition_and_group_is_refused(broker):
    """Standard allows five receivers per partition and consumer group."""
    broker.create_hub("crowded", 1)
    readers = broker.broker.amqp_server.readers
    clients, threads, errors = [], [], []
    started = threading.Semaphore(0)
    for i in range(6):
        client = consumer(broker, "crowded", retry_total=0)
        thread = threading.Thread(target=client.receive, kwargs=dict(
            on_event=lambda ctx, e: None, on_error=lambda ctx, e, i=i: errors.append((i, e)),
            on_partition_initialize=lambda ctx: started.release(), partition_id="0",
            starting_position="-1"), daemon=True)
        thread.start()
        clients.append(client)
        threads.append(thread)
        assert started.acquire(timeout=15)
        if i < 5:  # each link held by the broker before the next comes
            assert wait_for(lambda: len(readers.get(("contoso", "crowded", "$default", 0), ())) == i + 1,
                            timeout=15), readers
    wait_for(lambda: errors, timeout=10)
    for client in clients:  # all at once: each receive loop ends at its next wake (~1 s)
        client.close()
    for thread in threads:
        thread.join(15)
    assert errors and errors[0][0] == 5, errors
    assert "resource-limit-exceeded" in str(errors[0][1]), errors


def test_higher_owner_level_takes_the_partition(broker):
    broker.create_hub("owned", 1)
    first_errors: list = []
    first = consumer(broker, "owned")
    t1 = threading.Thread(target=first.receive, kwargs=dict(
        on_event=lambda ctx, e: None, on_error=lambda ctx, e: first_errors.append(e),
        partition_id="0", owner_level=1, starting_position="-1"), daemon=True)
    t1.start()
    assert attached(broker, "owned")
    send_one_by_one(broker, "owned", ["x"])
    second = consumer(broker, "owned")
    got = receive(second, 1, partition_id="0", owner_level=2, starting_position="-1")
    deadline = time.monotonic() + 10
    while not first_errors and time.monotonic() < deadline:
        time.sleep(0.1)
    first.close()
    t1.join(10)
    assert [e.body_as_str() for _, e in got] == ["x"]
    assert first_errors and "amqp:link:stolen" in str(first_errors[0])
