"""A Produce request's negative timeout is 0, as Kafka's broker takes it (ReplicaManager
hands it to a delayed produce, which is already expired): on a namespace with throughput
units, a publication that need not wait is admitted whatever the principal, and one that
must wait is refused with POLICY_VIOLATION, as with a timeout of 0.

An application group's client takes the door's full path (not the quick admission a plain
SAS client gets), where a -1 timeout was refused even on an idle namespace.

Raw Produce v9 over SASL PLAIN against a broker on a virtual clock (frozen: no refill
between requests unless the test advances it)."""
from __future__ import annotations

import time

import pytest
import requests

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

HOST = "tu-ns1.servicebus.windows.net"
ROOT = ("RootManageSharedAccessKey", "cm9vdC1rZXk=")
SENDER = ("sender", "c2VuZC1rZXk=")
POLICY_VIOLATION = 44
TOML = f'''default_namespace = "tu-ns1"
[namespaces.tu-ns1]
tier = "Standard"
throughput_units = 1
[namespaces.tu-ns1.policies.{ROOT[0]}]
primary_key = "{ROOT[1]}"
[namespaces.tu-ns1.policies.{SENDER[0]}]
primary_key = "{SENDER[1]}"
rights = ["Send"]
[namespaces.tu-ns1.eventhubs.hub]
partitions = 1
'''


@pytest.fixture
def broker(tmp_path):
    (tmp_path / "tu.toml").write_text(TOML)
    with EmulatedBroker(tmp_path / "data", config_file=tmp_path / "tu.toml", virtual_clock=True,
                        http=True) as b:
        assert b.broker.services.namespaces["tu-ns1"].quota is not None, "the namespace has its unit"
        yield b


def put_group(b, identifier: str) -> None:
    """An enabled application group without throttling policies: only its membership counts."""
    token = sas.generate(sas.resource_uri(HOST), *ROOT, int(time.time()) + 3600)
    url = (f"{b.http_url}/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/"
           "tu-ns1/applicationGroups/ag?api-version=2024-01-01")
    put = requests.put(url, json={"properties": {"isEnabled": True, "clientAppGroupIdentifier": identifier}},
                       headers={"Host": HOST, "Authorization": token}, timeout=20)
    assert put.status_code in (200, 201), put.text


def logged_in(b, policy) -> RawClient:
    c = RawClient(b.bootstrap_servers)
    assert c.login(connection_string.build(HOST, key_name=policy[0], key=policy[1])) == 0
    return c


def produce(c: RawClient, records: bytes, timeout_ms: int):
    Req = codec.request_class(codec.ApiKey.Produce)
    T = Req.TopicProduceData
    answer = c.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=1, timeout_ms=timeout_ms,
                       topic_data=[T(name="hub", partition_data=[T.PartitionProduceData(
                           index=0, records=records)])])
    return answer.responses[0].partition_responses[0]


@pytest.mark.parametrize("timeout_ms", [-1, -30000, -2 ** 31])
def test_an_application_groups_client_with_a_negative_timeout_is_admitted_when_idle(broker, timeout_ms):
    put_group(broker, f"SASKeyName={SENDER[0]}")
    with logged_in(broker, SENDER) as c:
        for expected_offset in (0, 1):
            answer = produce(c, make_batch(1, value_size=100), timeout_ms)
            assert (answer.error_code, answer.error_message) == (0, None)
            assert answer.base_offset == expected_offset


def test_a_negative_timeout_refuses_what_must_wait_as_a_timeout_of_0(broker):
    put_group(broker, f"SASKeyName={SENDER[0]}")
    big = make_batch(1, value_size=700 * 1024)
    with logged_in(broker, SENDER) as c:
        assert produce(c, big, -1).base_offset == 0
        # 376 KiB over the unit's burst, on a frozen clock: a wait of 367 ms
        for timeout_ms in (-1, 0):
            refused = produce(c, big, timeout_ms)
            assert refused.error_code == POLICY_VIOLATION and "throughput unit" in refused.error_message
            assert "request timeout (0 ms)" in refused.error_message
        broker.clock.advance(1000)  # refilled: no wait now
        assert produce(c, big, -1).base_offset == 1


def test_a_plain_sas_client_with_a_negative_timeout_is_admitted_as_before(broker):
    """No application group: the quick admission, which never read the timeout."""
    with logged_in(broker, SENDER) as c:
        answer = produce(c, make_batch(1, value_size=100), -1)
        assert (answer.error_code, answer.base_offset) == (0, 0)
