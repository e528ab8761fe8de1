"""What a request handler may use: the request's header, its connection, and
the broker's collaborators by name (log manager, group coordinator, clock)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_wire.codec import RequestHeader


@dataclass(slots=True)
class ClusterInfo:
    """The single broker we present: node id, advertised address, cluster id."""
    node_id: int
    host: str
    port: int
    cluster_id: str
    rack: str | None = None


@dataclass(slots=True)
class ConnectionState:
    """Per-connection facts a handler may read (and SASL handlers may set)."""
    peer: str
    connection_id: int
    authenticated: bool = False
    sasl_mechanism: str | None = None
    principal: Any = None          # set by the Event Hubs layer after SASL
    namespace: Any = None          # the Event Hubs namespace this connection is bound to
    attrs: dict[str, Any] = field(default_factory=dict)
    # Largest request frame accepted; a namespace may lower it (Event Hubs'
    # 1,046,528-byte frame limit) when the connection binds to it.
    max_request_bytes: int = 100 * 1024 * 1024


@dataclass(slots=True)
class NamespaceRuntime:
    """One Event Hubs namespace as the broker runs it: its own topics (event
    hubs, under DATA_DIR/<name>/) and its own consumer groups (Kafka groups are
    namespace-wide in Event Hubs). ``model`` is the Event Hubs settings object
    (tier, policies, quotas) when the Event Hubs layer configured one."""
    name: str
    topics: Any         # kafka_wire.topics.TopicManager
    groups: Any = None  # coordinator.group_coordinator.GroupCoordinator
    txns: Any = None    # coordinator.transactions.TransactionCoordinator
    model: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def request_limit(self, configured: int) -> int:
        """The frame limit of a connection bound to this namespace."""
        frame_limit = self.extra.get("max_frame_bytes")
        return configured if frame_limit is None else min(configured, frame_limit)


@dataclass(slots=True)
class Services:
    """The broker's collaborators, built once by the server."""
    cluster: ClusterInfo
    config: Any        # kafka_wire.config.BrokerConfig
    clock: Any         # coordinator.clock.Clock
    topics: Any        # kafka_wire.topics.TopicManager (logs, configs, metadata)
    groups: Any = None  # coordinator.group_coordinator.GroupCoordinator
    txns: Any = None    # coordinator.transactions (later)
    faults: Any = None  # kafka_wire.testing fault hooks (later)
    extra: dict[str, Any] = field(default_factory=dict)
    namespaces: dict[str, NamespaceRuntime] = field(default_factory=dict)
    default_namespace: str = ""


@dataclass(slots=True)
class RequestContext:
    header: "RequestHeader"
    connection: ConnectionState
    services: Services
    # Set by a handler whose request went over a quota: the server puts it in
    # the response's throttle_time_ms and mutes the connection that long.
    throttle_ms: int = 0
    # The hubs whose traffic drew that throttle (metrics and console detail).
    throttle_hubs: set | None = None

    @property
    def version(self) -> int:
        return self.header.api_version

    def throttled_by(self, hub: str, ms: int) -> None:
        """Raise the throttle time to ``ms`` (if more), naming ``hub`` as a cause."""
        if ms <= 0:
            return
        if ms > self.throttle_ms:
            self.throttle_ms = ms
        if self.throttle_hubs is None:
            self.throttle_hubs = set()
        self.throttle_hubs.add(hub)

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    # Narrow accessors so handlers name what they use. A connection works
    # inside one namespace: the one it authenticated to, else the default.
    @property
    def namespace(self) -> NamespaceRuntime:
        ns = self.connection.namespace
        if ns is None:
            ns = self.services.namespaces[self.services.default_namespace]
        return ns

    @property
    def topics(self):
        return self.namespace.topics

    @property
    def groups(self):
        return self.namespace.groups

    @property
    def txns(self):
        return self.namespace.txns

    @property
    def clock(self):
        return self.services.clock

    @property
    def cluster(self) -> ClusterInfo:
        return self.services.cluster
