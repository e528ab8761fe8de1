"""Broker settings: one typed home, defaults documented once."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafka_wire.eventhubs.bounds import Bounds


# Durability modes (``serve --durability``, [server] durability). Each maps onto
# Kafka's topic configs as the default every topic starts from; a topic that
# sets flush.messages or flush.ms itself keeps its own setting. docs/durability.md
# says what each promises and costs.
#   crash       acknowledged data survives a crash of the broker process: it is in
#               the page cache when the answer goes out; nothing is fsynced per
#               request (Kafka's own default). A power loss or kernel crash may
#               lose the last seconds (recovery keeps a valid prefix and aborts
#               the transactions it leaves open).
#   power-loss  every acknowledged write is fsynced before the answer: records
#               (flush.messages=1), group commits and checkpoints, transaction
#               coordinator state, producer-state snapshots and topic metadata.
DURABILITY_MODES = ("crash", "power-loss")


_NEVER = str(2**63 - 1)  # Kafka's Long.MAX_VALUE: flush.messages/flush.ms "never"
DURABILITY_TOPIC_CONFIGS = {
    "crash": {"flush.messages": _NEVER, "flush.ms": _NEVER},
    "power-loss": {"flush.messages": "1"},
}


def durability_topic_configs(mode: str) -> dict[str, str]:
    """The topic configs a hub set to ``mode`` gets (over its namespace's or the broker's)."""
    return dict(DURABILITY_TOPIC_CONFIGS[mode])


def parse_durability(text: str) -> str:
    value = text.strip().lower().replace("_", "-")
    if value not in DURABILITY_MODES:
        raise ValueError(f"durability {text!r} is not a mode: use one of {', '.join(DURABILITY_MODES)}")
    return value


def parse_host_port(text: str, default_port: int = 9092) -> tuple[str, int]:
    """'HOST:PORT', ':PORT', 'HOST' or '[::1]:PORT' → (host, port)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.lstrip(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, ""
    try:
        port_num = int(port) if port else default_port
    except ValueError:
        raise ValueError(f"address {text!r} is invalid: use HOST:PORT, e.g. 127.0.0.1:9092") from None
    if not 0 <= port_num <= 65535:
        raise ValueError(f"port {port_num} in {text!r} is out of range 0-65535")
    return host or "127.0.0.1", port_num


@dataclass
class BrokerConfig:
    """Settings of one kafka-wire process.

    data_dir: where partitions and the checkpoint store live.
    listen: Kafka listener (port 0 = ephemeral, the tests' choice).
    advertise: address put in Metadata; defaults to the bound listener.
    max_request_bytes: frames larger than this close the connection before
        any allocation (Kafka's socket.request.max.bytes is 100 MiB).
    auto_create_topics: Metadata with allow_auto_topic_creation creates hubs,
        as Event Hubs does.
    num_partitions: partitions of auto-created topics (Kafka's num.partitions).
    group_initial_rebalance_delay_ms: small by default so tests join fast;
        Kafka's default is 3000.
    eventhubs / tls_*: see kafka_wire.eventhubs (config_file, tls).
    durability: "crash" (default) or "power-loss"; see DURABILITY_MODES.
    transaction_max_timeout_ms: Kafka's transaction.max.timeout.ms: the longest
        transaction.timeout.ms a producer may ask for, and how long an open
        transaction the coordinator does not know (its state lost in a power
        loss) may hold a partition's last stable offset before it is aborted.
    """
    data_dir: Path = Path("./data")
    listen_host: str = "127.0.0.1"
    listen_port: int = 9092
    advertise_host: str | None = None
    advertise_port: int | None = None
    node_id: int = 0
    cluster_id: str | None = None
    max_request_bytes: int = 100 * 1024 * 1024
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    topic_defaults: dict[str, str] = field(default_factory=dict)
    durability: str = "crash"
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    group_initial_rebalance_delay_ms: int = 100
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    retention_check_interval_ms: int = 30_000
    # How often the LogCleaner looks for compacted topics to clean (0: never).
    log_cleaner_interval_ms: int = 15_000
    # Connections without traffic this long are closed (Kafka's
    # connections.max.idle.ms; Event Hubs closes after 240,000). 0: never.
    connections_max_idle_ms: int = 600_000
    # After a failed SASL authentication the error response is sent and the
    # connection closed this much later (Kafka's connection.failed.
    # authentication.delay.ms): clients read the error instead of seeing a
    # reset, and password guessing slows down. 0: close at once.
    failed_authentication_delay_ms: int = 100
    # Bytes of complete requests a connection may queue before we stop reading it.
    connection_buffer_bytes: int = 16 * 1024 * 1024
    default_namespace: str = "emulatorNs1"
    # Further namespaces served side by side (the Event Hubs layer fills this
    # from a config file); each gets DATA_DIR/<name>/.
    namespaces: list[str] = field(default_factory=list)
    # The Event Hubs model (kafka_wire.eventhubs), when a config file gave one;
    # None serves one open, relaxed Standard namespace (authentication optional).
    eventhubs: object | None = None
    # SASL_SSL listener (Event Hubs' port 9093), off unless a host is given.
    # Without cert/key files a private CA and server certificate are generated
    # into DATA_DIR/tls/ on first start (clients trust DATA_DIR/tls/ca.pem).
    tls_listen_host: str | None = None
    tls_listen_port: int = 9093
    tls_advertise_host: str | None = None
    tls_advertise_port: int | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_ca_file: Path | None = None  # printed for clients when certificates are given
    # HTTP listener: health (the official emulator's port 5300), Prometheus
    # /metrics, JSON API and web console (kafka_wire.console). None = off, the
    # in-process test broker's default; `kafka-wire serve` uses 127.0.0.1:5300.
    # http_optional: a bind failure only logs a warning (the CLI's default address).
    http_listen_host: str | None = None
    http_listen_port: int = 5300
    http_optional: bool = False
    # AMQP listener (the Azure Event Hubs SDKs; the official emulator's port 5672).
    # None = off, the in-process test broker's default; `kafka-wire serve` uses
    # 127.0.0.1:5672 (amqp_optional: a bind failure there only logs a warning).
    # AMQPS (port 5671) uses the SASL_SSL listener's certificate; with TLS on,
    # `serve` opens it on the TLS host unless told otherwise.
    amqp_listen_host: str | None = None
    amqp_listen_port: int = 5672
    amqp_optional: bool = False
    amqps_optional: bool = False  # likewise for AMQPS's default port 5671
    amqps_listen_host: str | None = None
    amqps_listen_port: int = 5671
    # HTTPS: the HTTP listener's pages and REST API on the SASL_SSL listener's
    # certificate; with TLS and HTTP on, `serve` opens it on the TLS host, port 5443.
    https_listen_host: str | None = None
    https_listen_port: int = 5443
    https_optional: bool = False
    # Capture output directory whose _capture_events.jsonl the console reads
    # (capture-enabled hubs' destinations are read as well).
    capture_dir: Path | None = None
    # Run the Spark capture job of every capture-enabled hub beside the broker
    # (kafka_wire/capture_jobs.py); `serve` turns it on. Hubs enabled through the
    # management API without a local destination write under capture_dir, else
    # DATA_DIR/capture.
    capture_jobs: bool = False
    in_memory: bool = False
    # What clients may create, in every mode (the config file's [limits]).
    bounds: Bounds = field(default_factory=Bounds)
    # The management plane's owner credential (a bearer token), needed for
    # subscription-level operations once any namespace requires auth. None: made
    # on first start and kept in DATA_DIR/subscription.key (`kafka-wire token
    # --management` prints it).
    subscription_key: str | None = None
    # Faults set at start-up: the config file's [[faults]] (control-API specs,
    # kafka_wire/startup_faults.py) and chaos mode's seed (serve --chaos,
    # [server] chaos; kafka_wire/chaos.py). docs/faults.md
    faults: list = field(default_factory=list)
    chaos: int | None = None

    @property
    def power_loss_durable(self) -> bool:
        return self.durability == "power-loss"

    def power_loss_durable_in(self, eventhubs, namespace: str) -> bool:
        """Is ``namespace`` (its [namespaces.X] durability, else the broker's) power-loss
        durable? ``eventhubs``: the Event Hubs model, or None."""
        configured = eventhubs.namespaces.get(namespace) if eventhubs is not None else None
        return (getattr(configured, "durability", None) or self.durability) == "power-loss"

    def log_topic_defaults(self, durability: str | None = None) -> dict[str, str]:
        """The topic configs every topic starts from: ``topic_defaults`` plus what
        the durability mode (``durability``, a namespace's; else the broker's)
        implies (power-loss: flush.messages=1, unless the defaults set
        flush.messages or flush.ms themselves)."""
        out = dict(self.topic_defaults)
        if ((durability or self.durability) == "power-loss"
                and "flush.messages" not in out and "flush.ms" not in out):
            out["flush.messages"] = "1"
        return out
