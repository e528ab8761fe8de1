"""The namespace's refusals (:mod:`kafka_wire.eventhubs.refusals`) in HTTP's terms, in
one place: the status the data plane answers (REST send, and the console, as the
Event Hubs REST API does) and the ARM error the management API answers."""
from __future__ import annotations

from kafka_wire.eventhubs.refusals import Refusal

__all__ = ["STATUS", "ARM_ERRORS", "status", "arm_error"]

# The data plane: sign-in and publication.
STATUS: dict[Refusal, int] = {
    Refusal.UNAUTHENTICATED: 401,
    Refusal.ADDRESS: 403,          # the IP filter
    Refusal.DENIED: 401,           # a token without the right, as the service answers
    Refusal.NOT_FOUND: 404,
    Refusal.INVALID: 400,
    Refusal.LIMIT: 403,
    Refusal.TOO_LARGE: 413,
    Refusal.UNSUPPORTED: 403,      # the tier's rules (Event Hubs answers policy refusals with 403)
    Refusal.DISABLED: 403,
    Refusal.BUSY: 503,             # over the throughput units for longer than ?timeout=
    Refusal.REPLICATION: 503,      # geo-replication lag past its limit, or failing over: retry
    Refusal.FAILED: 503,           # the log failed the append (a storage error): retry later
}

# The management plane (ARM): (status, error code).
ARM_ERRORS: dict[Refusal, tuple[int, str]] = {
    Refusal.UNAUTHENTICATED: (401, "AuthenticationFailed"),
    Refusal.NOT_FOUND: (404, "ResourceNotFound"),
    Refusal.INVALID: (400, "BadRequest"),
    Refusal.LIMIT: (400, "BadRequest"),
}
_ARM_OTHERWISE = (403, "AuthorizationFailed")


def status(reason: Refusal) -> int:
    """The data plane's HTTP status for a refusal."""
    return STATUS[reason]


def arm_error(reason: Refusal) -> tuple[int, str]:
    """The management API's (status, ARM error code) for a refusal."""
    return ARM_ERRORS.get(reason, _ARM_OTHERWISE)
