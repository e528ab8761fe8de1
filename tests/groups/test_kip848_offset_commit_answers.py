"""OffsetCommit against KIP-848 groups answers as Kafka 4.x's OffsetMetadataManager and
ConsumerGroup.validateOffsetCommit, on the wire, across a broker restart: the member is
kept (its commit in its epoch succeeds before its next heartbeat), an unknown member is
UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH, a version below 9 from a KIP-848
member UNSUPPORTED_VERSION, and a group that is not there GROUP_ID_NOT_FOUND from v9 on
(ILLEGAL_GENERATION before, which tests/groups/test_group_bound_commits.py pins at v2)."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.rawclient import RawClient

HEARTBEAT = 68


def _heartbeat(client, **fields):
    base = dict(group_id="g", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"],
                server_assignor=None, topic_partitions=[], subscribed_topic_regex=None)
    base.update(fields)
    return client.request(HEARTBEAT, 1, **base)


def _commit(client, version, member, epoch, group="g", offset=3) -> int:
    r = client.request(codec.ApiKey.OffsetCommit, version, group_id=group,
                       generation_id_or_member_epoch=epoch, member_id=member,
                       group_instance_id=None, topics=[("orders", [(0, offset, -1, "")])])
    return r.topics[0].partitions[0].error_code


def test_a_member_commits_in_its_epoch_after_a_restart_and_errors_are_kafkas(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=2)
    with RawClient(first.bootstrap_servers) as c:
        joined = _heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert _commit(c, 9, "m-1", 1) == 0
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        # Before any heartbeat: the member and its epoch were loaded.
        assert _commit(c, 9, "m-1", 1, offset=4) == 0
        assert _commit(c, 9, "m-2", 1) == Errors.UnknownMemberIdError.errno
        assert _commit(c, 9, "m-1", 2) == Errors.StaleMemberEpochError.errno
        assert _commit(c, 9, "m-1", 0) == Errors.StaleMemberEpochError.errno
        assert _commit(c, 8, "m-1", 1) == Errors.UnsupportedVersionError.errno
        assert _commit(c, 9, "m-1", 1, group="gone") == Errors.GroupIdNotFoundError.errno
        assert _commit(c, 8, "m-1", 1, group="gone") == Errors.IllegalGenerationError.errno
        # Its heartbeat in the old epoch goes on (nothing to change: no assignment sent).
        again = _heartbeat(c, member_epoch=1, rebalance_timeout_ms=-1,
                           subscribed_topic_names=None, topic_partitions=None)
        assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None), again
        r = c.request(codec.ApiKey.OffsetFetch, 9, groups=[("g", "m-1", 1, None)],
                      require_stable=False)
        assert [(p.partition_index, p.committed_offset)
                for p in r.groups[0].topics[0].partitions] == [(0, 4)]


def test_a_member_id_past_the_coordinators_bound_is_refused_and_not_kept(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    with RawClient(first.bootstrap_servers) as c:
        r = _heartbeat(c, member_id="m" * 600_000)
        assert r.error_code == Errors.InvalidRequestError.errno, r
        assert "bytes the coordinator keeps for a member" in r.error_message
        r = _heartbeat(c, subscribed_topic_names=["x" * 100 + str(i) for i in range(6_000)])
        assert r.error_code == Errors.InvalidRequestError.errno, r
    first.stop()
    second = broker_factory(listen_port=port)
    groups = second.broker.services.default.groups
    assert second.call(lambda: groups.consumer.group_ids()) == []


def test_a_member_outlives_a_kill_9_of_the_broker(broker_process):
    # No close: the records were appended (one write each) before the answers went out.
    proc = broker_process()
    with RawClient(proc.bootstrap_servers) as c:
        r = c.request(codec.ApiKey.CreateTopics, 4, topics=[("orders", 2, 1, [], [])],
                      timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == 0, r
        joined = _heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert _commit(c, 9, "m-1", 1) == 0
    proc.kill()
    restarted = broker_process(port=proc.port)
    with RawClient(restarted.bootstrap_servers) as c:
        assert _commit(c, 9, "m-1", 1, offset=7) == 0
        again = _heartbeat(c, member_epoch=1, rebalance_timeout_ms=-1,
                           subscribed_topic_names=None, topic_partitions=None)
        assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None), again
