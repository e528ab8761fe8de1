"""A key scoped to one event hub learns nothing of another hub through consumer groups:
DescribeGroups handed it the members of a group consuming another hub (their ids,
subscriptions and assignments, naming that hub and its partitions), ConsumerGroupDescribe
the same of a KIP-848 group, and ListGroups listed them. A hub-scoped key now describes
and lists only groups naming no hub it cannot see; others are GROUP_AUTHORIZATION_FAILED,
as Kafka answers a principal that may not Describe a group."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML, confluent_conf
from tests.hostile.surfaces import CREDENTIALS
from tests.rawclient import RawClient

GROUP_DENIED = 30
ROOT = CREDENTIALS[0]
NONE = next(c for c in CREDENTIALS if c.kind == "none")
WRONG_KEY = next(c for c in CREDENTIALS if c.kind == "wrong-key")
ORDERS_ONLY = next(c for c in CREDENTIALS if c.kind == "wrong-scope")  # Send+Listen on 'orders'


def _assigned(consumer: Consumer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer was never assigned a partition"
        consumer.poll(0.2)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """'billing' (classic, root key) consumes 'payments' and committed an offset of it;
    'billing-848' (KIP-848, root key) subscribes to 'payments'; 'orders-readers'
    (classic, the 'orders' key) consumes 'orders'."""
    with EmulatedBroker(tmp_path_factory.mktemp("groups") / "data", config_file=MULTI_TOML) as b:
        billing = Consumer(confluent_conf(b.bootstrap_servers, ROOT.password(), **{
            "group.id": "billing", "enable.auto.commit": False, "session.timeout.ms": 30_000}))
        readers = Consumer(confluent_conf(b.bootstrap_servers, ORDERS_ONLY.password(), **{
            "group.id": "orders-readers", "enable.auto.commit": False, "session.timeout.ms": 30_000}))
        try:
            billing.subscribe(["payments"])
            readers.subscribe(["orders"])
            _assigned(billing)
            _assigned(readers)
            committed = billing.commit(offsets=[TopicPartition("payments", 0, 1)], asynchronous=False)
            assert [tp.error for tp in committed] == [None]
            with RawClient(b.bootstrap_servers) as root:
                assert root.login(ROOT.password()) == 0
                r = root.request(codec.ApiKey.ConsumerGroupHeartbeat, 0, group_id="billing-848",
                                 member_id="", member_epoch=0, instance_id=None, rack_id=None,
                                 rebalance_timeout_ms=5000, subscribed_topic_names=["payments"],
                                 server_assignor=None, topic_partitions=[])
                assert r.error_code == 0
            yield b
        finally:
            billing.close()
            readers.close()


def _client(broker, credential) -> RawClient:
    c = RawClient(broker.bootstrap_servers)
    assert c.login(credential.password()) == 0
    return c


def _describe(c: RawClient, group: str):
    return c.request(codec.ApiKey.DescribeGroups, 5, groups=[group],
                     include_authorized_operations=False).groups[0]


def _listed(c: RawClient) -> set[str]:
    return {g.group_id for g in c.request(codec.ApiKey.ListGroups, 4, states_filter=[]).groups}


def test_a_hub_scoped_key_cannot_describe_a_group_of_another_hub(broker):
    with _client(broker, ORDERS_ONLY) as c:
        g = _describe(c, "billing")
        assert (g.error_code, g.members, g.protocol_data) == (GROUP_DENIED, [], "")
        own = _describe(c, "orders-readers")  # its own hub's group it describes
        assert own.error_code == 0 and len(own.members) == 1
        assert b"orders" in bytes(own.members[0].member_assignment)
        g848 = c.request(69, 0, group_ids=["billing-848"], include_authorized_operations=False).groups[0]
        assert (g848.error_code, g848.members) == (GROUP_DENIED, [])


def test_a_hub_scoped_key_lists_only_its_hubs_groups(broker):
    with _client(broker, ORDERS_ONLY) as c:
        listed = _listed(c)
    assert "orders-readers" in listed
    assert not listed & {"billing", "billing-848"}
    # confluent-kafka's admin client, with the same key, sees the same.
    admin = AdminClient(confluent_conf(broker.bootstrap_servers, ORDERS_ONLY.password()))
    result = admin.list_consumer_groups(request_timeout=15).result(timeout=20)
    assert {g.group_id for g in result.valid} == listed


def test_a_hub_scoped_key_fetches_no_offsets_of_another_hub(broker):
    with _client(broker, ORDERS_ONLY) as c:
        r = c.request(codec.ApiKey.OffsetFetch, 7, group_id="billing", topics=None, require_stable=False)
        assert r.error_code == 0 and r.topics == []


def test_a_namespace_key_still_describes_and_lists_every_group(broker):
    with _client(broker, ROOT) as c:
        g = _describe(c, "billing")
        assert g.error_code == 0 and g.group_state == "Stable"
        assert b"payments" in bytes(g.members[0].member_metadata)
        g848 = c.request(69, 0, group_ids=["billing-848"], include_authorized_operations=False).groups[0]
        assert g848.error_code == 0 and list(g848.members[0].subscribed_topic_names) == ["payments"]
        assert {"billing", "billing-848", "orders-readers"} <= _listed(c)


@pytest.mark.parametrize("credential", [NONE, WRONG_KEY], ids=lambda c: c.kind)
def test_without_a_valid_credential_nothing_is_described(broker, credential):
    with RawClient(broker.bootstrap_servers) as c:
        if credential.password() is not None:
            assert c.login(credential.password()) != 0  # refused, the connection closed
        with pytest.raises(OSError):
            _describe(c, "billing")
