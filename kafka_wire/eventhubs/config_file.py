"""Configuration files: the official emulator's ``Config.json`` and kafka-wire's TOML.

``Config.json`` (the official Docker emulator's file) is accepted as the emulator accepts it: one
namespace of ``Type`` ``EventHub`` (``emulatorNs1``; both optional), 1–10
entities with ``Name`` and ``PartitionCount`` 1–32 (a number or a quoted
number), optional ``ConsumerGroups`` (1–20, never ``$Default``), and
``LoggingConfig.Type``. It becomes a Standard, relaxed namespace with the
emulator's fixed policy ``RootManageSharedAccessKey`` / ``SAS_KEY_VALUE``,
authentication required (the emulator's Kafka port is SASL_PLAINTEXT), and
the emulator's fixed one-hour retention. Its well-known connection string
``Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;
SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;`` works as is.

The TOML file (any other extension) describes several namespaces with
tiers, modes, units, policies, hubs and capture, plus the listeners; see
README.md "Event Hubs configuration" for a complete example. Unknown keys are
errors, so typos do not pass silently.
"""
from __future__ import annotations

import json
import logging
import tomllib
from pathlib import Path
from typing import Any

from kafka_wire.config import parse_durability, parse_host_port
from kafka_wire.eventhubs import geo
from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.eventhubs.oauth import OAuthSettings
from kafka_wire.log.config import LogConfig
from kafka_wire.whole_numbers import whole_number
from kafka_wire.eventhubs.model import (
    DEFAULT_CONSUMER_GROUP, EMULATOR_KEY, ROOT_POLICY, CaptureSettings, EventHub, EventHubsModel,
    Namespace, SasPolicy, Tier,
)

log = logging.getLogger(__name__)

__all__ = ["load", "load_config_json", "load_toml", "apply_config_file", "EMULATOR_CONNECTION_STRING"]

EMULATOR_CONNECTION_STRING = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
                              "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")
_EMULATOR_NAMESPACE = "emulatorNs1"
_LOGGING_TYPES = ("File", "Console", "File,Console", "Console,File")


class _Settings:
    """What a TOML file says beyond the model: listeners and TLS."""

    def __init__(self) -> None:
        self.server: dict[str, Any] = {}
        self.tls: dict[str, Any] = {}
        self.limits: dict[str, Any] = {}
        self.faults: list[dict] = []  # [[faults]], checked (kafka_wire/startup_faults.py)


# -- Config.json ------------------------------------------------------------------
def _get(obj: dict, key: str, where: str, required: bool = True):
    """Keys of Config.json as the emulator reads them (case-insensitively)."""
    if not isinstance(obj, dict):
        raise ValueError(f"{where} must be a JSON object")
    for k, v in obj.items():
        if k.lower() == key.lower():
            return v
    if required:
        raise ValueError(f"{where} lacks {key!r}")
    return None


def _whole(count) -> int | None:
    """A PartitionCount as the whole number it writes, else None: 2.7 is not 2, and
    text is ASCII digits ("2"), not what ``int`` also reads ("2_0", " 2", "\u0661")."""
    if isinstance(count, str):
        return whole_number(count)
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    if isinstance(count, float) and count.is_integer():  # (not 1e999 or nan)
        return int(count)
    return None


def _warn_unknown(obj, known: tuple[str, ...], where: str) -> None:
    """The emulator ignores keys it does not know, and so do we, but say so: a typo
    ("PartitonCount") would otherwise pass in silence."""
    if not isinstance(obj, dict):
        return
    wanted = {k.lower() for k in known}
    unknown = [k for k in obj if k.lower() not in wanted]
    if unknown:
        log.warning("Config.json: %s has unknown key(s) %s, ignored (known: %s)", where,
                    ", ".join(map(repr, unknown)), ", ".join(known))


