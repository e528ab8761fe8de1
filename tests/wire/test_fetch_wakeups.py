"""Long-poll Fetch requests parked until data arrives, across hubs: deleting a hub answers
its own parked fetches at once and leaves the other hubs' parked, which a produce to their
hub still wakes; a connection closed while its fetch waits leaves no waiter behind."""
from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafka_wire import codec
from tests.rawclient import RawClient

WAIT_MS = 30_000  # far longer than any step here: an answer before it was woken
Fetch = codec.request_class(codec.ApiKey.Fetch)


def _park(c: RawClient, hub: str) -> None:
    """Sends a Fetch of ``hub``'s partition 0 at its end (no data: it waits WAIT_MS)."""
    body = Fetch(version=11, replica_id=-1, max_wait_ms=WAIT_MS, min_bytes=1, max_bytes=1 << 20,
                 isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                 forgotten_topics_data=[], topics=[Fetch.FetchTopic(topic=hub, partitions=[
                     Fetch.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1,
                                                     fetch_offset=0, log_start_offset=-1,
                                                     partition_max_bytes=1 << 20)])])
    c.send_raw(c.frame(codec.ApiKey.Fetch, 11, bytes(body.encode(version=11))))


def _answer(c: RawClient):
    return c.read_response(codec.ApiKey.Fetch, 11).responses[0].partitions[0]


def _waiting(broker, hub: str) -> int:
    """Fetches parked on ``hub`` (read on the broker's loop)."""
    def count():
        return len(broker.broker.services.default.topics._waiters.get(hub, {}).get(0, ()))
    return broker.call(count)


def _until(predicate, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.01)


def test_a_deletion_answers_its_hubs_parked_fetches_and_no_others(broker):
    for hub in ("gone", "kept"):
        broker.create_hub(hub)
    with RawClient(broker.bootstrap_servers, timeout=60) as on_gone, \
            RawClient(broker.bootstrap_servers, timeout=60) as on_kept:
        _park(on_gone, "gone")
        _park(on_kept, "kept")
        _until(lambda: _waiting(broker, "gone") == 1 and _waiting(broker, "kept") == 1, "parked")
        started = time.monotonic()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.delete_topics(["gone"])["gone"].result(20)
        answer = _answer(on_gone)
        assert time.monotonic() - started < WAIT_MS / 2000, "the deletion did not wake the fetch"
        assert answer.error_code != 0  # the hub is gone
        assert _waiting(broker, "kept") == 1, "the other hub's fetch was answered or dropped"
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
        producer.produce("kept", b"after the deletion")
        assert producer.flush(10) == 0
        answer = _answer(on_kept)
        assert answer.error_code == 0 and len(answer.records) > 0
        assert time.monotonic() - started < WAIT_MS / 1000
        assert _waiting(broker, "kept") == 0


def test_a_closed_connection_leaves_no_parked_fetch(broker):
    broker.create_hub("closing")
    c = RawClient(broker.bootstrap_servers, timeout=60)
    _park(c, "closing")
    _until(lambda: _waiting(broker, "closing") == 1, "parked")
    c.close()
    _until(lambda: _waiting(broker, "closing") == 0, "forgotten after the close")
