"""A KIP-848 group that empties is remembered across a broker restart, as without one.

Kafka 4.x keeps an empty consumer group (state Empty) until the offset cleanup that finds it
without offsets deletes it (GroupCoordinatorShard.cleanupGroupMetadata ->
GroupMetadataManager.maybeDeleteGroup); until then an OffsetCommit from one of its old
members is UNKNOWN_MEMBER_ID (ConsumerGroup.validateOffsetCommit), after it
GROUP_ID_NOT_FOUND (OffsetMetadataManager, v9+). kafka-wire drops such a group at once
and remembers it until that cleanup; a restart in between must not forget it (the restart
starts the cleanup interval again, as Kafka's shard load does)."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.rawclient import RawClient

HEARTBEAT = 68
UNKNOWN_MEMBER = Errors.UnknownMemberIdError.errno
GROUP_NOT_FOUND = Errors.GroupIdNotFoundError.errno


def _heartbeat(client, **fields):
    base = dict(group_id="g", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"],
                server_assignor=None, topic_partitions=[], subscribed_topic_regex=None)
    base.update(fields)
    return client.request(HEARTBEAT, 1, **base)


def _leave(client, member_id="m-1"):
    return _heartbeat(client, member_id=member_id, member_epoch=-1, rebalance_timeout_ms=-1,
                      subscribed_topic_names=None, topic_partitions=None)


def _commit(client, member="m-1", epoch=1, version=9, generation=None) -> int:
    r = client.request(codec.ApiKey.OffsetCommit, version, group_id="g",
                       generation_id_or_member_epoch=epoch if generation is None else generation,
                       member_id=member, group_instance_id=None,
                       topics=[("orders", [(0, 3, -1, "")])])
    return r.topics[0].partitions[0].error_code


def _cleanup(broker) -> None:
    groups = broker.broker.services.default.groups
    broker.call(lambda: groups.cleanup_expired_offsets())


def _join_and_leave(broker) -> None:
    with RawClient(broker.bootstrap_servers) as c:
        joined = _heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert _leave(c).error_code == 0
        # Without a restart: the group is remembered (Kafka: Empty).
        assert _commit(c) == UNKNOWN_MEMBER


def test_a_group_that_emptied_answers_its_old_member_unknown_after_restarts(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    _join_and_leave(first)
    first.stop()
    for _ in range(2):  # a second restart before any cleanup: still there
        broker = broker_factory(listen_port=port)
        with RawClient(broker.bootstrap_servers) as c:
            assert _commit(c) == UNKNOWN_MEMBER
            assert _commit(c, member="m-2", epoch=4) == UNKNOWN_MEMBER
            r = _heartbeat(c, member_epoch=1, rebalance_timeout_ms=-1,
                           subscribed_topic_names=None, topic_partitions=None)
            assert r.error_code == UNKNOWN_MEMBER, r
        broker.stop()
    broker = broker_factory(listen_port=port)
    _cleanup(broker)  # Kafka deletes the empty group without offsets now
    with RawClient(broker.bootstrap_servers) as c:
        assert _commit(c) == GROUP_NOT_FOUND
    broker.stop()
    broker = broker_factory(listen_port=port)
    with RawClient(broker.bootstrap_servers) as c:
        assert _commit(c) == GROUP_NOT_FOUND  # its deletion was kept too


def test_a_group_joined_again_after_it_emptied_is_loaded_as_it_is(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    _join_and_leave(first)
    with RawClient(first.bootstrap_servers) as c:
        joined = _heartbeat(c, member_id="m-2")
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        # Loaded with its new member, in its epoch.
        r = _heartbeat(c, member_id="m-2", member_epoch=1, rebalance_timeout_ms=-1,
                       subscribed_topic_names=None, topic_partitions=None)
        assert (r.error_code, r.member_epoch) == (0, 1), r
        assert _commit(c) == UNKNOWN_MEMBER
        assert _leave(c, "m-2").error_code == 0
    second.stop()
    third = broker_factory(listen_port=port)
    with RawClient(third.bootstrap_servers) as c:
        assert _commit(c, member="m-2") == UNKNOWN_MEMBER
    _cleanup(third)
    with RawClient(third.bootstrap_servers) as c:
        assert _commit(c, member="m-2") == GROUP_NOT_FOUND


def test_offsets_committed_after_it_emptied_stay_the_groups_to_delete(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    _join_and_leave(first)
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        assert _commit(c) == UNKNOWN_MEMBER
        assert _commit(c, member="", generation=-1) == 0  # a tool's commit, no member
    second.stop()
    third = broker_factory(listen_port=port)
    with RawClient(third.bootstrap_servers) as c:
        assert _commit(c) == UNKNOWN_MEMBER
        r = c.request(codec.ApiKey.DeleteGroups, 2, groups_names=["g"])
        assert r.results[0].error_code == 0, r
        r = c.request(codec.ApiKey.OffsetFetch, 8, groups=[("g", None)], require_stable=False)
        assert r.groups[0].topics == [], r
    third.stop()
    fourth = broker_factory(listen_port=port)
    with RawClient(fourth.bootstrap_servers) as c:
        assert _commit(c) == GROUP_NOT_FOUND
