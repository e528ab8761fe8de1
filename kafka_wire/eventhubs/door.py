"""The namespace's one door: every front end (Kafka, AMQP, HTTP, the console)
enters a namespace here, and nowhere else decides who a client is.

:class:`Door` is the namespace's :class:`~kafka_wire.eventhubs.policy.NamespacePolicy`
(rights, tier rules, quotas, bounds) plus identification: :meth:`Door.sign_in`
checks the IP filter, then the credential a front end read off its wire
(a connection string, a SAS token, a JWT, a policy name and key, an HTTP
``Authorization`` header, or none), then whether the namespace lets anonymous
clients in. A refusal is a :class:`Refused` carrying a protocol-neutral
:class:`Refusal` (:mod:`.refusals`), which each front end maps to its own words
(a Kafka error code, an AMQP condition, an HTTP status).

Which door a client knocks on is decided before it, from what names a
namespace: a host (:func:`door_for_host`) or a credential that carries one
(:func:`door_for_credential`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from kafka_wire.eventhubs import auth, connection_string, oauth
from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.eventhubs.policy import NamespacePolicy
from kafka_wire.eventhubs.refusals import Refusal, Refused
from kafka_wire.log_lines import RepeatedWarnings, client_address

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime, Services
    from kafka_wire.coordinator.clock import Clock
    from kafka_wire.eventhubs.auth import Principal
    from kafka_wire.eventhubs.model import EventHubsModel
    from kafka_wire.eventhubs.report import CompatibilityReport

__all__ = ["Door", "Refusal", "Refused", "ConnectionString", "SasToken", "Jwt", "SasKey",
           "AuthorizationHeader", "Credential", "door_for_host", "door_for_credential"]

log = logging.getLogger(__name__)


# -- credentials, as the front ends read them off their wires ---------------------------
@dataclass(frozen=True, slots=True)
class ConnectionString:
    """SASL PLAIN's password (Kafka, AMQP) or the console's sign-in form."""
    text: str
    kafka: bool = True  # over the Kafka endpoint, which the Basic tier lacks


@dataclass(frozen=True, slots=True)
class SasToken:
    """A bare SAS token (AMQP's put-token on ``$cbs``)."""
    token: str


@dataclass(frozen=True, slots=True)
class Jwt:
    """A bearer JWT (OAUTHBEARER, ``$cbs`` type jwt), for namespaces with OAuth.
    It is checked for the door it is handed to: the global audience
    ``https://eventhubs.azure.net`` (or none) is good for that namespace.
    ``by_host``: the client named the namespace by host (AMQP's open hostname),
    not by the token (Kafka's SASL login, whose door the audience picked). Such a
    namespace, when it takes anyone, takes the token as none, as HTTP takes a
    bearer token; elsewhere a namespace without OAuth refuses it."""
    token: str
    by_host: bool = False


@dataclass(frozen=True, slots=True)
class SasKey:
    """A SAS policy name and key (AMQP SASL PLAIN, as Service Bus clients send them)."""
    name: str
    key: str


@dataclass(frozen=True, slots=True)
class AuthorizationHeader:
    """HTTP ``Authorization``: a SAS token, bare or as a bearer token, or a bearer JWT."""
    value: str


Credential = Union[ConnectionString, SasToken, Jwt, SasKey, AuthorizationHeader]


class Door(NamespacePolicy):
    """One namespace's door (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.model: EventHubsModel | None = None
        # A client with a wrong key retries many times a second: one line, then a count
        # (per door, so that one broker's history never silences another's).
        self._refusals = RepeatedWarnings(log)

    def bind(self, runtime: NamespaceRuntime, report: CompatibilityReport, clock: Clock,
             model: EventHubsModel | None = None, bounds: Bounds | None = None) -> None:
        super().bind(runtime, report, clock)
        self.model = model
        self.bounds = bounds or Bounds()

    @property
    def name(self) -> str:
        return self.runtime.name

    @property
    def requires_auth(self) -> bool:
        ns = self.runtime.model
        return ns is not None and ns.requires_auth

    def admit(self, peer: str, what: str = "connection") -> None:
        """Refused(ADDRESS) when the IP filter turns away a client at ``peer``."""
        address = client_address(peer)
        why = self.address_refused(address)
        if why is not None:
            self._refusals.warn(f"{what}-address", address, f"{what} from {peer} to namespace "
                                                       f"{self.name} refused: {why}")
            raise Refused(Refusal.ADDRESS, why)

    def sign_in(self, credential: Credential | None, peer: str, what: str = "connection",
                data_plane: bool = True) -> Principal | None:
        """The principal ``credential`` proves in this namespace, None for an
        anonymous client where the namespace lets one in; else :class:`Refused`.
        ``what`` names the front end's request in the one log line a refusal gets.
        The IP filter guards the data plane; the management plane (ARM) is not
        behind it on Azure (``data_plane=False``), so rules cannot lock their owner out."""
        if data_plane:
            self.admit(peer, what)
        principal = None
        if credential is not None:
            try:
                principal = self._verify(credential)
            except (auth.AuthError, oauth.TokenError, connection_string.ConnectionStringError) as exc:
                self._refuse(peer, what, str(exc))
        if principal is None:
            if self.requires_auth:
                self._refuse(peer, what, f"namespace {self.name} requires authentication: send a "
                                         "SAS token or a connection string (or, with OAuth, a JWT)")
            return None
        if principal.namespace != self.name:
            self._refuse(peer, what, f"the credential is for namespace {principal.namespace!r}, "
                                     f"not {self.name!r}")
        return principal

    def authorize(self, principal, right: str, hub: str | None = None, what: str = "this") -> None:
        """Refused(DENIED) unless ``principal`` may exercise ``right`` on ``hub``."""
        if not self.allows(principal, right, hub):
            where = f"event hub {hub!r}" if hub else f"namespace {self.name!r}"
            raise Refused(Refusal.DENIED, f"{what} needs {right} on {where}; the credential "
                                          f"({principal}) does not grant it")

    def _verify(self, credential: Credential) -> Principal | None:
        model, name = self.model, self.name
        now_s = self.clock.now_ms() / 1000
        if isinstance(credential, ConnectionString):
            return auth.authenticate(model, credential.text, now_s, kafka=credential.kafka)
        if isinstance(credential, SasToken):
            return auth.authenticate_sas_token(model, name, credential.token, now_s)
        if isinstance(credential, Jwt):
            if credential.by_host:
                ns = self.runtime.model
                if ns is None or ns.takes_anyone:
                    return None  # a TokenCredential's token, where no credential is needed
                if ns.oauth is None:
                    raise auth.AuthError(f"namespace {name!r} takes SAS tokens, not bearer tokens")
            # oauth decides: the namespace's keys, or an open namespace's any (Kafka's login)
            return auth.verify_jwt(model, credential.token, now_s, namespace=name)
        if isinstance(credential, SasKey):
            return auth.authenticate_key(model, name, credential.name, credential.key)
        return auth.authenticate_header(model, name, credential.value, now_s)

    def _refuse(self, peer: str, what: str, why: str) -> None:
        self._refusals.warn(f"{what}-auth", client_address(peer),
                       f"{what} from {peer} to namespace {self.name} refused: {why}")
        raise Refused(Refusal.UNAUTHENTICATED, why)


def door_for_host(services: Services, host: str | None) -> Door:
    """The door of the namespace ``host`` names (no host: the default namespace);
    Refused(NOT_FOUND) when it names none served here."""
    model = services.eventhubs
    name = model.namespace_for_host(host) if host else model.default_namespace
    runtime = services.namespaces.get(name) if name else None
    if runtime is None:
        served = ", ".join(sorted(services.namespaces))
        raise Refused(Refusal.NOT_FOUND, f"host {host!r} names a namespace this server does not "
                                         f"serve (it serves: {served})")
    return runtime.door


def door_for_credential(services: Services, credential: Credential) -> Door:
    """The door of the namespace a self-describing credential names: a connection
    string's Endpoint host, a JWT's audience."""
    try:
        if isinstance(credential, ConnectionString):
            return door_for_host(services, connection_string.parse(credential.text).host)
        if isinstance(credential, Jwt):
            token = credential.token
            name = oauth.authenticate_token(services.eventhubs, token,
                                            services.clock.now_ms() / 1000).namespace
            return door_for_host(services, f"{name}.servicebus.windows.net")
    except (connection_string.ConnectionStringError, oauth.TokenError) as exc:
        raise Refused(Refusal.UNAUTHENTICATED, str(exc)) from None
    return services.default.door
