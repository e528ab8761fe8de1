"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) on the wire,
driven with raw requests (real clients are in test_java_groups / test_groups_cli)."""
from __future__ import annotations

import uuid

import kafka.errors as Errors

from kafka_wire import codec
from tests.rawclient import RawClient

HEARTBEAT, DESCRIBE, JOIN, METADATA = 68, 69, 11, 3


def _heartbeat(client, version, **fields):
    base = dict(group_id="g", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"],
                server_assignor=None, topic_partitions=[])
    if version >= 1:
        base["subscribed_topic_regex"] = None
    base.update(fields)
    return client.request(HEARTBEAT, version, **base)


def _topic_id(client, topic: str) -> uuid.UUID:
    topic_cls = codec.request_class(METADATA).MetadataRequestTopic
    meta = client.request(METADATA, 12, topics=[topic_cls(topic_id=None, name=topic)],
                          allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    (t,) = meta.topics
    return t.topic_id


def test_heartbeat_v0_coordinator_names_the_member_and_assigns_by_topic_id(broker):
    broker.create_hub("orders", partitions=3)
    with RawClient(broker.bootstrap_servers) as client:
        resp = _heartbeat(client, 0)
        assert (resp.error_code, resp.member_epoch) == (0, 1)
        assert resp.member_id and resp.heartbeat_interval_ms > 0
        (tp,) = resp.assignment.topic_partitions
        assert (tp.topic_id, sorted(tp.partitions)) == (_topic_id(client, "orders"), [0, 1, 2])
        # Nothing changed: no assignment in the answer (null), same epoch.
        again = _heartbeat(client, 0, member_id=resp.member_id, member_epoch=1,
                           rebalance_timeout_ms=-1, subscribed_topic_names=None,
                           topic_partitions=None)
        assert (again.error_code, again.member_epoch, again.assignment) == (0, 1, None)
        left = _heartbeat(client, 0, member_id=resp.member_id, member_epoch=-1,
                          rebalance_timeout_ms=-1, subscribed_topic_names=None,
                          topic_partitions=None)
        assert (left.error_code, left.member_epoch) == (0, -1)


def test_heartbeat_v1_keeps_the_client_member_id(broker):
    broker.create_hub("orders", partitions=2)
    member = str(uuid.uuid4())
    with RawClient(broker.bootstrap_servers) as client:
        resp = _heartbeat(client, 1, member_id=member)
        assert (resp.error_code, resp.member_id, resp.member_epoch) == (0, member, 1)
        missing = _heartbeat(client, 1, group_id="g", member_id="ghost", member_epoch=5)
        assert missing.error_code == Errors.UnknownMemberIdError.errno


def _assigned(client, resp) -> dict[str, list[int]]:
    names = {}
    for tp in resp.assignment.topic_partitions:
        meta = client.request(METADATA, 12, topics=[codec.request_class(METADATA)
                                                    .MetadataRequestTopic(topic_id=tp.topic_id,
                                                                          name=None)],
                              allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
        names[meta.topics[0].name] = sorted(tp.partitions)
    return names


def test_regex_subscriptions_resolve_against_the_hubs_and_follow_new_ones(broker):
    broker.create_hub("rx-a", partitions=2)
    broker.create_hub("rx-b", partitions=1)
    broker.create_hub("rx-other-x", partitions=1)
    member = str(uuid.uuid4())
    with RawClient(broker.bootstrap_servers) as client:
        bad = _heartbeat(client, 1, group_id="rx", member_id=member, subscribed_topic_names=[],
                         subscribed_topic_regex="rx-[")
        assert bad.error_code == 128 and "SubscribedTopicRegex" in bad.error_message
        resp = _heartbeat(client, 1, group_id="rx", member_id=member, subscribed_topic_names=[],
                          subscribed_topic_regex="rx-[a-z]")  # a whole-name match
        assert resp.error_code == 0
        assert _assigned(client, resp) == {"rx-a": [0, 1], "rx-b": [0]}
        described = client.request(DESCRIBE, 0, group_ids=["rx"],
                                   include_authorized_operations=False).groups[0].members[0]
        assert (described.subscribed_topic_regex, described.subscribed_topic_names) == \
            ("rx-[a-z]", [])

        broker.create_hub("rx-c", partitions=1)  # matches: joins the subscription
        owned = [codec.request_class(HEARTBEAT).TopicPartitions(topic_id=tp.topic_id,
                                                                partitions=tp.partitions)
                 for tp in resp.assignment.topic_partitions]
        more = _heartbeat(client, 1, group_id="rx", member_id=member, member_epoch=1,
                          rebalance_timeout_ms=-1, subscribed_topic_names=None,
                          topic_partitions=owned)
        assert more.error_code == 0 and more.member_epoch == 2
        assert _assigned(client, more) == {"rx-a": [0, 1], "rx-b": [0], "rx-c": [0]}

        # An empty regex drops it; the names alone remain.
        names_only = _heartbeat(client, 1, group_id="rx", member_id=member, member_epoch=2,
                                rebalance_timeout_ms=-1, subscribed_topic_names=["rx-b"],
                                subscribed_topic_regex="", topic_partitions=None)
        assert names_only.error_code == 0 and names_only.member_epoch == 2
        assert _assigned(client, names_only) == {"rx-b": [0]}, "revoke the regex's partitions"
        revoked = _heartbeat(client, 1, group_id="rx", member_id=member, member_epoch=2,
                             rebalance_timeout_ms=-1, subscribed_topic_names=None,
                             topic_partitions=[codec.request_class(HEARTBEAT).TopicPartitions(
                                 topic_id=_topic_id(client, "rx-b"), partitions=[0])])
        assert (revoked.error_code, revoked.member_epoch) == (0, 3)


def test_a_backtracking_regex_cannot_stall_the_coordinator(broker):
    # With a backtracking engine, (a+)+b against 200 a's would never return; RE2 is linear.
    broker.create_hub("a" * 200, partitions=1)
    with RawClient(broker.bootstrap_servers, timeout=5.0) as client:
        resp = _heartbeat(client, 1, group_id="redos", member_id=str(uuid.uuid4()),
                          subscribed_topic_names=[], subscribed_topic_regex="(a+)+b")
        assert resp.error_code == 0 and resp.assignment.topic_partitions == []
        lookahead = _heartbeat(client, 1, group_id="redos-2", member_id=str(uuid.uuid4()),
                               subscribed_topic_names=[], subscribed_topic_regex="(?=a)a")
        assert lookahead.error_code == 128 and "invalid perl operator" in lookahead.error_message


def test_describe_reports_members_epochs_and_assignments_and_errors_per_group(broker):
    broker.create_hub("orders", partitions=2)
    with RawClient(broker.bootstrap_servers) as client:
        member = _heartbeat(client, 1, member_id="m-1").member_id
        # A classic group of the same namespace.
        JoinProtocol = codec.request_class(JOIN).JoinGroupRequestProtocol
        client.request(JOIN, 3, group_id="classic", session_timeout_ms=10_000,
                       rebalance_timeout_ms=10_000, member_id="", group_instance_id=None,
                       protocol_type="consumer",
                       protocols=[JoinProtocol(name="range", metadata=b"")])
        resp = client.request(DESCRIBE, 1, group_ids=["g", "nope", "classic", ""],
                              include_authorized_operations=True)
        g, nope, classic, empty = resp.groups
        assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch,
                g.assignor_name, g.authorized_operations) == (0, "Stable", 1, 1, "uniform", 328)
        (m,) = g.members
        assert (m.member_id, m.member_epoch, m.subscribed_topic_names, m.member_type) == \
            (member, 1, ["orders"], 1)
        assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == \
            [("orders", [0, 1])] == \
            [(tp.topic_name, tp.partitions) for tp in m.target_assignment.topic_partitions]
        assert nope.error_code == Errors.GroupIdNotFoundError.errno
        assert classic.error_code == Errors.GroupIdNotFoundError.errno
        assert classic.error_message == "Group classic is not a consumer group."
        assert empty.error_code == Errors.InvalidGroupIdError.errno
        v0 = client.request(DESCRIBE, 0, group_ids=["g"], include_authorized_operations=False)
        assert v0.groups[0].authorized_operations == -2147483648
