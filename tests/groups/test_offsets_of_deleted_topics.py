"""A deleted topic's committed offsets go with it, for every group, as Kafka drops a
deleted partition's offsets and Event Hubs a hub's checkpoints: a topic made again
under the same name is read from its start, also after a restart."""
from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.testing import EmulatedBroker


def _produce(broker, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for v in values:
        p.produce("t1", v, partition=0)
    assert p.flush(10) == 0


def _commit(broker, group: str, offset: int) -> None:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition("t1", 0, offset)], asynchronous=False)
    finally:
        c.close()


def _committed(broker, group: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        return c.committed([TopicPartition("t1", 0)], timeout=10)[0].offset
    finally:
        c.close()


def _recreate(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_topics(["t1"])["t1"].result(10)
    admin.create_topics([NewTopic("t1", 1)])["t1"].result(10)


def test_a_recreated_topic_is_read_from_its_start_by_groups_that_had_committed(tmp_path):
    with EmulatedBroker(tmp_path / "data") as broker:
        broker.create_hub("t1", 1)
        _produce(broker, [b"old-%d" % i for i in range(3)])
        _commit(broker, "g", 3)
        _commit(broker, "other", 1)
        _recreate(broker)
        _produce(broker, [b"new-%d" % i for i in range(5)])
        assert _committed(broker, "g") < 0 and _committed(broker, "other") < 0  # none
        c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        try:
            c.subscribe(["t1"])
            got = []
            for _ in range(100):  # bounded: 100 polls of up to 1 s
                m = c.poll(1)
                if m is not None and not m.error():
                    got.append(m.value())
                if len(got) == 5:
                    break
        finally:
            c.close()
        assert got == [b"new-%d" % i for i in range(5)]
        _commit(broker, "g", 2)  # a commit on the new topic is kept, as always
    with EmulatedBroker(tmp_path / "data") as broker:  # and what was forgotten stays so
        assert _committed(broker, "g") == 2 and _committed(broker, "other") < 0


def test_deleting_a_hub_through_the_management_api_forgets_its_offsets_too(tmp_path):
    from tests.rest.test_management import RG, owner

    with EmulatedBroker(tmp_path / "data", tls=True, http=True) as broker:
        broker.create_hub("t1", 1)
        _produce(broker, [b"x"])
        _commit(broker, "g", 1)
        namespace = broker.broker.services.eventhubs.default_namespace
        owner(broker).event_hubs.delete(RG, namespace, "t1")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("t1", 1)])["t1"].result(10)
        assert _committed(broker, "g") < 0
