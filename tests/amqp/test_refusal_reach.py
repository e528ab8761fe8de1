"""Every AMQP refusal reaches the Azure SDKs as their own exception, naming the
entity, and is logged once: an unknown event hub, consumer group or partition,
missing rights, a hub deleted under a receiver, a sixth receiver without owner
level. Python (sync, aio, and its pyamqp client) and JavaScript (@azure/event-hubs
through node).

A refused attach is answered with a null terminus and a detach, as AMQP 1.0 and the
service do. Figures are from the client's call to its error (connect, $cbs and the
attach included): an upper bound on refusal-to-error.

The Python consumers run with ``retry_total=0``. With retries, azure-eventhub 5.15's
sync ``receive`` counts them per call and its event processor calls it again and
again, so a link refusal never exhausts them (the SDK's issue #27137; the error
reaches ``on_error`` only with ``retry_total=0``); its aio consumer, given a refused
attach, stops the receive as if it timed out and never calls ``on_error`` (what
users of the service report as "Unable to attach new link: ValueError('Invalid
link')", azure-sdk-for-python #30931), so aio is tested where the refusal is a
$management 404 or a producer's."""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.aio import EventHubConsumerClient as AsyncConsumerClient
from azure.eventhub.exceptions import ConnectError, ConnectionLostError, EventHubError

from kafka_wire.amqp import connection as amqp_connection

from azure.eventhub._pyamqp.error import AMQPLinkError

from .conftest import JS, LISTENER, ROOT, SENDER, sdk_cs, wait_for
from .pyamqp_raw import receive_client

FIGURES: dict[str, float] = {}
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "refusal-reach.json"


def consumer_error(broker, hub: str, group: str = "$Default", partition: str = "0",
                   policy=ROOT, retry_total: int = 0, timeout: float = 20.0):
    """(seconds from receive() to on_error, the error) of a sync consumer."""
    client = EventHubConsumerClient.from_connection_string(
        sdk_cs(broker, policy), consumer_group=group, eventhub_name=hub, retry_total=retry_total)
    got: list = []
    done = threading.Event()
    started = time.monotonic()

    def on_error(_ctx, err) -> None:
        got.append((time.monotonic() - started, err))
        done.set()

    thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
        on_event=lambda *_: None, on_error=on_error, partition_id=partition,
        starting_position="-1", max_wait_time=1))
    thread.start()
    done.wait(timeout)
    client.close()
    thread.join(15)
    assert got, f"no on_error within {timeout} s"
    return got[0]


def async_consumer_error(broker, hub: str, group: str = "$Default", partition: str = "0",
                         timeout: float = 30.0):
    """The same with the aio client (its event processor backs off between retries)."""
    async def run():
        # load_balancing_interval=1: after on_error its processor sleeps that long (30 s by
        # default) before it sees close(), and the test would wait for the receive to end.
        client = AsyncConsumerClient.from_connection_string(
            sdk_cs(broker), consumer_group=group, eventhub_name=hub, retry_total=0,
            load_balancing_interval=1)
        got: list = []
        started = time.monotonic()

        async def on_error(_ctx, err) -> None:
            got.append((time.monotonic() - started, err))

        async def on_event(_ctx, _event) -> None:
            pass

        task = asyncio.create_task(client.receive(
            on_event=on_event, on_error=on_error, partition_id=partition, starting_position="-1",
            max_wait_time=1))
        deadline = time.monotonic() + timeout
        while not got and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await client.close()
        await asyncio.wait([task], timeout=15)
        assert got, f"no on_error within {timeout} s"
        return got[0]
    return asyncio.run(run())


def record(name: str, seconds: float) -> None:
    """Keep the figure (printed with pytest -s, and written to test-artifacts/) for the
    closing notes: how fast a refusal arrives is measured, not asserted (a test asserts
    only that it arrives, as the SDK's documented error)."""
    FIGURES[name] = seconds
    print(f"\n  {name}: {seconds:.2f} s")
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(json.dumps(FIGURES, indent=1, sort_keys=True))


# -- Python, sync ----------------------------------------------------------------------------

def test_an_unknown_consumer_group_reaches_on_error_naming_it(broker):
    took, err = consumer_error(broker, "orders", group="nope")
    assert isinstance(err, ConnectionLostError) and "amqp:not-found" in str(err)
    assert "could not be found" in str(err) and "orders/ConsumerGroups/nope" in str(err)
    record("python sync, unknown consumer group", took)


