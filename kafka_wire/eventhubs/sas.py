"""Shared access signature tokens (SharedAccessSignature sr=&sig=&se=&skn=, HMAC-SHA256 of the URL-encoded resource and expiry).

``SharedAccessSignature sr=<uri>&sig=<signature>&se=<expiry>&skn=<rule>``:
``sr`` the percent-encoded resource URI, ``se`` the expiry in seconds since
the epoch, ``sig`` the padded base64 HMAC-SHA256 (percent-encoded) keyed by the
UTF-8 bytes of the key *text* (not base64-decoded) over
``encoded_sr + "\\n" + se``.

Clients escape the URI differently (``%3a`` / ``%3A``, lower-cased by .NET),
so verification MACs the ``sr`` exactly as received and decodes it only to
decide what it covers. A token within ``SKEW_S`` of its expiry still passes.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlsplit

from kafka_wire.log_lines import shortened

__all__ = ["SasToken", "SasError", "generate", "parse", "signature", "verify_signature",
           "expired", "resource_uri", "Scope", "scope_of", "SKEW_S"]

SKEW_S = 15 * 60
MAX_SE = 253_402_300_799  # 9999-12-31T23:59:59Z
_PREFIX = "SharedAccessSignature "


class SasError(ValueError):
    """A token that is malformed, expired, mis-signed or mis-scoped."""


@dataclass(frozen=True, slots=True)
class SasToken:
    sr: str          # as received (percent-encoded): the MAC covers this text
    sig: str         # decoded base64 text
    se: int
    skn: str
    se_text: str     # as received

    @property
    def resource(self) -> str:
        """The decoded resource URI."""
        return unquote_plus(self.sr)


@dataclass(frozen=True, slots=True)
class Scope:
    """What a resource URI covers: a whole namespace, one hub, or one publisher of a hub."""
    host: str
    hub: str | None = None
    publisher: str | None = None


def signature(key: str, encoded_sr: str, expiry: int | str) -> str:
    """Base64 HMAC-SHA256 of ``encoded_sr\\nexpiry`` keyed by the key's UTF-8 text."""
    mac = hmac.new(key.encode("utf-8"), f"{encoded_sr}\n{expiry}".encode("utf-8"), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode("ascii")


def resource_uri(host: str, hub: str | None = None, publisher: str | None = None,
                 scheme: str = "https") -> str:
    uri = f"{scheme}://{host}/"
    if hub:
        uri += quote(hub, safe="")
        if publisher:
            uri += "/publishers/" + quote(publisher, safe="")
    return uri


def generate(resource: str, key_name: str, key: str, expiry: int) -> str:
    """A token for ``resource`` (a URI, not yet encoded), as Microsoft's samples build it."""
    encoded = quote_plus(resource)
    sig = quote(signature(key, encoded, expiry), safe="")
    return f"{_PREFIX}sr={encoded}&sig={sig}&se={expiry}&skn={key_name}"


def parse(text: str) -> SasToken:
    if not isinstance(text, str):
        raise SasError("the SAS token is not text")
    body = text.strip()
    if body[: len(_PREFIX)].lower() == _PREFIX.lower():
        body = body[len(_PREFIX):]
    fields: dict[str, str] = {}
    for part in body.split("&"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key.strip().lower()] = value.strip()
    missing = [k for k in ("sr", "sig", "se", "skn") if not fields.get(k)]
    if missing:
        raise SasError(f"the SAS token lacks {', '.join(missing)}: expected "
                       "'SharedAccessSignature sr=...&sig=...&se=...&skn=...'")
    try:
        se = int(fields["se"])
    except ValueError:
        raise SasError(f"the SAS token's expiry se={fields['se']!r} is not an integer") from None
    if not 0 <= se <= MAX_SE:  # (a time a person, and datetime, can read back)
        raise SasError(f"the SAS token's expiry se={shortened(fields['se'], 40)} is not a time: "
                       "expected seconds since 1970 (UTC), before the year 10000")
    return SasToken(sr=fields["sr"], sig=unquote(fields["sig"]), se=se,
                    skn=unquote(fields["skn"]), se_text=fields["se"])


def verify_signature(token: SasToken, keys: list[str]) -> bool:
    """True if one of ``keys`` (primary, secondary) signed the token."""
    try:
        given = base64.b64decode(token.sig, validate=True)
    except (binascii.Error, ValueError):
        return False
    for key in keys:
        expected = base64.b64decode(signature(key, token.sr, token.se_text))
        if hmac.compare_digest(given, expected):
            return True
    return False


def expired(token: SasToken, now_s: float, skew_s: int = SKEW_S) -> bool:
    return token.se + skew_s < now_s


def scope_of(resource: str) -> Scope:
    """Split a decoded resource URI into host, hub and publisher; SasError if it names
    something other than a namespace, a hub, a hub's publisher, or a consumer group
    or partition of a hub (which count as the hub)."""
    text = resource.strip()
    try:
        url = urlsplit(text if "://" in text else f"sb://{text}")
        host = url.hostname
    except ValueError as exc:  # urllib's own refusals: an unclosed [ of an IPv6 host, ...
        raise SasError(f"the SAS token's resource {shortened(resource, 200)!r} is not a URI: "
                       f"{exc}") from None
    if not host:
        raise SasError(f"the SAS token's resource {resource!r} names no host")
    segments = [unquote(s) for s in url.path.split("/") if s]
    if not segments:
        return Scope(host.lower())
    if len(segments) == 1:
        return Scope(host.lower(), segments[0])
    if len(segments) == 3 and segments[1].lower() == "publishers":
        return Scope(host.lower(), segments[0], segments[2])
    if segments[1].lower() in ("consumergroups", "partitions", "$management"):
        # The AMQP SDKs sign for the entity a link addresses (a consumer group, a
        # partition, the hub's management node); the token then covers that hub.
        return Scope(host.lower(), segments[0])
    raise SasError(f"the SAS token's resource {resource!r} is not a namespace, an event hub or "
                   "a publisher: use https://<namespace>/<hub>[/publishers/<name>]")
