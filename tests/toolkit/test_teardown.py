"""An EmulatedBroker leaves no thread, socket or file behind."""
from __future__ import annotations

import os
import socket
import threading

from confluent_kafka import Consumer, Producer

from kafka_wire.testing import EmulatedBroker


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_stop_leaves_no_threads_sockets_or_files():
    # Warm up imports and pools so only the broker's own resources are counted.
    with EmulatedBroker(in_memory=True):
        pass
    threads_before = {t.ident for t in threading.enumerate()}
    fds_before = _fds()
    broker = EmulatedBroker(in_memory=True).start()
    data_dir = broker.data_dir
    port = broker.port
    broker.create_hub("t", partitions=3)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    p.produce("t", b"v", partition=1)
    p.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["t"])
    for _ in range(20):
        if c.poll(0.1):
            break
    c.close()
    del p
    broker.stop()
    left = [t.name for t in threading.enumerate() if t.ident not in threads_before]
    assert not left, f"threads outlived the broker: {left}"
    assert _fds() <= fds_before
    assert not data_dir.exists()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_async_context_manager_works_inside_a_running_loop():
    import asyncio

    async def main():
        async with EmulatedBroker(in_memory=True) as b:
            b.create_hub("a")
            return b.bootstrap_servers
    assert asyncio.run(main()).startswith("127.0.0.1:")
