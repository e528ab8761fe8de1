"""The Event Hubs model: namespaces, event hubs, consumer groups, SAS policies,
tiers and their quotas, as Microsoft's Event Hubs quotas page lists them.

Plain dataclasses with their validation; no I/O. ``kafka_wire.eventhubs.
config_file`` builds them from Config.json or the native TOML file, the broker
runs one :class:`Namespace` per ``NamespaceRuntime`` (``runtime.model``).

Names follow Event Hubs' rules: a namespace 6–50 characters (letters, digits,
hyphens; a letter first, a letter or digit last); an event hub 1–256
characters (letters, digits, ``.`` ``-`` ``_``; a letter or digit first and
last), and no longer than Kafka's 249 for a topic.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

__all__ = [
    "Tier", "TierLimits", "TIER_LIMITS", "SEND", "LISTEN", "MANAGE", "RIGHTS", "SasPolicy",
    "CaptureSettings", "EventHub", "Namespace", "EventHubsModel", "DEFAULT_CONSUMER_GROUP",
    "ROOT_POLICY", "EMULATOR_KEY", "KAFKA_FRAME_LIMIT", "namespace_name_error", "hub_name_error",
    "consumer_group_name_error", "normalize_rights", "SERVICEBUS_SUFFIXES",
]

MB = 1024 * 1024
HOUR_MS = 3600 * 1000
ROOT_POLICY = "RootManageSharedAccessKey"
EMULATOR_KEY = "SAS_KEY_VALUE"  # the official emulator's fixed key
SERVICEBUS_SUFFIXES = (".servicebus.windows.net", ".servicebus.chinacloudapi.cn",
                       ".servicebus.usgovcloudapi.net", ".servicebus.cloudapi.de")

from kafka_wire.eventhubs.names import (DEFAULT_CONSUMER_GROUP, RESERVED_NAMESPACE_NAMES,  # noqa: E402
                                        consumer_group_name_error, hub_name_error,
                                        namespace_name_error, policy_name_error)
from kafka_wire.eventhubs.rights import LISTEN, MANAGE, RIGHTS, SEND  # noqa: E402
from kafka_wire.eventhubs.bounds import (NAME_FORMAT_TOKENS, name_format_error,  # noqa: E402
                                         retention_hours_error)

# Endpoint hosts that mean "the default namespace" (the official emulator's
# connection string says sb://localhost; Docker setups use these too).
LOCAL_HOSTS = RESERVED_NAMESPACE_NAMES


class Tier(str, Enum):
    BASIC = "Basic"
    STANDARD = "Standard"
    PREMIUM = "Premium"
    DEDICATED = "Dedicated"

    @classmethod
    def parse(cls, text: str) -> "Tier":
        for tier in cls:
            if tier.value.lower() == str(text).strip().lower():
                return tier
        raise ValueError(f"tier {text!r} is unknown: use Basic, Standard, Premium or Dedicated")


@dataclass(frozen=True, slots=True)
class TierLimits:
    """One tier's column of the Event Hubs quotas table. ``None`` = no fixed limit."""
    max_publication_bytes: int
    partitions_per_hub: int
    namespace_partitions_per_unit: int | None  # Premium 200/PU, Dedicated 2000/CU
    hubs_per_namespace: int
    hubs_scale_with_units: bool                # Premium: 100 per PU
    consumer_groups_per_hub: int
    kafka_groups_per_namespace: int
    max_retention_hours: int
    max_units: int
    unit_name: str                             # TU, PU or CU
    ingress_bytes_per_unit: int | None         # per second
    ingress_events_per_unit: int | None
    egress_bytes_per_unit: int | None
    egress_events_per_unit: int | None
    auto_inflate: bool
    capture: bool
    kafka: bool
    compression: frozenset                     # allowed RecordBatch codecs (0 = none always allowed)
    idempotence: bool
    transactions: bool
    compaction: bool
    partitions_can_grow: bool
    readers_per_partition: int = 5             # AMQP receivers per partition and consumer group


_TU = dict(ingress_bytes_per_unit=1 * MB, ingress_events_per_unit=1000,
           egress_bytes_per_unit=2 * MB, egress_events_per_unit=4096)
_NOT_FIXED = dict(ingress_bytes_per_unit=None, ingress_events_per_unit=None,
                  egress_bytes_per_unit=None, egress_events_per_unit=None)

