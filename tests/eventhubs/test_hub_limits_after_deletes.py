"""The broker's [limits] on hubs and partitions per namespace hold exactly at the boundary
however many hubs were made, deleted, grown and made again, and across a restart: the
door's count is kept as hubs come and go (no walk of the namespace per creation), and a
kept count that drifted would let one more through or refuse one too early."""
from __future__ import annotations

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.testing import EmulatedBroker
from kafka_wire.topics import TopicManager
from tests.eventhubs.conftest import confluent_conf

BOUNDS = Bounds(hubs_per_namespace=3, partitions_per_namespace=10, partitions_per_hub=8)


def _answer(future) -> tuple[int, str] | None:
    """None for a success, else the error's code and message."""
    try:
        future.result(15)
        return None
    except Exception as exc:  # noqa: BLE001  KafkaException: its KafkaError is the answer
        err = exc.args[0]
        return err.code(), err.str()


def _create(admin: AdminClient, name: str, partitions: int):
    return _answer(admin.create_topics([NewTopic(name, partitions)])[name])


def _grow(admin: AdminClient, name: str, total: int):
    return _answer(admin.create_partitions([NewPartitions(name, total)])[name])


def _delete(admin: AdminClient, name: str) -> None:
    assert _answer(admin.delete_topics([name])[name]) is None


def _over_hubs(answer) -> bool:
    return answer is not None and answer[0] == KafkaError.POLICY_VIOLATION and "hubs_per_namespace" in answer[1]


def _over_partitions(answer) -> bool:
    return answer is not None and answer[0] == KafkaError.INVALID_PARTITIONS and \
        "partitions_per_namespace" in answer[1]


def _fill_to_the_boundary(admin: AdminClient, round_: int) -> None:
    """From hubs a (4 partitions) and c (2): hub d made at exactly the 10 partitions left
    after one more is refused, then nothing more fits; a deleted and c grown to the
    boundary, d deleted again."""
    assert _over_partitions(_create(admin, f"d{round_}", 5))  # 4 + 2 + 5 = 11
    assert _create(admin, f"d{round_}", 4) is None             # 10: exactly the limit
    assert _over_hubs(_create(admin, "e", 1))                  # 3 hubs: as many as allowed
    _delete(admin, "a")                                        # 2 hubs, 6 partitions
    assert _over_partitions(_create(admin, "e", 5))            # 11
    assert _over_partitions(_grow(admin, "c", 7))              # 2 -> 7: 4 + 7 = 11
    assert _grow(admin, "c", 6) is None                        # 4 + 6 = 10
    assert _over_partitions(_create(admin, "e", 1))            # 11, though 2 hubs only
    _delete(admin, f"d{round_}")                               # 1 hub, c: 6 partitions
    _delete(admin, "c")
    assert _create(admin, "a", 4) is None and _create(admin, "c", 2) is None


def test_the_limits_hold_exactly_at_the_boundary_after_deletes_growth_and_a_restart(tmp_path):
    for _start in range(2):  # the second over what the first left: the count is loaded
        with EmulatedBroker(tmp_path / "data", bounds=BOUNDS) as broker:
            admin = AdminClient(confluent_conf(broker.bootstrap_servers))
            if _start == 0:
                assert _create(admin, "a", 4) is None and _create(admin, "c", 2) is None
            for round_ in range(5):
                _fill_to_the_boundary(admin, round_)
            assert sorted(admin.list_topics(timeout=15).topics) == ["a", "c"]


def test_the_door_counts_without_listing_the_hubs(tmp_path):
    """A creation and a growth through the door read the kept count: neither the topics'
    listing nor the log manager's copy of its table (each a walk of every hub)."""
    with EmulatedBroker(tmp_path / "data", bounds=Bounds(hubs_per_namespace=100,
                                                        partitions_per_namespace=110)) as broker:
        for i in range(50):
            broker.create_hub(f"held-{i:02d}", 2)
        admin = AdminClient(confluent_conf(broker.bootstrap_servers))
        admin.list_topics(timeout=15)  # (the client's own listing, before the count is watched)
        runtime = broker.broker.services.default
        walks: list[str] = []

        def counting(name: str, walk):
            def counted(*args):
                walks.append(name)
                return walk(*args)
            return counted

        topics, logs = runtime.topics, runtime.topics.logs
        broker.call(lambda: setattr(topics, "all", counting("TopicManager.all", topics.all)))
        broker.call(lambda: setattr(logs, "topics", counting("LogManager.topics", logs.topics)))
        try:
            assert _create(admin, "one-more", 3) is None
            assert _grow(admin, "one-more", 4) is None
            assert _over_partitions(_create(admin, "too-many", 8))  # 100 + 4 + 8 > 110
        finally:
            broker.call(lambda: (delattr(topics, "all"), delattr(logs, "topics")))
        assert walks == []
        assert broker.call(lambda: (topics.hub_partitions(), len(topics.hub_sizes()))) == (104, 51)


def test_a_start_counts_the_hubs_its_directory_holds(tmp_path):
    logs = LogManager(tmp_path / "data" / "emulatorNs1", LogConfig())  # the default namespace's log
    try:
        for name, partitions in (("a", 3), ("b", 4), ("__internal", 5)):
            logs.create_topic(name, partitions)
        assert TopicManager(logs).hub_partitions() == 7
    finally:
        logs.close()
    with EmulatedBroker(tmp_path / "data", bounds=Bounds(hubs_per_namespace=3, partitions_per_namespace=8)) as b:
        admin = AdminClient(confluent_conf(b.bootstrap_servers))
        assert _over_partitions(_create(admin, "c", 2))  # 7 + 2 > 8; Kafka's own topic counts nothing
        assert _create(admin, "c", 1) is None
        assert _over_hubs(_create(admin, "d", 1))
