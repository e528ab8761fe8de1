"""The Event Hubs view of an event hub's consumer groups."""
from __future__ import annotations

import uuid

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.eventhubs.groups_view import consumer_groups
from kafka_wire.coordinator.group_coordinator import GroupCoordinator

from tests.unit.coordinator.helpers import SESSION, assign, run, sub


def test_default_group_kafka_groups_members_checkpoints_and_lag():
    async def body():
        clock = VirtualClock()
        c = GroupCoordinator(clock, GroupCoordinatorConfig(group_initial_rebalance_delay_ms=0),
                             position_resolver=lambda t, p, o: 1000 + o * 10,
                             topic_metadata=lambda t: (uuid.UUID(int=5), 2) if t == "hub" else None)
        first = await c.join_group("readers", "", None, "consumer", [("range", sub("hub"))],
                                   SESSION, 30_000, "app", "/10.0.0.1", 9)
        fut = c.join_group("readers", first.member_id, None, "consumer",
                           [("range", sub("hub"))], SESSION, 30_000, "app", "/10.0.0.1", 9)
        clock.advance(0)
        member = (await fut).member_id
        await c.sync_group("readers", 1, member, None, None, None,
                           [(member, assign(("hub", [0, 1])))])
        c.commit_offsets("readers", 1, member, None, [("hub", 0, 40, -1, "")])
        c.commit_offsets("archiver", -1, "", None, [("hub", 1, 7, -1, "")])
        c.commit_offsets("elsewhere", -1, "", None, [("other", 0, 1, -1, "")])
        c.consumer_group_heartbeat("modern", "m1", 0, None, None, 30_000, ["hub"], None, [])

        views = consumer_groups(c, "hub", lambda t, p: 50, partition_count=2,
                                configured=["billing"])
        assert [v.name for v in views] == ["$Default", "billing", "archiver", "modern", "readers"]
        default, billing, archiver, modern, readers = views
        assert not default.kafka_group and default.members == []
        assert [p.lag for p in default.partitions] == [None, None]
        assert (archiver.state, archiver.group_type) == ("Empty", "classic")
        assert archiver.partitions[1].sequence_number == 7
        assert readers.state == "Stable"
        [m] = readers.members
        assert (m.member_id, m.client_id, m.client_host, m.partitions) == \
            (member, "app", "/10.0.0.1", [0, 1])
        p0, p1 = readers.partitions
        assert (p0.sequence_number, p0.offset, p0.last_sequence_number, p0.lag, p0.owner) == \
            (40, "1400", 49, 10, member)
        assert (p1.sequence_number, p1.lag, p1.owner) == (None, None, member)
        assert modern.group_type == "consumer" and modern.members[0].partitions == [0, 1]
    run(body)
