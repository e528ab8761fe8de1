"""DeleteGroups of a KIP-848 group that went as its last member left.

Kafka keeps such a group, Empty, until the next offset cleanup; a DeleteGroups of it
deletes it (GroupMetadataManager.validateDeleteGroup accepts an Empty consumer group:
error NONE), and an OffsetCommit from an old member then finds no group:
GROUP_ID_NOT_FOUND from v9 (OffsetMetadataManager), ILLEGAL_GENERATION before.
kafka-wire remembers the dropped group until the cleanup (a DROPPED record); the delete
forgets it at once, and so does a restart after the delete."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.groups.test_kip848_empty_group_restart import _commit, _join_and_leave
from tests.rawclient import RawClient

UNKNOWN_MEMBER = Errors.UnknownMemberIdError.errno
GROUP_NOT_FOUND = Errors.GroupIdNotFoundError.errno
ILLEGAL_GENERATION = Errors.IllegalGenerationError.errno


def _delete(client, group="g") -> int:
    r = client.request(codec.ApiKey.DeleteGroups, 2, groups_names=[group])
    return r.results[0].error_code


def test_deleting_a_group_that_emptied_deletes_it(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    _join_and_leave(first)  # its old member is UNKNOWN_MEMBER_ID: the group is Empty
    with RawClient(first.bootstrap_servers) as c:
        assert _delete(c) == 0
        assert _commit(c) == GROUP_NOT_FOUND
        assert _commit(c, version=8) == ILLEGAL_GENERATION
        assert _delete(c) == GROUP_NOT_FOUND  # gone
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        assert _commit(c) == GROUP_NOT_FOUND  # the deletion was kept


def test_deleting_it_after_a_restart_deletes_it_for_good(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=1)
    _join_and_leave(first)
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        assert _commit(c) == UNKNOWN_MEMBER  # remembered across the restart
        assert _delete(c) == 0
        assert _commit(c) == GROUP_NOT_FOUND
    second.stop()
    third = broker_factory(listen_port=port)
    with RawClient(third.bootstrap_servers) as c:
        assert _commit(c) == GROUP_NOT_FOUND
        assert _delete(c) == GROUP_NOT_FOUND
