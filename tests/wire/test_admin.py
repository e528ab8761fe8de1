"""The Kafka admin APIs, driven by confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient against an in-process broker.

CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeCluster, DeleteRecords, DescribeAcls. OffsetForLeaderEpoch,
DescribeLogDirs and every advertised version of these APIs are in
test_admin_versions.py (raw requests: no client exposes them all).
"""
from __future__ import annotations

import uuid

import kafka.errors as Errors
import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewPartitions,
    NewTopic, OffsetSpec,
)
from kafka.admin import (
    ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.admin import ResourceType as KpResourceType

from kafka_wire.eventhubs.refusals import Denial, Refusal

WAIT = 10  # seconds: every future and client call is bounded by this


@pytest.fixture
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers, "socket.timeout.ms": 5000})


@pytest.fixture
def kp_admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=WAIT * 1000)
    yield client
    client.close()


def create(admin, *topics: NewTopic, validate_only: bool = False) -> dict:
    futures = admin.create_topics(list(topics), validate_only=validate_only, request_timeout=WAIT)
    return {name: f.exception(WAIT) for name, f in futures.items()}


def error_code(exc) -> int | None:
    return exc.args[0].code() if isinstance(exc, KafkaException) else None


def topic_configs(admin, name: str) -> dict:
    [future] = admin.describe_configs([ConfigResource("topic", name)], request_timeout=WAIT).values()
    return future.result(WAIT)


def partitions_of(broker, name: str) -> int | None:
    view = broker.call(lambda: broker.broker.services.default.topics.get(name))
    return None if view is None else view.partitions