def load_config_json(data: dict) -> EventHubsModel:
    _warn_unknown(data, ("UserConfig",), "the top level")
    user = _get(data, "UserConfig", "Config.json")
    _warn_unknown(user, ("NamespaceConfig", "LoggingConfig"), "UserConfig")
    namespaces = _get(user, "NamespaceConfig", "UserConfig")
    logging_cfg = _get(user, "LoggingConfig", "UserConfig")
    _warn_unknown(logging_cfg, ("Type",), "LoggingConfig")
    logging_type = _get(logging_cfg, "Type", "LoggingConfig")
    if logging_type not in _LOGGING_TYPES:
        raise ValueError(f"LoggingConfig.Type {logging_type!r} is invalid: use "
                         + ", ".join(_LOGGING_TYPES))
    if not isinstance(namespaces, list) or len(namespaces) != 1:
        raise ValueError("NamespaceConfig must list exactly one namespace (the emulator serves "
                         "one; use a kafka-wire TOML file for several)")
    raw = namespaces[0]
    _warn_unknown(raw, ("Type", "Name", "Entities"), "NamespaceConfig[0]")
    kind = _get(raw, "Type", "NamespaceConfig[0]", required=False) or "EventHub"
    if kind != "EventHub":
        raise ValueError(f"NamespaceConfig[0].Type {kind!r} is invalid: use EventHub")
    name = _get(raw, "Name", "NamespaceConfig[0]", required=False) or _EMULATOR_NAMESPACE
    if not isinstance(name, str):
        raise ValueError(f"NamespaceConfig[0].Name must be text such as {_EMULATOR_NAMESPACE!r}, "
                         f"not {_kind(name)}")
    if name != _EMULATOR_NAMESPACE:
        log.warning("Config.json names namespace %r: the official emulator accepts only %r",
                    name, _EMULATOR_NAMESPACE)
    entities = _get(raw, "Entities", "NamespaceConfig[0]")
    if not isinstance(entities, list) or not 1 <= len(entities) <= 10:
        raise ValueError("Entities must list 1-10 event hubs")
    hubs: dict[str, EventHub] = {}
    for i, ent in enumerate(entities):
        where = f"Entities[{i}]"
        _warn_unknown(ent, ("Name", "PartitionCount", "ConsumerGroups"), where)
        hub_name = _get(ent, "Name", where)
        if not isinstance(hub_name, str):
            raise ValueError(f"{where}.Name must be text, not {_kind(hub_name)}")
        count = _get(ent, "PartitionCount", where)
        partitions = _whole(count)
        if partitions is None:
            raise ValueError(f"{where}.PartitionCount {_shown(count)} is not a whole number: use 1-32")
        if not 1 <= partitions <= 32:
            raise ValueError(f"{where}.PartitionCount {_shown(partitions)} is out of range: use 1-32")
        groups_raw = _get(ent, "ConsumerGroups", where, required=False) or []
        if not isinstance(groups_raw, list) or len(groups_raw) > 20:
            raise ValueError(f"{where}.ConsumerGroups must list at most 20 groups")
        groups = []
        for j, g in enumerate(groups_raw):
            _warn_unknown(g, ("Name",), f"{where}.ConsumerGroups[{j}]")
            gname = _get(g, "Name", f"{where}.ConsumerGroups[{j}]")
            if isinstance(gname, str) and gname.lower() == DEFAULT_CONSUMER_GROUP.lower():
                raise ValueError(f"{where}.ConsumerGroups lists {gname!r}: $Default always "
                                 "exists, remove it")
            groups.append(gname)
        if hub_name in hubs:
            raise ValueError(f"{where}: event hub {hub_name!r} is listed twice")
        if not all(isinstance(g, str) for g in groups):
            raise ValueError(f"{where}.ConsumerGroups: each Name must be text")
        hubs[hub_name] = EventHub(name=hub_name, partitions=partitions, retention_hours=1,
                                  consumer_groups=groups)
    ns = Namespace(name=name, tier=Tier.STANDARD, mode="relaxed", auth="required",
                   policies={ROOT_POLICY: SasPolicy(ROOT_POLICY, EMULATOR_KEY)},
                   hubs=hubs, default_retention_hours=1, emulator=True)
    model = EventHubsModel({name: ns}, name)
    model.validate()
    return model