TIER_LIMITS: dict[Tier, TierLimits] = {
    Tier.BASIC: TierLimits(
        max_publication_bytes=256 * 1024, partitions_per_hub=32, namespace_partitions_per_unit=None,
        hubs_per_namespace=10, hubs_scale_with_units=False, consumer_groups_per_hub=1,
        kafka_groups_per_namespace=0, max_retention_hours=24, max_units=40, unit_name="TU",
        auto_inflate=False, capture=False, kafka=False, compression=frozenset(),
        idempotence=False, transactions=False, compaction=False, partitions_can_grow=False, **_TU),
    Tier.STANDARD: TierLimits(
        max_publication_bytes=1 * MB, partitions_per_hub=32, namespace_partitions_per_unit=None,
        hubs_per_namespace=10, hubs_scale_with_units=False, consumer_groups_per_hub=20,
        kafka_groups_per_namespace=1000, max_retention_hours=7 * 24, max_units=40, unit_name="TU",
        auto_inflate=True, capture=True, kafka=True, compression=frozenset(),
        idempotence=True, transactions=False, compaction=True, partitions_can_grow=False, **_TU),
    Tier.PREMIUM: TierLimits(
        max_publication_bytes=1 * MB, partitions_per_hub=100, namespace_partitions_per_unit=200,
        hubs_per_namespace=100, hubs_scale_with_units=True, consumer_groups_per_hub=100,
        kafka_groups_per_namespace=1000, max_retention_hours=90 * 24, max_units=16, unit_name="PU",
        auto_inflate=False, capture=True, kafka=True, compression=frozenset({1}),
        idempotence=True, transactions=True, compaction=True, partitions_can_grow=True,
        **_NOT_FIXED),
    Tier.DEDICATED: TierLimits(
        max_publication_bytes=1 * MB, partitions_per_hub=1024, namespace_partitions_per_unit=2000,
        hubs_per_namespace=1000, hubs_scale_with_units=False, consumer_groups_per_hub=1000,
        kafka_groups_per_namespace=1000, max_retention_hours=90 * 24, max_units=10, unit_name="CU",
        auto_inflate=False, capture=True, kafka=True, compression=frozenset({1}),
        idempotence=True, transactions=True, compaction=True, partitions_can_grow=True,
        **_NOT_FIXED),
}
DEDICATED_MAX_MESSAGE_BYTES = (1 * MB, 20 * MB)  # eventhubmaxmessagesizeinbytes range
KAFKA_FRAME_LIMIT = 1_046_528  # the Kafka endpoint closes connections on frames this large
MIN_RETENTION_HOURS = 1

def normalize_rights(rights) -> frozenset[str]:
    """Rights as a set of Send/Listen/Manage (case-insensitive); Manage includes both others."""
    if isinstance(rights, str):
        rights = [r for r in re.split(r"[,\s]+", rights) if r]
    out = set()
    for r in rights:
        for known in RIGHTS:
            if str(r).strip().lower() == known.lower():
                out.add(known)
                break
        else:
            raise ValueError(f"right {r!r} is unknown: use Send, Listen and/or Manage")
    if not out:
        raise ValueError("a SAS policy needs at least one right: Send, Listen or Manage")
    if MANAGE in out:
        out |= {SEND, LISTEN}
    return frozenset(out)


@dataclass(slots=True)
class SasPolicy:
    """A shared access authorization rule (namespace- or hub-level)."""
    name: str
    primary_key: str
    secondary_key: str | None = None
    rights: frozenset[str] = frozenset({MANAGE, SEND, LISTEN})
    hub: str | None = None  # set for hub-level rules

    def __post_init__(self) -> None:
        problem = policy_name_error(self.name)
        if problem:
            raise ValueError(problem)
        if not self.primary_key:
            raise ValueError(f"SAS policy {self.name!r} needs a primary_key")
        self.rights = normalize_rights(self.rights)

    def keys(self) -> list[str]:
        return [k for k in (self.primary_key, self.secondary_key) if k]


