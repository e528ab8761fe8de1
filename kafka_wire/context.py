"""What a request handler may use: the request's header, its connection, the
listener it came through, and the broker's collaborators as typed fields (the
namespace's topics, coordinators and Event Hubs policy; the clock; the config)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_wire.codec import RequestHeader
    from kafka_wire.config import BrokerConfig
    from kafka_wire.coordinator.clock import Clock
    from kafka_wire.coordinator.group_coordinator import GroupCoordinator
    from kafka_wire.coordinator.producer_ids import ProducerIdManager
    from kafka_wire.coordinator.transactions import TransactionCoordinator
    from kafka_wire.eventhubs.auth import Authenticator, Principal
    from kafka_wire.eventhubs.door import Door
    from kafka_wire.eventhubs.subscription import Subscription
    from kafka_wire.eventhubs.model import EventHubsModel, Namespace
    from kafka_wire.eventhubs.policy import NamespacePolicy
    from kafka_wire.eventhubs.quotas import ThroughputQuota
    from kafka_wire.eventhubs.report import CompatibilityReport
    from kafka_wire.faults import Faults
    from kafka_wire.fetch_sessions import FetchSessionCache
    from kafka_wire.log.cleaner import LogCleaner
    from kafka_wire.replication.geo import GeoReplication
    from kafka_wire.topics import TopicManager


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
    principal: Principal | None = None        # set by the Event Hubs layer after SASL
    namespace: NamespaceRuntime | None = None  # the namespace this connection is bound to
    attrs: dict[str, Any] = field(default_factory=dict)
    # Largest request frame accepted; a namespace may lower it (Event Hubs'
    # 1,046,528-byte frame limit) when the connection binds to it.
    max_request_bytes: int = 100 * 1024 * 1024


@dataclass(slots=True)
class NamespaceRuntime:
    """One Event Hubs namespace as the broker runs it: its own topics (event
    hubs, under DATA_DIR/<name>/), its own consumer groups and transactions
    (namespace-wide in Event Hubs), and its Event Hubs policy (rights, tier
    rules, quotas): the one door every front end asks.

    ``groups`` and ``txns`` are set while the broker starts, before it serves.
    ``model`` is the namespace's Event Hubs settings (tier, policies, hubs);
    ``quota`` its throughput units, where the tier has them; ``frame_limit``
    Event Hubs' request frame limit where the namespace closes larger frames."""
    name: str
    topics: TopicManager
    policy: NamespacePolicy
    groups: GroupCoordinator = field(init=False)
    txns: TransactionCoordinator = field(init=False)
    model: Namespace | None = None
    quota: ThroughputQuota | None = None
    cleaner: LogCleaner | None = None
    frame_limit: int | None = None
    # A geo-replicated namespace's replicas (kafka_wire.replication.geo.GeoReplication):
    # roles, lag, promotion; None for any other namespace (docs/georeplication.md).
    geo: GeoReplication | None = None
    # hub (lower case) -> the partition the last keyless send went to, whichever front end
    # (AMQP, HTTPS, the console) sent it: one round robin per hub, as the service has.
    _round_robin: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def door(self) -> Door:
        """The namespace's one door (its policy, which also identifies clients)."""
        return self.policy  # type: ignore[return-value]

    def request_limit(self, configured: int) -> int:
        """The frame limit of a connection bound to this namespace."""
        return configured if self.frame_limit is None else min(configured, self.frame_limit)

    def next_partition(self, hub: str, partitions: int) -> int:
        """Round robin over a hub's partitions, for sends without a partition or key."""
        key = hub.lower()
        n = (self._round_robin.get(key, -1) + 1) % partitions
        self._round_robin[key] = n
        return n


class BrokerObserver:
    """What the broker reports as it works (the console's metrics implement it)."""

    def on_request(self, header: RequestHeader, seconds: float, ctx: RequestContext) -> None:
        """After each answered request."""

    def on_fetch(self, ctx: RequestContext, reads: list) -> None:
        """Records a Fetch serves (outgoing events and bytes)."""

    def on_events(self, protocol: str, namespace: str, hub: str, partition: int, incoming: bool,
                  events: int, nbytes: int) -> None:
        """Events another endpoint than Kafka (``amqp``, ``https``) appended (their
        batch bytes) or delivered (stored bytes read). Appends are also counted by
        the log's append hook, as Kafka's are."""


@dataclass(slots=True)
class Services:
    """The broker's collaborators, built once by the broker. ``cluster`` is the
    plaintext listener's identity (node and cluster id, used by admin answers and
    the console); each listener's own advertised address travels in the
    request context."""
    config: BrokerConfig
    clock: Clock
    cluster: ClusterInfo
    namespaces: dict[str, NamespaceRuntime]
    default_namespace: str
    eventhubs: EventHubsModel
    report: CompatibilityReport
    auth: Authenticator
    producer_ids: ProducerIdManager
    fetch_sessions: FetchSessionCache
    faults: Faults | None = None
    observer: BrokerObserver | None = None  # None: nothing measures requests
    subscription: Subscription | None = None  # the management plane's owner

    @property
    def default(self) -> NamespaceRuntime:
        """The namespace of connections that did not authenticate to another."""
        return self.namespaces[self.default_namespace]


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    connection: ConnectionState
    services: Services
    # The listener the request came through: Metadata advertises its address.
    cluster: ClusterInfo
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
        return self.services.default if ns is None else ns

    @property
    def topics(self) -> TopicManager:
        return self.namespace.topics

    @property
    def groups(self) -> GroupCoordinator:
        return self.namespace.groups

    @property
    def txns(self) -> TransactionCoordinator:
        return self.namespace.txns

    @property
    def policy(self) -> NamespacePolicy:
        return self.namespace.policy

    @property
    def clock(self) -> Clock:
        return self.services.clock