# -- TOML -------------------------------------------------------------------------
# [server] keys and their TOML types; ints also have a least value.
_SERVER_KEYS: dict[str, type] = {
    "listen": str, "advertise": str, "tls_listen": str, "tls_advertise": str, "data_dir": str,
    "auto_create_topics": bool, "num_partitions": int, "connections_max_idle_ms": int,
    "failed_authentication_delay_ms": int, "amqp_listen": str, "amqps_listen": str, "https_listen": str,
    "subscription_key": str, "durability": str, "transaction_max_timeout_ms": int, "chaos": int,
}
_SERVER_MINIMUM = {"num_partitions": 1, "connections_max_idle_ms": 0,
                   "failed_authentication_delay_ms": 0, "transaction_max_timeout_ms": 1,
                   "chaos": 0}
_TOML_TYPE_NAMES = {str: 'a string, e.g. "127.0.0.1:9092"', bool: "true or false",
                    int: "a whole number"}


def _check_types(table: dict, types: dict[str, type], where: str) -> None:
    for key, value in table.items():
        wanted = types[key]
        # bool is an int in Python; TOML keeps them apart, so do we.
        if not isinstance(value, wanted) or (wanted is int and isinstance(value, bool)):
            raise ValueError(f"{where} {key} = {value!r}: must be {_TOML_TYPE_NAMES[wanted]}")
        least = _SERVER_MINIMUM.get(key) if where == "[server]" else None
        if least is not None and value < least:
            raise ValueError(f"{where} {key} = {value}: must be {least} or more")


# What each key of a namespace, event hub, capture, policy and OAuth table must hold, checked
# before anything reads it: a wrong type is one line naming the key, never an exception.
_STRINGS = "strings"  # a list of strings
_TYPE_WORDS = {str: "text (a quoted string)", int: "a whole number", bool: "true or false",
               dict: "a table", list: "an array", _STRINGS: 'an array of strings, e.g. ["a", "b"]'}
_NS_TYPES: dict[str, object] = {
    "tier": str, "mode": str, "throughput_units": int, "processing_units": int, "capacity_units": int,
    "auto_inflate_max": int, "auth": str, "policies": dict, "eventhubs": dict, "hosts": _STRINGS,
    "default": bool, "default_partitions": int, "default_retention_hours": int,
    "max_message_bytes": int, "close_large_frames": bool, "oauth": dict, "durability": str}
_HUB_TYPES: dict[str, object] = {
    "partitions": int, "retention_hours": int, "cleanup_policy": str, "tombstone_retention_hours": int,
    "timestamp_type": str, "consumer_groups": _STRINGS, "policies": dict, "capture": dict,
    "durability": str}
_CAPTURE_TYPES: dict[str, object] = {
    "enabled": bool, "destination": str, "destination_type": str, "name_format": str,
    "interval_seconds": int, "size_limit_bytes": int, "skip_empty_archives": bool, "encoding": str,
    "backfill": bool, "blob_container": str, "storage_connection_string": str}
_POLICY_TYPES: dict[str, object] = {"primary_key": str, "secondary_key": str, "rights": _STRINGS}
_OAUTH_TYPES: dict[str, object] = {
    "allow_unsigned": bool, "hs256_keys": _STRINGS, "public_keys": _STRINGS,
    "public_key_files": _STRINGS, "issuer": str, "audiences": _STRINGS}
_TOP_TYPES: dict[str, object] = {
    "default_namespace": str, "server": dict, "tls": dict, "limits": dict, "namespaces": dict,
    "storage_accounts": dict, "geo_dr": dict}  # [[faults]]: startup_faults.parse says what it wants


