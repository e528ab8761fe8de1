"""AMQP on a geo-replicated namespace, through the Azure SDK's own AMQP stack and
its clients: the com.microsoft:georeplication capability is answered only when the
namespace is geo-replicated and the link desires it; offsets are SEGMENT:SEQUENCE
on deliveries and in the partition properties; the SDK's starting positions in that
form are taken; a legacy offset, or one a forced promotion lost, is refused with
com.microsoft:georeplication:invalid-offset."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.eventhub import EventHubConsumerClient
from azure.eventhub._pyamqp import ReceiveClient, SendClient
from azure.eventhub._pyamqp.authentication import SASTokenAuth
from azure.eventhub._pyamqp.error import RetryPolicy
from azure.eventhub._pyamqp.message import Message
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import geo, geo_broker

CAP = b"com.microsoft:georeplication"
INVALID = "com.microsoft:georeplication:invalid-offset"


def _auth(b: EmulatedBroker, address: str):
    host = f"127.0.0.1:{b.amqp_port}"
    uri = f"sb://{host}/{address}"
    cs = dict(p.split("=", 1) for p in b.connection_string().split(";") if "=" in p)
    return host, SASTokenAuth(uri, uri, cs["SharedAccessKeyName"], cs["SharedAccessKey"])


def offered(b: EmulatedBroker, address: str, *, sender: bool, desire: bool):
    """The offered capabilities of the broker's answer to one attach (pyamqp keeps them)."""
    host, auth = _auth(b, address)
    kwargs = dict(auth=auth, use_tls=False, retry_policy=RetryPolicy(retry_total=0))
    if desire:
        kwargs["desired_capabilities"] = [CAP]
    cls = SendClient if sender else ReceiveClient
    client = cls(host, f"amqp://{host}/{address}", **kwargs)
    with client:
        deadline = time.monotonic() + 15
        if sender:
            # azure-eventhub 5.15.1's SendClient drops desired_capabilities (its
            # _client_ready does not pass them to create_sender_link, though the producer
            # asks): attach the sender link as its ReceiveClient does a receiver's.
            while not client._cbs_authenticator or not client.auth_complete():
                assert time.monotonic() < deadline, "no token was put"
                client.do_work()
            client._link = client._session.create_sender_link(
                target_address=client.target, desired_capabilities=kwargs.get("desired_capabilities"))
            client._link.attach()
        while not client.client_ready():
            assert time.monotonic() < deadline, "the link did not attach"
            client.do_work()
        caps = client._link.offered_capabilities
    if caps is None:
        return set()
    return {bytes(c) for c in (caps if isinstance(caps, (list, tuple)) else [caps])}


def sdk_cs(b: EmulatedBroker) -> str:
    return b.amqp_connection_string()


def write(b: EmulatedBroker, bodies: list[str], partition: int = 0) -> None:
    """Events a test reads, written over Kafka (tens of ms; the SDK producer takes over a
    second, three connections of its 50 ms polling). The offsets are the log's, whoever wrote."""
    p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string()))
    for body in bodies:
        p.produce("orders", body.encode(), partition=partition)
    assert p.flush(30) == 0


def send_one(b: EmulatedBroker, body: str) -> None:
    """One event sent over AMQP by pyamqp's SendClient (one connection; the SDK producer
    opens three), accepted or raising."""
    host, auth = _auth(b, "orders")
    with SendClient(host, f"amqp://{host}/orders/Partitions/0", auth=auth, use_tls=False,
                    retry_policy=RetryPolicy(retry_total=0)) as client:
        client.send_message(Message(data=[body.encode()]))  # one data section


