"""SAS rights on the consumer-group, offset and transaction APIs:
Listen for groups and offsets, Manage for group administration, Send for
transactions; hub-scoped principals only see offsets of their hub."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

from .conftest import confluent_conf, kafka_python_conf, produce_one, sasl_raw

CONFIG = """
default_namespace = "contoso"

[namespaces.contoso]
tier = "Standard"

[namespaces.contoso.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXktMQ=="
rights = ["Manage", "Send", "Listen"]

[namespaces.contoso.policies.sender]
primary_key = "c2VuZC1rZXk="
rights = ["Send"]

[namespaces.contoso.policies.listener]
primary_key = "bGlzdGVuLWtleQ=="
rights = ["Listen"]

[namespaces.contoso.eventhubs.orders]
partitions = 2

[namespaces.contoso.eventhubs.orders.policies.orders-reader]
primary_key = "b3JkZXJzLWtleQ=="
rights = ["Listen"]

[namespaces.contoso.eventhubs.payments]
partitions = 1
"""

GROUP_DENIED = Errors.GroupAuthorizationFailedError.errno
TOPIC_DENIED = Errors.TopicAuthorizationFailedError.errno
TXN_DENIED = Errors.TransactionalIdAuthorizationFailedError.errno


@pytest.fixture(scope="module")
def broker(module_tmp):
    config = module_tmp / "groups.toml"
    config.write_text(CONFIG)
    with EmulatedBroker(module_tmp / "data", config_file=config) as b:
        yield b


def conf(broker, policy=None, hub=None, **extra) -> dict:
    return confluent_conf(broker.bootstrap_servers,
                          broker.connection_string(policy=policy, hub=hub), **extra)


def raw(broker, policy=None, hub=None) -> RawClient:
    client = RawClient(broker.bootstrap_servers)
    resp = sasl_raw(client, broker.connection_string(policy=policy, hub=hub))
    assert resp.error_code == 0, resp
    return client


def struct(api_key, *path, **fields):
    """A nested request struct: ``struct(ApiKey.OffsetDelete, "OffsetDeleteRequestTopic", ...)``."""
    cls = codec.request_class(api_key)
    for name in path:
        cls = getattr(cls, name)
    return cls(**fields)


def commit_raw(client, group, offsets: dict[tuple[str, int], int], metadata=""):
    by_topic: dict[str, list] = {}
    for (topic, part), offset in offsets.items():
        by_topic.setdefault(topic, []).append(struct(
            codec.ApiKey.OffsetCommit, "OffsetCommitRequestTopic", "OffsetCommitRequestPartition",
            partition_index=part, committed_offset=offset, committed_leader_epoch=-1,
            committed_metadata=metadata))
    resp = client.request(codec.ApiKey.OffsetCommit, 8, group_id=group,
                          generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                          topics=[struct(codec.ApiKey.OffsetCommit, "OffsetCommitRequestTopic",
                                         name=t, partitions=ps) for t, ps in by_topic.items()])
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def fetch_raw(client, group, topics: dict[str, list[int]] | None):
    group_cls = codec.request_class(codec.ApiKey.OffsetFetch).OffsetFetchRequestGroup
    resp = client.request(codec.ApiKey.OffsetFetch, 8, require_stable=False, groups=[group_cls(
        group_id=group, member_id=None, member_epoch=-1, topics=None if topics is None else [
            group_cls.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in topics.items()])])
    g = resp.groups[0]
    return g.error_code, {(t.name, p.partition_index): (p.committed_offset, p.error_code)
                          for t in g.topics for p in t.partitions}


def poll_error(consumer, codes, timeout=15.0):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        msg = consumer.poll(0.3)
        if msg is not None and msg.error():
            seen.append(msg.error().code())
            if msg.error().code() in codes:
                return msg.error().code()
    return seen


# -- Send only: no groups, no offsets ---------------------------------------------------------
def test_send_only_policy_cannot_join_a_group(broker):
    consumer = Consumer(conf(broker, "sender", **{
        "group.id": "send-join", "auto.offset.reset": "earliest", "session.timeout.ms": 6000}))
    try:
        consumer.subscribe(["payments"])
        assert poll_error(consumer, {KafkaError.GROUP_AUTHORIZATION_FAILED}) == \
            KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_send_only_policy_gets_group_authorization_failed_on_the_wire(broker):
    with raw(broker, "sender") as c:
        found = c.request(codec.ApiKey.FindCoordinator, 3, key="g-raw", key_type=0)
        assert found.error_code == GROUP_DENIED and found.node_id == -1
        joined = c.request(codec.ApiKey.JoinGroup, 5, group_id="g-raw", session_timeout_ms=6000,
                           rebalance_timeout_ms=6000, member_id="", group_instance_id=None,
                           protocol_type="consumer", protocols=[struct(codec.ApiKey.JoinGroup, "JoinGroupRequestProtocol",
                                                     name="range", metadata=b"")])
        assert joined.error_code == GROUP_DENIED and joined.generation_id == -1
        assert c.request(codec.ApiKey.Heartbeat, 3, group_id="g-raw", generation_id=1,
                         member_id="m", group_instance_id=None).error_code == GROUP_DENIED
        assert c.request(codec.ApiKey.SyncGroup, 3, group_id="g-raw", generation_id=1,
                         member_id="m", group_instance_id=None,
                         assignments=[]).error_code == GROUP_DENIED
        assert c.request(codec.ApiKey.LeaveGroup, 3, group_id="g-raw",
                         members=[struct(codec.ApiKey.LeaveGroup, "MemberIdentity",
                                         member_id="m", group_instance_id=None, reason=None)]
                         ).error_code == GROUP_DENIED
        assert commit_raw(c, "g-raw", {("payments", 0): 1}) == {("payments", 0): GROUP_DENIED}
        assert fetch_raw(c, "g-raw", {"payments": [0]})[0] == GROUP_DENIED
        described = c.request(codec.ApiKey.DescribeGroups, 3, groups=["g-raw"],
                              include_authorized_operations=False)
        assert described.groups[0].error_code == GROUP_DENIED
        listed = c.request(codec.ApiKey.ListGroups, 2)
        assert listed.error_code == 0 and listed.groups == []


def test_send_only_policy_cannot_commit(broker):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(**kafka_python_conf(broker.bootstrap_servers,
                                                 broker.connection_string(policy="sender")),
                             group_id="send-commit", enable_auto_commit=False)
    try:
        with pytest.raises(Errors.GroupAuthorizationFailedError):
            consumer.commit({KTP("payments", 0): OffsetAndMetadata(1, "", -1)})
    finally:
        consumer.close(autocommit=False)


# -- Listen: consume in a group, commit -----------------------------------------------------------
def test_listen_policy_consumes_in_a_group_and_commits(broker):
    assert produce_one(conf(broker), "payments", b"for-listener") is None
    consumer = Consumer(conf(broker, "listener", **{
        "group.id": "listen-group", "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}))
    try:
        consumer.subscribe(["payments"])
        msg, deadline = None, time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                break
            assert msg is None or msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
        assert msg is not None and not msg.error() and msg.value() == b"for-listener"
        consumer.commit(message=msg, asynchronous=False)
        committed = consumer.committed([TopicPartition("payments", 0)], timeout=10)
        assert committed[0].offset == msg.offset() + 1 and committed[0].error is None
    finally:
        consumer.close()
    with raw(broker, "listener") as c:
        listed = c.request(codec.ApiKey.ListGroups, 2)
        assert "listen-group" in {g.group_id for g in listed.groups}
        described = c.request(codec.ApiKey.DescribeGroups, 3, groups=["listen-group"],
                              include_authorized_operations=False)
        assert described.groups[0].error_code == 0


# -- hub-scoped Listen: only its hub's offsets ------------------------------------------------------
def test_hub_scoped_listen_cannot_fetch_offsets_of_another_hub(broker):
    with raw(broker) as root:
        assert commit_raw(root, "shared", {("orders", 0): 5, ("payments", 0): 7}) == \
            {("orders", 0): 0, ("payments", 0): 0}
    with raw(broker, "orders-reader", hub="orders") as c:
        error, offsets = fetch_raw(c, "shared", {"orders": [0], "payments": [0]})
        assert error == 0
        assert offsets == {("orders", 0): (5, 0), ("payments", 0): (-1, TOPIC_DENIED)}
        assert fetch_raw(c, "shared", None) == (0, {("orders", 0): (5, 0)})  # all: payments hidden
        assert commit_raw(c, "shared", {("orders", 0): 6, ("payments", 0): 8}) == \
            {("orders", 0): 0, ("payments", 0): TOPIC_DENIED}
    with raw(broker) as root:
        assert fetch_raw(root, "shared", None) == (0, {("orders", 0): (6, 0), ("payments", 0): (7, 0)})
    scoped = Consumer(conf(broker, "orders-reader", hub="orders", **{"group.id": "shared"}))
    try:
        got = scoped.committed([TopicPartition("orders", 0)], timeout=10)
        assert got[0].offset == 6
    finally:
        scoped.close()


# -- group administration needs Manage ----------------------------------------------------------------
def test_listen_policy_cannot_delete_groups(broker):
    with raw(broker) as root:
        assert commit_raw(root, "to-delete", {("payments", 0): 1}) == {("payments", 0): 0}
    admin = AdminClient(conf(broker, "listener"))
    fut = admin.delete_consumer_groups(["to-delete"], request_timeout=10)["to-delete"]
    with pytest.raises(KafkaException) as info:
        fut.result(15)
    assert info.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    with raw(broker, "listener") as c:
        resp = c.request(codec.ApiKey.OffsetDelete, 0, group_id="to-delete",
                         topics=[struct(codec.ApiKey.OffsetDelete, "OffsetDeleteRequestTopic",
                                        name="payments", partitions=[struct(
                                            codec.ApiKey.OffsetDelete, "OffsetDeleteRequestTopic",
                                            "OffsetDeleteRequestPartition", partition_index=0)])])
        assert resp.error_code == GROUP_DENIED
        assert fetch_raw(c, "to-delete", {"payments": [0]}) == (0, {("payments", 0): (1, 0)})
    root_admin = AdminClient(conf(broker))
    root_admin.delete_consumer_groups(["to-delete"], request_timeout=10)["to-delete"].result(15)
    with raw(broker) as root:
        assert fetch_raw(root, "to-delete", {"payments": [0]}) == (0, {("payments", 0): (-1, 0)})


# -- transactions need Send -------------------------------------------------------------------------------
def test_listen_only_cannot_start_a_transactional_producer(broker):
    producer = Producer(conf(broker, "listener", **{"transactional.id": "listen-txn"}))
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(15)
    assert info.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_listen_only_is_refused_by_every_transaction_api(broker):
    with raw(broker, "listener") as c:
        found = c.request(codec.ApiKey.FindCoordinator, 3, key="t", key_type=1)
        assert found.error_code == TXN_DENIED
        added = c.request(codec.ApiKey.AddPartitionsToTxn, 3, v3_and_below_transactional_id="t",
                          v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
                          v3_and_below_topics=[struct(
                              codec.ApiKey.AddPartitionsToTxn, "AddPartitionsToTxnTopic",
                              name="payments", partitions=[0])])
        assert [p.partition_error_code for t in added.results_by_topic_v3_and_below
                for p in t.results_by_partition] == [TXN_DENIED]
        assert c.request(codec.ApiKey.AddOffsetsToTxn, 3, transactional_id="t", producer_id=1,
                         producer_epoch=0, group_id="g").error_code == TXN_DENIED
        assert c.request(codec.ApiKey.EndTxn, 3, transactional_id="t", producer_id=1,
                         producer_epoch=0, committed=True).error_code == TXN_DENIED
        committed = c.request(codec.ApiKey.TxnOffsetCommit, 3, transactional_id="t", group_id="g",
                              producer_id=1, producer_epoch=0, generation_id=-1, member_id="",
                              group_instance_id=None, topics=[struct(
                                  codec.ApiKey.TxnOffsetCommit, "TxnOffsetCommitRequestTopic",
                                  name="payments", partitions=[struct(
                                      codec.ApiKey.TxnOffsetCommit, "TxnOffsetCommitRequestTopic",
                                      "TxnOffsetCommitRequestPartition", partition_index=0,
                                      committed_offset=1, committed_leader_epoch=-1,
                                      committed_metadata="")])])
        assert committed.topics[0].partitions[0].error_code == TXN_DENIED


def test_root_policy_runs_a_transaction(broker):
    producer = Producer(conf(broker, **{"transactional.id": "root-txn"}))
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce("payments", b"in-txn")
    producer.commit_transaction(15)
    # The committed event is what a read_committed consumer of the root policy reads last.
    consumer = Consumer(conf(broker, **{"group.id": "root-txn-check", "isolation.level": "read_committed",
                                        "enable.auto.commit": False}))
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("payments", 0), timeout=10)
        assert high > low  # the event and the commit marker are in the log
        consumer.assign([TopicPartition("payments", 0, high - 2)])
        msg, deadline = None, time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                break
        assert msg is not None and not msg.error() and msg.value() == b"in-txn"
    finally:
        consumer.close()
