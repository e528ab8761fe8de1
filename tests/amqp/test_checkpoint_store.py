"""Load balancing and checkpoints as the Azure SDK does them: EventHubConsumerClient
processors with the blob checkpoint store on Azurite share a hub's partitions, one
stops and the other takes its partitions over, and a new processor resumes from the
checkpoints.

Azurite is installed by ``make test`` (``npm install --prefix tests/js``) when npm
exists; without node or azurite this test SKIPS with the reason."""
from __future__ import annotations

import threading
import time

from azure.eventhub import EventHubConsumerClient
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from azure.storage.blob import BlobServiceClient
from confluent_kafka import Producer

from .conftest import sdk_cs, wait_for

CONTAINER = "checkpoints"
HUB = "ckpt"
PARTITIONS = ["0", "1", "2", "3"]


class Processor:
    """An EventHubConsumerClient receiving in a thread with a blob checkpoint store,
    checkpointing every event; records what it reads and the partitions it holds."""

    def __init__(self, broker, store: BlobCheckpointStore) -> None:
        # The receive loop sleeps one load-balancing interval before it sees close(), and
        # a released or expired ownership is taken over on the next one: keep both short.
        self.client = EventHubConsumerClient.from_connection_string(
            sdk_cs(broker), consumer_group="$Default", eventhub_name=HUB, checkpoint_store=store,
            load_balancing_interval=1, partition_ownership_expiration_interval=6)
        self.events: list[tuple[str, str, int]] = []   # (partition, body, sequence number)
        self.owned: set[str] = set()
        self.errors: list = []
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self.client.receive, kwargs=dict(
            on_event=self._on_event, on_error=lambda ctx, err: self.errors.append(err),
            on_partition_initialize=lambda ctx: self._hold(ctx.partition_id, True),
            on_partition_close=lambda ctx, reason: self._hold(ctx.partition_id, False),
            starting_position="-1"), daemon=True)
        self.thread.start()

    def _hold(self, partition_id: str, held: bool) -> None:
        with self._lock:
            (self.owned.add if held else self.owned.discard)(partition_id)

    def _on_event(self, context, event) -> None:
        if event is None:
            return
        # Checkpoint first: an event counted as received is one a successor must skip.
        context.update_checkpoint(event)
        with self._lock:
            self.events.append((context.partition_id, event.body_as_str(), event.sequence_number))

    def bodies(self) -> list[str]:
        with self._lock:
            return [body for _, body, _ in self.events]

    def close(self) -> None:
        self.client.close()
        self.thread.join(20)
        assert not self.thread.is_alive()


def wait_steady(predicate, timeout: float, hold: float = 3.0) -> bool:
    """Whether ``predicate`` comes true within ``timeout`` and stays so for ``hold`` s."""
    deadline = time.monotonic() + timeout
    since = None
    while time.monotonic() < deadline:
        if not predicate():
            since = None
        elif since is None:
            since = time.monotonic()
        elif time.monotonic() - since >= hold:
            return True
        time.sleep(0.1)
    return False