@dataclass(slots=True)
class CaptureSettings:
    """Event Hubs Capture of one hub (destination, encoding, time and size windows, name format); capture/ does the writing.

    Capture starts with the events enqueued from ``enabled_at_ms`` on (when the
    management API enabled it; for the config file, when the broker first ran
    the job), as on Azure; ``backfill`` starts from the earliest retained event.
    With ``storage_connection_string`` and ``blob_container`` the files are
    uploaded to that Blob storage container (Azurite or Azure) and
    ``destination`` holds the job's local state; without, ``destination`` is
    the local directory standing in for the container. ``storage_account`` is
    the account the management API was given."""
    enabled: bool = False
    destination: str = "capture"  # a local directory standing in for the container
    destination_type: str = "EventHubArchive.AzureBlockBlob"
    name_format: str = "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
    interval_seconds: int = 300
    size_limit_bytes: int = 314_572_800
    skip_empty_archives: bool = False
    encoding: str = "Avro"
    backfill: bool = False
    enabled_at_ms: int | None = None
    storage_account: str | None = None
    blob_container: str | None = None
    storage_connection_string: str | None = None  # set: files are uploaded to blob_container there

    TOKENS = NAME_FORMAT_TOKENS

    def validate(self, where: str) -> None:
        if not 60 <= self.interval_seconds <= 900:
            raise ValueError(f"{where}: capture interval_seconds={self.interval_seconds} is out "
                             "of range: use 60-900")
        if not 10 * MB <= self.size_limit_bytes <= 500 * MB:
            raise ValueError(f"{where}: capture size_limit_bytes={self.size_limit_bytes} is out "
                             "of range: use 10485760-524288000 (10-500 MB)")
        problem = name_format_error(self.name_format)
        if problem:
            raise ValueError(f"{where}: capture name_format is invalid: {problem}")
        if self.encoding not in ("Avro", "Parquet"):
            raise ValueError(f"{where}: capture encoding {self.encoding!r} is unknown: use Avro "
                             "or Parquet")
        if self.storage_connection_string and not self.blob_container:
            raise ValueError(f"{where}: capture storage_connection_string needs blob_container (the "
                             "container the files go to)")
        if self.destination_type not in ("EventHubArchive.AzureBlockBlob",
                                         "EventHubArchive.AzureDataLake"):
            raise ValueError(f"{where}: capture destination_type {self.destination_type!r} is "
                             "unknown: use EventHubArchive.AzureBlockBlob or "
                             "EventHubArchive.AzureDataLake")


@dataclass(slots=True)
class EventHub:
    """An event hub (a Kafka topic) as configured."""
    name: str
    partitions: int = 1
    retention_hours: int | None = None        # None: the namespace default
    cleanup_policy: str = "Delete"            # Delete | Compact | DeleteOrCompact
    tombstone_retention_hours: int | None = None
    timestamp_type: str = "LogAppend"         # LogAppend | Create
    consumer_groups: list[str] = field(default_factory=list)  # besides $Default
    policies: dict[str, SasPolicy] = field(default_factory=dict)
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    status: str = "Active"                    # Active | Disabled | SendDisabled (management API)
    durability: str | None = None             # crash | power-loss; None: the namespace's

    CLEANUP = {"delete": "delete", "compact": "compact", "deleteorcompact": "compact,delete"}
    internal: ClassVar[bool] = False  # never one of Kafka's own topics (policy.SizedHub)

    def all_consumer_groups(self) -> list[str]:
        return [DEFAULT_CONSUMER_GROUP, *self.consumer_groups]

    def topic_configs(self) -> dict[str, str]:
        """The Kafka topic configs this hub's settings mean."""
        configs = {"cleanup.policy": self.CLEANUP[self.cleanup_policy.lower()],
                   "message.timestamp.type": ("CreateTime" if self.timestamp_type.lower() == "create"
                                              else "LogAppendTime")}
        if self.retention_hours is not None:
            configs["retention.ms"] = str(-1 if self.retention_hours < 0
                                          else self.retention_hours * HOUR_MS)
        if self.tombstone_retention_hours is not None:
            configs["delete.retention.ms"] = str(self.tombstone_retention_hours * HOUR_MS)
        if self.durability is not None:
            from kafka_wire.config import durability_topic_configs  # config imports eventhubs

            configs.update(durability_topic_configs(self.durability))
        return configs

    def validate(self, where: str) -> None:
        problem = hub_name_error(self.name)
        if problem:
            raise ValueError(f"{where}: {problem}")
        if not isinstance(self.partitions, int) or self.partitions < 1:
            raise ValueError(f"{where}: partitions={self.partitions!r} is invalid: use 1 or more")
        if self.cleanup_policy.lower() not in self.CLEANUP:
            raise ValueError(f"{where}: cleanup_policy {self.cleanup_policy!r} is unknown: use "
                             "Delete, Compact or DeleteOrCompact")
        if self.timestamp_type.lower() not in ("logappend", "create"):
            raise ValueError(f"{where}: timestamp_type {self.timestamp_type!r} is unknown: use "
                             "LogAppend or Create")
        problem = None if self.retention_hours is None else retention_hours_error(self.retention_hours)
        if problem:
            raise ValueError(f"{where}: retention_hours={self.retention_hours} is invalid: {problem}")
        seen = set()
        for g in self.consumer_groups:
            problem = consumer_group_name_error(g)
            if problem:
                raise ValueError(f"{where}: {problem}")
            if g.lower() in seen:
                raise ValueError(f"{where}: consumer group {g!r} is listed twice")
            seen.add(g.lower())
        if len(self.policies) > 12:
            raise ValueError(f"{where}: {len(self.policies)} SAS policies: Event Hubs allows 12 "
                             "per hub")
        self.capture.validate(where)


