"""Synchronous replication acknowledges only what the secondary took (docs/georeplication.md,
"Synchronous and asynchronous replication"): when shipping a send to a secondary fails, the
send is not acknowledged: Kafka NOT_ENOUGH_REPLICAS_AFTER_APPEND (retriable), HTTP 503. The
event stays on the primary and reaches the secondary with the next pass; an idempotent
producer's retry is then acknowledged once, at the offset it was stored at.

The failure is injected narrowly: the secondary's store refuses batches while ``broken``."""
from __future__ import annotations

import time

import requests
from confluent_kafka import KafkaError, Producer

from kafka_wire.eventhubs import sas
from kafka_wire.log.errors import StorageError
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import KEY, NAMESPACE, geo, geo_broker, stored


def break_eastus(b) -> dict:
    """Make eastus's store fail every batch while the returned flag's ``broken`` is set."""
    flag = {"broken": True}

    def install():
        store = geo(b)._stores["eastus"]
        real = store.apply_batches

        def apply_batches(batches):
            if flag["broken"]:
                raise StorageError("injected: eastus cannot write")
            return real(batches)
        store.apply_batches = apply_batches
    b.call(install)
    return flag


def ends(b, location: str) -> dict:
    return b.call(lambda: geo(b)._stores[location].ends())


def test_a_send_the_secondary_could_not_take_is_not_acknowledged(tmp_path):
    with geo_broker(tmp_path, max_lag=0, partitions=1, http=True) as b:
        p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(),
                                    **{"retries": 0, "message.timeout.ms": 10000}))
        results = []
        p.produce("orders", b"ok-0", partition=0, on_delivery=lambda err, m: results.append(err))
        assert p.flush(10) == 0 and results == [None]
        flag = break_eastus(b)
        p.produce("orders", b"unshipped", partition=0, on_delivery=lambda err, m: results.append(err))
        assert p.flush(10) == 0
        assert results[1] is not None and results[1].code() == KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        host = f"{NAMESPACE}.servicebus.windows.net"
        token = sas.generate(sas.resource_uri(host, None), "RootManageSharedAccessKey", KEY,
                             int(time.time()) + 600)
        refused = requests.post(f"{b.http_url}/orders/partitions/0/messages", data=b"rest",
                                headers={"Host": host, "Authorization": token}, timeout=30)
        assert refused.status_code == 503 and "could not take" in refused.text, refused.text
        assert ends(b, "westus") == {("orders", 0): 3} and ends(b, "eastus") == {("orders", 0): 1}
        flag["broken"] = False
        deadline = time.monotonic() + 15  # the next pass (at most a second) ships what it lacks
        while ends(b, "eastus") != ends(b, "westus") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stored(b, "eastus") == stored(b, "westus")


def test_an_idempotent_producer_retries_through_a_failed_ship_and_is_acknowledged_once(tmp_path):
    with geo_broker(tmp_path, max_lag=0, partitions=1) as b:
        flag = break_eastus(b)
        acked = []
        p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(),
                                    **{"enable.idempotence": True, "retry.backoff.ms": 50,
                                       "message.timeout.ms": 20000}))
        p.produce("orders", b"once", partition=0, on_delivery=lambda err, m: acked.append((err, m.offset())))
        deadline = time.monotonic() + 10  # refused (and retried) until eastus takes it
        while ends(b, "westus") != {("orders", 0): 1} and time.monotonic() < deadline:
            p.poll(0.02)
        assert ends(b, "westus") == {("orders", 0): 1} and acked == []
        flag["broken"] = False
        assert p.flush(20) == 0
        assert acked == [(None, 0)]
        assert ends(b, "westus") == ends(b, "eastus") == {("orders", 0): 1}
