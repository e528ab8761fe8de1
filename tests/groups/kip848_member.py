"""One KIP-848 member of group "g" on hub "orders", spoken on the wire (RawClient): its
ConsumerGroupHeartbeat v1 and OffsetCommit, and a group that emptied across restarts of
a broker_factory broker."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.rawclient import RawClient

HEARTBEAT = 68
UNKNOWN_MEMBER = Errors.UnknownMemberIdError.errno
GROUP_NOT_FOUND = Errors.GroupIdNotFoundError.errno


def heartbeat(client, **fields):
    """A joining member's heartbeat (epoch 0, subscribed to "orders"), ``fields`` changed."""
    base = dict(group_id="g", member_id="m-1", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000, subscribed_topic_names=["orders"],
                server_assignor=None, topic_partitions=[], subscribed_topic_regex=None)
    base.update(fields)
    return client.request(HEARTBEAT, 1, **base)


def heartbeat_in(client, member_epoch: int, member_id: str = "m-1"):
    """A heartbeat in ``member_epoch`` that changes nothing (no subscription, no owned
    partitions sent); in epoch -1, the member leaves."""
    return heartbeat(client, member_id=member_id, member_epoch=member_epoch, rebalance_timeout_ms=-1,
                     subscribed_topic_names=None, topic_partitions=None)


def leave(client, member_id: str = "m-1"):
    return heartbeat_in(client, -1, member_id)


def commit(client, member: str = "m-1", epoch: int = 1, version: int = 9, *, group: str = "g",
           offset: int = 3) -> int:
    """The error code of an OffsetCommit of ``offset`` on orders-0 (epoch: the member
    epoch, or the generation before v9 and for a member-less tool's commit)."""
    r = client.request(codec.ApiKey.OffsetCommit, version, group_id=group,
                       generation_id_or_member_epoch=epoch, member_id=member,
                       group_instance_id=None, topics=[("orders", [(0, offset, -1, "")])])
    return r.topics[0].partitions[0].error_code


def join_and_leave(broker) -> None:
    """m-1 joins "g" and leaves: the group is empty, and remembered (Kafka: Empty)."""
    with RawClient(broker.bootstrap_servers) as c:
        joined = heartbeat(c)
        assert (joined.error_code, joined.member_epoch) == (0, 1), joined
        assert leave(c).error_code == 0
        assert commit(c) == UNKNOWN_MEMBER


def emptied_group(broker_factory):
    """A new broker with hub "orders" (1 partition) whose group "g" emptied."""
    broker = broker_factory()
    broker.create_hub("orders", partitions=1)
    join_and_leave(broker)
    return broker


def restarted(broker_factory, broker):
    """``broker`` stopped and started again on its port and data."""
    port = broker.port
    broker.stop()
    return broker_factory(listen_port=port)