@dataclass(slots=True)
class Namespace:
    """An Event Hubs namespace as configured."""
    name: str
    tier: Tier = Tier.STANDARD
    mode: str = "relaxed"                  # relaxed | strict
    units: int | None = None               # TUs (Basic/Standard), PUs, CUs; None: unthrottled
    auto_inflate_max: int | None = None    # Standard: raise TUs up to this when throttled
    auth: str | None = None                # required | optional; None: required iff policies
    policies: dict[str, SasPolicy] = field(default_factory=dict)
    hubs: dict[str, EventHub] = field(default_factory=dict)
    hosts: list[str] = field(default_factory=list)  # extra Endpoint host names that select it
    default_partitions: int | None = None  # for hubs created without a count (auto-creation)
    default_retention_hours: int | None = None
    max_message_bytes: int | None = None   # Dedicated self-serve: 1-20 MiB
    emulator: bool = False                 # came from the official emulator's Config.json
    close_large_frames: bool = False       # mimic the service: drop frames >= KAFKA_FRAME_LIMIT
    oauth: Any = None                      # eventhubs.oauth.OAuthSettings: trusted local tokens
    network_rules: Any = None              # eventhubs.network.NetworkRuleSet (management API)
    application_groups: dict[str, Any] = field(default_factory=dict)  # eventhubs.app_groups
    # made through the management API: selected only by <name>.servicebus.windows.net,
    # never by a plain host name (those stay with the namespaces the operator configured)
    created_at_runtime: bool = False
    durability: str | None = None          # crash | power-loss; None: the broker's (serve --durability)
    geo_replication: Any = None            # eventhubs.geo.GeoSettings: replicas in other regions (Premium, Dedicated)

    @property
    def strict(self) -> bool:
        return self.mode == "strict"

    @property
    def limits(self) -> TierLimits:
        return TIER_LIMITS[self.tier]

    @property
    def requires_auth(self) -> bool:
        if self.auth is not None:
            return self.auth == "required"
        return bool(self.policies)

    @property
    def open(self) -> bool:
        """No SAS policies configured: any connection string naming it is accepted."""
        return not self.policies

    @property
    def takes_anyone(self) -> bool:
        """Open, without OAuth and without required authentication: any client is let in,
        and a bearer token (an SDK's TokenCredential's) is taken as no credential."""
        return self.open and self.oauth is None and not self.requires_auth

    def effective_units(self) -> int | None:
        """Throughput units in force: configured, else 1 TU for strict Basic/Standard."""
        if self.units is not None:
            return self.units
        if self.strict and self.limits.ingress_bytes_per_unit is not None:
            return 1
        return None

    def max_publication_bytes(self) -> int:
        if self.tier is Tier.DEDICATED and self.max_message_bytes:
            return self.max_message_bytes
        return self.limits.max_publication_bytes

    def hub_limit(self) -> int:
        lim = self.limits
        if lim.hubs_scale_with_units:
            return lim.hubs_per_namespace * max(self.units or 1, 1)
        return lim.hubs_per_namespace

    def namespace_partition_limit(self) -> int | None:
        per = self.limits.namespace_partitions_per_unit
        return None if per is None else per * max(self.units or 1, 1)

    def default_retention(self) -> int | None:
        """Retention (hours) for hubs created without one; None keeps Kafka's default."""
        if self.default_retention_hours is not None:
            return self.default_retention_hours
        if self.strict:
            return min(7 * 24, self.limits.max_retention_hours)
        return None

    def topic_defaults(self) -> dict[str, str]:
        """The topic configs a hub of this namespace has where its own settings say nothing:
        the default retention, a Dedicated cluster's message size."""
        defaults = {}
        retention = self.default_retention()
        if retention is not None:
            defaults["retention.ms"] = str(-1 if retention < 0 else retention * HOUR_MS)
        if self.max_message_bytes:
            defaults["max.message.bytes"] = str(self.max_message_bytes)
        return defaults

    def hub(self, name: str) -> EventHub | None:
        hub = self.hubs.get(name)
        if hub is None:
            low = name.lower()
            for candidate in self.hubs.values():
                if candidate.name.lower() == low:
                    return candidate
        return hub

    def policy(self, name: str, hub: str | None = None) -> SasPolicy | None:
        """The rule ``name`` defined on ``hub`` (if given and it has one), else on the namespace."""
        if hub is not None:
            h = self.hub(hub)
            if h is not None and name in h.policies:
                return h.policies[name]
        return self.policies.get(name)

    def validate(self) -> None:
        where = f"namespace {self.name!r}"
        problem = namespace_name_error(self.name)
        if problem:
            raise ValueError(problem)
        if self.mode not in ("relaxed", "strict"):
            raise ValueError(f"{where}: mode {self.mode!r} is unknown: use relaxed or strict")
        if self.auth not in (None, "required", "optional"):
            raise ValueError(f"{where}: auth {self.auth!r} is unknown: use required or optional")
        lim = self.limits
        if self.units is not None and not 1 <= self.units <= lim.max_units:
            raise ValueError(f"{where}: {self.units} {lim.unit_name}s is out of range for "
                             f"{self.tier.value}: use 1-{lim.max_units}")
        if self.auto_inflate_max is not None:
            if not lim.auto_inflate:
                raise ValueError(f"{where}: auto-inflate exists only on the Standard tier")
            if not 1 <= self.auto_inflate_max <= lim.max_units:
                raise ValueError(f"{where}: auto_inflate_max={self.auto_inflate_max} is out of "
                                 f"range: use 1-{lim.max_units}")
            if self.auto_inflate_max < (self.units or 1):
                raise ValueError(f"{where}: auto_inflate_max={self.auto_inflate_max} is below "
                                 f"throughput_units={self.units}")
        if self.max_message_bytes is not None:
            lo, hi = DEDICATED_MAX_MESSAGE_BYTES
            if self.tier is not Tier.DEDICATED or not lo <= self.max_message_bytes <= hi:
                raise ValueError(f"{where}: max_message_bytes is for Dedicated clusters only, "
                                 f"{lo}-{hi}")
        if self.oauth is not None:
            self.oauth.validate(f"{where}, oauth")
        if self.close_large_frames and self.tier is Tier.DEDICATED:
            raise ValueError(f"{where}: close_large_frames mimics Standard and Premium; "
                             "Dedicated clusters accept larger publications")
        if self.default_partitions is not None and self.default_partitions < 1:
            raise ValueError(f"{where}: default_partitions must be 1 or more")
        hours = self.default_retention_hours
        problem = None if hours is None else retention_hours_error(hours)
        if problem:
            raise ValueError(f"{where}: default_retention_hours={hours} is invalid: {problem}")
        if len(self.policies) > 12:
            raise ValueError(f"{where}: {len(self.policies)} SAS policies: Event Hubs allows 12 "
                             "per namespace")
        if self.geo_replication is not None:
            from kafka_wire.eventhubs.geo import tier_error
            problem = tier_error(self.tier.value, self.name)
            if problem:
                raise ValueError(f"{where}: {problem}")
            self.geo_replication.validate(f"{where}, geo_replication")
        for hub in self.hubs.values():
            hub.validate(f"{where}, event hub {hub.name!r}")
            if self.strict:
                self._check_hub_quota(hub)
        if self.strict and len(self.hubs) > self.hub_limit():
            raise ValueError(f"{where}: {len(self.hubs)} event hubs exceed the {self.tier.value} "
                             f"limit of {self.hub_limit()} (strict mode)")

    def _check_hub_quota(self, hub: EventHub) -> None:
        where = f"namespace {self.name!r}, event hub {hub.name!r}"
        lim = self.limits
        if hub.partitions > lim.partitions_per_hub:
            raise ValueError(f"{where}: {hub.partitions} partitions exceed the {self.tier.value} "
                             f"limit of {lim.partitions_per_hub} (strict mode)")
        if len(hub.all_consumer_groups()) > lim.consumer_groups_per_hub:
            raise ValueError(f"{where}: {len(hub.all_consumer_groups())} consumer groups "
                             f"(with $Default) exceed the {self.tier.value} limit of "
                             f"{lim.consumer_groups_per_hub} (strict mode)")
        if hub.retention_hours is not None and (
                hub.retention_hours > lim.max_retention_hours
                or (hub.retention_hours < 0 and hub.cleanup_policy.lower() == "delete")):
            raise ValueError(f"{where}: retention_hours={hub.retention_hours} is outside "
                             f"{MIN_RETENTION_HOURS}-{lim.max_retention_hours} for "
                             f"{self.tier.value} (strict mode)")
        if hub.cleanup_policy.lower() != "delete" and not lim.compaction:
            raise ValueError(f"{where}: log compaction is not available on {self.tier.value}")
        if hub.capture.enabled and not lim.capture:
            raise ValueError(f"{where}: Capture is not available on {self.tier.value}")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(slots=True)