def produce(broker, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(WAIT) == 0


def set_hook(broker, name: str, hook) -> None:
    """Replace one decision of the default namespace's policy (``create_topic``, ...): it
    answers None or a protocol-neutral Denial, which the Kafka front end maps to an error code."""
    broker.call(lambda: setattr(broker.broker.services.default.policy, name, hook))


# -- CreateTopics -----------------------------------------------------------------


def test_create_topics_creates_the_partitions_and_config_overrides_asked_for(admin, broker):
    assert create(admin, NewTopic("orders", 3, 1, config={"retention.ms": "60000"})) == {"orders": None}
    assert partitions_of(broker, "orders") == 3
    entry = topic_configs(admin, "orders")["retention.ms"]
    assert entry.value == "60000"
    assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_create_topics_validate_only_checks_but_creates_nothing(admin, broker):
    assert create(admin, NewTopic("dry", 2, 1), validate_only=True) == {"dry": None}
    assert partitions_of(broker, "dry") is None
    bad = create(admin, NewTopic("dry", 2, 3), validate_only=True)["dry"]
    assert error_code(bad) == KafkaError.INVALID_REPLICATION_FACTOR


def test_create_topics_with_minus_one_partitions_takes_the_broker_default(broker_factory):
    broker = broker_factory(num_partitions=4)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    assert create(admin, NewTopic("defaulted", -1, -1)) == {"defaulted": None}
    assert partitions_of(broker, "defaulted") == 4


def test_create_topics_refuses_a_replication_factor_above_one_and_says_why(admin, broker):
    exc = create(admin, NewTopic("replicated", 1, 3))["replicated"]
    assert error_code(exc) == KafkaError.INVALID_REPLICATION_FACTOR
    assert "one broker" in exc.args[0].str()
    assert partitions_of(broker, "replicated") is None


def test_create_topics_refuses_an_existing_topic(admin, broker):
    broker.create_topic("taken")
    exc = create(admin, NewTopic("taken", 1, 1))["taken"]
    assert error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS


def test_create_topics_refuses_an_invalid_name_with_invalid_topic_exception(admin):
    exc = create(admin, NewTopic("a/b", 1, 1))["a/b"]
    assert error_code(exc) == KafkaError.TOPIC_EXCEPTION
    assert "letters, digits" in exc.args[0].str()


def test_create_topics_refuses_a_name_that_collides_on_dot_and_underscore(admin, broker):
    broker.create_topic("a_b")
    assert error_code(create(admin, NewTopic("a.b", 1, 1))["a.b"]) == KafkaError.TOPIC_EXCEPTION


def test_create_topics_refuses_a_bad_config_value_with_invalid_config_and_the_reason(admin, broker):
    exc = create(admin, NewTopic("badcfg", 1, 1, config={"cleanup.policy": "shred"}))["badcfg"]
    assert error_code(exc) == KafkaError.INVALID_CONFIG
    assert "compact" in exc.args[0].str()
    exc = create(admin, NewTopic("badcfg", 1, 1, config={"no.such.config": "1"}))["badcfg"]
    assert error_code(exc) == KafkaError.INVALID_CONFIG
    assert partitions_of(broker, "badcfg") is None


def test_create_topics_accepts_manual_assignments_only_onto_this_broker(kp_admin, broker):
    result = kp_admin.create_topics([KpNewTopic("manual", replica_assignments={0: [0], 1: [0]})])
    assert result["topics"][0]["error_code"] == 0
    assert partitions_of(broker, "manual") == 2
    result = kp_admin.create_topics([KpNewTopic("elsewhere", replica_assignments={0: [0], 1: [1]})],
                                    raise_errors=False)
    assert result["topics"][0]["error_code"] == Errors.InvalidReplicationAssignmentError.errno
    assert partitions_of(broker, "elsewhere") is None


def test_create_topic_policy_hook_can_refuse_with_its_own_error(admin, broker):
    seen = []

    def policy(principal, name, partitions, configs, client_id):
        seen.append((name, partitions, configs))
        if partitions > 32:
            return Denial(Refusal.LIMIT, "a Standard event hub has at most 32 partitions")
        return None

    set_hook(broker, "create_topic", policy)
    exc = create(admin, NewTopic("big", 40, 1))["big"]
    assert error_code(exc) == KafkaError.POLICY_VIOLATION
    assert "32 partitions" in exc.args[0].str()
    assert create(admin, NewTopic("small", 2, 1, config={"retention.ms": "1000"})) == {"small": None}
    assert seen == [("big", 40, {}), ("small", 2, {"retention.ms": "1000"})]


def test_create_topics_v7_answer_carries_partitions_configs_and_the_topic_id(kp_admin, broker):
    result = kp_admin.create_topics([KpNewTopic("described", 2, 1, topic_configs={"retention.ms": "5000"})])
    [topic] = result["topics"]
    assert topic["error_code"] == 0
    assert topic["num_partitions"] == 2 and topic["replication_factor"] == 1
    configs = topic["configs"]
    assert configs["retention.ms"]["value"] == "5000"
    assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    assert not any(c["is_sensitive"] for c in configs.values())
    view = broker.call(lambda: broker.broker.services.default.topics.get("described"))
    assert uuid.UUID(str(topic["topic_id"])) == view.topic_id


# -- DeleteTopics -----------------------------------------------------------------


def test_delete_topics_removes_the_topic_and_reports_unknown_ones(admin, broker):
    broker.create_topic("doomed", 2)
    futures = admin.delete_topics(["doomed", "never-was"], request_timeout=WAIT)
    assert futures["doomed"].exception(WAIT) is None
    assert error_code(futures["never-was"].exception(WAIT)) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert partitions_of(broker, "doomed") is None


def test_delete_topics_v6_deletes_a_topic_named_by_its_id(kp_admin, broker):
    broker.create_topic("by-id")
    topic_id = broker.call(lambda: broker.broker.services.default.topics.get("by-id")).topic_id
    result = kp_admin.delete_topics([topic_id])
    [answer] = result["topics"]
    assert answer["error_code"] == 0 and answer["name"] == "by-id"
    assert partitions_of(broker, "by-id") is None
    result = kp_admin.delete_topics([uuid.uuid4()], raise_errors=False)
    assert result["topics"][0]["error_code"] == Errors.UnknownTopicIdError.errno


def test_deleted_topic_can_be_created_again_empty(admin, broker):
    broker.create_topic("phoenix")
    produce(broker, "phoenix", 3)
    assert admin.delete_topics(["phoenix"], request_timeout=WAIT)["phoenix"].exception(WAIT) is None
    assert create(admin, NewTopic("phoenix", 1, 1)) == {"phoenix": None}
    latest = admin.list_offsets({TopicPartition("phoenix", 0): OffsetSpec.latest()}, request_timeout=WAIT)
    assert latest[TopicPartition("phoenix", 0)].result(WAIT).offset == 0


# -- CreatePartitions -------------------------------------------------------------


def test_create_partitions_adds_partitions_to_reach_the_new_total(admin, broker):
    broker.create_topic("grows", 1)
    [f] = admin.create_partitions([NewPartitions("grows", 3)], request_timeout=WAIT).values()
    assert f.exception(WAIT) is None
    assert partitions_of(broker, "grows") == 3
    produce(broker, "grows", 1, partition=2)


def test_create_partitions_refuses_to_shrink_or_keep_the_count(admin, broker):
    broker.create_topic("fixed", 3)
    for total in (2, 3):
        [f] = admin.create_partitions([NewPartitions("fixed", total)], request_timeout=WAIT).values()
        assert error_code(f.exception(WAIT)) == KafkaError.INVALID_PARTITIONS
    assert partitions_of(broker, "fixed") == 3


def test_create_partitions_validate_only_changes_nothing(admin, broker):
    broker.create_topic("checked", 1)
    [f] = admin.create_partitions([NewPartitions("checked", 5)], validate_only=True,
                                  request_timeout=WAIT).values()
    assert f.exception(WAIT) is None
    assert partitions_of(broker, "checked") == 1


def test_create_partitions_policy_hook_can_refuse(admin, broker):
    broker.create_topic("capped", 1)
    set_hook(broker, "create_partitions", lambda principal, name, count, client_id: (
        Denial(Refusal.LIMIT, "tier allows 2", "partitions-per-hub") if count > 2 else None))
    [f] = admin.create_partitions([NewPartitions("capped", 4)], request_timeout=WAIT).values()
    assert error_code(f.exception(WAIT)) == KafkaError.INVALID_PARTITIONS
    [f] = admin.create_partitions([NewPartitions("capped", 2)], request_timeout=WAIT).values()
    assert f.exception(WAIT) is None
    assert partitions_of(broker, "capped") == 2


def test_create_partitions_of_an_unknown_topic_is_unknown_topic_or_partition(admin):
    [f] = admin.create_partitions([NewPartitions("ghost", 2)], request_timeout=WAIT).values()
    assert error_code(f.exception(WAIT)) == KafkaError.UNKNOWN_TOPIC_OR_PART


# -- DescribeConfigs --------------------------------------------------------------


def test_describe_configs_lists_every_topic_config_with_overrides_marked_dynamic(admin, broker):
    from kafka_wire.log.config import TOPIC_CONFIGS

    broker.create_topic("described", 1, {"cleanup.policy": "compact"})
    configs = topic_configs(admin, "described")
    assert set(configs) == set(TOPIC_CONFIGS)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["retention.ms"].is_default
    assert configs["remote.storage.enable"].is_read_only
    assert not configs["retention.ms"].is_read_only
    assert not any(e.is_sensitive for e in configs.values())


def test_describe_configs_returns_synonyms_from_topic_override_to_default(kp_admin, broker):
    broker.create_topic("syn", 1, {"retention.ms": "1234"})
    resource = KpConfigResource(KpConfigResourceType.TOPIC, "syn", configs=["retention.ms"])
    result = kp_admin.describe_configs([resource], include_synonyms=True, config_filter="all")
    entry = result["topic"]["syn"]["retention.ms"]
    assert [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]] == [
        ("retention.ms", "1234", "DYNAMIC_TOPIC_CONFIG"),
        ("log.retention.ms", "604800000", "DEFAULT_CONFIG"),
    ]
    assert entry["config_type"] == "LONG"