def _kind(value) -> str:
    return {str: "text", bool: "a boolean", int: "a number", float: "a number", dict: "a table",
            list: "an array", type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value) -> str:
    """A value for an error line: never a screenful (nor a 4,300-digit number)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return f"a {len(str(abs(value)))}-digit number"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_shapes(table: dict, types: dict[str, object], where: str) -> None:
    """Each key of ``table`` that ``types`` names holds what it says (unknown keys are
    _check_keys' to refuse)."""
    for key, value in table.items():
        wanted = types.get(key)
        if wanted is None:
            continue
        if wanted is _STRINGS:
            good = isinstance(value, list) and all(isinstance(v, str) for v in value)
            if key == "rights":  # "Send, Listen" as well as ["Send", "Listen"]
                good = good or isinstance(value, str)
        elif wanted is int:
            good = isinstance(value, int) and not isinstance(value, bool)  # TOML keeps them apart
        else:
            good = isinstance(value, wanted)
        if not good:
            raise ValueError(f"{where}: {key} = {_shown(value)}: must be {_TYPE_WORDS[wanted]}")


def _check_keys(table: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known: "
                         + ", ".join(sorted(allowed)))


def _policies(table: dict, where: str, hub: str | None = None) -> dict[str, SasPolicy]:
    out = {}
    for pname, p in (table or {}).items():
        pwhere = f"{where}, policy {pname!r}"
        if not isinstance(p, dict):
            raise ValueError(f"{pwhere} must be a table")
        _check_keys(p, {"primary_key", "secondary_key", "rights"}, pwhere)
        _check_shapes(p, _POLICY_TYPES, pwhere)
        try:
            out[pname] = SasPolicy(pname, p.get("primary_key", ""), p.get("secondary_key"),
                                   p.get("rights", ["Manage"]), hub=hub)
        except ValueError as exc:
            raise ValueError(f"{pwhere}: {exc}") from None
    return out


_CAPTURE_KEYS = {"enabled", "destination", "destination_type", "name_format", "interval_seconds",
                 "size_limit_bytes", "skip_empty_archives", "encoding", "backfill", "blob_container",
                 "storage_connection_string"}
_HUB_KEYS = {"partitions", "retention_hours", "cleanup_policy", "tombstone_retention_hours",
             "timestamp_type", "consumer_groups", "policies", "capture", "durability"}
_NS_KEYS = {"tier", "mode", "throughput_units", "processing_units", "capacity_units",
            "auto_inflate_max", "auth", "policies", "eventhubs", "hosts", "default",
            "default_partitions", "default_retention_hours", "max_message_bytes",
            "close_large_frames", "oauth", "durability", "geo_replication"}
_OAUTH_KEYS = {"allow_unsigned", "hs256_keys", "public_keys", "public_key_files", "issuer",
               "audiences"}


def _oauth(t: dict | None, where: str, base: Path | None) -> OAuthSettings | None:
    if t is None:
        return None
    if not isinstance(t, dict):
        raise ValueError(f"{where} must be a table")
    _check_keys(t, _OAUTH_KEYS, where)
    _check_shapes(t, _OAUTH_TYPES, where)
    pems = list(t.get("public_keys", []))
    for name in t.get("public_key_files", []):
        path = (base / name) if base is not None else Path(name)
        try:
            pems.append(path.read_text())
        except OSError as exc:
            raise ValueError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    return OAuthSettings(allow_unsigned=bool(t.get("allow_unsigned", False)),
                         hs256_keys=list(t.get("hs256_keys", [])), public_keys=pems,
                         issuer=t.get("issuer"), audiences=list(t.get("audiences", [])))


def _hub(name: str, t: dict, where: str) -> EventHub:
    if not isinstance(t, dict):
        raise ValueError(f"{where} must be a table, not {_kind(t)}")
    _check_keys(t, _HUB_KEYS, where)
    _check_shapes(t, _HUB_TYPES, where)
    capture_t = t.get("capture") or {}
    _check_keys(capture_t, _CAPTURE_KEYS, f"{where}, capture")
    _check_shapes(capture_t, _CAPTURE_TYPES, f"{where}, capture")
    hub = EventHub(
        name=name, partitions=t.get("partitions", 1), retention_hours=t.get("retention_hours"),
        cleanup_policy=t.get("cleanup_policy", "Delete"),
        tombstone_retention_hours=t.get("tombstone_retention_hours"),
        timestamp_type=t.get("timestamp_type", "LogAppend"),
        consumer_groups=list(t.get("consumer_groups", [])),
        policies=_policies(t.get("policies"), where, hub=name),
        capture=CaptureSettings(**capture_t), durability=_durability(t, where))
    return hub


def _durability(t: dict, where: str) -> str | None:
    """A namespace's or hub's ``durability`` (crash | power-loss), or None: inherited."""
    if "durability" not in t:
        return None
    if not isinstance(t["durability"], str):
        raise ValueError(f"{where}: durability = {t['durability']!r}: must be \"crash\" or \"power-loss\"")
    try:
        return parse_durability(t["durability"])
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def load_toml(data: dict, base: Path | None = None) -> tuple[EventHubsModel, _Settings]:
    """``base``: the config file's directory (relative key file paths)."""
    _check_keys(data, {*_TOP_TYPES, "faults"}, "config")
    _check_shapes(data, _TOP_TYPES, "config")
    settings = _Settings()
    settings.server = dict(data.get("server") or {})
    _check_keys(settings.server, set(_SERVER_KEYS), "[server]")
    _check_types(settings.server, _SERVER_KEYS, "[server]")
    if "durability" in settings.server:
        parse_durability(settings.server["durability"])  # refused here, not at start
    if "faults" in data:
        from kafka_wire.startup_faults import parse as parse_faults
        settings.faults = parse_faults(data["faults"])
    settings.tls = dict(data.get("tls") or {})
    settings.limits = dict(data.get("limits") or {})
    Bounds.from_table(settings.limits)  # refused here, with the file's name, not at start
    _check_keys(settings.tls, {"cert_file", "key_file", "ca_file"}, "[tls]")
    _check_types(settings.tls, dict.fromkeys(("cert_file", "key_file", "ca_file"), str), "[tls]")
    if bool(settings.tls.get("cert_file")) != bool(settings.tls.get("key_file")):
        raise ValueError("[tls]: give both cert_file and key_file, or neither (a certificate is "
                         "then generated)")
    raw_ns = data.get("namespaces") or {}
    if not raw_ns:
        raise ValueError("the config defines no namespace: add a [namespaces.<name>] table")
    namespaces: dict[str, Namespace] = {}
    default = data.get("default_namespace")
    for name, t in raw_ns.items():
        where = f"namespace {name!r}"
        if not isinstance(t, dict):
            raise ValueError(f"{where} must be a table")
        _check_keys(t, _NS_KEYS, where)
        _check_shapes(t, _NS_TYPES, where)
        units = [t[k] for k in ("throughput_units", "processing_units", "capacity_units") if k in t]
        if len(units) > 1:
            raise ValueError(f"{where}: give one of throughput_units, processing_units, "
                             "capacity_units")
        hubs = {h: _hub(h, ht, f"{where}, event hub {h!r}")
                for h, ht in (t.get("eventhubs") or {}).items()}
        ns = Namespace(
            name=name, tier=Tier.parse(t.get("tier", "Standard")), mode=t.get("mode", "relaxed"),
            units=units[0] if units else None, auto_inflate_max=t.get("auto_inflate_max"),
            auth=t.get("auth"), policies=_policies(t.get("policies"), where), hubs=hubs,
            hosts=list(t.get("hosts", [])), default_partitions=t.get("default_partitions"),
            default_retention_hours=t.get("default_retention_hours"),
            max_message_bytes=t.get("max_message_bytes"),
            close_large_frames=bool(t.get("close_large_frames", False)),
            oauth=_oauth(t.get("oauth"), f"{where}, oauth", base), durability=_durability(t, where),
            geo_replication=(geo.parse_table(t["geo_replication"], f"[namespaces.{name}.geo_replication]")
                             if "geo_replication" in t else None))
        namespaces[name] = ns
        if t.get("default"):
            if default and default != name:
                raise ValueError(f"both {default!r} and {name!r} are marked as the default "
                                 "namespace")
            default = name
    model = EventHubsModel(namespaces, default or next(iter(namespaces)))
    accounts = data.get("storage_accounts") or {}
    if not isinstance(accounts, dict) or not all(isinstance(v, str) for v in accounts.values()):
        raise ValueError("[storage_accounts] maps storage account names to connection strings "
                         '(e.g. devstoreaccount1 = "UseDevelopmentStorage=true")')
    model.storage_accounts = dict(accounts)
    model.validate()
    _geo_dr(data.get("geo_dr"), model)
    return model, settings


def _geo_dr(table, model: EventHubsModel) -> None:
    """``[geo_dr.<alias>]`` primary/secondary pairs (kafka_wire.eventhubs.geo_dr)."""
    from kafka_wire.eventhubs.geo_dr import from_toml

    from_toml(table, model)


# -- entry points ---------------------------------------------------------------------
def load(path: Path) -> tuple[EventHubsModel, _Settings]:
    """The model and settings of config file ``path``; ValueError (one line naming the
    file, the entry and the rule) for anything it cannot serve as written, before
    anything is made: whatever the bytes, nothing else escapes."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ValueError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                         f"{exc.start}): save the file as UTF-8") from None
    try:
        model, settings = _parse(path, text)
        _check_at_the_door(model, Bounds.from_table(settings.limits))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except RecursionError:
        raise ValueError(f"{path}: values nested too deeply to read") from None
    except (TypeError, AttributeError, KeyError, OverflowError) as exc:  # a shape no check above foresaw
        raise ValueError(f"{path}: {type(exc).__name__}: {exc}") from None
    return model, settings


def _parse(path: Path, text: str) -> tuple[EventHubsModel, _Settings]:
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return load_config_json(data), _Settings()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid TOML: {exc}") from None
    return load_toml(data, path.resolve().parent)


def _check_at_the_door(model: EventHubsModel, bounds: Bounds) -> None:
    """Every configured hub and consumer group through the check the door applies when
    the management API makes one (policy.new_hub: case twins, the broker's [limits], the
    tier's rules, refused in strict mode; consumer_group_refusal), in the file's order,
    each hub against those before it, so that a config makes nothing the management API
    would refuse; what a relaxed namespace lets pass is a warning, once a rule."""
    from kafka_wire.eventhubs.policy import HubCount, consumer_group_refusal, new_hub  # policy imports the model

    beyond = bounds.namespaces_error(len(model.namespaces))
    if beyond:
        raise ValueError(beyond)
    warned: set[tuple[str, str]] = set()
    for ns in model.namespaces.values():
        if ns.default_partitions is not None and ns.default_partitions > bounds.partitions_per_hub:
            raise ValueError(f"namespace {ns.name!r}: default_partitions = {_shown(ns.default_partitions)} "
                             f"is more than this broker allows per event hub ({bounds.partitions_per_hub}; "
                             "[limits] partitions_per_hub)")
        defaults = ns.topic_defaults()  # what the broker gives every hub of the namespace
        # The hubs before this one, counted as they come (a file of 10,000 hubs is not
        # 50 million comparisons), and by case-folded name for the twin check.
        made: dict[str, EventHub] = {}
        partitions = 0
        folded: dict[str, str] = {}
        for hub in ns.hubs.values():
            where = f"namespace {ns.name!r}, event hub {hub.name!r}"
            try:  # the log's own check of what the hub's settings mean
                config = LogConfig.from_kafka({**defaults, **hub.topic_configs()})
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
            twin = folded.get(hub.name.lower())
            verdict = new_hub(ns.name, ns, HubCount(made, partitions), hub.name, hub.partitions, config,
                              bounds, twin_of=lambda _name, twin=twin: twin)
            denial = verdict.refusal or (verdict.violation if ns.strict else None)
            if denial is not None:
                rule = f" (rule {denial.rule})" if denial.rule else ""
                named = f"event hub {hub.name!r}" in denial.message  # the door's words name it
                raise ValueError(f"{f'namespace {ns.name!r}' if named else where}: {denial.message}{rule}")
            if verdict.violation is not None and (ns.name, verdict.violation.rule) not in warned:
                warned.add((ns.name, verdict.violation.rule))
                log.warning("config: namespace %s: %s (rule %s; allowed in relaxed mode, as the "
                            "management API allows it)", ns.name, verdict.violation.message,
                            verdict.violation.rule)
            groups = hub.all_consumer_groups()
            refused = consumer_group_refusal(ns, bounds, hub.name, len(groups) - 1)
            if refused is not None:
                raise ValueError(f"{where}: {len(groups)} consumer groups (with $Default): {refused}")
            made[hub.name] = hub
            partitions += hub.partitions
            folded[hub.name.lower()] = hub.name


def apply_config_file(config, path: Path) -> None:
    """Load ``path`` into ``config`` (a BrokerConfig): the model, its namespaces, and the
    TOML's [server], [tls] and [limits] settings (command-line flags are applied after, and win)."""
    model, settings = load(path)
    config.eventhubs = model
    config.default_namespace = model.default_namespace
    config.namespaces = [n for n in model.namespaces if n != model.default_namespace]
    server = settings.server
    try:
        _apply_server(config, server)
    except ValueError as exc:
        raise ValueError(f"{path}: [server]: {exc}") from None
    if settings.limits:
        config.bounds = Bounds.from_table(settings.limits)
    config.faults = list(settings.faults)
    base = Path(path).resolve().parent
    for key, field in (("cert_file", "tls_cert_file"), ("key_file", "tls_key_file"),
                       ("ca_file", "tls_ca_file")):
        if settings.tls.get(key):
            setattr(config, field, (base / settings.tls[key]).resolve())


def _apply_server(config, server: dict) -> None:
    if "listen" in server:
        config.listen_host, config.listen_port = parse_host_port(server["listen"])
    if "advertise" in server:
        config.advertise_host, config.advertise_port = parse_host_port(server["advertise"],
                                                                       config.listen_port)
    if "tls_listen" in server:
        config.tls_listen_host, config.tls_listen_port = parse_host_port(server["tls_listen"], 9093)
    if "tls_advertise" in server:
        config.tls_advertise_host, config.tls_advertise_port = parse_host_port(
            server["tls_advertise"], config.tls_listen_port or 9093)
    if "amqp_listen" in server:
        config.amqp_listen_host, config.amqp_listen_port = parse_host_port(server["amqp_listen"], 5672)
    if "https_listen" in server:
        config.https_listen_host, config.https_listen_port = parse_host_port(server["https_listen"], 5443)
    if "amqps_listen" in server:
        config.amqps_listen_host, config.amqps_listen_port = parse_host_port(server["amqps_listen"], 5671)
    if "subscription_key" in server:
        if len(server["subscription_key"]) < 16:
            raise ValueError("subscription_key must be at least 16 characters: it guards the "
                             "management plane")
        config.subscription_key = server["subscription_key"]
    if "durability" in server:
        config.durability = parse_durability(server["durability"])
    if "transaction_max_timeout_ms" in server:
        config.transaction_max_timeout_ms = server["transaction_max_timeout_ms"]
    if "chaos" in server:
        config.chaos = server["chaos"]
    if "data_dir" in server:
        config.data_dir = Path(server["data_dir"])
    if "auto_create_topics" in server:
        config.auto_create_topics = bool(server["auto_create_topics"])
    if "num_partitions" in server:
        config.num_partitions = int(server["num_partitions"])
    if "connections_max_idle_ms" in server:
        config.connections_max_idle_ms = int(server["connections_max_idle_ms"])
    if "failed_authentication_delay_ms" in server:
        config.failed_authentication_delay_ms = int(server["failed_authentication_delay_ms"])
