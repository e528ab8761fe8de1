"""Authentication: SASL PLAIN with ``$ConnectionString`` and a connection string as password, as Event Hubs' Kafka endpoint takes it.

The password is a namespace- or hub-level connection string carrying either a
policy name and key, or a complete SAS token. Its ``Endpoint`` host selects the
namespace (:meth:`EventHubsModel.namespace_for_host`). What comes out is a
:class:`Principal`: the namespace, the policy's rights and, when the string or
token is narrower than the namespace, the one hub (``EntityPath`` or token
resource) or publisher it is limited to.

A namespace without SAS policies (no config file) is *open*: any connection
string naming it is accepted with every right; SAS tokens are still checked
for expiry and scope, not for a signature (there is no key to check with).
"""
from __future__ import annotations

import hmac
import logging
import time
from dataclasses import dataclass

from kafka_wire.eventhubs import connection_string, oauth, sas
from kafka_wire.log_lines import RepeatedWarnings, client_address, iso_utc
from kafka_wire.eventhubs.model import (KAFKA_FRAME_LIMIT, LISTEN, MANAGE, SEND, EventHubsModel,
                                        Namespace)
from kafka_wire.eventhubs.refusals import Refusal, Refused
from kafka_wire.eventhubs.report import CompatibilityReport

__all__ = ["Principal", "AuthError", "authenticate_plain", "authenticate", "Authenticator", "USERNAME"]

log = logging.getLogger(__name__)

USERNAME = "$ConnectionString"
_ALL = frozenset({SEND, LISTEN, MANAGE})


class AuthError(Exception):
    """Authentication refused; the message is sent to the client."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a connection authenticated as."""
    namespace: str
    policy: str | None
    rights: frozenset[str]
    hub: str | None = None          # limited to this event hub
    publisher: str | None = None    # a publisher-policy token: keys must equal this
    expires_s: int | None = None    # SAS token expiry (open connections outlive it)
    # A token taken within the door's skew of its expiry (the client's clock behind
    # ours) stays good to the skew's end; one taken before its expiry ends at it, as
    # the service ends the links it authorized then.
    skew_s: int = 0
    # Authenticated by a bearer JWT (Entra ID's stand-in), not a SAS key or token: an
    # application group's SASKeyName= matches SAS principals only, its AADAppID= the
    # token's application id (appid, else azp), never a SAS policy of that name.
    bearer: bool = False
    app_id: str | None = None

    def valid_at(self, now_s: float) -> bool:
        """Is this principal's token good at ``now_s``, for the links it authorized?"""
        return self.expires_s is None or now_s <= self.expires_s + self.skew_s

    def __str__(self) -> str:
        where = self.namespace + (f"/{self.hub}" if self.hub else "")
        if self.publisher:
            where += f"/publishers/{self.publisher}"
        return f"{self.policy or '?'}@{where} ({', '.join(sorted(self.rights))})"


def split_plain(auth_bytes: bytes) -> tuple[str, str, str]:
    """RFC 4616 ``[authzid] NUL authcid NUL passwd`` → (authzid, authcid, passwd)."""
    parts = bytes(auth_bytes).split(b"\x00")
    if len(parts) != 3:
        raise AuthError("malformed SASL/PLAIN message: expected authzid\\0username\\0password")
    try:
        return tuple(p.decode("utf-8") for p in parts)  # type: ignore[return-value]
    except UnicodeDecodeError:
        raise AuthError("SASL/PLAIN credentials are not valid UTF-8") from None


def plain_password(auth_bytes: bytes) -> str:
    """The connection string of a SASL/PLAIN message whose username is ``$ConnectionString``."""
    authzid, username, password = split_plain(auth_bytes)
    if username.lower() != USERNAME.lower():
        raise AuthError(f"SASL/PLAIN username {username!r} is not accepted: Event Hubs expects "
                        f"the username {USERNAME} and a connection string as the password")
    if authzid and authzid != username:
        raise AuthError(f"authorization id {authzid!r} differs from the username")
    return password


