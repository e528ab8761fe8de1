"""The group API handlers, called directly with decoded requests of every
served version; responses are encoded and decoded again to prove they fit
their version's schema."""
from __future__ import annotations

import asyncio
import inspect

import kafka.errors as Errors
import pytest

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator
from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.codec import ApiKey, RequestHeader
from kafka_wire.context import ClusterInfo, ConnectionState, NamespaceRuntime, RequestContext, Services
from kafka_wire.eventhubs.policy import NamespacePolicy

from .helpers import assign, sub

NONE = Errors.NoError.errno
registry.load_all()


class Client:
    """Sends requests of chosen versions to the handlers, like the server would."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.cluster = ClusterInfo(7, "broker.local", 9093, "cid")
        runtime = NamespaceRuntime(name="ns", topics=None, policy=NamespacePolicy())
        runtime.groups = coordinator  # groups live per Event Hubs namespace
        runtime.policy.bind(runtime, None, coordinator.clock)  # an open namespace: no report
        # Only what group handlers use is real: the namespace, its coordinator, the clock.
        self.services = Services(config=None, clock=coordinator.clock, cluster=self.cluster,
                                 namespaces={"ns": runtime}, default_namespace="ns",
                                 eventhubs=None, report=None, auth=None, producer_ids=None,
                                 fetch_sessions=None)

    async def send(self, api_key: int, version: int, **fields):
        cls = codec.request_class(api_key)
        request = cls.decode(cls(version=version, **fields).encode(version=version),
                             version=version)
        ctx = RequestContext(RequestHeader(api_key, version, 1, "app", 0),
                             ConnectionState(peer="10.1.2.3:50000", connection_id=1),
                             self.services, self.cluster)
        response = registry.lookup(api_key).handler(request, ctx)
        if inspect.isawaitable(response):
            response = await response
        resp_cls = codec.response_class(api_key)
        return resp_cls.decode(response.encode(version=version), version=version)

    async def join(self, version: int, member_id: str = "", group: str = "g", **extra):
        cls = codec.request_class(ApiKey.JoinGroup)
        fut = asyncio.ensure_future(self.send(
            ApiKey.JoinGroup, version, group_id=group, session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000, member_id=member_id, group_instance_id=None,
            protocol_type="consumer", reason="test",
            protocols=[cls.JoinGroupRequestProtocol(name="range", metadata=sub("t"))], **extra))
        await asyncio.sleep(0)
        self.coordinator.clock.advance(0)  # the initial rebalance delay
        return await fut


def make_client(**config) -> Client:
    config.setdefault("group_initial_rebalance_delay_ms", 0)
    return Client(GroupCoordinator(VirtualClock(), GroupCoordinatorConfig(**config)))


def versions(api_key):
    reg = registry.lookup(api_key)
    return range(reg.min_version, reg.max_version + 1)


@pytest.mark.parametrize("version", versions(ApiKey.JoinGroup))
def test_member_lifecycle_at_every_join_group_version(version):
    async def body():
        c = make_client()
        r = await c.join(version)
        if version >= 4:
            assert r.error_code == Errors.MemberIdRequiredError.errno
            r = await c.join(version, r.member_id)
        assert (r.error_code, r.generation_id, r.leader) == (NONE, 1, r.member_id)
        assert r.protocol_name == "range" and r.member_id.startswith("app-")
        assert [m.member_id for m in r.members] == [r.member_id]
        member, gen = r.member_id, r.generation_id

        sync_v = min(version, 5)
        SyncReq = codec.request_class(ApiKey.SyncGroup)
        s = await c.send(ApiKey.SyncGroup, sync_v, group_id="g", generation_id=gen,
                         member_id=member, group_instance_id=None, protocol_type="consumer",
                         protocol_name="range", assignments=[SyncReq.SyncGroupRequestAssignment(
                             member_id=member, assignment=assign(("t", [0])))])
        assert s.error_code == NONE and s.assignment == assign(("t", [0]))
        if sync_v >= 5:
            assert (s.protocol_type, s.protocol_name) == ("consumer", "range")

        hb = await c.send(ApiKey.Heartbeat, min(version, 4), group_id="g", generation_id=gen,
                          member_id=member, group_instance_id=None)
        assert hb.error_code == NONE

        commit_v = max(2, min(version, 9))
        CommitReq = codec.request_class(ApiKey.OffsetCommit)
        Topic = CommitReq.OffsetCommitRequestTopic
        cr = await c.send(ApiKey.OffsetCommit, commit_v, group_id="g",
                          generation_id_or_member_epoch=gen, member_id=member,
                          group_instance_id=None, retention_time_ms=-1, topics=[Topic(
                              name="t", partitions=[Topic.OffsetCommitRequestPartition(
                                  partition_index=0, committed_offset=33,
                                  committed_leader_epoch=4, committed_metadata="meta")])])
        assert [(t.name, p.partition_index, p.error_code)
                for t in cr.topics for p in t.partitions] == [("t", 0, NONE)]

        fetch_v = max(1, min(version, 9))
        FetchReq = codec.request_class(ApiKey.OffsetFetch)
        if fetch_v >= 8:
            f = await c.send(ApiKey.OffsetFetch, fetch_v, require_stable=True, groups=[
                FetchReq.OffsetFetchRequestGroup(group_id="g", member_id=None, member_epoch=-1,
                                                 topics=None)])
            [group] = f.groups
            assert group.error_code == NONE
            topics = group.topics
        else:
            f = await c.send(ApiKey.OffsetFetch, fetch_v, group_id="g", require_stable=False,
                             topics=[FetchReq.OffsetFetchRequestTopic(
                                 name="t", partition_indexes=[0, 1])])
            topics = f.topics
        got = [(t.name, p.partition_index, p.committed_offset, p.metadata)
               for t in topics for p in t.partitions]
        assert got[0] == ("t", 0, 33, "meta")
        if fetch_v >= 5:
            assert topics[0].partitions[0].committed_leader_epoch == (4 if commit_v >= 6 else -1)

        d = await c.send(ApiKey.DescribeGroups, min(version, 6), groups=["g"],
                         include_authorized_operations=True)
        [dg] = d.groups
        assert (dg.group_state, dg.protocol_data, dg.members[0].client_host) == \
            ("Stable", "range", "/10.1.2.3")

        listed = await c.send(ApiKey.ListGroups, min(version, 5), states_filter=[],
                              types_filter=[])
        assert [g.group_id for g in listed.groups] == ["g"]

        leave_v = min(version, 5)
        LeaveReq = codec.request_class(ApiKey.LeaveGroup)
        lr = await c.send(ApiKey.LeaveGroup, leave_v, group_id="g", member_id=member,
                          members=[LeaveReq.MemberIdentity(member_id=member,
                                                           group_instance_id=None,
                                                           reason=None)])
        assert lr.error_code == NONE
        if leave_v >= 3:
            assert [m.error_code for m in lr.members] == [NONE]

        dr = await c.send(ApiKey.DeleteGroups, min(version, 2), groups_names=["g", "x"])
        assert [(r.group_id, r.error_code) for r in dr.results] == [
            ("g", NONE), ("x", Errors.GroupIdNotFoundError.errno)]
    asyncio.run(body())


@pytest.mark.parametrize("version", versions(ApiKey.FindCoordinator))
def test_find_coordinator_always_names_this_broker(version):
    async def body():
        c = make_client()
        if version >= 4:
            r = await c.send(ApiKey.FindCoordinator, version, key_type=1,
                             coordinator_keys=["tx-1", ""])
            assert [(x.key, x.node_id, x.host, x.port, x.error_code) for x in r.coordinators] == [
                ("tx-1", 7, "broker.local", 9093, NONE),
                ("", -1, "", -1, Errors.InvalidRequestError.errno)]
        else:
            r = await c.send(ApiKey.FindCoordinator, version, key="g", key_type=0)
            assert (r.error_code, r.node_id, r.host, r.port) == (NONE, 7, "broker.local", 9093)
            if version >= 1:
                bad = await c.send(ApiKey.FindCoordinator, version, key="g", key_type=5)
                assert bad.error_code == Errors.InvalidRequestError.errno
    asyncio.run(body())


def test_leave_group_v0_reports_the_member_error_at_top_level():
    async def body():
        c = make_client()
        r = await c.send(ApiKey.LeaveGroup, 0, group_id="g", member_id="ghost")
        assert r.error_code == Errors.UnknownMemberIdError.errno
    asyncio.run(body())


@pytest.mark.parametrize("version,error,state", [
    (5, NONE, "Dead"), (6, Errors.GroupIdNotFoundError.errno, "Dead")])
def test_describe_missing_group(version, error, state):
    async def body():
        c = make_client()
        r = await c.send(ApiKey.DescribeGroups, version, groups=["missing"],
                         include_authorized_operations=False)
        [g] = r.groups
        assert (g.error_code, g.group_state) == (error, state)
        if version >= 6:
            assert "missing" in g.error_message
    asyncio.run(body())


def test_offset_fetch_v8_answers_several_groups_and_v1_puts_errors_in_partitions():
    async def body():
        c = make_client()
        c.coordinator.commit_offsets("a", -1, "", None, [("t", 0, 5, -1, None)])
        Req = codec.request_class(ApiKey.OffsetFetch)
        r = await c.send(ApiKey.OffsetFetch, 8, require_stable=False, groups=[
            Req.OffsetFetchRequestGroup(group_id="a", topics=None),
            Req.OffsetFetchRequestGroup(group_id="b", topics=[
                Req.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                    name="t", partition_indexes=[0])])])
        assert [(g.group_id, [(p.partition_index, p.committed_offset)
                              for t in g.topics for p in t.partitions]) for g in r.groups] == [
            ("a", [(0, 5)]), ("b", [(0, -1)])]
        c.coordinator.close()
        r1 = await c.send(ApiKey.OffsetFetch, 1, group_id="a", topics=[
            Req.OffsetFetchRequestTopic(name="t", partition_indexes=[0])])
        assert r1.topics[0].partitions[0].error_code == Errors.CoordinatorNotAvailableError.errno
    asyncio.run(body())


def test_list_groups_filters_and_offset_delete():
    async def body():
        c = make_client()
        c.coordinator.commit_offsets("idle", -1, "", None,
                                     [("t", 0, 5, -1, None), ("t", 1, 6, -1, None)])
        r = await c.send(ApiKey.ListGroups, 5, states_filter=["EMPTY"], types_filter=["classic"])
        assert [(g.group_id, g.group_state, g.group_type, g.protocol_type) for g in r.groups] == [
            ("idle", "Empty", "classic", "")]
        r = await c.send(ApiKey.ListGroups, 4, states_filter=["Stable"])
        assert r.groups == []
        Req = codec.request_class(ApiKey.OffsetDelete)
        d = await c.send(ApiKey.OffsetDelete, 0, group_id="idle", topics=[
            Req.OffsetDeleteRequestTopic(name="t", partitions=[
                Req.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(partition_index=0)])])
        assert d.error_code == NONE and d.topics[0].partitions[0].error_code == NONE
        assert [p.partition for p in c.coordinator.fetch_offsets("idle", None).partitions] == [1]
        missing = await c.send(ApiKey.OffsetDelete, 0, group_id="nope", topics=[])
        assert missing.error_code == Errors.GroupIdNotFoundError.errno
    asyncio.run(body())