def test_an_unknown_hub_reaches_on_error_naming_it(broker):
    # The SDK asks $management for the partition ids first: its 404 is the error.
    took, err = consumer_error(broker, "nohub")
    assert isinstance(err, ConnectError) and "Status code: 404" in str(err)
    assert "'contoso/nohub' could not be found" in str(err)
    record("python sync, unknown hub", took)


def test_an_unknown_partition_is_the_services_argument_out_of_range(broker):
    # The SDK's clients check partition ids themselves: its pyamqp client attaches as asked.
    client = receive_client(broker, "payments/ConsumerGroups/$Default/Partitions/7")
    started = time.monotonic()
    with client, pytest.raises(AMQPLinkError) as caught:
        client.receive_message_batch(max_batch_size=1, timeout=15)
    assert caught.value.condition == b"com.microsoft:argument-out-of-range"
    assert "between 0 and 0" in str(caught.value) and "partition 7" in str(caught.value)
    record("python pyamqp ReceiveClient, unknown partition", time.monotonic() - started)


def test_receiving_without_listen_is_unauthorized(broker):
    took, err = consumer_error(broker, "orders", policy=SENDER)
    assert isinstance(err, ConnectionLostError)
    assert "unauthorized-access" in str(err) and "Listen on event hub 'orders'" in str(err)
    record("python sync, missing Listen", took)


@contextlib.contextmanager
def five_receivers(broker, hub: str, group: str, partition: int):
    """Five SDK receivers without owner level on one partition (Event Hubs' most); yields a
    call that waits until all five hold it, for the sixth to come while they do."""
    key = ("contoso", hub, group.lower(), partition)
    readers = broker.broker.amqp_server.readers
    clients, threads = [], []

    def holding() -> None:
        # 60 s: under a loaded 2-core machine a holder that the SDK is re-attaching (after an
        # earlier test's receiver was still closing, say) retries with the SDK's backoff
        assert wait_for(lambda: len(readers.get(key, ())) == 5, timeout=60), \
            f"{len(readers.get(key, ()))} of 5 receivers hold {key}: {readers.get(key)}"
    try:
        for _ in range(5):
            # load_balancing_interval=1: a holder whose link failed is attached again at the
            # processor's next load-balancing pass (30 s away by default), not in holding()'s 60 s
            c = EventHubConsumerClient.from_connection_string(
                sdk_cs(broker), consumer_group=group, eventhub_name=hub, load_balancing_interval=1)
            t = threading.Thread(target=c.receive, daemon=True, kwargs=dict(
                on_event=lambda *_: None, partition_id=str(partition), max_wait_time=1))
            t.start()
            clients.append(c)
            threads.append(t)
        yield holding
    finally:
        for c in clients:
            c.close()
        for t in threads:
            t.join(15)


def test_a_sixth_receiver_without_owner_level_is_refused(broker):
    took = err = None
    with five_receivers(broker, "orders", "billing", 1) as holding:
        for _ in range(3):
            holding()
            try:
                took, err = consumer_error(broker, "orders", group="billing", partition="1", timeout=10)
                break
            except AssertionError:  # no on_error: the sixth got the place a holder left
                continue
    assert isinstance(err, ConnectionLostError) and "resource-limit-exceeded" in str(err)
    assert "maximum number of allowed receivers" in str(err) and "which is 5" in str(err)
    record("python sync, sixth receiver", took)


def test_a_hub_deleted_under_a_receiver_reaches_on_error(broker):
    from confluent_kafka.admin import AdminClient

    broker.create_hub("doomed", 1)
    key = ("contoso", "doomed", "$default", 0)
    readers = broker.broker.amqp_server.readers
    client = EventHubConsumerClient.from_connection_string(
        sdk_cs(broker), consumer_group="$Default", eventhub_name="doomed", retry_total=0)
    got: list = []
    done = threading.Event()
    thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
        on_event=lambda *_: None, partition_id="0", max_wait_time=1,
        on_error=lambda _c, e: (got.append((time.monotonic(), e)), done.set())))
    thread.start()
    try:
        assert wait_for(lambda: readers.get(key), timeout=30)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers,
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": "$ConnectionString",
                             "sasl.password": broker.connection_string()})
        deleted = time.monotonic()
        admin.delete_topics(["doomed"])["doomed"].result(10)
        assert done.wait(20), "no on_error after the hub was deleted"
    finally:
        client.close()
        thread.join(15)
    at, err = got[0]
    assert isinstance(err, ConnectionLostError) and "amqp:not-found" in str(err)
    assert "'contoso/doomed' could not be found" in str(err) and "deleted" in str(err)
    record("python sync, hub deleted under the receiver (from the delete)", at - deleted)