def test_describe_configs_of_an_unknown_topic_is_unknown_topic_or_partition(admin):
    [f] = admin.describe_configs([ConfigResource("topic", "ghost")], request_timeout=WAIT).values()
    assert error_code(f.exception(WAIT)) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_configs_of_the_broker_lists_its_settings_read_only(admin):
    [f] = admin.describe_configs([ConfigResource("broker", "0")], request_timeout=WAIT).values()
    configs = f.result(WAIT)
    for key in ("num.partitions", "default.replication.factor", "log.retention.ms", "message.max.bytes",
                "auto.create.topics.enable", "offsets.retention.minutes",
                "group.initial.rebalance.delay.ms", "min.insync.replicas", "log.segment.bytes"):
        assert key in configs, key
    assert configs["default.replication.factor"].value == "1"
    assert all(e.is_read_only for e in configs.values())


def test_describe_configs_of_broker_loggers_is_an_empty_list(kp_admin):
    resource = KpConfigResource(KpConfigResourceType.BROKER_LOGGER, "0")
    assert kp_admin.describe_configs([resource], config_filter="all") == {"broker_logger": {"0": {}}}


# -- AlterConfigs / IncrementalAlterConfigs ---------------------------------------


def alter(admin, resource, *, incremental: bool, validate_only: bool = False):
    fn = admin.incremental_alter_configs if incremental else admin.alter_configs
    [f] = fn([resource], validate_only=validate_only, request_timeout=WAIT).values()
    return f.exception(WAIT)


