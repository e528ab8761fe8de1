"""A KIP-848 group that empties is remembered across a broker restart, as without one.

Kafka 4.x keeps an empty consumer group (state Empty) until the offset cleanup that finds it
without offsets deletes it (GroupCoordinatorShard.cleanupGroupMetadata ->
GroupMetadataManager.maybeDeleteGroup); until then an OffsetCommit from one of its old
members is UNKNOWN_MEMBER_ID (ConsumerGroup.validateOffsetCommit), after it
GROUP_ID_NOT_FOUND (OffsetMetadataManager, v9+). kafka-wire drops such a group at once
and remembers it until that cleanup; a restart in between must not forget it (the restart
starts the cleanup interval again, as Kafka's shard load does)."""
from __future__ import annotations

from kafka_wire import codec
from tests.groups.kip848_member import (GROUP_NOT_FOUND, UNKNOWN_MEMBER, commit, emptied_group, heartbeat,
                                        heartbeat_in, leave, restarted)
from tests.rawclient import RawClient


def _cleanup(broker) -> None:
    groups = broker.broker.services.default.groups
    broker.call(lambda: groups.cleanup_expired_offsets())


def test_a_group_that_emptied_answers_its_old_member_unknown_after_restarts(broker_factory):
    broker = emptied_group(broker_factory)
    for _ in range(2):  # a second restart before any cleanup: still there
        broker = restarted(broker_factory, broker)
        with RawClient(broker.bootstrap_servers) as c:
            assert commit(c) == UNKNOWN_MEMBER
            assert commit(c, member="m-2", epoch=4) == UNKNOWN_MEMBER
            r = heartbeat_in(c, 1)
            assert r.error_code == UNKNOWN_MEMBER, r
    broker = restarted(broker_factory, broker)
    _cleanup(broker)  # Kafka deletes the empty group without offsets now
    with RawClient(broker.bootstrap_servers) as c:
        assert commit(c) == GROUP_NOT_FOUND
    broker = restarted(broker_factory, broker)
    with RawClient(broker.bootstrap_servers) as c:
        assert commit(c) == GROUP_NOT_FOUND  # its deletion was kept too


def test_a_group_joined_again_after_it_emptied_is_loaded_as_it_is(broker_factory):
    first = emptied_group(broker_factory)
    with RawClient(first.bootstrap_servers) as c:
        joined = heartbeat(c, member_id="m-2")
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
    second = restarted(broker_factory, first)
    with RawClient(second.bootstrap_servers) as c:
        # Loaded with its new member, in its epoch.
        r = heartbeat_in(c, 1, "m-2")
        assert (r.error_code, r.member_epoch) == (0, 1), r
        assert commit(c) == UNKNOWN_MEMBER
        assert leave(c, "m-2").error_code == 0
    third = restarted(broker_factory, second)
    with RawClient(third.bootstrap_servers) as c:
        assert commit(c, member="m-2") == UNKNOWN_MEMBER
    _cleanup(third)
    with RawClient(third.bootstrap_servers) as c:
        assert commit(c, member="m-2") == GROUP_NOT_FOUND


def test_offsets_committed_after_it_emptied_stay_the_groups_to_delete(broker_factory):
    second = restarted(broker_factory, emptied_group(broker_factory))
    with RawClient(second.bootstrap_servers) as c:
        assert commit(c) == UNKNOWN_MEMBER
        assert commit(c, member="", epoch=-1) == 0  # a tool's commit, no member (generation -1)
    third = restarted(broker_factory, second)
    with RawClient(third.bootstrap_servers) as c:
        assert commit(c) == UNKNOWN_MEMBER
        r = c.request(codec.ApiKey.DeleteGroups, 2, groups_names=["g"])
        assert r.results[0].error_code == 0, r
        r = c.request(codec.ApiKey.OffsetFetch, 8, groups=[("g", None)], require_stable=False)
        assert r.groups[0].topics == [], r
    fourth = restarted(broker_factory, third)
    with RawClient(fourth.bootstrap_servers) as c:
        assert commit(c) == GROUP_NOT_FOUND
