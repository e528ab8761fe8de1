"""Event Hubs connection strings (Endpoint, SharedAccessKeyName/Key or SharedAccessSignature, EntityPath).

``key=value`` pairs joined by ``;`` (a trailing ``;`` is fine), each split at
its first ``=`` (values such as keys and SAS tokens contain ``=``), keys
matched case-insensitively as the SDKs do. Valid iff ``Endpoint`` and either
``SharedAccessKeyName`` + ``SharedAccessKey`` or ``SharedAccessSignature``.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["ConnectionString", "ConnectionStringError", "parse", "build"]

_KEYS = {
    "endpoint": "endpoint",
    "sharedaccesskeyname": "key_name",
    "sharedaccesskey": "key",
    "sharedaccesssignature": "signature",
    "entitypath": "entity_path",
    "usedevelopmentemulator": "use_development_emulator",
}


class ConnectionStringError(ValueError):
    """A connection string that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class ConnectionString:
    endpoint: str
    host: str
    port: int | None
    key_name: str | None = None
    key: str | None = None
    signature: str | None = None       # a complete "SharedAccessSignature sr=..." token
    entity_path: str | None = None
    use_development_emulator: bool = False


def parse(text: str) -> ConnectionString:
    if not isinstance(text, str) or not text.strip():
        raise ConnectionStringError("the connection string is empty")
    values: dict[str, str] = {}
    for part in text.strip().split(";"):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise ConnectionStringError(f"connection string part {key[:40]!r} has no '=': use "
                                        "Key=Value pairs separated by ';'")
        field = _KEYS.get(key.strip().lower())
        if field is None:
            continue  # SDKs ignore keys they do not know (TransportType, ...)
        values[field] = value.strip()
    endpoint = values.get("endpoint")
    if not endpoint:
        raise ConnectionStringError("the connection string has no Endpoint: it should start "
                                    "with Endpoint=sb://<namespace>.servicebus.windows.net/")
    try:  # (urllib raises ValueError on an unclosed "[" of an IPv6 host, and the like)
        url = urlsplit(endpoint if "://" in endpoint else f"sb://{endpoint}")
        host = url.hostname
    except ValueError:
        raise ConnectionStringError(f"Endpoint {endpoint[:200]!r} is not a URL: write "
                                    "sb://<namespace>.servicebus.windows.net/") from None
    if not host:
        raise ConnectionStringError(f"Endpoint {endpoint!r} names no host")
    try:
        port = url.port
    except ValueError:
        raise ConnectionStringError(f"Endpoint {endpoint!r} has an invalid port") from None
    has_key = bool(values.get("key_name")) and bool(values.get("key"))
    if not has_key and not values.get("signature"):
        raise ConnectionStringError("the connection string needs SharedAccessKeyName and "
                                    "SharedAccessKey, or SharedAccessSignature")
    return ConnectionString(
        endpoint=endpoint, host=host.lower(), port=port,
        key_name=values.get("key_name") or None, key=values.get("key") or None,
        signature=values.get("signature") or None,
        entity_path=values.get("entity_path") or None,
        use_development_emulator=values.get("use_development_emulator", "").lower() == "true")


def build(host: str, *, key_name: str | None = None, key: str | None = None,
          signature: str | None = None, entity_path: str | None = None,
          emulator: bool = False) -> str:
    """A connection string as the portal (or the emulator's docs) write one."""
    endpoint = f"sb://{host}" if emulator else f"sb://{host}/"
    parts = [f"Endpoint={endpoint}"]
    if signature:
        parts.append(f"SharedAccessSignature={signature}")
    else:
        parts += [f"SharedAccessKeyName={key_name}", f"SharedAccessKey={key}"]
    if entity_path:
        parts.append(f"EntityPath={entity_path}")
    if emulator:
        parts.append("UseDevelopmentEmulator=true")
    text = ";".join(parts)
    return text + ";" if emulator else text
