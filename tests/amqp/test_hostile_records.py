"""Records a Kafka producer stored that no reader should loop on: Produce keeps
batches opaque, so an AMQP receiver is the first to walk them. A header name of
negative length (Kafka refuses it) made the receive path step back and read one
header over and over, 2**31 - 1 times for a 12-byte record, holding the broker's
loop for every client for half an hour. The receiver is now detached with
amqp:internal-error naming the batch, and everyone else is served."""
from __future__ import annotations

import time

import pytest
from proton import Endpoint

from kafka_wire import codec
from kafka_wire.log.batch import encode_batch
from kafka_wire.log.records import encode_varint
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp
from tests.rawclient import RawClient


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("records") / "data", amqp=True) as b:
        yield b


def _produce(c: RawClient, hub: str, records: bytes):
    T = codec.request_class(codec.ApiKey.Produce).TopicProduceData
    answer = c.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=-1, timeout_ms=30000,
                       topic_data=[T(name=hub, partition_data=[T.PartitionProduceData(index=0, records=records)])])
    return answer.responses[0].partition_responses[0]


def _looping_batch(name_length: bytes) -> bytes:
    count = b"\xfe\xff\xff\xff\x0f"  # 2**31 - 1 headers
    body = b"\x00\x00\x00\x01\x01" + count + b"\x00\x01" + name_length  # an empty header, then one stepping back
    record = encode_varint(len(body)) + body
    return bytes(encode_batch(base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0,
                              base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, records_count=1, records=record))


@pytest.mark.parametrize("name_length", [b"\x03", b"\x85\x00"], ids=["one-byte", "two-bytes"])
def test_a_header_name_of_negative_length_detaches_the_receiver_not_the_broker(broker, name_length):
    hub = f"looping-{len(name_length)}"  # (the batch is the hub's only one: read from the start)
    broker.create_hub(hub, 1)
    kafka = RawClient(broker.bootstrap_servers)
    try:
        partition = _produce(kafka, hub, _looping_batch(name_length))
        assert partition.error_code == 0, partition
        with RawAmqp(broker.amqp_port) as c:
            c.open()
            ssn = c.session()
            link = ssn.receiver("reader")
            link.source.address = f"{hub}/ConsumerGroups/$Default/Partitions/0"
            link.open()
            link.flow(10)
            c.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, 20)
            condition = link.remote_condition
            assert condition is not None and condition.name == "amqp:internal-error", condition
            assert "cannot be read" in condition.description and "negative" in condition.description
        started = time.monotonic()  # the loop is free: a Kafka request is answered at once
        versions = kafka.request(codec.ApiKey.ApiVersions, 3, client_software_name="t",
                                 client_software_version="1")
        assert versions.error_code == 0 and time.monotonic() - started < 10
    finally:
        kafka.sock.close()