def test_alter_configs_replaces_the_whole_override_set(admin, broker):
    broker.create_topic("legacy", 1, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert alter(admin, ConfigResource("topic", "legacy", set_config={"segment.ms": "60000"}),
                 incremental=False) is None
    configs = topic_configs(admin, "legacy")
    assert configs["segment.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["cleanup.policy"].value == "delete"


def test_alter_configs_refuses_an_invalid_value_and_keeps_the_old_set(admin, broker):
    broker.create_topic("strict", 1, {"retention.ms": "1000"})
    resource = ConfigResource("topic", "strict", set_config={"retention.ms": "soon"})
    exc = alter(admin, resource, incremental=False)
    assert error_code(exc) == KafkaError.INVALID_CONFIG
    assert "integer" in exc.args[0].str()
    assert topic_configs(admin, "strict")["retention.ms"].value == "1000"


def test_alter_configs_validate_only_changes_nothing(admin, broker):
    broker.create_topic("dryalter", 1)
    assert alter(admin, ConfigResource("topic", "dryalter", set_config={"retention.ms": "5"}),
                 incremental=False, validate_only=True) is None
    assert topic_configs(admin, "dryalter")["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_incremental_alter_configs_sets_and_deletes_single_configs(admin, broker):
    broker.create_topic("inc", 1, {"retention.ms": "1000"})
    resource = ConfigResource("topic", "inc", incremental_configs=[
        ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    assert alter(admin, resource, incremental=True) is None
    configs = topic_configs(admin, "inc")
    assert configs["segment.ms"].value == "60000"
    assert configs["segment.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_incremental_alter_configs_appends_to_and_subtracts_from_cleanup_policy(admin, broker):
    broker.create_topic("listy", 1)

    def op(kind, value):
        return ConfigResource("topic", "listy", incremental_configs=[
            ConfigEntry("cleanup.policy", value, incremental_operation=kind)])

    assert alter(admin, op(AlterConfigOpType.APPEND, "compact"), incremental=True) is None
    assert topic_configs(admin, "listy")["cleanup.policy"].value == "compact,delete"
    assert alter(admin, op(AlterConfigOpType.SUBTRACT, "delete"), incremental=True) is None
    assert topic_configs(admin, "listy")["cleanup.policy"].value == "compact"
    # Removing the last policy leaves an invalid value: refused, nothing changes.
    exc = alter(admin, op(AlterConfigOpType.SUBTRACT, "compact"), incremental=True)
    assert error_code(exc) == KafkaError.INVALID_CONFIG
    assert topic_configs(admin, "listy")["cleanup.policy"].value == "compact"


def test_incremental_append_to_a_non_list_config_is_invalid_config(admin, broker):
    broker.create_topic("scalar", 1)
    resource = ConfigResource("topic", "scalar", incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND)])
    assert error_code(alter(admin, resource, incremental=True)) == KafkaError.INVALID_CONFIG


def test_incremental_alter_configs_validate_only_changes_nothing(admin, broker):
    broker.create_topic("incdry", 1)
    resource = ConfigResource("topic", "incdry", incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.SET)])
    assert alter(admin, resource, incremental=True, validate_only=True) is None
    assert topic_configs(admin, "incdry")["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_alter_topic_config_policy_hook_sees_the_new_override_set(admin, broker):
    broker.create_topic("hooked", 1)
    set_hook(broker, "alter_topic_config", lambda principal, name, overrides, client_id: (
        Denial(Refusal.INVALID, "retention above 7 days", "retention")
        if int(overrides.get("retention.ms", "0")) > 7 * 86_400_000 else None))
    resource = ConfigResource("topic", "hooked", incremental_configs=[
        ConfigEntry("retention.ms", str(8 * 86_400_000), incremental_operation=AlterConfigOpType.SET)])
    assert error_code(alter(admin, resource, incremental=True)) == KafkaError.POLICY_VIOLATION


def test_altering_configs_of_an_unknown_topic_is_unknown_topic_or_partition(admin):
    resource = ConfigResource("topic", "ghost", incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.SET)])
    assert error_code(alter(admin, resource, incremental=True)) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_broker_config_alters_that_change_nothing_succeed_others_are_invalid_request(admin):
    assert alter(admin, ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("log.cleaner.threads", None, incremental_operation=AlterConfigOpType.DELETE)]),
        incremental=True) is None
    assert alter(admin, ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("num.partitions", "1", incremental_operation=AlterConfigOpType.SET)]),
        incremental=True) is None
    exc = alter(admin, ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("num.partitions", "9", incremental_operation=AlterConfigOpType.SET)]), incremental=True)
    assert error_code(exc) == KafkaError.INVALID_REQUEST
    assert "start-up" in exc.args[0].str()


