"""Application groups through the management API: the clients of one SAS policy are
throttled by the group's policies (Kafka's throttle_time_ms), other clients are not,
a disabled group's clients are refused, and the group survives a restart."""
from __future__ import annotations

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string
from tests.amqp.conftest import ROOT
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

from .test_management import NS, RG, client, start

TOPIC_DENIED = 29


def produce(broker, policy: tuple[str, str], records: int = 500):
    """A SASL-authenticated Produce of ``records`` records to orders-0: (error, throttle ms)."""
    password = connection_string.build(f"127.0.0.1:{broker.port}", key_name=policy[0], key=policy[1])
    with RawClient(broker.bootstrap_servers) as c:
        assert c.login(password) == 0
        Req = codec.request_class(codec.ApiKey.Produce)
        T = Req.TopicProduceData
        answer = c.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=1, timeout_ms=30000,
                           topic_data=[T(name="orders", partition_data=[T.PartitionProduceData(
                               index=0, records=make_batch(records, value_size=10))])])
    return answer.responses[0].partition_responses[0].error_code, answer.throttle_time_ms


def test_a_groups_clients_are_throttled_and_refused_when_disabled(tmp_path):
    data_dir = tmp_path / "data"
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        mgmt.namespaces.create_or_update_authorization_rule(RG, NS, "app", {"properties": {"rights": ["Send", "Listen"]}})
        app = ("app", mgmt.namespaces.list_keys(RG, NS, "app").primary_key)
        group = mgmt.application_group.create_or_update_application_group(RG, NS, "slow-apps", {
            "properties": {"isEnabled": True, "clientAppGroupIdentifier": "SASKeyName=app",
                           "policies": [{"type": "ThrottlingPolicy", "name": "messages-in",
                                         "rateLimitThreshold": 50, "metricId": "IncomingMessages"}]}})
        assert group.client_app_group_identifier == "SASKeyName=app" and group.is_enabled
        error, throttle = produce(broker, app)
        assert error == 0 and throttle > 5_000  # 500 messages against 50 a second
        assert produce(broker, ROOT) == (0, 0)  # another policy's client: not in the group
        mgmt.application_group.create_or_update_application_group(RG, NS, "slow-apps", {
            "properties": {"isEnabled": False, "clientAppGroupIdentifier": "SASKeyName=app", "policies": []}})
        assert produce(broker, app)[0] == TOPIC_DENIED
        assert produce(broker, ROOT)[0] == 0
    finally:
        broker.stop()
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        kept = mgmt.application_group.get(RG, NS, "slow-apps")
        assert kept.is_enabled is False
        mgmt.application_group.delete(RG, NS, "slow-apps")
        assert produce(broker, app)[0] == 0
    finally:
        broker.stop()
