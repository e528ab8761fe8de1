"""Every advertised version of the admin APIs, sent as raw requests.

Clients pick one version each; these tests send each version the broker
advertises (built with kafka-python's schema classes, framed by hand) and
check the answer decodes and says what that version should. Also the APIs
no Python client exposes: OffsetForLeaderEpoch, DescribeLogDirs, and the
error paths clients route around (another broker id, the controller
endpoint type).
"""
from __future__ import annotations

import socket
import struct
import uuid

import kafka.errors as Errors
import pytest
from confluent_kafka import Producer

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.codec import ApiKey

AlterConfigsRequest = codec.request_class(ApiKey.AlterConfigs)
ApiVersionsRequest = codec.request_class(ApiKey.ApiVersions)
CreatePartitionsRequest = codec.request_class(ApiKey.CreatePartitions)
CreateTopicsRequest = codec.request_class(ApiKey.CreateTopics)
DeleteRecordsRequest = codec.request_class(ApiKey.DeleteRecords)
DeleteTopicsRequest = codec.request_class(ApiKey.DeleteTopics)
DescribeAclsRequest = codec.request_class(ApiKey.DescribeAcls)
DescribeClusterRequest = codec.request_class(ApiKey.DescribeCluster)
DescribeConfigsRequest = codec.request_class(ApiKey.DescribeConfigs)
DescribeLogDirsRequest = codec.request_class(ApiKey.DescribeLogDirs)
IncrementalAlterConfigsRequest = codec.request_class(ApiKey.IncrementalAlterConfigs)
OffsetForLeaderEpochRequest = codec.request_class(ApiKey.OffsetForLeaderEpoch)

WAIT = 10
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
NO_ID = uuid.UUID(int=0)


def call(broker, request, version: int):
    """Send ``request`` at ``version`` on a fresh connection; the decoded response."""
    request.with_header(correlation_id=42, client_id="test-admin-versions")
    frame = request.encode(version=version, header=True, framed=True)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=WAIT) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _read(sock, 4))[0]
        body = _read(sock, size)
    decoded = codec.response_class(request.API_KEY).decode(body, version=version, header=True)
    assert decoded.header.correlation_id == 42
    return decoded


