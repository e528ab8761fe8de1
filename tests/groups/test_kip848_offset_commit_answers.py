"""OffsetCommit against KIP-848 groups answers as Kafka 4.x's OffsetMetadataManager and
ConsumerGroup.validateOffsetCommit, on the wire, across a broker restart: the member is
kept (its commit in its epoch succeeds before its next heartbeat), an unknown member is
UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH, a version below 9 from a KIP-848
member UNSUPPORTED_VERSION, and a group that is not there GROUP_ID_NOT_FOUND from v9 on
(ILLEGAL_GENERATION before, which tests/groups/test_group_bound_commits.py pins at v2)."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.groups.kip848_member import commit, heartbeat, heartbeat_in, restarted
from tests.rawclient import RawClient


def test_a_member_commits_in_its_epoch_after_a_restart_and_errors_are_kafkas(broker_factory):
    first = broker_factory()
    first.create_hub("orders", partitions=2)
    with RawClient(first.bootstrap_servers) as c:
        joined = heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert commit(c, "m-1", 1) == 0
    second = restarted(broker_factory, first)
    with RawClient(second.bootstrap_servers) as c:
        # Before any heartbeat: the member and its epoch were loaded.
        assert commit(c, "m-1", 1, offset=4) == 0
        assert commit(c, "m-2", 1) == Errors.UnknownMemberIdError.errno
        assert commit(c, "m-1", 2) == Errors.StaleMemberEpochError.errno
        assert commit(c, "m-1", 0) == Errors.StaleMemberEpochError.errno
        assert commit(c, "m-1", 1, version=8) == Errors.UnsupportedVersionError.errno
        assert commit(c, "m-1", 1, group="gone") == Errors.GroupIdNotFoundError.errno
        assert commit(c, "m-1", 1, version=8, group="gone") == Errors.IllegalGenerationError.errno
        # Its heartbeat in the old epoch goes on (nothing to change: no assignment sent).
        again = heartbeat_in(c, 1)
        assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None), again
        r = c.request(codec.ApiKey.OffsetFetch, 9, groups=[("g", "m-1", 1, None)],
                      require_stable=False)
        assert [(p.partition_index, p.committed_offset)
                for p in r.groups[0].topics[0].partitions] == [(0, 4)]


def test_a_member_id_past_the_coordinators_bound_is_refused_and_not_kept(broker_factory):
    first = broker_factory()
    first.create_hub("orders", partitions=1)
    with RawClient(first.bootstrap_servers) as c:
        r = heartbeat(c, member_id="m" * 600_000)
        assert r.error_code == Errors.InvalidRequestError.errno, r
        assert "bytes the coordinator keeps for a member" in r.error_message
        r = heartbeat(c, subscribed_topic_names=["x" * 100 + str(i) for i in range(6_000)])
        assert r.error_code == Errors.InvalidRequestError.errno, r
    second = restarted(broker_factory, first)
    groups = second.broker.services.default.groups
    assert second.call(lambda: groups.consumer.group_ids()) == []


def test_a_member_outlives_a_kill_9_of_the_broker(broker_process):
    # No close: the records were appended (one write each) before the answers went out.
    proc = broker_process()
    with RawClient(proc.bootstrap_servers) as c:
        r = c.request(codec.ApiKey.CreateTopics, 4, topics=[("orders", 2, 1, [], [])],
                      timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == 0, r
        joined = heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert commit(c, "m-1", 1) == 0
    proc.kill()
    back = broker_process(port=proc.port)
    with RawClient(back.bootstrap_servers) as c:
        assert commit(c, "m-1", 1, offset=7) == 0
        again = heartbeat_in(c, 1)
        assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None), again