def read(b: EmulatedBroker, count: int, timeout: float = 20.0, retry_total: int = 3, **kwargs):
    """(events, errors) from EventHubConsumerClient.receive on partition 0 until
    ``count`` events arrive, an error is reported, or time runs out.

    A refused attach reaches ``on_error`` only with ``retry_total=0``: with retries the
    sync consumer attaches again about once a second for ever, on_error never called
    (azure-eventhub 5.15, its issue #27137; tests/amqp/test_refusal_reach.py)."""
    client = EventHubConsumerClient.from_connection_string(sdk_cs(b), consumer_group="$Default",
                                                           eventhub_name="orders",
                                                           retry_total=retry_total)
    got, errors, done = [], [], threading.Event()

    def on_event(_ctx, event):
        if event is not None:
            got.append(event)
            if len(got) >= count:
                done.set()

    def on_error(_ctx, err):
        errors.append(err)
        done.set()

    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, on_error=on_error, partition_id="0", max_wait_time=1, **kwargs),
        daemon=True)
    thread.start()
    done.wait(timeout)
    client.close()
    thread.join(20)
    assert not thread.is_alive()
    return got, errors


def side_by_side(b: EmulatedBroker, *reads: dict) -> list:
    """``read(b, **r)`` for each of ``reads``, run side by side (each its own client,
    independent of the others; opening one takes most of a second), in their order."""
    with ThreadPoolExecutor(len(reads)) as pool:
        return list(pool.map(lambda r: read(b, **r), reads))


@pytest.fixture
def geob(tmp_path):
    with geo_broker(tmp_path, amqp=True, max_lag=300) as b:
        yield b


def test_the_capability_is_answered_only_when_geo_replicated_and_desired(tmp_path, geob):
    recv = "orders/ConsumerGroups/$Default/Partitions/0"
    assert offered(geob, recv, sender=False, desire=True) == {CAP}
    assert offered(geob, "orders", sender=True, desire=True) == {CAP}
    assert offered(geob, "orders/Partitions/1", sender=True, desire=True) == {CAP}
    assert offered(geob, recv, sender=False, desire=False) == set()
    with EmulatedBroker(tmp_path / "plain", amqp=True) as plain:
        plain.create_hub("orders", 2)
        assert offered(plain, recv, sender=False, desire=True) == set()
        assert offered(plain, "orders", sender=True, desire=True) == set()


def test_offsets_are_segment_and_sequence_and_are_taken_back(geob):
    write(geob, [f"e{i}" for i in range(6)])
    got, errors = read(geob, 6, starting_position="-1")
    assert errors == [] and [e.body_as_str() for e in got] == [f"e{i}" for i in range(6)]
    assert [e.offset for e in got] == [f"0:{i}" for i in range(6)]
    with EventHubConsumerClient.from_connection_string(sdk_cs(geob), consumer_group="$Default",
                                                       eventhub_name="orders") as c:
        props = c.get_partition_properties("0")
    assert props["last_enqueued_offset"] == "0:5" and props["last_enqueued_sequence_number"] == 5
    # the SDK's starting positions: an offset it was handed (exclusive, inclusive) and a
    # sequence number
    after, inclusive, by_sequence = side_by_side(
        geob, dict(count=3, starting_position=got[2].offset),
        dict(count=4, starting_position="0:2", starting_position_inclusive=True),
        dict(count=2, starting_position=3))
    got, errors = after
    assert errors == [] and [e.body_as_str() for e in got] == ["e3", "e4", "e5"]
    got, errors = inclusive
    assert errors == [] and [e.body_as_str() for e in got] == ["e2", "e3", "e4", "e5"]
    got, errors = by_sequence
    assert errors == [] and [e.body_as_str() for e in got] == ["e4", "e5"]


def test_the_runtime_metric_carries_the_geo_offset(geob):
    write(geob, ["a", "b", "c"])
    got, errors = read(geob, 3, starting_position="-1", track_last_enqueued_event_properties=True)
    assert errors == [] and len(got) == 3
    assert got[-1].offset == "0:2"
    # EventData keeps what the delivery annotations said
    from azure.eventhub._utils import get_last_enqueued_event_properties
    assert get_last_enqueued_event_properties(got[-1])["offset"] == "0:2"


@pytest.mark.parametrize("position", ["0", "5", "-7"])
def test_a_legacy_offset_is_refused_with_the_geo_condition(geob, position):
    write(geob, ["a", "b", "c"])
    got, errors = read(geob, 1, retry_total=0, starting_position=position)
    assert got == [] and errors, "a legacy offset was taken"
    assert INVALID in str(errors[0]) and "The supplied offset" in str(errors[0]), errors