def _read(sock, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "broker closed the connection instead of answering"
        out += chunk
    return bytes(out)


def produce(broker, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(WAIT) == 0


def versions(request_cls):
    """The versions the broker registers (and so advertises) for this API."""
    registry.load_all()
    reg = registry.lookup(request_cls.API_KEY)
    return range(reg.min_version, reg.max_version + 1)


def test_api_versions_advertises_the_admin_api_ranges(broker):
    response = call(broker, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[ApiKey.CreateTopics] == (2, 7)
    assert ranges[ApiKey.DeleteTopics] == (1, 6)
    assert ranges[ApiKey.DeleteRecords] == (0, 2)
    assert ranges[ApiKey.OffsetForLeaderEpoch] == (2, 4)
    assert ranges[ApiKey.DescribeAcls] == (1, 3)
    assert ranges[ApiKey.DescribeConfigs] == (1, 4)
    assert ranges[ApiKey.AlterConfigs] == (0, 2)
    assert ranges[ApiKey.DescribeLogDirs] == (1, 4)
    assert ranges[ApiKey.CreatePartitions] == (0, 3)
    assert ranges[ApiKey.IncrementalAlterConfigs] == (0, 1)
    assert ranges[ApiKey.DescribeCluster] == (0, 2)


@pytest.mark.parametrize("version", versions(CreateTopicsRequest))
def test_create_topics_every_version_creates_and_answers_in_its_shape(broker, version):
    T = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(topics=[T(
        name=f"made-v{version}", num_partitions=2, replication_factor=1, assignments=[],
        configs=[T.CreatableTopicConfig(name="retention.ms", value="1000")])],
        timeout_ms=1000, validate_only=False)
    [result] = call(broker, request, version).topics
    assert (result.name, result.error_code) == (f"made-v{version}", 0)
    if version >= 5:
        assert result.num_partitions == 2 and result.replication_factor == 1
        assert {c.name: c.value for c in result.configs}["retention.ms"] == "1000"
    if version >= 7:
        view = broker.call(lambda: broker.broker.services.default.topics.get(f"made-v{version}"))
        assert result.topic_id == view.topic_id


@pytest.mark.parametrize("version", versions(DeleteTopicsRequest))
def test_delete_topics_every_version_deletes_by_name(broker, version):
    broker.create_topic("gone")
    if version >= 6:
        state = DeleteTopicsRequest.DeleteTopicState(name="gone", topic_id=NO_ID)
        request = DeleteTopicsRequest(topics=[state], timeout_ms=1000)
    else:
        request = DeleteTopicsRequest(topic_names=["gone"], timeout_ms=1000)
    [result] = call(broker, request, version).responses
    assert (result.name, result.error_code) == ("gone", 0)
    assert broker.call(lambda: broker.broker.services.default.topics.get("gone")) is None


def test_delete_topics_v6_refuses_a_topic_named_both_by_name_and_id(broker):
    broker.create_topic("both")
    topic_id = broker.call(lambda: broker.broker.services.default.topics.get("both")).topic_id
    state = DeleteTopicsRequest.DeleteTopicState(name="both", topic_id=topic_id)
    request = DeleteTopicsRequest(topics=[state], timeout_ms=1000)
    [result] = call(broker, request, 6).responses
    assert result.error_code == Errors.InvalidRequestError.errno


@pytest.mark.parametrize("version", versions(DeleteRecordsRequest))
def test_delete_records_every_version_reports_the_new_low_watermark(broker, version):
    broker.create_topic("trim")
    produce(broker, "trim", 3)
    T = DeleteRecordsRequest.DeleteRecordsTopic
    request = DeleteRecordsRequest(topics=[T(name="trim", partitions=[
        T.DeleteRecordsPartition(partition_index=0, offset=2),
        T.DeleteRecordsPartition(partition_index=9, offset=0)])], timeout_ms=1000)
    [topic] = call(broker, request, version).topics
    ok, missing = topic.partitions
    assert (ok.error_code, ok.low_watermark) == (0, 2)
    assert missing.error_code == Errors.UnknownTopicOrPartitionError.errno


def _epoch_request(topic: str, leader_epoch: int, current: int = -1, partition: int = 0):
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    return OffsetForLeaderEpochRequest(replica_id=-1, topics=[T(topic=topic, partitions=[
        T.OffsetForLeaderPartition(partition=partition, current_leader_epoch=current,
                                   leader_epoch=leader_epoch)])])


@pytest.mark.parametrize("version", versions(OffsetForLeaderEpochRequest))
def test_offset_for_leader_epoch_zero_ends_at_the_high_watermark(broker, version):
    broker.create_topic("epochs")
    produce(broker, "epochs", 4)
    [topic] = call(broker, _epoch_request("epochs", 0, current=0), version).topics
    [p] = topic.partitions
    assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, 4)


def test_offset_for_leader_epoch_newer_than_any_answers_undefined_as_kafka_does(broker):
    broker.create_topic("future")
    produce(broker, "future", 2)
    [topic] = call(broker, _epoch_request("future", 3), 4).topics
    [p] = topic.partitions
    assert (p.error_code, p.leader_epoch, p.end_offset) == (0, -1, -1)


def test_offset_for_leader_epoch_checks_current_leader_epoch_like_fetch(broker):
    broker.create_topic("fenced")
    [topic] = call(broker, _epoch_request("fenced", 0, current=5), 4).topics
    assert topic.partitions[0].error_code == Errors.UnknownLeaderEpochError.errno


def test_offset_for_leader_epoch_of_an_unknown_partition_is_unknown_topic_or_partition(broker):
    broker.create_topic("one")
    for topic, partition in (("one", 3), ("nothing", 0)):
        [answer] = call(broker, _epoch_request(topic, 0, partition=partition), 4).topics
        assert answer.partitions[0].error_code == Errors.UnknownTopicOrPartitionError.errno


@pytest.mark.parametrize("version", versions(DescribeAclsRequest))
def test_describe_acls_every_version_is_security_disabled(broker, version):
    request = DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                  principal_filter=None, host_filter=None, operation=1, permission_type=1)
    response = call(broker, request, version)
    assert response.error_code == Errors.SecurityDisabledError.errno
    assert response.error_message == "no authorizer is configured"


def _describe(name: str, kind: int = TOPIC, keys=None, documentation: bool = True):
    R = DescribeConfigsRequest.DescribeConfigsResource
    resource = R(resource_type=kind, resource_name=name, configuration_keys=keys)
    return DescribeConfigsRequest(resources=[resource], include_synonyms=True,
                                  include_documentation=documentation)


@pytest.mark.parametrize("version", versions(DescribeConfigsRequest))
def test_describe_configs_every_version_filters_keys_and_documents_from_v3(broker, version):
    broker.create_topic("conf", 1, {"retention.ms": "77"})
    [result] = call(broker, _describe("conf", keys=["retention.ms", "cleanup.policy"]), version).results
    assert result.error_code == 0
    by_name = {c.name: c for c in result.configs}
    assert set(by_name) == {"retention.ms", "cleanup.policy"}
    assert by_name["retention.ms"].value == "77"
    assert by_name["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
    if version >= 3:
        assert by_name["retention.ms"].config_type == 5  # LONG
        assert by_name["cleanup.policy"].config_type == 7  # LIST
        assert by_name["retention.ms"].documentation


def test_describe_configs_of_another_broker_id_is_invalid_request(broker):
    [result] = call(broker, _describe("7", kind=BROKER), 4).results
    assert result.error_code == Errors.InvalidRequestError.errno
    assert "only broker is 0" in result.error_message


def test_describe_configs_without_documentation_leaves_it_null(broker):
    broker.create_topic("nodoc")
    [result] = call(broker, _describe("nodoc", documentation=False), 4).results
    assert all(c.documentation is None for c in result.configs)


@pytest.mark.parametrize("version", versions(AlterConfigsRequest))
def test_alter_configs_every_version_replaces_the_overrides(broker, version):
    broker.create_topic("alt", 1, {"retention.ms": "5"})
    R = AlterConfigsRequest.AlterConfigsResource
    request = AlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name="alt", configs=[
        R.AlterableConfig(name="segment.ms", value="1000")])], validate_only=False)
    [result] = call(broker, request, version).responses
    assert result.error_code == 0
    view = broker.call(lambda: broker.broker.services.default.topics.get("alt"))
    assert view.configs == {"segment.ms": "1000"}


