"""A Kafka Connect-style group (protocol type ``connect``) formed with raw
JoinGroup/SyncGroup, as Connect workers do: the coordinator treats the
metadata and assignments as opaque bytes, picks the protocol every member
supports, and hands the leader everybody's metadata."""
from __future__ import annotations

import threading

from kafka_wire import codec
from tests.rawclient import RawClient

JOIN, SYNC, HEARTBEAT, LEAVE, DESCRIBE, LIST = 11, 14, 12, 13, 15, 16
_Protocol = codec.request_class(JOIN).JoinGroupRequestProtocol
_Assignment = codec.request_class(SYNC).SyncGroupRequestAssignment
_Leaving = codec.request_class(LEAVE).MemberIdentity
GROUP = "connect-cluster"


def _join(client: RawClient, member_id: str, protocols: list[tuple[str, bytes]]):
    return client.request(JOIN, 7, group_id=GROUP, session_timeout_ms=10_000,
                          rebalance_timeout_ms=10_000, member_id=member_id,
                          group_instance_id=None, protocol_type="connect",
                          protocols=[_Protocol(name=n, metadata=m) for n, m in protocols],
                          reason=None)


def test_connect_protocol_group_elects_a_leader_and_delivers_its_opaque_assignments(
        broker_factory):
    # Two workers must land in one generation: give the first a moment to wait for the second.
    broker = broker_factory(group_initial_rebalance_delay_ms=1500)
    workers = {
        "w1": [("sessioned", b"w1-url=http://w1:8083;sessioned"), ("default", b"w1-url=http://w1:8083")],
        "w2": [("default", b"w2-url=http://w2:8083")],
    }
    clients = {name: RawClient(broker.bootstrap_servers, timeout=20) for name in workers}
    try:
        member_ids = {}
        for name, client in clients.items():
            first = _join(client, "", workers[name])  # v4+: MEMBER_ID_REQUIRED, then rejoin
            assert first.error_code == 79 and first.member_id
            member_ids[name] = first.member_id

        joined: dict[str, object] = {}

        def join(name: str) -> None:
            joined[name] = _join(clients[name], member_ids[name], workers[name])

        threads = [threading.Thread(target=join, args=(n,), daemon=True) for n in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert set(joined) == set(workers), "a JoinGroup did not complete within 20 s"
        responses = list(joined.values())
        assert all(r.error_code == 0 for r in responses), responses
        assert len({r.generation_id for r in responses}) == 1
        assert {r.leader for r in responses} <= set(member_ids.values())
        assert all((r.protocol_type, r.protocol_name) == ("connect", "default")
                   for r in responses), "w2 only speaks 'default': it must be chosen"
        leader_name = next(n for n, mid in member_ids.items() if mid == responses[0].leader)
        leader = joined[leader_name]
        follower_name = next(n for n in workers if n != leader_name)
        # Only the leader learns the members and their metadata (for the chosen protocol).
        assert {m.member_id: m.metadata for m in leader.members} == {
            member_ids["w1"]: b"w1-url=http://w1:8083", member_ids["w2"]: b"w2-url=http://w2:8083"}
        assert joined[follower_name].members == []

        generation = leader.generation_id
        plan = {member_ids["w1"]: b"connectors=[a];tasks=[a-0]",
                member_ids["w2"]: b"connectors=[b];tasks=[a-1,b-0]"}
        synced: dict[str, object] = {}

        def sync(name: str) -> None:
            assignments = [_Assignment(member_id=m, assignment=a) for m, a in plan.items()] \
                if name == leader_name else []
            synced[name] = clients[name].request(
                SYNC, 5, group_id=GROUP, generation_id=generation, member_id=member_ids[name],
                group_instance_id=None, protocol_type="connect", protocol_name="default",
                assignments=assignments)

        threads = [threading.Thread(target=sync, args=(n,), daemon=True)
                   for n in (follower_name, leader_name)]  # the follower waits for the leader
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert set(synced) == set(workers), "a SyncGroup did not complete within 20 s"
        for name, resp in synced.items():
            assert (resp.error_code, resp.protocol_type, resp.protocol_name) == \
                (0, "connect", "default")
            assert resp.assignment == plan[member_ids[name]]
            beat = clients[name].request(HEARTBEAT, 4, group_id=GROUP, generation_id=generation,
                                         member_id=member_ids[name], group_instance_id=None)
            assert beat.error_code == 0

        (described,) = clients["w1"].request(DESCRIBE, 5, groups=[GROUP],
                                             include_authorized_operations=False).groups
        assert (described.group_state, described.protocol_type, described.protocol_data) == \
            ("Stable", "connect", "default")
        assert {m.member_id: m.member_assignment for m in described.members} == plan
        listed = clients["w1"].request(LIST, 4, states_filter=[]).groups
        assert [(g.group_id, g.protocol_type, g.group_state) for g in listed] == \
            [(GROUP, "connect", "Stable")]

        left = clients["w1"].request(LEAVE, 4, group_id=GROUP, members=[
            _Leaving(member_id=mid, group_instance_id=None) for mid in member_ids.values()])
        assert left.error_code == 0 and all(m.error_code == 0 for m in left.members)
        (after,) = clients["w1"].request(DESCRIBE, 5, groups=[GROUP],
                                         include_authorized_operations=False).groups
        assert (after.group_state, after.members) in (("Empty", []), ("Dead", []))
    finally:
        for client in clients.values():
            client.close()