@pytest.mark.parametrize("position", ["0:x", "1:2:3", "99999999999999999999:1", "0: 1"])
def test_a_malformed_offset_is_an_invalid_field(geob, position):
    got, errors = read(geob, 1, retry_total=0, starting_position=position)
    assert got == [] and errors
    assert "amqp:invalid-field" in str(errors[0]) or "invalid-field" in repr(errors[0]), errors


def test_after_a_forced_promotion_a_lost_offset_is_refused_and_a_kept_one_taken(geob):
    write(geob, ["k0", "k1", "k2"])
    g = geo(geob)
    deadline = time.monotonic() + 15
    while geob.call(lambda: g.replica("eastus").lag_events) and time.monotonic() < deadline:
        time.sleep(0.05)
    geob.call(lambda: g.pause("eastus"))
    write(geob, ["lost3", "lost4"])
    promotion = geob.call(lambda: g.promote("eastus", forced=True))
    assert promotion.lost_events == 2 and geob.call(lambda: g.segment) == 1
    assert geob.call(lambda: g.segment_starts("orders", 0)) == [(0, 0), (1, 3)]
    write(geob, ["n3", "n4"])
    every, kept, lost, unknown, by_sequence = side_by_side(
        geob, dict(count=5, starting_position="-1"), dict(count=2, starting_position="0:2"),
        dict(count=1, retry_total=0, starting_position="0:3"),
        dict(count=1, retry_total=0, starting_position="7:1"),
        dict(count=2, starting_position=3, starting_position_inclusive=True))
    got, errors = every
    assert errors == [] and [(e.body_as_str(), e.offset) for e in got] == [
        ("k0", "0:0"), ("k1", "0:1"), ("k2", "0:2"), ("n3", "1:3"), ("n4", "1:4")]
    # a checkpoint taken on the old primary at k2 is still good; at lost3 it is not
    got, errors = kept
    assert errors == [] and [e.body_as_str() for e in got] == ["n3", "n4"]
    got, errors = lost
    assert got == [] and errors and INVALID in str(errors[0]), errors
    assert "replication segment 0 ended at sequence number 2" in str(errors[0])
    got, errors = unknown
    assert got == [] and errors and INVALID in str(errors[0]), errors
    # a sequence number positions without an offset (what the SDKs fall back to)
    got, errors = by_sequence
    assert errors == [] and [e.body_as_str() for e in got] == ["n3", "n4"]


def test_after_a_planned_promotion_every_offset_stays_good(geob):
    write(geob, ["a", "b", "c"])
    g = geo(geob)
    geob.call(lambda: g.promote("eastus"))
    write(geob, ["d"])
    every, after = side_by_side(geob, dict(count=4, starting_position="-1"),
                                dict(count=1, starting_position="0:2"))
    got, errors = every
    assert errors == [] and [e.offset for e in got] == ["0:0", "0:1", "0:2", "1:3"]
    got, errors = after
    assert errors == [] and [e.body_as_str() for e in got] == ["d"]


def receive_with_selector(b: EmulatedBroker, selector: str, count: int, key: str | None = None):
    """(messages, error) of a pyamqp receiver of orders/0 whose source carries
    ``selector`` as the SDKs write it (azure-eventhub's create_source)."""
    from azure.eventhub._pyamqp import utils
    from azure.eventhub._pyamqp.endpoints import ApacheFilters, Source

    address = "orders/ConsumerGroups/$Default/Partitions/0"
    host, auth = _auth(b, address)
    if key is not None:
        auth = SASTokenAuth(auth.audience, auth.uri, "RootManageSharedAccessKey", key)
    source = Source(address=f"amqp://{host}/{address}", filters={})
    source.filters[ApacheFilters.selector_filter] = (ApacheFilters.selector_filter,
                                                     utils.amqp_string_value(selector))
    client = ReceiveClient(host, source, auth=auth, use_tls=False,
                           retry_policy=RetryPolicy(retry_total=0))
    got: list = []
    try:
        with client:
            deadline = time.monotonic() + 15
            while len(got) < count and time.monotonic() < deadline:
                got += client.receive_message_batch(max_batch_size=count, timeout=1)
    except Exception as exc:  # the refusal, as pyamqp raises it
        return got, exc
    return got, None


