"""A transfer the broker refuses reaches the SDK as its own error, at once: the
rejected outcome carries every field of its error (pyamqp indexes them), so the
send raises instead of waiting forever. Each send runs in a thread with a
bounded wait, so a hang fails the test rather than the run."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError, EventHubError
from proton import Data, Described, uint, ulong

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_quotas import _produce
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

from .test_bad_input import AMQP_HEADER, frames


def outcome(broker, hub: str, send, timeout: float = 30.0):
    """What ``send(producer)`` ends with: None, or the exception it raised."""
    result: list = []

    def run() -> None:
        try:
            with EventHubProducerClient.from_connection_string(
                    broker.amqp_connection_string(), eventhub_name=hub, retry_total=0) as p:
                send(p)
            result.append(None)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert result, f"the send neither settled nor failed in {timeout} s"
    return result[0]


def test_an_oversized_message_is_refused_and_the_link_keeps_sending(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        sent: list = []

        def send(p) -> None:
            # A client that ignores the attach's max-message-size (the SDK itself checks it).
            p.create_batch()
            p._max_message_size_on_link = 4 * 1024 * 1024
            big = p.create_batch(max_size_in_bytes=4 * 1024 * 1024, partition_id="0")
            big.add(EventData(b"x" * (2 * 1024 * 1024)))
            with pytest.raises(EventDataSendError, match="message-size-exceeded|MessageSizeExceeded"):
                p.send_batch(big)
            p.send_batch([EventData(b"small")], partition_id="0")
            sent.append(True)

        assert outcome(broker, "hub", send) is None and sent
        assert _watermarks(broker, "hub") == (0, 1)  # only the small event was stored


def _watermarks(broker, hub: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)
    finally:
        c.close()




def test_a_send_over_the_throughput_units_for_too_long_is_server_busy(metered):
    broker, _ = metered
    # Kafka traffic puts the namespace 69 s into its 1,000 events/s (the clock stands still):
    # an SDK send would wait longer than its operation timeout, so it is refused.
    for _ in range(2):  # under max.message.bytes each; a throttled connection is muted
        with RawClient(broker.bootstrap_servers) as c:
            answer = _produce(c, make_batch(35_000, value_size=1), timeout_ms=120_000)
            assert answer.responses[0].partition_responses[0].error_code == 0
    assert answer.throttle_time_ms > 0  # (reported throttles are capped at 30 s)
    error = outcome(broker, "hub", lambda p: p.send_batch([EventData(b"late")], partition_id="0"))
    assert isinstance(error, EventHubError) and "server-busy" in str(error)


def test_a_send_to_a_hub_deleted_under_the_producer_fails(tmp_path):
    from confluent_kafka.admin import AdminClient

    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("doomed", 1)

        def send(p) -> None:
            p.send_batch([EventData(b"before")], partition_id="0")
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.delete_topics(["doomed"])["doomed"].result(10)
            p.send_batch([EventData(b"after")], partition_id="0")

        error = outcome(broker, "doomed", send)
        assert isinstance(error, EventHubError) and "deleted" in str(error)


def _frame(code: int, fields: list, payload: bytes = b"") -> bytes:
    d = Data()
    d.put_object(Described(ulong(code), fields))
    body = bytes(d.encode()) + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body


def _frames_until(sock: socket.socket, done, skip: int = 0, timeout: float = 10.0) -> list:
    """The performatives the broker writes after ``skip`` bytes (its protocol header),
    read until ``done(performatives)`` or the timeout (the broker keeps the connection
    open)."""
    data, deadline = bytearray(), time.monotonic() + timeout
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
        got = [p for _, p in frames(bytes(data[skip:]))]
        if done(got):
            return got
    raise AssertionError(f"not reached in {timeout} s: {[p for _, p in frames(bytes(data[skip:]))]}")


@pytest.mark.parametrize("address, condition", [
    ("missing", "amqp:not-found"),                   # no such hub
    ("hub/Partitions/../../x", "amqp:not-found"),    # a path-like address
])
def test_a_transfer_on_a_refused_link_is_rejected_with_the_refusals_reason(tmp_path, address, condition):
    # A client that sends before reading the attach's answer: its message reaches a link
    # the broker refused. It was settled with no outcome, which pyamqp reads as an unknown
    # error (and retries) and rhea-promise never resolves; now it is rejected, saying why.
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
            s.sendall(AMQP_HEADER + _frame(0x10, ["c", "localhost"])
                      + _frame(0x11, [None, uint(0), uint(100), uint(100)]))
            _frames_until(s, lambda got: any(int(p.descriptor) == 0x11 for p in got), skip=8)
            target = Described(ulong(0x29), [address])
            s.sendall(_frame(0x12, ["l", uint(0), False, None, None, Described(ulong(0x28), ["c"]),
                                    target, None, None, uint(0)])
                      + _frame(0x14, [uint(0), uint(0), b"t0", uint(0), False],
                               b"\x00\x53\x75\xa0\x05hello"))
            got = _frames_until(s, lambda got: any(int(p.descriptor) == 0x15 for p in got))
        detach = next(p for p in got if int(p.descriptor) == 0x16)
        assert str(detach.value[2].value[0]) == condition, detach
        disposition = next(p for p in got if int(p.descriptor) == 0x15)
        role, first, last, settled, state = disposition.value[:5]
        assert (role, first, settled) == (True, 0, True) and last in (None, 0), disposition
        assert state is not None and int(state.descriptor) == 0x25, disposition  # rejected
        error = state.value[0]
        assert int(error.descriptor) == 0x1d and str(error.value[0]) == condition, disposition
        assert error.value[1] == detach.value[2].value[1]  # the refusal's own description
        assert _watermarks(broker, "hub") == (0, 0)  # nothing stored
