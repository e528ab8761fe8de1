"""EmulatedBroker: a broker on its own event loop thread, for tests."""
from __future__ import annotations

import asyncio
import os
import time
import shutil
import sys
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.broker import Broker
from kafka_wire.config import BrokerConfig


# A client thread of this process that busy-waits holds the GIL for the whole switch
# interval (5 ms by default) each time the broker's thread wants it back: azure-eventhub's
# sync EventProcessor spins until its first partition is claimed, which made every one of
# the SDK's steps before the claim (each a few GIL hand-overs in the broker and in the
# SDK's own threads) ~5 ms late: 3.5 s from receive() to a refused attach, 1.5 s at 0.5 ms.
# Lowered while any EmulatedBroker runs, restored when the last one stops.
SWITCH_INTERVAL = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_saved: float | None = None


def _lower_switch_interval() -> None:
    global _switch_users, _switch_saved
    with _switch_lock:
        if sys.getswitchinterval() > SWITCH_INTERVAL:
            if _switch_saved is None:
                _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL)
        _switch_users += 1


def _restore_switch_interval() -> None:
    global _switch_users, _switch_saved
    with _switch_lock:
        _switch_users -= 1
        if _switch_users == 0 and _switch_saved is not None:
            sys.setswitchinterval(_switch_saved)
            _switch_saved = None


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class EmulatedBroker:
    """A kafka-wire broker running in this process.

    ``data_dir``: keep data there (survives ``stop()``; restart by creating a
    new EmulatedBroker on the same directory). ``config_file``: an Event Hubs
    Config.json or kafka-wire TOML file (its listeners are replaced by
    ephemeral ones; ``tls=True`` adds a SASL_SSL listener; ``http=True`` the
    health/metrics/console listener at :attr:`http_url`). ``**settings`` are
    :class:`kafka_wire.config.BrokerConfig` fields (``eventhubs=`` a model).

    Example, with the official emulator's Config.json::

        with EmulatedBroker(config_file="Config.json") as broker:
            producer = confluent_kafka.Producer({
                "bootstrap.servers": broker.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": "$ConnectionString",
                "sasl.password": broker.connection_string()})
    """

    def __init__(self, data_dir: str | Path | None = None, *, clock=None,
                 config_file: str | Path | None = None, tls: bool = False,
                 virtual_clock: bool = False, in_memory: bool = False, http: bool = False,
                 amqp: bool = False, **settings: Any) -> None:
        self._own_dir = data_dir is None
        if data_dir is None:
            # in_memory: the log lives on a RAM-backed tmpfs (fast, nothing on disk).
            ram = "/dev/shm" if in_memory and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            data_dir = tempfile.mkdtemp(prefix="kafka-wire-", dir=ram)
        self.data_dir = Path(data_dir)
        if virtual_clock and clock is None:
            clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
            # A frozen clock would hold the first join forever: no initial delay.
            settings.setdefault("group_initial_rebalance_delay_ms", 0)
        settings.setdefault("listen_port", 0)
        self.config = BrokerConfig(data_dir=self.data_dir)
        if config_file is not None:
            from kafka_wire.eventhubs.config_file import apply_config_file
            apply_config_file(self.config, Path(config_file))
            self.config.data_dir = self.data_dir
            self.config.listen_host, self.config.listen_port = "127.0.0.1", 0
            if self.config.tls_listen_host:
                self.config.tls_listen_host, self.config.tls_listen_port = "127.0.0.1", 0
        if tls:
            self.config.tls_listen_host, self.config.tls_listen_port = "127.0.0.1", 0
        self.config.http_listen_host = self.config.https_listen_host = None  # off unless asked
        if http:
            self.config.http_listen_host, self.config.http_listen_port = "127.0.0.1", 0
            if self.config.tls_listen_host:  # HTTPS too, on the TLS listener's certificate
                self.config.https_listen_host, self.config.https_listen_port = "127.0.0.1", 0
        self.config.amqp_listen_host = self.config.amqps_listen_host = None
        if amqp:  # AMQP for the Azure SDKs; AMQPS too when tls=True
            self.config.amqp_listen_host, self.config.amqp_listen_port = "127.0.0.1", 0
            if self.config.tls_listen_host:
                self.config.amqps_listen_host, self.config.amqps_listen_port = "127.0.0.1", 0
        for key, value in settings.items():
            if not hasattr(self.config, key):
                raise TypeError(f"unknown BrokerConfig setting {key!r}")
            setattr(self.config, key, value)
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.broker: Broker | None = None

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> "EmulatedBroker":
        if self._thread is not None:
            raise RuntimeError("broker already started")
        self._loop = _new_loop()
        started: Future = Future()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self.broker = Broker(self.config, clock=self._clock)
            try:
                self._loop.run_until_complete(self.broker.start())
            except BaseException as exc:  # report start failures to the caller
                started.set_exception(exc)
                self._loop.close()
                return
            started.set_result(None)
            self._loop.run_forever()
            self._loop.run_until_complete(self.broker.stop())
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="kafka-wire-broker", daemon=True)
        _lower_switch_interval()
        self._thread.start()
        try:
            started.result(timeout=30)
        except BaseException:
            self._thread.join(5)
            self._thread = None
            _restore_switch_interval()
            self._cleanup_dir()
            raise
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._thread = None
        _restore_switch_interval()
        self._cleanup_dir()

    def _cleanup_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "EmulatedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def __aenter__(self) -> "EmulatedBroker":
        await asyncio.get_running_loop().run_in_executor(None, self.start)
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.stop)

    # -- what tests use ----------------------------------------------------
    @property
    def _running(self) -> Broker:
        """The started broker, or a clear error instead of an AttributeError on None."""
        if self._thread is None or self.broker is None:
            raise RuntimeError("this EmulatedBroker is not running: use `with EmulatedBroker() as "
                               "broker:` or call start() first (and not after stop())")
        return self.broker

    @property
    def bootstrap_servers(self) -> str:
        return self._running.bootstrap_servers

    @property
    def port(self) -> int:
        return self._running.address[1]

    @property
    def http_port(self) -> int:
        """Port of the HTTP listener (``http=True``): /health, /metrics, /api, console."""
        if self._running.http_address is None:
            raise RuntimeError("this broker has no HTTP listener: start it with http=True")
        return self._running.http_address[1]

    @property
    def http_url(self) -> str:
        """``http://127.0.0.1:PORT`` of the HTTP listener (``http=True``)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def faults(self):
        """Fault injection (see :mod:`kafka_wire.faults`)."""
        return self._running.services.faults

    @property
    def clock(self):
        """The virtual clock (``virtual_clock=True``): ``advance(ms)``, ``now_ms()``."""
        if not isinstance(self._clock, VirtualClock):
            raise RuntimeError("this broker runs on wall-clock time: start it with virtual_clock=True")
        from kafka_wire.testing.clock import BrokerClock
        return BrokerClock(self._clock, self._loop)

    @property
    def tls_bootstrap_servers(self) -> str | None:
        """The SASL_SSL listener's address (``tls=True`` or a config's tls_listen)."""
        return self._running.tls_bootstrap_servers

    @property
    def ca_file(self) -> Path | None:
        """The CA certificate SASL_SSL clients should trust."""
        return self._running.tls_ca_file

    def connection_string(self, namespace: str | None = None, policy: str | None = None,
                          hub: str | None = None) -> str:
        """A key-based connection string for ``policy`` (default: the namespace's first,
        RootManageSharedAccessKey if there) of ``namespace`` (default: the default one),
        scoped to ``hub`` if given. Open namespaces (no policies) accept any key."""
        from kafka_wire.eventhubs import connection_string
        from kafka_wire.eventhubs.model import ROOT_POLICY

        model = self._running.services.eventhubs
        ns = model.namespaces[namespace or model.default_namespace]
        if ns.policies or (hub and ns.hub(hub) and ns.hub(hub).policies):
            rule = ns.policy(policy or ROOT_POLICY, hub=hub) or (
                None if policy else next(iter(ns.policies.values()), None))
            if rule is None:
                raise KeyError(f"policy {policy!r} is not defined on namespace {ns.name!r}")
            name, key = rule.name, rule.primary_key
        else:
            name, key = policy or ROOT_POLICY, "any-key-works"
        return connection_string.build(model.endpoint_host(ns.name), key_name=name, key=key,
                                       entity_path=hub, emulator=ns.emulator)

    @property
    def subscription_token(self) -> str:
        """The management plane's bearer token (create, delete and list namespaces, and
        manage any namespace), as ``kafka-wire token --management`` prints it."""
        return self._running.services.subscription.key

    @property
    def https_url(self) -> str:
        """``https://localhost:PORT`` of the HTTPS listener (``http=True, tls=True``):
        clients trust :attr:`ca_file`."""
        address = self._running.https_address
        if address is None:
            raise RuntimeError("this broker has no HTTPS listener: start it with http=True, tls=True")
        return f"https://localhost:{address[1]}"

    @property
    def amqp_port(self) -> int:
        """The AMQP listener's port (``amqp=True``)."""
        address = self._running.amqp_address
        if address is None:
            raise RuntimeError("this broker has no AMQP listener: start it with amqp=True")
        return address[1]

    @property
    def amqps_port(self) -> int:
        """The AMQPS listener's port (``amqp=True, tls=True``)."""
        address = self._running.amqps_address
        if address is None:
            raise RuntimeError("this broker has no AMQPS listener: start it with amqp=True, tls=True")
        return address[1]

    def amqp_connection_string(self, namespace: str | None = None, policy: str | None = None,
                               hub: str | None = None) -> str:
        """:meth:`connection_string` for the Azure SDKs: its Endpoint is this broker's
        AMQP address, with ``UseDevelopmentEmulator=true`` (plain AMQP, as the
        official emulator's). For a namespace other than the default one, pass
        the SDK ``custom_endpoint_address`` instead (see docs/amqp.md)."""
        from kafka_wire.eventhubs import connection_string

        parsed = connection_string.parse(self.connection_string(namespace, policy, hub))
        return connection_string.build(f"127.0.0.1:{self.amqp_port}", key_name=parsed.key_name,
                                       key=parsed.key, entity_path=parsed.entity_path,
                                       emulator=True)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the broker's loop and return its result."""
        self._running  # noqa: B018  raises if not started
        async def wrapper():
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result(30)

    def create_hub(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """Create a topic (an event hub) directly, without a client."""
        self.call(lambda: self._running.services.default.topics.create(name, partitions, configs or {}))

    create_topic = create_hub