class EventHubsModel:
    """Every namespace one kafka-wire process serves."""
    namespaces: dict[str, Namespace]
    default_namespace: str
    # Blob storage accounts Capture uploads to: name -> connection string
    # (a management API capture description names an account by resource id).
    storage_accounts: dict[str, str] = field(default_factory=dict)
    # Geo-DR aliases: alias (lower case) -> kafka_wire.eventhubs.geo_dr.Pairing
    geo_dr: dict = field(default_factory=dict)

    @classmethod
    def single(cls, name: str) -> "EventHubsModel":
        """No config: one open, relaxed Standard namespace, authentication optional."""
        return cls({name: Namespace(name=name)}, name)

    def validate(self) -> None:
        if self.default_namespace not in self.namespaces:
            raise ValueError(f"default namespace {self.default_namespace!r} is not configured")
        lower = {}
        for ns in self.namespaces.values():
            ns.validate()
            if ns.name.lower() in lower:
                raise ValueError(f"namespaces {lower[ns.name.lower()]!r} and {ns.name!r} differ "
                                 "only in case: host names do not")
            lower[ns.name.lower()] = ns.name

    def namespace_for_host(self, host: str) -> str | None:
        """Which namespace an Endpoint host selects, or None when it names one we don't serve.

        ``<name>.servicebus.windows.net`` (and the other clouds' suffixes) select
        ``<name>``; a namespace's configured ``hosts`` select it; ``localhost``,
        IP literals, ``host.docker.internal`` and any other plain host name (a
        Docker alias) select the default namespace, unless it is the name of a
        namespace the operator configured, or a Geo-DR alias pointing at one. A
        namespace made at runtime is never selected by a plain name, not even
        through an alias: it cannot take over a host clients already use.
        """
        host = (host or "").strip().lower().rstrip(".")
        if not host:
            return None
        for ns in self.namespaces.values():
            if host in (h.lower() for h in ns.hosts):
                return ns.name
        for suffix in SERVICEBUS_SUFFIXES:
            if host.endswith(suffix):
                label = host[: -len(suffix)]
                for ns in self.namespaces.values():
                    if ns.name.lower() == label:
                        return ns.name
                return self._alias_target(label)
        if host in LOCAL_HOSTS or _is_ip(host):
            return self.default_namespace
        for ns in self.namespaces.values():
            if ns.name.lower() == host and not ns.created_at_runtime:
                return ns.name
        if "." not in host:
            target = self._alias_target(host)  # a Geo-DR alias as a plain (Docker) name
            if target is not None and not self.namespaces[target].created_at_runtime:
                return target
            return self.default_namespace
        return None

    def _alias_target(self, label: str) -> str | None:
        """The namespace a Geo-DR alias points at (kafka_wire.eventhubs.geo_dr)."""
        if not self.geo_dr:
            return None
        from kafka_wire.eventhubs.geo_dr import target  # geo_dr imports this module

        return target(self, label)

    def endpoint_host(self, name: str) -> str:
        """The host a connection string for namespace ``name`` should name."""
        ns = self.namespaces[name]
        if ns.emulator or (name == self.default_namespace and ns.open):
            return "localhost"
        return f"{name.lower()}.servicebus.windows.net"
