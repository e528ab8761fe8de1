"""Strict mode: tier quotas and Kafka feature availability with the errors a Kafka
client gets from Event Hubs, every violation in the compatibility report; relaxed
mode lets the same requests through and reports them."""
from __future__ import annotations

import kafka.errors as Errors
import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from kafka_wire import codec
from kafka_wire.cli import main
from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.report import load
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

from .conftest import STRICT_TOML, auth_error, confluent_conf, produce_one, sasl_raw

MB = 1024 * 1024


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", config_file=STRICT_TOML) as b:
        yield b


def ns_password(name: str) -> str:
    return connection_string.build(f"{name}.servicebus.windows.net", key_name="any", key="any")


def conf_for(broker, namespace: str | None = None, **extra) -> dict:
    password = ns_password(namespace) if namespace else None
    return confluent_conf(broker.bootstrap_servers, password, **extra)


def admin_error(future) -> int:
    with pytest.raises(Exception) as info:
        future.result(10)
    return info.value.args[0].code()


def report(broker) -> dict:
    broker.call(lambda: broker.broker.services.report.flush())
    return {(e["namespace"], e["rule"], e["enforced"]): e for e in load(broker.data_dir)}


# -- publications ------------------------------------------------------------------------------
def test_strict_standard_refuses_a_1_5_mb_record(broker):
    conf = conf_for(broker, **{"message.max.bytes": 3 * MB, "compression.type": "none"})
    err = produce_one(conf, "events", b"x" * (3 * MB // 2))
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE
    entry = report(broker)[("strict-std", "publication-size", True)]
    assert "exceeds the Standard limit of 1048576 bytes" in entry["message"]
    assert produce_one(conf, "events", b"x" * (MB // 2)) is None


@pytest.mark.parametrize("codec_name", ["lz4", "gzip"])
def test_strict_standard_refuses_compression(broker, codec_name):
    err = produce_one(conf_for(broker, **{"compression.type": codec_name}), "events", b"y" * 1000)
    assert err is not None and err.code() == KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_strict_premium_allows_gzip_only(broker):
    value = b"z" * 1000  # compressible, or librdkafka sends it raw
    assert produce_one(conf_for(broker, "strict-prem", **{"compression.type": "gzip"}), "p1",
                       value) is None
    err = produce_one(conf_for(broker, "strict-prem", **{"compression.type": "zstd"}), "p1", value)
    assert err is not None and err.code() == KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT


def test_relaxed_namespace_allows_and_reports(broker):
    assert produce_one(conf_for(broker, "relaxed-ns", **{"compression.type": "lz4"}), "r1",
                       b"r" * 1000) is None
    entry = report(broker)[("relaxed-ns", "compression", False)]
    assert entry["error_code"] == Errors.UnsupportedForMessageFormatError.errno


def test_strict_standard_refuses_transactions(broker):
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.InitProducerId, 4, transactional_id="tx-1",
                         transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    assert resp.error_code == Errors.TransactionalIdAuthorizationFailedError.errno


def test_kafka_endpoint_timeouts_session_and_transaction(broker):
    JoinProtocol = codec.request_class(codec.ApiKey.JoinGroup).JoinGroupRequestProtocol

    def join(c, session_ms: int):
        return c.request(codec.ApiKey.JoinGroup, 5, group_id=f"timeouts-{session_ms}",
                         session_timeout_ms=session_ms, rebalance_timeout_ms=10_000, member_id="",
                         group_instance_id=None, protocol_type="consumer",
                         protocols=[JoinProtocol(name="range", metadata=b"")])

    def init(c, timeout_ms: int):
        return c.request(codec.ApiKey.InitProducerId, 4, transactional_id=f"tx-{timeout_ms}",
                         transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1)

    with RawClient(broker.bootstrap_servers) as c:  # strict Standard
        assert join(c, 400_000).error_code == Errors.InvalidSessionTimeoutError.errno
    with RawClient(broker.bootstrap_servers) as c:
        assert sasl_raw(c, ns_password("strict-prem")).error_code == 0
        assert init(c, 16 * 60_000).error_code == Errors.InvalidTransactionTimeoutError.errno
        assert init(c, 15 * 60_000).error_code == 0
    with RawClient(broker.bootstrap_servers) as c:  # relaxed: allowed (Kafka allows 30 min), reported
        assert sasl_raw(c, ns_password("relaxed-ns")).error_code == 0
        assert join(c, 400_000).error_code == Errors.MemberIdRequiredError.errno  # joining goes on
    entries = report(broker)
    assert entries[("strict-std", "session-timeout", True)]["count"] == 1
    assert entries[("strict-prem", "transaction-timeout", True)]["count"] == 1
    assert entries[("relaxed-ns", "session-timeout", False)]["count"] == 1


def test_basic_tier_has_no_kafka_endpoint(broker):
    message = auth_error(broker.bootstrap_servers, ns_password("strict-basic"))
    assert message and "Basic tier, which has no Kafka endpoint" in message


# -- management ------------------------------------------------------------------------------------
def test_strict_standard_refuses_a_40_partition_hub(broker):
    admin = AdminClient(conf_for(broker))
    assert admin_error(admin.create_topics([NewTopic("wide", 40)])["wide"]) == \
        KafkaError.INVALID_PARTITIONS
    assert "wide" not in admin.list_topics(timeout=10).topics
    assert report(broker)[("strict-std", "partitions-per-hub", True)]["count"] >= 1


def test_strict_premium_allows_up_to_100_partitions(broker):
    admin = AdminClient(conf_for(broker, "strict-prem"))
    admin.create_topics([NewTopic("wide", 40)])["wide"].result(10)
    assert admin_error(admin.create_topics([NewTopic("wider", 101)])["wider"]) == \
        KafkaError.INVALID_PARTITIONS


def test_partition_count_is_fixed_on_standard_but_grows_on_premium(broker):
    std = AdminClient(conf_for(broker))
    assert admin_error(std.create_partitions([NewPartitions("events", 4)])["events"]) == \
        KafkaError.POLICY_VIOLATION
    prem = AdminClient(conf_for(broker, "strict-prem"))
    prem.create_topics([NewTopic("grows", 2)])["grows"].result(10)
    prem.create_partitions([NewPartitions("grows", 4)])["grows"].result(10)


def test_retention_bounds(broker):
    admin = AdminClient(conf_for(broker))
    month = str(30 * 24 * 3600 * 1000)
    assert admin_error(admin.create_topics([NewTopic("long", 1, config={"retention.ms": month})])["long"]) \
        == KafkaError.POLICY_VIOLATION
    admin.create_topics([NewTopic("day", 1, config={"retention.ms": str(24 * 3600 * 1000)})])["day"].result(10)
    minute = ConfigResource("topic", "day", set_config={"retention.ms": "60000"})
    assert admin_error(admin.alter_configs([minute])[minute]) == KafkaError.POLICY_VIOLATION


def test_delete_records_is_refused(broker):
    from confluent_kafka import TopicPartition

    admin = AdminClient(conf_for(broker))
    futures = admin.delete_records([TopicPartition("events", 0, 0)])
    error = admin_error(next(iter(futures.values())))
    assert error == KafkaError.POLICY_VIOLATION


def test_auto_created_hubs_get_the_tier_default_retention(broker):
    assert produce_one(conf_for(broker), "auto-hub") is None
    view = broker.call(lambda: broker.broker.services.namespaces["strict-std"].topics.get("auto-hub"))
    assert view.configs["retention.ms"] == str(7 * 24 * 3600 * 1000)


def test_hubs_per_namespace(broker):
    """Runs last in this module: it fills strict-std to the Standard limit of 10 hubs."""
    admin = AdminClient(conf_for(broker))
    have = len(admin.list_topics(timeout=10).topics)
    names = [f"fill-{i}" for i in range(10 - have)]
    for name, fut in admin.create_topics([NewTopic(n, 1) for n in names]).items():
        fut.result(10)
    assert admin_error(admin.create_topics([NewTopic("eleventh", 1)])["eleventh"]) == \
        KafkaError.POLICY_VIOLATION
    with RawClient(broker.bootstrap_servers) as c:  # auto-creation is refused the same way
        meta = c.request(codec.ApiKey.Metadata, 8, topics=[codec.request_class(3).MetadataRequestTopic(
            name="twelfth")], allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False)
        assert meta.topics[0].error_code == Errors.PolicyViolationError.errno


def test_report_command_lists_the_violations(broker, capsys):
    report(broker)
    assert main(["report", "--data-dir", str(broker.data_dir)]) == 0
    out = capsys.readouterr().out
    assert "Namespace strict-std" in out and "publication-size [events]: REFUSED, error 10" in out
    assert "Namespace relaxed-ns" in out and "would be refused on Event Hubs" in out


def test_sasl_raw_to_an_open_namespace(broker):
    with RawClient(broker.bootstrap_servers) as c:
        assert sasl_raw(c, ns_password("relaxed-ns")).error_code == 0
        meta = c.request(codec.ApiKey.Metadata, 1, topics=None)
        assert {t.name for t in meta.topics} == {"r1"}