def authenticate_plain(model: EventHubsModel, auth_bytes: bytes,
                       now_s: float | None = None) -> Principal:
    return authenticate(model, plain_password(auth_bytes), now_s)


def authenticate(model: EventHubsModel, password: str, now_s: float | None = None,
                 kafka: bool = True) -> Principal:
    """The principal a connection string authenticates, or AuthError saying why not.
    ``kafka``: for the Kafka endpoint, which the Basic tier lacks."""
    now_s = time.time() if now_s is None else now_s
    try:
        cs = connection_string.parse(password)
    except connection_string.ConnectionStringError as exc:
        raise AuthError(f"invalid connection string: {exc}") from None
    name = model.namespace_for_host(cs.host)
    if name is None:
        served = ", ".join(sorted(model.namespaces))
        raise AuthError(f"the connection string's Endpoint host {cs.host!r} names a namespace "
                        f"this server does not serve (it serves: {served})")
    ns = model.namespaces[name]
    if kafka and ns.strict and not ns.limits.kafka:
        raise AuthError(f"namespace {ns.name!r} is on the Basic tier, which has no Kafka "
                        "endpoint: use Standard or above")
    if cs.signature:
        return _with_token(model, ns, cs, now_s)
    return _with_key(ns, cs)


def authenticate_sas_token(model: EventHubsModel, namespace: str, token: str,
                           now_s: float) -> Principal:
    """A bare SAS token (AMQP's put-token on ``$cbs``) for a connection bound to
    ``namespace``: its resource must be in that namespace."""
    cs = connection_string.ConnectionString(endpoint="", host="", port=None, signature=token)
    return _with_token(model, model.namespaces[namespace], cs, now_s)


def verify_jwt(model: EventHubsModel, token: str, now_s: float,
               namespace: str | None = None) -> Principal:
    """A JWT (Kafka's OAUTHBEARER; AMQP's put-token on ``$cbs`` and an HTTP bearer
    token, through :func:`authenticate_header`) in a namespace with OAuth.
    ``namespace``: the one the client named by host, for which the global audience
    ``https://eventhubs.azure.net`` is good (:func:`oauth.authenticate_token`)."""
    try:
        return oauth.authenticate_token(model, token, now_s, namespace)
    except oauth.TokenError as exc:
        raise AuthError(str(exc)) from None


def authenticate_header(model: EventHubsModel | None, namespace: str, header: str,
                        now_s: float) -> Principal | None:
    """The principal of an HTTP ``Authorization`` header for ``namespace``: a SAS
    token, bare or as a bearer token (the Azure SDKs' token credentials send it
    so), or a bearer JWT where the namespace has OAuth. None without a header,
    and for any other bearer token on an open namespace (one without SAS rules,
    OAuth or required auth), which takes a TokenCredential's token as none.
    (AMQP's ``$cbs`` and ``$management`` hand theirs to the door as
    ``door.Jwt(token, by_host=True)``, which the door checks the same way.)"""
    header = header.strip()
    ns = model.namespaces.get(namespace) if model is not None else None
    if (ns is None or (ns.open and not ns.oauth and not ns.requires_auth)) and \
            header.lower().startswith("bearer ") and "sharedaccesssignature" not in header.lower():
        return None
    if header.lower().startswith("bearer ") and header[7:].lstrip().startswith("SharedAccessSignature "):
        header = header[7:].lstrip()
    if not header:
        return None
    if not header.lower().startswith("bearer "):
        return authenticate_sas_token(model, namespace, header, now_s)
    if not model.namespaces[namespace].oauth:
        raise AuthError(f"namespace {namespace!r} takes SAS tokens, not bearer tokens")
    principal = verify_jwt(model, header[7:].strip(), now_s, namespace)
    if principal.namespace != namespace:
        raise AuthError(f"the token is for namespace {principal.namespace!r}, not {namespace!r}")
    return principal


