"""EmulatedBroker: a broker on its own event loop thread, for tests."""
from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from kafka_wire.broker import Broker
from kafka_wire.config import BrokerConfig


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class EmulatedBroker:
    """A kafka-wire broker running in this process.

    ``data_dir``: keep data there (survives ``stop()``; restart by creating a
    new EmulatedBroker on the same directory). ``**settings`` are
    :class:`kafka_wire.config.BrokerConfig` fields.
    """

    def __init__(self, data_dir: str | Path | None = None, *, clock=None, **settings: Any) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="kafka-wire-"))
        settings.setdefault("listen_port", 0)
        self.config = BrokerConfig(data_dir=self.data_dir, **settings)
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
        self._thread.start()
        try:
            started.result(timeout=30)
        except BaseException:
            self._thread.join(5)
            self._thread = None
            self._cleanup_dir()
            raise
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._thread = None
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
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def port(self) -> int:
        return self.broker.address[1]

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the broker's loop and return its result."""
        async def wrapper():
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result
        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result(30)

    def create_hub(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """Create a topic (an event hub) directly, without a client."""
        self.call(lambda: self.broker.services.topics.create(name, partitions, configs or {}))

    create_topic = create_hub
