"""FindCoordinator (key 10), v0–v6.

There is one broker, so it coordinates every group and every transactional
id: the answer is always this broker. Key types 0 (group) and 1
(transaction) are served; batched ``coordinator_keys`` from v4. A
transactional id must not be empty (INVALID_REQUEST); any other key type
(share groups, 2) gets INVALID_REQUEST. Groups are namespace-wide, as on
Event Hubs.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error, transactional_error

_Response = codec.response_class(codec.ApiKey.FindCoordinator)
_Coordinator = _Response.Coordinator

GROUP, TRANSACTION = 0, 1


def _check(ctx, key: str | None, key_type: int) -> tuple[int, str | None]:
    if key_type not in (GROUP, TRANSACTION):
        return (Errors.InvalidRequestError.errno,
                f"unknown coordinator key type {key_type}: use 0 (group) or 1 (transaction)")
    if key_type == TRANSACTION and not key:
        return Errors.InvalidRequestError.errno, "the transactional id must not be empty"
    # Event Hubs: Listen for groups, Send (and a tier with transactions) for transactions.
    denied = group_error(ctx, key) if key_type == GROUP else transactional_error(ctx)
    return (denied, None) if denied else (Errors.NoError.errno, None)


@handles(codec.ApiKey.FindCoordinator, 0, 6)
def find_coordinator(request, ctx):
    version = ctx.version
    cluster = ctx.cluster
    key_type = request.key_type if version >= 1 else GROUP
    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            error, message = _check(ctx, key, key_type)
            ok = error == Errors.NoError.errno
            coordinators.append(_Coordinator(
                key=key, node_id=cluster.node_id if ok else -1, host=cluster.host if ok else "",
                port=cluster.port if ok else -1, error_code=error, error_message=message))
        return _Response(version=version, throttle_time_ms=0, coordinators=coordinators)
    error, message = _check(ctx, request.key, key_type)
    ok = error == Errors.NoError.errno
    return _Response(version=version, throttle_time_ms=0, error_code=error,
                     error_message=message, node_id=cluster.node_id if ok else -1,
                     host=cluster.host if ok else "", port=cluster.port if ok else -1)
