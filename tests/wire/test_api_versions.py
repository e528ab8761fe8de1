"""ApiVersions: advertised ranges come from registered handlers only."""
from __future__ import annotations

import struct

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis import registry
from tests.rawclient import RawClient


def test_every_version_advertised_has_a_codec_and_handler(broker):
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.ApiVersions, 3, client_software_name="raw",
                         client_software_version="1")
    assert resp.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    for key, (lo, hi) in advertised.items():
        reg = registry.lookup(key)
        assert reg is not None and (reg.min_version, reg.max_version) == (lo, hi)
        assert hi <= codec.max_codec_version(key)
    for key in (codec.ApiKey.Produce, codec.ApiKey.Fetch, codec.ApiKey.Metadata,
                codec.ApiKey.ListOffsets, codec.ApiKey.ApiVersions):
        assert key in advertised


def test_api_versions_v0_works(broker):
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.ApiVersions, 0)
    assert resp.error_code == 0 and resp.api_keys


def test_unknown_api_versions_version_gets_v0_fallback(broker):
    with RawClient(broker.bootstrap_servers) as c:
        c.send_raw(c.frame(codec.ApiKey.ApiVersions, 99, b"\x00\x00\x00"))
        data = c.read_frame()
        resp = codec.response_class(codec.ApiKey.ApiVersions).decode(data[4:], version=0)
    assert resp.error_code == Errors.UnsupportedVersionError.errno
    assert any(k.api_key == codec.ApiKey.Produce for k in resp.api_keys)


def test_unsupported_version_of_other_api_closes_connection(broker):
    with RawClient(broker.bootstrap_servers) as c:
        c.send_raw(c.frame(codec.ApiKey.Produce, 1, b""))
        assert c.is_closed()


def test_metadata_lists_one_broker_and_topic_ids(broker):
    broker.create_hub("md", partitions=3)
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.Metadata, 12, topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False)
    assert [(b.node_id, b.port) for b in resp.brokers] == [(0, broker.port)]
    (t,) = [t for t in resp.topics if t.name == "md"]
    assert len(t.partitions) == 3 and t.topic_id.int != 0
    assert all(p.leader_id == 0 and p.leader_epoch == 0 for p in t.partitions)


def test_metadata_looks_topics_up_by_id_with_a_null_or_empty_name(broker):
    import uuid

    broker.create_hub("by-id", partitions=2)
    cls = codec.request_class(codec.ApiKey.Metadata).MetadataRequestTopic
    with RawClient(broker.bootstrap_servers) as c:
        def lookup(**topic):
            return c.request(codec.ApiKey.Metadata, 12, topics=[cls(**topic)],
                             allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False).topics[0]
        topic_id = lookup(topic_id=None, name="by-id").topic_id
        # Java's KIP-848 consumer resolves assigned ids with an empty name.
        for name in (None, ""):
            found = lookup(topic_id=topic_id, name=name)
            assert (found.error_code, found.name, len(found.partitions)) == (0, "by-id", 2)
        missing = lookup(topic_id=uuid.uuid4(), name="")
        assert missing.error_code == Errors.UnknownTopicIdError.errno


def test_metadata_rejects_illegal_topic_names(broker):
    cls = codec.request_class(codec.ApiKey.Metadata)
    names = ["../etc", "a/b", "x" * 250, "bad\x00name", "..", "sp ace"]
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.Metadata, 9, allow_auto_topic_creation=True,
                         include_topic_authorized_operations=False,
                         topics=[cls.MetadataRequestTopic(name=n) for n in names])
    assert {t.name: t.error_code for t in resp.topics} == \
           {n: Errors.InvalidTopicError.errno for n in names}
    assert not list((broker.data_dir).rglob("*etc*"))
