"""Why a namespace says no, in no protocol's words.

The door (:mod:`.door`), the namespace's rules (:mod:`.policy`, :mod:`.tier_rules`)
and publication (:mod:`.publication`) answer with a :class:`Denial`: a
:class:`Refusal` (the kind of no), the message for the client, and the rule
where one decided it (a tier rule of :mod:`.tier_rules`, or the same id where the
broker's ``[limits]`` bound the same thing). Each front end maps a denial to
its own terms in one place: Kafka error codes in :mod:`kafka_wire.apis.refusals`,
AMQP conditions in :data:`kafka_wire.amqp.connection.CONDITIONS`, HTTP statuses
and ARM errors in :mod:`kafka_wire.rest.refusals`.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Refusal", "Denial", "Refused"]


class Refusal(Enum):
    """Why the namespace said no."""
    UNAUTHENTICATED = "unauthenticated"  # no credential where one is needed, or a bad one
    ADDRESS = "address"                  # the namespace's IP filter
    DENIED = "denied"                    # a valid principal without the right
    NOT_FOUND = "not-found"              # no such namespace, event hub or partition
    INVALID = "invalid"                  # a malformed name, or a value outside its range
    LIMIT = "limit"                      # a bounded resource or quota is exhausted
    TOO_LARGE = "too-large"              # an event, batch or value over the size allowed
    UNSUPPORTED = "unsupported"          # a feature the namespace's tier does not have
    DISABLED = "disabled"                # the entity is not Active (an event hub's status)
    BUSY = "busy"                        # over the throughput units for longer than the client waits
    REPLICATION = "replication"          # geo-replication: lag past its limit, quorum paused, failing over
    FAILED = "failed"                    # the broker failed (storage): not the client's doing


@dataclass(frozen=True, slots=True)
class Denial:
    """One no: the kind, what to tell the client, and the rule that decided it
    (None where no named rule did, e.g. a missing right)."""
    reason: Refusal
    message: str
    rule: str | None = None


class Refused(Exception):
    """A refusal raised: the door's sign-in and lookups raise, where the policy's
    checks return a :class:`Denial`."""

    def __init__(self, reason: Refusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
