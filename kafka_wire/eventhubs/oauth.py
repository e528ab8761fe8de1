"""SASL/OAUTHBEARER with local tokens (Event Hubs takes Microsoft Entra ID tokens; locally trusted keys stand in).

Event Hubs takes Microsoft Entra ID access tokens on its Kafka endpoint; an
emulator cannot check Entra's signatures, so a namespace says which *local*
tokens it trusts (``[namespaces.<ns>.oauth]``): HS256 secrets, RS256 public
keys, or unsigned tokens (``alg: none``, what Java's default unsecured login
handler and ``enable.sasl.oauthbearer.unsecure.jwt`` make) when
``allow_unsigned``. A namespace with neither SAS policies nor oauth settings
is open: any well-formed, unexpired token is accepted unchecked, as any SAS
token is.

The token is a JWT whose claims are read the way Entra's are:

- ``aud``: ``https://<ns>.servicebus.windows.net`` selects the namespace, as a
  connection string's Endpoint does. ``https://eventhubs.azure.net`` (the one
  resource the Azure SDKs ask Entra for, whatever the namespace) and a missing
  ``aud`` are good for the namespace the client names by host (AMQP's open
  hostname, HTTP's Host); Kafka names none, so there they select the default
  namespace;
- ``exp`` (required) and ``nbf``, with five minutes of clock skew; ``iss``
  must equal the configured issuer, when there is one;
- ``roles``: ``Azure Event Hubs Data Owner`` (Manage, Send, Listen, and the
  Schema Registry), ``… Data Sender`` (Send), ``… Data Receiver`` (Listen),
  ``Schema Registry Reader`` (reads the registry), ``Schema Registry Contributor``
  (reads and registers), each with or without Azure's old `` (Preview)`` suffix.
  A ``scope``/``scp`` claim naming ``Send``, ``Listen`` or ``Manage`` (or those
  roles) works too, for clients that can only set a scope. No role:
  authenticated, no rights.
- ``appid`` (Entra's v1 tokens), else ``azp`` (v2): the client application's id,
  which an application group ``AADAppID=<id>`` matches.

The SASL message is RFC 7628's client-first message,
``n,[a=authzid],\\x01auth=Bearer <token>\\x01[key=value\\x01]\\x01``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
from dataclasses import dataclass, field

from kafka_wire.eventhubs.model import LISTEN, MANAGE, SEND, EventHubsModel, Namespace
from kafka_wire.eventhubs.rights import SCHEMA_READ, SCHEMA_WRITE
from kafka_wire.log_lines import iso_utc

__all__ = ["OAuthSettings", "TokenError", "parse_client_first", "authenticate_token",
           "ROLE_RIGHTS"]

SKEW_S = 300
_ALL = frozenset({SEND, LISTEN, MANAGE})
_SCHEMA_READER = frozenset({SCHEMA_READ})
_SCHEMA_CONTRIBUTOR = frozenset({SCHEMA_READ, SCHEMA_WRITE})
ROLE_RIGHTS = {  # Azure's built-in roles, by name (lower case)
    "azure event hubs data owner": _ALL,  # (Manage: the Schema Registry too, rights.SCHEMA_READERS)
    "azure event hubs data sender": frozenset({SEND}),
    "azure event hubs data receiver": frozenset({LISTEN}),
    "schema registry reader": _SCHEMA_READER,
    "schema registry reader (preview)": _SCHEMA_READER,
    "schema registry contributor": _SCHEMA_CONTRIBUTOR,
    "schema registry contributor (preview)": _SCHEMA_CONTRIBUTOR,
}
_SCOPE_RIGHTS = {"send": frozenset({SEND}), "listen": frozenset({LISTEN}), "manage": _ALL}
_GLOBAL_AUDIENCES = ("https://eventhubs.azure.net",)
_AUD = re.compile(r"^(?:https|sb|amqps)://([^/:]+)(?::\d+)?/?$", re.IGNORECASE)
# Times are seconds since 1970 up to the end of year 9999, what datetime (and the log
# lines' iso_utc) can show; NaN, infinities and 400-digit integers are refused here.
_LAST_SECOND = 253402300799
# Entra's application ids are GUIDs (36 characters); other issuers' client ids are
# longer, but none is a page of text to compare and log.
MAX_APP_ID = 256
_JSON_KINDS = {dict: "a JSON object", list: "a JSON array", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


class TokenError(Exception):
    """An OAUTHBEARER token refused; the message is sent to the client."""


@dataclass(slots=True)
class OAuthSettings:
    """Which local tokens a namespace trusts."""
    allow_unsigned: bool = False
    hs256_keys: list[str] = field(default_factory=list)
    public_keys: list[str] = field(default_factory=list)   # PEM text (RS256)
    issuer: str | None = None
    audiences: list[str] = field(default_factory=list)      # accepted besides the namespace's

    def validate(self, where: str) -> None:
        if not (self.allow_unsigned or self.hs256_keys or self.public_keys):
            raise ValueError(f"{where}: oauth trusts no token: give hs256_keys, public_keys "
                             "(or public_key_files), or allow_unsigned = true")
        for pem in self.public_keys:
            try:
                _load_public_key(pem)
            except Exception as exc:
                raise ValueError(f"{where}: an oauth public key is not a PEM public key: "
                                 f"{exc}") from None


def parse_client_first(auth_bytes: bytes) -> tuple[str, dict[str, str]]:
    """The bearer token and SASL extensions of an RFC 7628 client-first message."""
    try:
        text = bytes(auth_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise TokenError("the OAUTHBEARER message is not valid UTF-8") from None
    gs2, sep, rest = text.partition(",")
    if gs2 not in ("n", "y") or not sep:
        raise TokenError("malformed OAUTHBEARER message: it must start with the GS2 header 'n,'")
    _authzid, sep, rest = rest.partition(",")
    if not sep or not rest.startswith("\x01"):
        raise TokenError("malformed OAUTHBEARER message: no key/value part after the GS2 header")
    pairs: dict[str, str] = {}
    for item in rest.strip("\x01").split("\x01"):
        key, eq, value = item.partition("=")
        if not eq:
            raise TokenError(f"malformed OAUTHBEARER key/value {item[:40]!r}")
        pairs[key] = value
    auth = pairs.pop("auth", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise TokenError("the OAUTHBEARER message carries no 'auth=Bearer <token>'")
    return token.strip(), pairs


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _decode(token: str) -> tuple[dict, dict, bytes, bytes]:
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError("the bearer token is not a JWT (header.payload.signature)")
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2])
    except (ValueError, TypeError, RecursionError):
        raise TokenError("the bearer token is not a JWT: a part is not base64url JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenError("the bearer token's header and payload must be JSON objects")
    return header, claims, signature, f"{parts[0]}.{parts[1]}".encode("ascii")


def _load_public_key(pem: str):
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    return load_pem_public_key(pem.encode("ascii"))


def _rs256_ok(pem: str, signature: bytes, signed: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        _load_public_key(pem).verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        return True
    except (InvalidSignature, ValueError, TypeError):
        return False


def _verify(ns: Namespace, header: dict, signature: bytes, signed: bytes) -> None:
    settings: OAuthSettings | None = ns.oauth
    if settings is None:
        if ns.open:
            return  # an open namespace: nothing to check a signature with
        raise TokenError(f"namespace {ns.name!r} does not accept OAUTHBEARER tokens: give it an "
                         "[oauth] table, or use SASL PLAIN with a connection string")
    alg = header.get("alg")
    if alg == "none":
        if not settings.allow_unsigned:
            raise TokenError(f"namespace {ns.name!r} refuses unsigned tokens (alg none): sign "
                             "them or set allow_unsigned = true")
        if signature:
            raise TokenError("an unsigned token (alg none) must have an empty signature")
        return
    if alg == "HS256":
        ok = any(hmac.compare_digest(hmac.new(key.encode("utf-8"), signed, hashlib.sha256)
                                     .digest(), signature) for key in settings.hs256_keys)
    elif alg == "RS256":
        ok = any(_rs256_ok(pem, signature, signed) for pem in settings.public_keys)
    else:
        raise TokenError(f"token algorithm {_shown(alg)} is not supported: use HS256 or RS256")
    if not ok:
        raise TokenError(f"the token's {alg} signature matches no key namespace {ns.name!r} "
                         "trusts")


def _shown(value, most: int = 200) -> str:
    """A claim as a message may quote it: a string's repr cut short, else only its type
    (the repr of a deeply nested list can raise RecursionError)."""
    if isinstance(value, str):
        return repr(value[:most])
    return _JSON_KINDS.get(type(value), "a JSON value")


def _strings(claims: dict, name: str) -> list[str]:
    """A claim that is a string or a list of strings (``aud``, ``roles``), or TokenError."""
    value = claims.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TokenError(f"the token's {name!r} claim must be a string or a list of strings, "
                     f"not {_shown(value)}")


def _audiences(claims: dict) -> list[str]:
    return _strings(claims, "aud")


def _namespace(model: EventHubsModel, claims: dict, host_namespace: str | None) -> Namespace:
    """The namespace the token is for: the one its audience names; for the global
    audience (or none) the namespace the client named by host, else the default one.
    With a host, any of several audiences naming it will do."""
    auds = _audiences(claims)
    fallback = host_namespace or model.default_namespace
    if not auds:
        return model.namespaces[fallback]
    named: list[str] = []
    for aud in auds:
        if aud.rstrip("/").lower() in _GLOBAL_AUDIENCES:
            name = fallback
        else:
            name = next((ns.name for ns in model.namespaces.values()
                         if ns.oauth is not None and aud in ns.oauth.audiences), None)
            if name is None:
                m = _AUD.match(aud)
                name = model.namespace_for_host(m.group(1)) if m else None
        if name is not None and (host_namespace is None or name == host_namespace):
            return model.namespaces[name]
        if name is not None:
            named.append(name)
    if named:  # another namespace's token: the caller says it is not for this one
        return model.namespaces[named[0]]
    shown = [a[:200] for a in auds[:5]]
    raise TokenError(f"the token's audience {shown!r} names no namespace this server serves "
                     "(expected https://<namespace>.servicebus.windows.net)")


def _number(claims: dict, name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TokenError(f"the token's {name!r} claim must be a number of seconds")
    # (compared before float(): an integer of 400 digits overflows it)
    if isinstance(value, float) and not math.isfinite(value) or not 0 <= value <= _LAST_SECOND:
        raise TokenError(f"the token's {name!r} claim must be seconds since 1970, at most "
                         f"{_LAST_SECOND} (the end of year 9999)")
    return float(value)


def rights_of(claims: dict) -> frozenset[str]:
    rights: set[str] = set()
    for role in _strings(claims, "roles"):
        rights |= ROLE_RIGHTS.get(role.strip().lower(), frozenset())
    for name in ("scope", "scp"):
        scope = claims.get(name)
        words = scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else []
        for word in words:
            if isinstance(word, str):
                w = word.strip().lower()
                rights |= _SCOPE_RIGHTS.get(w, ROLE_RIGHTS.get(w, frozenset()))
    return frozenset(rights)


def _app_id(claims: dict) -> str | None:
    """The client application's id, which ``AADAppID=<id>`` application groups match:
    ``appid`` (Entra's v1 tokens), else ``azp`` (v2). A claim that is no string, or
    is longer than any application id, refuses the token: read as absent, it would
    let a client out of its application group."""
    for name in ("appid", "azp"):
        value = claims.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise TokenError(f"the token's {name!r} claim must be a string (the client "
                             f"application's id), not {_shown(value)}")
        if len(value) > MAX_APP_ID:
            raise TokenError(f"the token's {name!r} claim is {len(value)} characters long: an "
                             f"application id is at most {MAX_APP_ID} (Entra's are GUIDs)")
        return value
    return None


def authenticate_token(model: EventHubsModel, token: str, now_s: float,
                       namespace: str | None = None):
    """The principal a bearer token authenticates, or TokenError saying why not.
    ``namespace``: the one the client named by host (AMQP, HTTP), for which the
    global audience is good; None on Kafka, which names none (see :func:`_namespace`).
    The tier's endpoints are the caller's to check: Basic has no Kafka endpoint, yet
    takes Entra tokens over AMQP and HTTPS."""
    from kafka_wire.eventhubs.auth import Principal

    header, claims, signature, signed = _decode(token)
    ns = _namespace(model, claims, namespace)
    _verify(ns, header, signature, signed)
    exp = _number(claims, "exp")
    if exp is None:
        raise TokenError("the token has no 'exp' (expiry) claim")
    if now_s > exp + SKEW_S:
        raise TokenError(f"the token expired at {iso_utc(exp)} (now {iso_utc(now_s)}): get a new one")
    nbf = _number(claims, "nbf")
    if nbf is not None and now_s + SKEW_S < nbf:
        raise TokenError(f"the token is not valid before {iso_utc(nbf)} (now {iso_utc(now_s)})")
    issuer = ns.oauth.issuer if ns.oauth is not None else None
    if issuer is not None and claims.get("iss") != issuer:
        raise TokenError(f"the token's issuer {_shown(claims.get('iss'))} is not {issuer!r}")
    app_id = _app_id(claims)
    subject = next((v for v in (claims.get(k) for k in ("sub", "oid", "appid"))
                    if v and isinstance(v, str)), "?")
    return Principal(ns.name, f"oauth:{subject}", rights_of(claims), expires_s=int(exp),
                     skew_s=SKEW_S if now_s > exp else 0,  # (see Principal.skew_s)
                     bearer=True, app_id=app_id)
