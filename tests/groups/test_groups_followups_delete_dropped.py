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
from tests.groups.kip848_member import GROUP_NOT_FOUND, UNKNOWN_MEMBER, commit, emptied_group, restarted
from tests.rawclient import RawClient

ILLEGAL_GENERATION = Errors.IllegalGenerationError.errno


def _delete(client, group="g") -> int:
    r = client.request(codec.ApiKey.DeleteGroups, 2, groups_names=[group])
    return r.results[0].error_code


def test_deleting_a_group_that_emptied_deletes_it(broker_factory):
    first = emptied_group(broker_factory)  # its old member is UNKNOWN_MEMBER_ID: the group is Empty
    with RawClient(first.bootstrap_servers) as c:
        assert _delete(c) == 0
        assert commit(c) == GROUP_NOT_FOUND
        assert commit(c, version=8) == ILLEGAL_GENERATION
        assert _delete(c) == GROUP_NOT_FOUND  # gone
    second = restarted(broker_factory, first)
    with RawClient(second.bootstrap_servers) as c:
        assert commit(c) == GROUP_NOT_FOUND  # the deletion was kept


def test_deleting_it_after_a_restart_deletes_it_for_good(broker_factory):
    second = restarted(broker_factory, emptied_group(broker_factory))
    with RawClient(second.bootstrap_servers) as c:
        assert commit(c) == UNKNOWN_MEMBER  # remembered across the restart
        assert _delete(c) == 0
        assert commit(c) == GROUP_NOT_FOUND
    third = restarted(broker_factory, second)
    with RawClient(third.bootstrap_servers) as c:
        assert commit(c) == GROUP_NOT_FOUND
        assert _delete(c) == GROUP_NOT_FOUND
