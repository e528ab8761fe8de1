"""What one AMQP connection may hold, and how long it may go unauthenticated.

Event Hubs' quotas page gives no per-connection figure for sessions or links
(Microsoft's AMQP stack, in IoT Hub's traces, advertises a channel-max of 8,191
and a handle-max of 262,143: protocol ceilings, not budgets). These defaults are generous for any
SDK: a processor that owns every partition of a Dedicated hub (1,024) on one
connection, one session per link, plus ``$cbs`` and ``$management``. What they
stop is a client opening links by the ten thousand on one connection. The
limit of one message is not here: it is the namespace's publication limit, which
the receiving link advertises as its max-message-size.

The server holds one :class:`ConnectionLimits` (``AmqpServer.limits``); replace
it to change them (tests lower them to reach them quickly). See docs/amqp.md.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConnectionLimits"]


@dataclass(frozen=True)
class ConnectionLimits:
    # Sessions open at once; the next begin is ended with amqp:resource-limit-exceeded.
    # (Not advertised as the open's channel-max: proton would answer a begin past it
    # by closing the whole connection with a framing error.)
    max_sessions: int = 2048
    # Links attached at once (over all sessions); the next attach is refused with
    # amqp:resource-limit-exceeded before a node sees it.
    max_links: int = 2048
    # Bytes of messages still arriving (partly received, over all links) proton may
    # hold for the connection; past it the message that grew is refused with
    # amqp:resource-limit-exceeded. Never below one message of the namespace's limit.
    max_arriving_bytes: int = 64 * 1024 * 1024
    # Audiences holding a token put on $cbs (the SDKs put one per link's entity);
    # a put-token for one more, once the expired ones are dropped, gets status 403.
    max_tokens: int = 4096
    # On a namespace that requires authentication, a connection with no token put
    # on $cbs (and no SASL PLAIN credentials) by then is closed with
    # amqp:unauthorized-access.
    unauthenticated_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if min(self.max_sessions, self.max_links, self.max_arriving_bytes, self.max_tokens) < 1 or \
                self.unauthenticated_timeout_s <= 0:
            raise ValueError(f"AMQP connection limits must be positive: {self}")
