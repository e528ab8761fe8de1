"""One name rule per kind of entity, shared by every front end and the config
files: Azure's naming rules for Microsoft.EventHub resources. Each function
returns why a name is refused (a sentence a person can act on), or None."""
from __future__ import annotations

import re

from kafka_wire.log.manager import MAX_TOPIC_NAME  # an event hub is a Kafka topic

__all__ = ["namespace_name_error", "hub_name_error", "consumer_group_name_error",
           "schema_group_name_error", "policy_name_error", "application_group_name_error",
           "RESERVED_NAMESPACE_NAMES", "DATA_DIR_ENTRIES"]

DEFAULT_CONSUMER_GROUP = "$Default"
# Host names that always mean the default namespace: no namespace may take one.
RESERVED_NAMESPACE_NAMES = frozenset({"localhost", "host.docker.internal", "0.0.0.0"})
# What the broker itself keeps at the top of the data directory, beside DATA_DIR/<namespace>
# (each namespace's log): a namespace of one of these names would share that entry, and its
# deletion would remove it (the default Capture root, the producer-id block). Every entry is
# listed, those no namespace name can spell ('_' first, a '.') too, so that this is the
# directory's whole layout (tests/rest/test_namespace_lifecycle.py checks it).
DATA_DIR_ENTRIES = frozenset({
    "capture",                    # the default Capture root (rest.management.event_hubs.capture_root)
    "producer-ids",               # the Kafka producer-id block (broker.py)
    "tls",                        # the listener's generated certificates (broker.py)
    "meta.properties",            # the cluster id (broker.py)
    "subscription.key",           # the management plane's owner key (eventhubs.subscription)
    "compatibility-report.json",  # eventhubs.report
    "capture-spark.log",          # capture_jobs
    "_checkpoints", "_transactions", "_schemas", "_management", "_geo", "_geo_dr",
})

_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9-]{4,48}[A-Za-z0-9]")
# letters, digits, '.', '-', '_'; a letter or digit first and last (ASCII only: no NUL, no U+202E)
_ENTITY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_RULE = "use letters, digits, '.', '-' and '_', starting and ending with a letter or digit"


def _shown(name) -> str:
    text = repr(name)
    return text if len(text) <= 60 else text[:57] + "..."


def _entity_error(kind: str, name, longest: int) -> str | None:
    if not isinstance(name, str) or not name:
        return f"{kind} name is empty or not text: {_RULE}"
    if len(name) > longest:
        return f"{kind} name {_shown(name)} is {len(name)} characters long: at most {longest}"
    if not _ENTITY.fullmatch(name):
        return f"{kind} name {_shown(name)} is invalid: {_RULE}"
    return None


def namespace_name_error(name) -> str | None:
    if not isinstance(name, str) or not _NAMESPACE.fullmatch(name):
        return (f"namespace name {_shown(name)} is invalid: use 6-50 letters, digits and hyphens, "
                "starting with a letter and ending with a letter or digit")
    if name.lower() in RESERVED_NAMESPACE_NAMES:
        return f"namespace name {name!r} is reserved: it is a host name for the default namespace"
    if name.lower() in DATA_DIR_ENTRIES:
        return (f"namespace name {name!r} is reserved: the broker keeps its own {name.lower()!r} "
                "in the data directory, beside each namespace's: choose another name")
    return None


def hub_name_error(name) -> str | None:
    """1-256 on Azure; no longer than a Kafka topic name (249) here."""
    return _entity_error("event hub", name, min(256, MAX_TOPIC_NAME))


def consumer_group_name_error(name) -> str | None:
    """An Event Hubs consumer group made by management (``$Default`` always exists)."""
    if isinstance(name, str) and name.lower() == DEFAULT_CONSUMER_GROUP.lower():
        return f"consumer group {DEFAULT_CONSUMER_GROUP} always exists: do not list it"
    return _entity_error("consumer group", name, 50)


def schema_group_name_error(name) -> str | None:
    return _entity_error("schema group", name, 50)


def policy_name_error(name) -> str | None:
    return _entity_error("SAS policy", name, 256)


def application_group_name_error(name) -> str | None:
    return _entity_error("application group", name, 256)