def authenticate_key(model: EventHubsModel, namespace: str, key_name: str, key: str) -> Principal:
    """A SAS policy name and key (AMQP's SASL PLAIN, as Service Bus clients send them)."""
    cs = connection_string.ConnectionString(endpoint="", host="", port=None, key_name=key_name,
                                            key=key)
    return _with_key(model.namespaces[namespace], cs)


def _same(a: str | None, b: str | None) -> bool:
    return (a or "").lower() == (b or "").lower()


def _with_key(ns: Namespace, cs) -> Principal:
    entity = cs.entity_path
    if ns.open:
        return Principal(ns.name, cs.key_name, _ALL, hub=entity)
    policy = ns.policy(cs.key_name, hub=entity)
    if policy is None:
        where = f"namespace {ns.name!r}" + (f" or event hub {entity!r}" if entity else "")
        raise AuthError(f"SAS policy {cs.key_name!r} is not defined on {where}")
    if not any(hmac.compare_digest(cs.key.encode(), k.encode()) for k in policy.keys()):
        raise AuthError(f"the SharedAccessKey for policy {policy.name!r} is wrong")
    if policy.hub is not None and entity is not None and not _same(entity, policy.hub):
        raise AuthError(f"policy {policy.name!r} belongs to event hub {policy.hub!r}, "
                        f"not EntityPath {entity!r}")
    return Principal(ns.name, policy.name, policy.rights, hub=entity or policy.hub)


def _with_token(model: EventHubsModel, ns: Namespace, cs, now_s: float) -> Principal:
    try:
        token = sas.parse(cs.signature)
        scope = sas.scope_of(token.resource)
    except sas.SasError as exc:
        raise AuthError(str(exc)) from None
    if sas.expired(token, now_s):
        raise AuthError(f"the SAS token expired at {iso_utc(token.se)} (now {iso_utc(now_s)}): "
                        "generate a new one")
    if model.namespace_for_host(scope.host) != ns.name:
        raise AuthError(f"the SAS token is for {scope.host!r}, not for namespace {ns.name!r} "
                        "named by the Endpoint")
    entity = cs.entity_path
    hub = scope.hub
    if entity is not None:
        if hub is not None and not _same(hub, entity):
            raise AuthError(f"the SAS token covers event hub {hub!r}, not EntityPath {entity!r}")
        hub = hub or entity
    if ns.open:
        rights = _ALL
    else:
        policy = ns.policy(token.skn, hub=scope.hub)
        if policy is None:
            raise AuthError(f"SAS policy {token.skn!r} is not defined on namespace {ns.name!r}"
                            + (f" or event hub {scope.hub!r}" if scope.hub else ""))
        if not sas.verify_signature(token, policy.keys()):
            raise AuthError(f"the SAS token's signature does not match policy {policy.name!r}")
        if policy.hub is not None and not _same(scope.hub, policy.hub):
            raise AuthError(f"policy {policy.name!r} belongs to event hub {policy.hub!r}: the "
                            f"token's resource must be that hub, not {token.resource!r}")
        rights = policy.rights
    if scope.publisher is not None:
        if SEND not in rights:
            raise AuthError(f"a publisher token needs the Send right; policy {token.skn!r} "
                            "lacks it")
        rights = frozenset({SEND})
    return Principal(ns.name, token.skn, rights, hub=hub, publisher=scope.publisher,
                     expires_s=token.se, skew_s=sas.SKEW_S if now_s > token.se else 0)