def test_get_eventhub_properties_of_an_unknown_hub_names_it(broker):
    client = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="nohub",
                                                           retry_total=0)
    started = time.monotonic()
    with client, pytest.raises(EventHubError) as caught:
        client.get_eventhub_properties()
    assert "Status code: 404" in str(caught.value) and "Description: None" not in str(caught.value)
    assert "contoso/nohub' could not be found" in str(caught.value)
    record("python sync, get_eventhub_properties of an unknown hub", time.monotonic() - started)


def test_create_batch_on_an_unknown_hub_raises(broker):
    client = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="nohub",
                                                           retry_total=0)
    started = time.monotonic()
    with client, pytest.raises(ConnectionLostError) as caught:
        client.create_batch()
    assert "amqp:not-found" in str(caught.value)
    assert "'contoso/nohub' could not be found" in str(caught.value)
    record("python sync, create_batch on an unknown hub", time.monotonic() - started)


def test_sending_without_send_is_unauthorized(broker):
    client = EventHubProducerClient.from_connection_string(sdk_cs(broker, LISTENER),
                                                           eventhub_name="orders", retry_total=0)
    started = time.monotonic()
    with client, pytest.raises(ConnectionLostError) as caught:
        client.send_batch([EventData(b"x")], partition_id="0")
    assert "unauthorized-access" in str(caught.value)
    assert "Send on event hub 'orders'" in str(caught.value)
    record("python sync, missing Send", time.monotonic() - started)


# -- Python, aio ---------------------------------------------------------------------------

def test_aio_unknown_hub_reaches_on_error(broker):
    took, err = async_consumer_error(broker, "nohub-aio")
    assert isinstance(err, ConnectError) and "'contoso/nohub-aio' could not be found" in str(err)
    record("python aio, unknown hub", took)


def test_aio_create_batch_on_an_unknown_hub_raises(broker):
    from azure.eventhub.aio import EventHubProducerClient as AsyncProducerClient

    async def run() -> float:
        client = AsyncProducerClient.from_connection_string(sdk_cs(broker),
                                                            eventhub_name="nohub-aio", retry_total=0)
        started = time.monotonic()
        async with client:
            with pytest.raises(EventHubError) as caught:
                await client.create_batch()
        assert "nohub-aio" in str(caught.value) and "could not be found" in str(caught.value)
        return time.monotonic() - started
    record("python aio, create_batch on an unknown hub", asyncio.run(run()))


# -- the log --------------------------------------------------------------------------------

