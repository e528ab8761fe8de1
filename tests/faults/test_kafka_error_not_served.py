"""A kafka-error on a request answered as a whole (every API but Produce, Fetch and
ListOffsets, which get theirs per partition) answers it with the error instead of
serving it, as docs/faults.md says: nothing of it is done. Where the API has no
top-level error code at that version, every entity the request names (topic,
partition, group, resource ...) is answered with the error, as Kafka's
AbstractRequest.getErrorResponse does. Checked for every (API, version) the broker
serves, with kafka-python's codec (the client's own), and against a real broker with
confluent-kafka's admin client and consumer: the topic not made or deleted, the
partitions not added, the offsets not committed."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.faults import error_response
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf

registry.load_all()
_PARTITION_APIS = {codec.ApiKey.Produce, codec.ApiKey.Fetch, codec.ApiKey.ListOffsets}
SERVED = [(key, version) for key, low, high in registry.advertised() if key not in _PARTITION_APIS
          for version in range(low, high + 1)]
ERRNO = 41  # NOT_CONTROLLER
# results that do not repeat the request's names: CreateAcls' are one bare error per
# creation; DescribeLogDirs' before v3 are per log directory (none answered)
_KEYLESS = {codec.ApiKey.CreateAcls, codec.ApiKey.DeleteAcls, codec.ApiKey.DescribeLogDirs}


def _request(fields: dict, version: int) -> dict:
    """Values for a request struct: two of every list, named e0/e1 or numbered 0/1."""
    values = {}
    for name, f in fields.items():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        if f.is_struct_array():
            values[name] = [f.data_class(**{**_request(f.fields, version), **_keys(f.fields, version, i)})
                            for i in range(2)]
        elif f.is_array():
            kind = f.type_str[2:]
            values[name] = [f"e{i}" for i in range(2)] if kind == "string" else \
                [i for i in range(2)] if kind.startswith("int") else []
        elif f.type_str == "string" and not f.nullable_for_version_q(version):
            values[name] = f"{name}-x"
    return values


def _keys(fields: dict, version: int, i: int) -> dict:
    return {n: f"e{i}" for n, f in fields.items()
            if f.for_version_q(version) and f.tag is None and f.type_str == "string"
            and n in ("name", "topic", "group_id", "resource_name", "transactional_id")}


def _codes(node, version: int, out: list) -> list:
    """Every error code the client reads (the fields of this version, tagged ones aside)."""
    for name, f in node._struct.fields.items():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        value = getattr(node, name, None)
        if name.endswith("error_code"):
            out.append((name, value))
        elif isinstance(value, list):
            for item in value:
                if hasattr(item, "_struct"):
                    _codes(item, version, out)
        elif hasattr(value, "_struct"):
            _codes(value, version, out)
    return out


@pytest.mark.parametrize("api_key,version", SERVED,
                         ids=[f"{codec.ApiKey(k).name}-v{v}" for k, v in SERVED])
def test_the_canned_error_answer_of_every_served_api_version_encodes_and_a_client_reads_it(
        api_key, version):
    req_cls, resp_cls = codec.request_class(api_key), codec.response_class(api_key)
    sent = req_cls(version=version, **_request(req_cls.fields, version))
    request = req_cls.decode(sent.encode(version=version), version=version)  # as the broker has it
    answer = error_response(api_key, version, request, ERRNO)
    data = answer.encode(version=version)
    if api_key == codec.ApiKey.ApiVersions and version >= 3:
        # kafka-python reads an ApiVersions answer carrying an error as v0 (Kafka's answer
        # to a version it lacks); Java retries v0 only if the version's own parse fails
        assert int.from_bytes(bytes(data[:2]), "big", signed=True) == ERRNO
        return
    read = resp_cls.decode(data, version=version)
    codes = _codes(read, version, [])
    if api_key == codec.ApiKey.DescribeLogDirs and version < 3:
        assert read.results == []  # Kafka's answer too: no error code to carry before v3
        return
    assert codes, f"{resp_cls.__name__} v{version} carries no error code"
    assert {value for _name, value in codes} == {ERRNO}, codes
    top = resp_cls.fields.get("error_code")
    if top is None or not top.for_version_q(version):
        text = repr(read)
        for key in ("e0", "e1"):  # every entity the request named is answered, by its name
            if key in repr(request) and api_key not in _KEYLESS:
                assert key in text, (request, read)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("notserved") / "data", http=True) as b:
        b.create_hub("existing", 2)
        yield b


pytestmark = pytest.mark.usefixtures("no_faults")


def admin(broker) -> AdminClient:
    return AdminClient(confluent_conf(broker.bootstrap_servers, **{"retries": 0}))


def partitions(broker, topic: str) -> int | None:
    found = admin(broker).list_topics(timeout=30).topics.get(topic)
    return None if found is None else len(found.partitions)


@pytest.mark.parametrize("delay_ms", [0, 300])
def test_create_topics_answered_with_the_error_makes_no_topic(broker, delay_ms):
    topic = f"made-{delay_ms}"
    broker.faults.add("kafka-error", params={"api": "CreateTopics", "error": "NOT_CONTROLLER"})
    if delay_ms:  # with a delay on the same API too: late, and still not served
        broker.faults.add("kafka-delay", params={"api": "CreateTopics", "ms": delay_ms})
    started = time.monotonic()
    client = admin(broker)
    with pytest.raises(KafkaException, match="NOT_CONTROLLER"):
        client.create_topics([NewTopic(topic, 2, 1)], operation_timeout=5)[topic].result(30)
    assert time.monotonic() - started >= delay_ms / 1000
    assert partitions(broker, topic) is None
    client.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)  # the retry makes it
    assert partitions(broker, topic) == 2


def test_delete_topics_answered_with_the_error_deletes_nothing(broker):
    broker.create_hub("kept", 1)
    broker.faults.add("kafka-error", params={"api": "DeleteTopics", "error": "NOT_CONTROLLER"})
    client = admin(broker)
    with pytest.raises(KafkaException, match="NOT_CONTROLLER"):
        client.delete_topics(["kept"], operation_timeout=5)["kept"].result(30)
    assert partitions(broker, "kept") == 1


def test_create_partitions_answered_with_the_error_adds_none(broker):
    broker.faults.add("kafka-error", params={"api": "CreatePartitions",
                                             "error": "POLICY_VIOLATION"})
    client = admin(broker)
    with pytest.raises(KafkaException, match="POLICY_VIOLATION"):
        client.create_partitions([NewPartitions("existing", 4)])["existing"].result(30)
    assert partitions(broker, "existing") == 2


def test_offset_commit_answered_with_the_error_commits_nothing(broker):
    broker.faults.add("kafka-error", params={"api": "OffsetCommit",
                                             "error": "GROUP_AUTHORIZATION_FAILED"})
    consumer = Consumer(confluent_conf(broker.bootstrap_servers,
                                       **{"group.id": "not-committed", "enable.auto.commit": False}))
    try:
        with pytest.raises(KafkaException, match="GROUP_AUTHORIZATION_FAILED"):
            consumer.commit(offsets=[TopicPartition("existing", 0, 42)], asynchronous=False)
        assert [tp.offset for tp in consumer.committed([TopicPartition("existing", 0)], timeout=30)] \
            == [-1001]  # none
        assert broker.faults.fired[-1]["target"]["consumer_group"] == "not-committed"
    finally:
        consumer.close()