@pytest.mark.parametrize("version", versions(IncrementalAlterConfigsRequest))
def test_incremental_alter_configs_every_version_sets_one_config(broker, version):
    broker.create_topic("incr", 1, {"retention.ms": "5"})
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    request = IncrementalAlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name="incr", configs=[
        R.AlterableConfig(name="segment.ms", config_operation=0, value="1000")])], validate_only=False)
    [result] = call(broker, request, version).responses
    assert result.error_code == 0
    view = broker.call(lambda: broker.broker.services.default.topics.get("incr"))
    assert view.configs == {"retention.ms": "5", "segment.ms": "1000"}


def test_incremental_alter_configs_refuses_a_config_named_twice(broker):
    broker.create_topic("twice")
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    resource = R(resource_type=TOPIC, resource_name="twice", configs=[
        R.AlterableConfig(name="segment.ms", config_operation=0, value="1000"),
        R.AlterableConfig(name="segment.ms", config_operation=1, value=None)])
    request = IncrementalAlterConfigsRequest(resources=[resource], validate_only=False)
    [result] = call(broker, request, 1).responses
    assert result.error_code == Errors.InvalidRequestError.errno


@pytest.mark.parametrize("version", versions(DescribeLogDirsRequest))
def test_describe_log_dirs_every_version_reports_one_dir_with_partition_sizes(broker, version):
    broker.create_topic("sized", 2)
    produce(broker, "sized", 3)
    response = call(broker, DescribeLogDirsRequest(topics=None), version)
    [log_dir] = response.results
    assert log_dir.error_code == 0
    assert log_dir.log_dir.endswith(broker.config.default_namespace)
    [topic] = [t for t in log_dir.topics if t.name == "sized"]
    sizes = broker.call(lambda: [broker.broker.services.default.topics.log("sized", p).size_bytes for p in (0, 1)])
    assert sorted((p.partition_index, p.partition_size, p.offset_lag) for p in topic.partitions) == [
        (0, sizes[0], 0), (1, sizes[1], 0)]
    assert sizes[0] > 0
    if version >= 4:
        assert log_dir.total_bytes > 0 and 0 <= log_dir.usable_bytes <= log_dir.total_bytes


def test_describe_log_dirs_of_named_partitions_leaves_out_unknown_ones(broker):
    broker.create_topic("known", 1)
    D = DescribeLogDirsRequest.DescribableLogDirTopic
    request = DescribeLogDirsRequest(topics=[D(topic="known", partitions=[0, 5]),
                                             D(topic="ghost", partitions=[0])])
    [log_dir] = call(broker, request, 4).results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in log_dir.topics] == [("known", [0])]


@pytest.mark.parametrize("version", versions(CreatePartitionsRequest))
def test_create_partitions_every_version_grows_the_topic(broker, version):
    broker.create_topic("grow", 1)
    T = CreatePartitionsRequest.CreatePartitionsTopic
    request = CreatePartitionsRequest(topics=[T(name="grow", count=3, assignments=None)], timeout_ms=1000,
                                      validate_only=False)
    [result] = call(broker, request, version).results
    assert (result.name, result.error_code) == ("grow", 0)
    assert broker.call(lambda: broker.broker.services.default.topics.get("grow")).partitions == 3


@pytest.mark.parametrize("version", versions(DescribeClusterRequest))
def test_describe_cluster_every_version_lists_this_broker(broker, version):
    request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                     include_fenced_brokers=False)
    response = call(broker, request, version)
    assert response.error_code == 0
    assert [b.broker_id for b in response.brokers] == [0]
    assert response.controller_id == 0
    assert response.authorized_operations is None  # not requested


def test_describe_cluster_for_controllers_is_mismatched_endpoint_type(broker):
    request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2,
                                     include_fenced_brokers=False)
    response = call(broker, request, 2)
    assert response.error_code == Errors.MismatchedEndpointTypeError.errno