class Authenticator:
    """SASL for every listener: which namespace a connection string or token names,
    and whether the key, signature or token holds (the namespace's door decides);
    and what the default namespace demands of a connection that has not
    authenticated (:meth:`anonymous`)."""

    def __init__(self, model: EventHubsModel, report: CompatibilityReport) -> None:
        self.model = model
        self.report = report
        # A client with a wrong key retries many times a second: one line, then a count.
        self._failures = RepeatedWarnings(log)

    def anonymous(self, services, state) -> str | None:
        """Why a connection that did not authenticate may not make a request beyond
        ApiVersions and SASL, or None (asked until it is let in once: a namespace
        that comes to require auth, or an IP filter set later, turns away new
        anonymous connections, not the open ones, as keys changed on Azure do)."""
        door = services.default.door
        ns = door.runtime.model
        try:
            door.sign_in(None, state.peer, "Kafka request")
        except Refused as exc:
            if exc.reason is not Refusal.UNAUTHENTICATED:
                return exc.message
            return (f"namespace {door.name} requires SASL authentication: PLAIN with username "
                    "$ConnectionString and a connection string as password"
                    + (", or OAUTHBEARER with a token" if ns is not None and ns.oauth is not None else ""))
        if ns is not None and ns.strict and not ns.limits.kafka:
            return (f"namespace {door.name} is on the Basic tier, which has no Kafka endpoint: "
                    "use Standard or above")
        state.attrs["anonymous"] = True
        return None

    def login(self, services, state, auth_bytes: bytes, mechanism: str = "PLAIN") -> str | None:
        """SASL ``mechanism`` (PLAIN or OAUTHBEARER) on connection ``state``: bind it
        to the principal's namespace and return None, or return why authentication
        failed (the caller closes). The namespace's door decides."""
        from kafka_wire.eventhubs.door import ConnectionString, Jwt, door_for_credential

        try:
            if mechanism == "OAUTHBEARER":
                token, _extensions = oauth.parse_client_first(auth_bytes)
                credential = Jwt(token)
            else:
                credential = ConnectionString(plain_password(auth_bytes), kafka=True)
            door = door_for_credential(services, credential)
            ns = door.runtime.model
            if mechanism == "OAUTHBEARER" and ns is not None and ns.strict and not ns.limits.kafka:
                # (here, not in oauth: Basic takes Entra tokens over AMQP and HTTPS)
                raise AuthError(f"namespace {ns.name!r} is on the Basic tier, which has no "
                                "Kafka endpoint: use Standard or above")
            principal = door.sign_in(credential, state.peer, f"Kafka {mechanism} login")
        except (AuthError, oauth.TokenError) as exc:
            self._failures.warn("auth-failed", client_address(state.peer),
                           f"{mechanism} authentication of {state.peer} failed: {exc}")
            return str(exc)
        except Refused as exc:
            return exc.message
        except Exception as exc:  # noqa: BLE001 - any credential a parser chokes on is a failed login
            # (the parsers raise their own errors; this keeps a gap in them from becoming a
            # traceback and a dropped connection before the client has even authenticated)
            self._failures.warn("auth-unreadable", client_address(state.peer),
                                f"{mechanism} authentication of {state.peer} failed: its "
                                f"credential could not be read ({type(exc).__name__}: "
                                f"{str(exc)[:200]})")
            return (f"the {mechanism} credential could not be read: send a connection string "
                    "(PLAIN) or a JWT (OAUTHBEARER) as Event Hubs expects")
        if principal is None:  # an empty credential cannot stand for a login
            return "no credential: send a connection string as the SASL/PLAIN password"
        runtime = door.runtime
        state.namespace = runtime
        state.max_request_bytes = runtime.request_limit(services.config.max_request_bytes)
        state.principal = principal
        state.authenticated = True
        state.sasl_mechanism = mechanism
        log.info("%s authenticated as %s (%s)", state.peer, principal, mechanism)
        return None

    def raw_sasl(self, services, state, token: bytes) -> bytes | None:
        """SaslHandshake v0's bare PLAIN token: b"" (an empty challenge) or None to close."""
        failed = self.login(services, state, token, state.sasl_mechanism or "PLAIN")
        return None if failed else b""

    def large_frame(self, state, size: int, default_namespace: str) -> str:
        """Record a frame over Event Hubs' limit; the log line for closing its connection."""
        ns = state.namespace.name if state.namespace is not None else default_namespace
        message = (f"a request frame of {size} bytes: Event Hubs closes the connection on frames "
                   f"of {KAFKA_FRAME_LIMIT:,} bytes or more; lower max.request.size / "
                   "message.max.bytes below 1 MB")
        self.report.record(ns, "frame-size", None, message, enforced=True)
        return message
