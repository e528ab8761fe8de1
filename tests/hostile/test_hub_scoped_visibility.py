"""A key scoped to one event hub learns nothing of the others beyond what Metadata
shows: DescribeLogDirs listed every hub with its size, and a KIP-848 member that
named another hub in its subscription was assigned its partitions."""
from __future__ import annotations

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML
from tests.hostile.surfaces import CREDENTIALS
from tests.rawclient import RawClient

ROOT = CREDENTIALS[0]
ORDERS_ONLY = next(c for c in CREDENTIALS if c.kind == "wrong-scope")  # Send+Listen on 'orders'


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("visibility") / "data", config_file=MULTI_TOML) as b:
        yield b


def _client(broker, credential) -> RawClient:
    c = RawClient(broker.bootstrap_servers)
    assert c.login(credential.password()) == 0
    return c


def _topic_ids(c: RawClient) -> dict:
    r = c.request(codec.ApiKey.Metadata, 12, topics=None, allow_auto_topic_creation=False,
                  include_topic_authorized_operations=False)
    return {t.topic_id: t.name for t in r.topics}


@pytest.mark.parametrize("topics", [None, [("payments", [0]), ("orders", [0])]], ids=["all", "named"])
def test_describe_log_dirs_shows_only_the_hubs_the_key_sees(broker, topics):
    with _client(broker, ORDERS_ONLY) as c:
        r = c.request(codec.ApiKey.DescribeLogDirs, 1, topics=topics)
        assert {t.name for res in r.results for t in res.topics} == {"orders"}
    with _client(broker, ROOT) as c:  # a namespace key sees them all
        r = c.request(codec.ApiKey.DescribeLogDirs, 1, topics=topics)
        assert {"orders", "payments"} <= {t.name for res in r.results for t in res.topics}


def test_a_subscription_naming_another_hub_is_assigned_only_the_keys_hub(broker):
    with _client(broker, ROOT) as root:
        names = _topic_ids(root)
    with _client(broker, ORDERS_ONLY) as c:
        r = c.request(codec.ApiKey.ConsumerGroupHeartbeat, 0, group_id="scoped-848", member_id="",
                      member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout_ms=5000,
                      subscribed_topic_names=["payments", "orders"], server_assignor=None,
                      topic_partitions=[])
        assert r.error_code == 0
        assigned = {names[tp.topic_id] for tp in r.assignment.topic_partitions}
        assert assigned == {"orders"}
