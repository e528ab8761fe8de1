"""SaslAuthenticate (key 36), v0–v2.

Carries the SASL token after a SaslHandshake v1 — PLAIN: username
``$ConnectionString``, password an Event Hubs connection string (key or SAS
token); OAUTHBEARER: a local JWT (:mod:`kafka_wire.eventhubs.oauth`) —
checked by the broker's authenticator (``services.auth.login``), which binds the
connection to the namespace the Endpoint (or the token's audience) names. A failure is answered with
SASL_AUTHENTICATION_FAILED and a message saying why, then the connection is
closed, as Kafka does; a SaslAuthenticate without a handshake before it is
ILLEGAL_SASL_STATE, also closed. ``session_lifetime_ms`` is 0: Event Hubs
keeps connections open after their SAS token expires, so no
re-authentication is asked for (clients may still re-authenticate, KIP-368).
Allowed before authentication.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.server import Raw

_Response = codec.response_class(codec.ApiKey.SaslAuthenticate)


def _refuse(ctx, errno: int, message: str) -> Raw:
    """The error answer, sent before the connection is closed."""
    version = ctx.version
    body = _Response(version=version, error_code=errno, error_message=message, auth_bytes=b"",
                     session_lifetime_ms=0).encode(version=version)
    return Raw([bytes(body)], codec.is_flexible(codec.ApiKey.SaslAuthenticate, version),
               close_after=True)


@handles(codec.ApiKey.SaslAuthenticate, 0, 2, pre_auth=True)
def sasl_authenticate(request, ctx):
    state = ctx.connection
    if not state.attrs.pop("sasl_handshake", False):
        return _refuse(ctx, Errors.IllegalSaslStateError.errno,
                       "SaslAuthenticate must follow a SaslHandshake")
    problem = ctx.services.auth.login(ctx.services, state, bytes(request.auth_bytes or b""),
                                      state.sasl_mechanism or "PLAIN")
    if problem:
        return _refuse(ctx, Errors.SaslAuthenticationFailedError.errno, problem)
    return _Response(version=ctx.version, error_code=0, error_message=None, auth_bytes=b"",
                     session_lifetime_ms=0)