def test_broker_config_alter_with_no_configs_succeeds(kp_admin):
    resource = KpConfigResource(KpConfigResourceType.BROKER, "0", configs={})
    assert kp_admin.alter_configs([resource], incremental=False) == {"broker": {"0": "OK"}}


# -- DescribeCluster --------------------------------------------------------------


def test_describe_cluster_reports_one_broker_that_is_also_the_controller(kp_admin, broker):
    desc = kp_admin.describe_cluster()  # DescribeCluster v2 (librdkafka uses Metadata instead)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    assert desc["brokers"] == [{"broker_id": 0, "host": host, "port": int(port), "rack": None,
                                "is_fenced": False}]
    assert desc["controller_id"] == 0
    assert desc["cluster_id"] == broker.call(lambda: broker.broker.services.cluster.cluster_id)


def test_describe_cluster_reports_every_cluster_operation_when_asked(kp_admin):
    ops = kp_admin.describe_cluster()["authorized_operations"]
    assert {"DESCRIBE", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE"} <= set(ops)


# -- DeleteRecords ----------------------------------------------------------------


def delete_records(admin, topic: str, partition: int, offset: int):
    [f] = admin.delete_records([TopicPartition(topic, partition, offset)], request_timeout=WAIT).values()
    return f


def earliest(admin, topic: str, partition: int = 0) -> int:
    tp = TopicPartition(topic, partition)
    return admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=WAIT)[tp].result(WAIT).offset


def test_delete_records_moves_the_log_start_offset_and_reports_it(admin, broker):
    broker.create_topic("trimmed", 1)
    produce(broker, "trimmed", 10)
    assert delete_records(admin, "trimmed", 0, 4).result(WAIT).low_watermark == 4
    assert earliest(admin, "trimmed") == 4
    # Below the log start offset: nothing changes.
    assert delete_records(admin, "trimmed", 0, 2).result(WAIT).low_watermark == 4


def test_delete_records_at_minus_one_deletes_up_to_the_high_watermark(admin, broker):
    broker.create_topic("emptied", 1)
    produce(broker, "emptied", 5)
    assert delete_records(admin, "emptied", 0, -1).result(WAIT).low_watermark == 5
    assert earliest(admin, "emptied") == 5


def test_delete_records_beyond_the_high_watermark_is_offset_out_of_range(admin, broker):
    broker.create_topic("short", 1)
    produce(broker, "short", 2)
    exc = delete_records(admin, "short", 0, 3).exception(WAIT)
    assert error_code(exc) == KafkaError.OFFSET_OUT_OF_RANGE
    assert earliest(admin, "short") == 0


def test_delete_records_on_a_compacted_topic_is_a_policy_violation(admin, broker):
    broker.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    produce(broker, "compacted", 2)
    assert error_code(delete_records(admin, "compacted", 0, 1).exception(WAIT)) == KafkaError.POLICY_VIOLATION


def test_delete_records_policy_hook_can_refuse(admin, broker):
    broker.create_topic("guarded", 1)
    produce(broker, "guarded", 2)
    set_hook(broker, "delete_records", lambda principal, hub, client_id: Denial(
        Refusal.UNSUPPORTED, "Event Hubs has no DeleteRecords", "delete-records"))
    assert error_code(delete_records(admin, "guarded", 0, 1).exception(WAIT)) == KafkaError.POLICY_VIOLATION
    assert earliest(admin, "guarded") == 0


# -- DescribeAcls -----------------------------------------------


def test_describe_acls_answers_security_disabled_as_a_broker_without_authorizer(kp_admin):
    acl_filter = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                           permission_type=ACLPermissionType.ANY,
                           resource_pattern=ResourcePatternFilter(KpResourceType.ANY, None,
                                                                  ACLResourcePatternType.ANY))
    with pytest.raises(Errors.SecurityDisabledError, match="no authorizer is configured"):
        kp_admin.describe_acls(acl_filter)