def test_a_refusal_is_logged_once_with_its_reason_however_often_the_client_retries(broker, caplog):
    # Counted per client address and condition: unauthorized-access, which no client of
    # the tests just before (still closing, refused not-found) can log first.
    amqp_connection._repeats._seen.clear()
    caplog.set_level(logging.WARNING, logger="kafka_wire.amqp")
    for _ in range(3):
        consumer_error(broker, "orders", policy=SENDER)
    lines = [r.getMessage() for r in caplog.records
             if "refused" in r.getMessage() and "unauthorized-access" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "orders/ConsumerGroups/$Default/Partitions/0" in lines[0]
    assert "Listen on event hub 'orders' is not granted" in lines[0]


# -- JavaScript -----------------------------------------------------------------------------

SCRIPT = r"""
'use strict'
const { EventHubConsumerClient, EventHubProducerClient, earliestEventPosition } = require('@azure/event-hubs')
const [mode, cs, hub, group, partition] = process.argv.slice(1)
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
const t0 = Date.now()
const opts = { retryOptions: { maxRetries: 3, retryDelayInMs: 200, timeoutInMs: 20000 } }
setTimeout(() => { out({ timeout: true }); process.exit(1) }, 40000)
// core-amqp's retry throws an AggregateError of its attempts' errors: the last one counts.
const report = (err) => {
  const attempts = (err && Array.isArray(err.errors)) ? err.errors.length : 0
  const e = attempts ? err.errors[attempts - 1] : err
  return { ms: Date.now() - t0, name: e.name, code: e.code, message: e.message, attempts }
}
async function main() {
  if (mode === 'receive') {
    const client = new EventHubConsumerClient(group, cs, hub, opts)
    let attached = false
    client.subscribe(partition, {
      // called (with no events) once the link is up and each maxWaitTime after
      processEvents: async () => { if (!attached) { attached = true; out({ attached: true }) } },
      processError: async (err) => { out(report(err)); await client.close(); process.exit(0) },
    }, { startPosition: earliestEventPosition, maxWaitTimeInSeconds: 1 })
  } else {
    const producer = new EventHubProducerClient(cs, hub, opts)
    try {
      const batch = await producer.createBatch({ partitionId: partition })
      batch.tryAdd({ body: 'x' })
      await producer.sendBatch(batch)
      out({ sent: true })
    } catch (err) { out(report(err)) }
    await producer.close(); process.exit(0)
  }
}
main().catch((err) => { out({ fatal: String((err && err.stack) || err) }); process.exit(1) })
"""


def js_error(node: str, broker, mode: str, hub: str, group: str = "$Default", partition: str = "0",
             policy=ROOT) -> dict:
    res = subprocess.run([node, "-e", SCRIPT, mode, sdk_cs(broker, policy), hub, group, partition],
                         cwd=JS, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    lines = [line for line in res.stdout.splitlines() if line.startswith("{") and "attached" not in line]
    assert res.returncode == 0 and lines, f"{res.stdout}\n{res.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert "ms" in result, result
    return result


@pytest.mark.parametrize("mode,hub,group,partition,policy,code,words", [
    ("receive", "orders", "nope", "0", ROOT, "MessagingEntityNotFoundError", "orders/ConsumerGroups/nope"),
    ("receive", "nohub", "$Default", "0", ROOT, "MessagingEntityNotFoundError", "contoso/nohub"),
    ("send", "nohub", "$Default", "0", ROOT, "MessagingEntityNotFoundError", "contoso/nohub"),
    ("receive", "payments", "$Default", "7", ROOT, "ArgumentOutOfRangeError", "partition 7"),
    ("receive", "orders", "$Default", "0", SENDER, "UnauthorizedError", "orders"),
    ("send", "orders", "$Default", "0", LISTENER, "UnauthorizedError", "orders"),
], ids=["unknown-group", "unknown-hub-receive", "unknown-hub-send", "unknown-partition",
        "missing-listen", "missing-send"])
def test_js_sdk_gets_the_documented_error(node, broker, mode, hub, group, partition, policy, code,
                                          words):
    result = js_error(node, broker, mode, hub, group, partition, policy)
    assert result["code"] == code and words in result["message"], result
    record(f"js {mode}, {code} ({words})", result["ms"] / 1000)


def test_js_sdk_sixth_receiver_is_quota_exceeded(node, broker):
    with five_receivers(broker, "payments", "$Default", 0) as holding:
        holding()
        result = js_error(node, broker, "receive", "payments")
    assert result["code"] == "QuotaExceededError" and "which is 5" in result["message"], result
    record("js receive, sixth receiver", result["ms"] / 1000)


def test_js_sdk_hub_deleted_under_its_receiver(node, broker):
    from confluent_kafka.admin import AdminClient

    broker.create_hub("doomed-js", 1)
    proc = subprocess.Popen([node, "-e", SCRIPT, "receive", sdk_cs(broker), "doomed-js", "$Default", "0"],
                            cwd=JS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline() or "{}")
        assert first.get("attached"), first
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers,
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": "$ConnectionString",
                             "sasl.password": broker.connection_string()})
        deleted = time.time()
        admin.delete_topics(["doomed-js"])["doomed-js"].result(10)
        result = json.loads(proc.stdout.readline() or "{}")
        at = time.time()
    finally:
        proc.kill()
        proc.wait(10)
    assert result.get("code") == "MessagingEntityNotFoundError", result
    assert "'contoso/doomed-js' could not be found" in result["message"], result
    record("js receive, hub deleted under the receiver (from the delete)", at - deleted)
