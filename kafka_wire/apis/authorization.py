"""Authorization for the Kafka API modules: the namespace policy's answers
(``ctx.policy``, protocol-neutral: a principal, a right, a hub) mapped onto
Kafka error codes. The rights (Event Hubs' SAS rights):

- **Send**: Produce, InitProducerId.
- **Listen**: Fetch, ListOffsets, OffsetForLeaderEpoch, consumer-group and
  offset APIs.
- **Manage** (includes Send and Listen): topic, partition, config and group
  administration (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
  DeleteRecords, DeleteGroups, OffsetDelete).

A namespace-level principal covers every hub; a hub-level one (hub policy,
``EntityPath``, hub-scoped SAS token) only its hub, and never namespace-wide
administration (creating hubs, broker configs). Kafka consumer groups are
namespace-wide on Event Hubs, so any principal with Listen may use any group
id. A connection that did not authenticate (allowed where the namespace does
not require it) has no principal and may do everything.

Every function takes the request context and answers fast when there is no
principal. The policy's refusals are protocol-neutral; :mod:`.refusals` gives
their Kafka error codes. Another front end (AMQP, HTTP) asks the same policy
methods and maps the answers to its own errors.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire.apis.refusals import error_code
from kafka_wire.coordinator import consumer_protocol
from kafka_wire.eventhubs.rights import LISTEN, MANAGE, SEND

__all__ = ["SEND", "LISTEN", "MANAGE", "check", "visible", "topic_error", "cluster_error",
           "transactional_error", "transaction_visible", "group_allowed", "group_error",
           "group_visible", "commit_metadata_error"]

OK = 0
TOPIC_DENIED = Errors.TopicAuthorizationFailedError.errno
GROUP_DENIED = Errors.GroupAuthorizationFailedError.errno
CLUSTER_DENIED = Errors.ClusterAuthorizationFailedError.errno
TXN_DENIED = Errors.TransactionalIdAuthorizationFailedError.errno


def check(ctx, right: str, hub: str | None = None) -> bool:
    """May this connection exercise ``right`` on ``hub`` (None: the namespace)?"""
    return ctx.policy.allows(ctx.connection.principal, right, hub)


def visible(ctx, hub: str) -> bool:
    """Metadata shows ``hub`` to this connection (any right on it)."""
    return ctx.policy.sees(ctx.connection.principal, hub)


def topic_error(ctx, right: str, hub: str) -> int:
    """0, or TOPIC_AUTHORIZATION_FAILED when ``right`` on ``hub`` is missing."""
    return OK if check(ctx, right, hub) else TOPIC_DENIED


def cluster_error(ctx, right: str = MANAGE) -> int:
    """0, or CLUSTER_AUTHORIZATION_FAILED (broker configs, idempotent producer ids)."""
    return OK if check(ctx, right) else CLUSTER_DENIED


def transactional_error(ctx, timeout_ms: int | None = None, transactional_id: str | None = None) -> int:
    """A transactional request: Send, a tier with transactions and, in strict mode, a
    transaction timeout within Event Hubs' 15 minutes. With ``transactional_id``, a
    hub-scoped principal may touch only a transaction whose partitions are all on its
    hub: a key for one hub cannot end (or fence) another hub's transaction."""
    if not check(ctx, SEND):
        return TXN_DENIED
    if transactional_id is not None and not transaction_visible(ctx, transactional_id):
        return TXN_DENIED
    refusal = ctx.policy.transactions(timeout_ms, ctx.client_id)
    return error_code(refusal) if refusal else OK


def transaction_visible(ctx, transactional_id: str) -> bool:
    """May this connection see (describe, list, touch) the transaction? Every hub it
    holds partitions of must exist for the principal."""
    principal = ctx.connection.principal
    if principal is None or principal.hub is None or ctx.txns is None:
        return True
    st = ctx.txns.describe(transactional_id)
    return st is None or all(visible(ctx, topic) for topic, _ in st.partitions)


def session_timeout_error(ctx, timeout_ms: int) -> int:
    """INVALID_SESSION_TIMEOUT outside Event Hubs' 6-300 s (strict), else 0."""
    refusal = ctx.policy.session_timeout(timeout_ms, ctx.client_id)
    return error_code(refusal) if refusal else OK


def group_allowed(ctx, group_id: str | None, *, admin: bool = False) -> bool:
    """Listen (or Manage for ``admin`` operations) lets a connection use any Kafka group."""
    return check(ctx, MANAGE if admin else LISTEN, None if admin else _any_hub(ctx))


def _any_hub(ctx):
    p = ctx.connection.principal
    return p.hub if p is not None else None


def group_visible(ctx, group_id: str) -> bool:
    """May this connection describe (or list) the group? A hub-scoped principal only
    when every hub the group names is one it sees (its members' subscriptions and
    assignments, its committed offsets): as Metadata hides other hubs, a group would
    name them. Members whose metadata is not the consumer protocol's cannot be read
    (Kafka Connect, custom protocols): such a group is not shown to a hub-scoped key."""
    principal = ctx.connection.principal
    if principal is None or principal.hub is None:
        return True
    hubs = _group_hubs(ctx.groups, group_id)
    return hubs is not None and all(visible(ctx, hub) for hub in hubs)


def _group_hubs(groups, group_id: str) -> set[str] | None:
    """Every hub ``group_id`` names, or None when a member's metadata cannot be read."""
    hubs = {topic for topic, _partition in groups.offsets.get(group_id)}
    consumer = groups.consumer.groups.get(group_id)
    if consumer is not None:
        for m in consumer.members.values():
            hubs.update(m.subscribed_names, m.subscribed, m.assigned, m.revoking)
        for target in consumer.target.values():
            hubs.update(target)
        return hubs
    classic = groups.classic.get_group(group_id)
    if classic is None or not classic.members:
        return hubs
    try:
        for m in classic.members.values():
            if m.protocol_type != consumer_protocol.PROTOCOL_TYPE:
                return None
            for _name, metadata in m.protocols:
                subscription = consumer_protocol.decode_subscription(metadata)
                hubs.update(subscription.topics)
                hubs.update(topic for topic, _ in subscription.owned_partitions)
            hubs.update(topic for topic, _ in consumer_protocol.decode_assignment(m.assignment))
    except consumer_protocol.ConsumerProtocolError:
        return None
    return hubs


def group_error(ctx, group_id: str | None, *, admin: bool = False, joining: bool = False) -> int:
    """0 or the error for a group request: GROUP_AUTHORIZATION_FAILED without the right;
    in a strict namespace INVALID_GROUP_ID for a group.id over 256 characters and, when
    ``joining`` creates a new group, POLICY_VIOLATION past 1,000 Kafka groups."""
    if not group_allowed(ctx, group_id, admin=admin):
        return GROUP_DENIED
    if group_id is None:
        return OK
    refusal = ctx.policy.kafka_group(group_id, joining, ctx.client_id)
    return error_code(refusal) if refusal else OK


def commit_metadata_error(ctx, metadata: str | None) -> int:
    """OFFSET_METADATA_TOO_LARGE past Event Hubs' 1,024 bytes (strict), else 0."""
    if not metadata:
        return OK
    refusal = ctx.policy.commit_metadata(metadata, ctx.client_id)
    return error_code(refusal) if refusal else OK