def test_java_writes_the_segment_with_a_sequence_number_on_any_namespace(tmp_path, geob):
    write(geob, [f"e{i}" for i in range(4)])
    got, err = receive_with_selector(geob, "amqp.annotation.x-opt-sequence-number > '-1:1'", 2)
    assert err is None and [bytes(b"".join(m.data)) for m in got] == [b"e2", b"e3"]
    got, err = receive_with_selector(geob, "amqp.annotation.x-opt-sequence-number >= '0:1'", 3)
    assert err is None and [bytes(b"".join(m.data)) for m in got] == [b"e1", b"e2", b"e3"]
    got, err = receive_with_selector(geob, "amqp.annotation.x-opt-sequence-number > '4:1'", 1)
    assert err is not None and INVALID in str(err)
    with EmulatedBroker(tmp_path / "plain", amqp=True) as plain:
        plain.create_hub("orders", 2)
        write(plain, ["p0", "p1", "p2"])
        got, err = receive_with_selector(plain, "amqp.annotation.x-opt-sequence-number > '-1:0'", 2)
        assert err is None and [bytes(b"".join(m.data)) for m in got] == [b"p1", b"p2"]


HOSTILE = ["9" * 5000 + ":1", "1:" + "9" * 5000, "../../etc/passwd", "0:1/../2", "0:1\x00", "0:\u0661",
           "%30:1", "0:1' or '1'='1", "\u202e0:1"]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_offsets_are_an_invalid_field_and_the_broker_goes_on(geob, value):
    got, err = receive_with_selector(geob, f"amqp.annotation.x-opt-offset > '{value}'", 1)
    assert got == [] and err is not None
    assert "invalid-field" in str(err) or "not SEGMENT:POSITION" in str(err) or \
        "is not one Event Hubs takes" in str(err), err
    assert len(str(err)) < 2000      # a huge value is not echoed back whole
    send_one(geob, "still")          # the namespace still serves AMQP


def test_a_geo_offset_needs_listen_rights_first(geob):
    """Without a valid token the attach is unauthorized before the offset is looked at
    (its history is not disclosed)."""
    got, err = receive_with_selector(geob, "amqp.annotation.x-opt-offset > '0:3'", 1,
                                     key="d3Jvbmcta2V5LXdyb25nLWtleQ==")
    assert got == [] and err is not None and INVALID not in str(err)
    assert "unauthorized" in str(err).lower() or "401" in str(err), err


def test_a_receiver_past_a_forced_promotions_cut_is_detached_not_rewound(geob, offset_refusals):
    """A receiver that read events the new primary lacks: its link is detached (not
    sent the partition again from the start, as a rewind on the shorter log did), and
    the SDK's re-attach from its own last offset is refused, again and again."""
    refused = offset_refusals
    g = geo(geob)
    write(geob, ["k0", "k1", "k2"])
    client = EventHubConsumerClient.from_connection_string(sdk_cs(geob), consumer_group="$Default",
                                                           eventhub_name="orders")
    got: list = []
    thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
        on_event=lambda _c, e: e is not None and got.append((e.sequence_number, e.body_as_str())),
        partition_id="0", starting_position="-1", max_wait_time=1))
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        while geob.call(lambda: g.replica("eastus").lag_events) and time.monotonic() < deadline:
            time.sleep(0.05)
        geob.call(lambda: g.pause("eastus"))
        write(geob, ["lost3", "lost4"])
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == [(0, "k0"), (1, "k1"), (2, "k2"), (3, "lost3"), (4, "lost4")]
        geob.call(lambda: g.promote("eastus", forced=True))
        write(geob, ["n3", "n4", "n5"])
        deadline = time.monotonic() + 20
        while len(refused) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        client.close()
        thread.join(20)
    assert got == [(0, "k0"), (1, "k1"), (2, "k2"), (3, "lost3"), (4, "lost4")], got
    assert len(refused) >= 2 and all("The supplied offset '0:4' is invalid" in r for r in refused)
