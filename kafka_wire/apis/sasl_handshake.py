"""SaslHandshake (key 17), v0–v1.

PLAIN (Event Hubs' connection strings, username ``$ConnectionString``) and
OAUTHBEARER (Entra ID there, local tokens here: :mod:`kafka_wire.eventhubs.oauth`)
are offered; any other mechanism gets UNSUPPORTED_SASL_MECHANISM with the list. v1 is followed by SaslAuthenticate
requests; v0 (clients before KIP-152) by one bare length-prefixed PLAIN token,
which the server hands to the Event Hubs layer (``services.auth.raw_sasl``)
and answers with an empty bare token, or by closing the connection.
Allowed before authentication.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.SaslHandshake)
MECHANISMS = ["PLAIN", "OAUTHBEARER"]


@handles(codec.ApiKey.SaslHandshake, 0, 1, pre_auth=True)
def sasl_handshake(request, ctx):
    mechanism = request.mechanism
    if mechanism not in MECHANISMS:
        return _Response(version=ctx.version, error_code=Errors.UnsupportedSaslMechanismError.errno,
                         mechanisms=MECHANISMS)
    state = ctx.connection
    state.sasl_mechanism = mechanism
    state.attrs["sasl_handshake"] = True
    if ctx.version == 0:
        state.attrs["sasl_raw"] = True
    return _Response(version=ctx.version, error_code=0, mechanisms=MECHANISMS)