def send_round(broker, name: str, per_partition: int = 3) -> list[str]:
    """Events ``NAME-PARTITION-I`` sent to every partition; returns their bodies. Sent
    over Kafka: what is pinned here is how the SDK's processors read, and its producer
    attaches a link per partition (~0.7 s each, three rounds of four)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "$ConnectionString",
                         "sasl.password": broker.connection_string()})
    sent = []
    for pid in PARTITIONS:
        bodies = [f"{name}-{pid}-{i}" for i in range(per_partition)]
        for body in bodies:
            producer.produce(HUB, body.encode(), partition=int(pid))
        sent += bodies
    assert producer.flush(30) == 0
    return sent


def ownership(container) -> dict[str, str]:
    """Partition -> owner id, from the checkpoint store's ownership blobs
    (``NAMESPACE/HUB/GROUP/ownership/PARTITION``; a released one has none: the SDK
    writes an empty owner id, which the blob service keeps as no value)."""
    return {b.name.rsplit("/", 1)[1]: b.metadata.get("ownerid") or None
            for b in container.list_blobs(include=["metadata"])
            if b.name.split("/")[1:4] == [HUB, "$default", "ownership"]}


def checkpoints(container) -> dict[str, int]:
    """Partition -> the sequence number checkpointed there."""
    return {b.name.rsplit("/", 1)[1]: int(b.metadata["sequencenumber"])
            for b in container.list_blobs(include=["metadata"])
            if b.name.split("/")[1:4] == [HUB, "$default", "checkpoint"]}


def test_processors_share_partitions_take_over_and_resume_from_checkpoints(azurite, broker):
    broker.create_hub(HUB, len(PARTITIONS))
    container = BlobServiceClient.from_connection_string(azurite).create_container(CONTAINER)
    store = BlobCheckpointStore.from_connection_string(azurite, CONTAINER)

    # A alone takes every partition first: two processors starting together may both
    # claim a partition, as Azurite ignores the If-None-Match: * of the store's first claim.
    a = Processor(broker, store)
    b = None
    try:
        assert wait_for(lambda: a.owned == set(PARTITIONS), timeout=20), (a.owned, a.errors)
        b = Processor(broker, store)

        def split():
            owners = ownership(container)
            return (len(a.owned) == len(b.owned) == 2 and a.owned | b.owned == set(PARTITIONS)
                    and len(owners) == 4 and len(set(owners.values())) == 2 and all(owners.values()))
        # B steals one partition a load-balancing interval until each holds two; the split
        # must then hold for a few intervals, no partition changing hands.
        assert wait_steady(split, timeout=30), (a.owned, b.owned, ownership(container), a.errors,
                                                b.errors)
        for proc in (a, b):
            # An owner-level receiver taking a partition detaches the previous owner's.
            assert all("amqp:link:stolen" in str(err) for err in proc.errors), proc.errors
            proc.errors.clear()
        first = send_round(broker, "first")
        assert wait_for(lambda: len(a.events) + len(b.events) >= len(first), timeout=20), \
            (a.bodies(), b.bodies(), a.errors, b.errors)
        assert sorted(a.bodies() + b.bodies()) == sorted(first)   # each exactly once
        for proc in (a, b):
            assert proc.events and {pid for pid, _, _ in proc.events} <= proc.owned
        assert checkpoints(container) == {pid: 2 for pid in PARTITIONS}

        # A stops (and releases its partitions): B takes all four from A's checkpoints.
        b_before = len(b.events)
        a.close()
        assert a.errors == []
        second = send_round(broker, "second")
        assert wait_for(lambda: b.owned == set(PARTITIONS), timeout=20), (b.owned, ownership(container))
        assert wait_for(lambda: len(b.events) >= b_before + len(second), timeout=20), \
            (b.bodies(), b.errors)
        # Nothing A checkpointed comes again: in each partition it would precede the new events.
        assert sorted(b.bodies()[b_before:]) == sorted(second)
        owners = ownership(container)
        assert len(owners) == 4 and len(set(owners.values())) == 1 and all(owners.values())
        assert checkpoints(container) == {pid: 5 for pid in PARTITIONS}
        assert b.errors == []
    finally:
        for proc in (a, b):
            if proc is not None:
                proc.close()   # B's stop releases its partitions too
    assert ownership(container) == dict.fromkeys(PARTITIONS)

    # A new processor after B's stop: from the checkpoints, not from "-1".
    third = send_round(broker, "third")
    c = Processor(broker, store)
    try:
        assert wait_for(lambda: len(c.events) >= len(third), timeout=25), (c.bodies(), c.errors)
        assert sorted(c.bodies()) == sorted(third)
        assert [seq for _, _, seq in sorted(c.events)] == [6, 7, 8] * len(PARTITIONS)
        assert c.owned == set(PARTITIONS) and c.errors == []
    finally:
        c.close()
    assert checkpoints(container) == {pid: 8 for pid in PARTITIONS}
