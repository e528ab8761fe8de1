"""The ``$cbs`` node: claims-based security, as Event Hubs does it.

A client puts a token (``put-token``: ``type`` ``servicebus.windows.net:sastoken``
with a SAS token as the body, or ``jwt`` where the namespace has OAuth; ``name``
the audience it is for) before attaching links; the connection keeps the
principal each token authenticates, by audience, until it expires or a newer
token for that audience replaces it. The same SAS policies, rights, hub scope,
publisher policies and expiry apply as on the Kafka endpoint.

A ``jwt`` is for the namespace the connection opened (its hostname), so the
global audience ``https://eventhubs.azure.net`` the SDKs ask Entra for is good
for any namespace. An open namespace (no SAS rules, no OAuth) takes anyone: a
TokenCredential's token is accepted and held as no credential, as over HTTP.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from proton import Message

from kafka_wire.eventhubs.door import Jwt, Refused, SasToken

if TYPE_CHECKING:
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)

SAS_TOKEN = "servicebus.windows.net:sastoken"
JWT = "jwt"


def reply(status: int, description: str) -> Message:
    """A request node's answer. The description goes under both spellings: the Python
    SDK's pyamqp reads ``statusDescription`` from a ``$management`` answer (the name it
    passes for ``status-description`` does not reach its management link)."""
    return Message(properties={"status-code": status, "status-description": description,
                               "statusDescription": description})


def request_properties(request: Message) -> dict | None:
    """A request's application properties, or None when they are not a map (a client
    may send a list there: proton decodes it as one)."""
    props = request.properties
    return {} if props is None else props if isinstance(props, dict) else None


# An entity's URI: a namespace host, a hub and a consumer group (256 each) and a partition.
MAX_AUDIENCE = 1024
NOT_A_MAP = "the request's application properties must be a map (operation, type, name...)"


def answer(conn: AmqpConnection, request: Message) -> Message:
    props = request_properties(request)
    if props is None:
        return reply(400, NOT_A_MAP)
    operation = props.get("operation")
    plan = conn.fault_plan
    if plan is not None and plan.active:
        audience = str(props.get("name") or "")  # sb://HOST/HUB[/...]: scoped by its hub
        hub = audience.split("://", 1)[-1].split("/")[1:2]
        target = {"namespace": conn.namespace.name, "hub": hub[0] if hub else None,
                  "client": conn.container, "protocol": "amqp"}
        fault = plan.fire(("cbs-fail",), target)
        if fault is not None:
            return reply(fault.params["status"], fault.params["description"])
        # token-refused: only a renewal (the connection holds a token for the audience),
        # so the first authorization succeeds and the SDK's refresh fails; the old
        # token stays until it expires, as the service keeps it
        if audience in conn.tokens and (fault := plan.fire(("token-refused",), target)):
            return reply(401, fault.params["description"])
    if operation != "put-token":
        return reply(400, f"operation {operation!r} is not supported on $cbs: use put-token")
    kind, audience, token = props.get("type"), props.get("name"), request.body
    if not isinstance(token, str) or not isinstance(audience, str) or not audience:
        return reply(400, "put-token needs a token (string body) and its audience (name)")
    if len(audience) > MAX_AUDIENCE:
        return reply(400, f"the audience (name) is over {MAX_AUDIENCE} characters: name the "
                          "namespace, event hub or link entity the token is for")
    door = conn.namespace.door
    model = conn.namespace.model
    oauth = model is not None and model.oauth
    if kind == SAS_TOKEN:
        credential = SasToken(token)
    elif kind == JWT and (oauth or model is None or model.open):
        # for the namespace this connection opened, not the one the audience would pick
        credential = Jwt(token, by_host=True)
    else:
        return reply(400, f"token type {kind!r} is not accepted here: use {SAS_TOKEN}"
                          + (" or jwt" if oauth else ""))
    try:  # the door logs a refusal, once per client
        principal = door.sign_in(credential, conn.peer, f"AMQP put-token for {audience}")
    except Refused as exc:
        return reply(401, exc.message)
    if principal is None:  # the door lets this client in without one: nothing to hold
        log.info("AMQP connection from %s: token for %s accepted; namespace %s takes clients "
                 "without one", conn.peer, audience, door.name)
        return reply(202, "Accepted")
    refused = conn.put_token(str(audience), principal)
    if refused is not None:
        return reply(403, refused)
    log.info("AMQP connection from %s: token for %s accepted as %s", conn.peer, audience, principal)
    return reply(202, "Accepted")
