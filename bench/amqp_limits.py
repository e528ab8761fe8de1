"""What hostile AMQP clients cost a broker process: concurrent messages far over
the publication limit (each refused at its first frame past it) and attach/detach
cycles on one connection. Prints the broker's idle, peak (VmHWM) and settled RSS.

A program, not a test: an in-process broker in a child process on an ephemeral
port, driven by a raw proton client (kafka_wire/testing/raw_amqp.py).

    python -m bench.amqp_limits [--mb 300] [--clients 3] [--cycles 20000]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

from proton import Delivery, Message

from kafka_wire.testing.processes import stop_processes
from kafka_wire.testing.raw_amqp import RawAmqp

_CHILD = """
import sys
from kafka_wire.testing import EmulatedBroker
with EmulatedBroker(amqp=True) as b:
    b.create_hub("hub", 1)
    print(b.amqp_port, flush=True)
    sys.stdin.read()
"""


def status(pid: int, key: str) -> int:
    """A /proc/PID/status figure in MB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key):
            return int(line.split()[1]) // 1024
    raise KeyError(key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=300, help="size of each oversized message")
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=20_000, help="attach/detach cycles")
    args = ap.parse_args()
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    try:
        port = int(child.stdout.readline())
        print(f"idle RSS {status(child.pid, 'VmRSS')} MB")
        body = Message(body=b"\xab" * (args.mb * 1024 * 1024)).encode()
        outcomes: list = []

        def oversized(i: int) -> None:
            with RawAmqp(port, chunk=1 << 20) as c:
                c.open()
                link = c.sender(c.session(), "hub/Partitions/0", f"big{i}")
                c.wait(lambda: link.credit > 0)
                d = link.delivery(b"x")
                link.send(body)
                link.advance()
                c.wait(lambda: d.remote_state in (Delivery.REJECTED, Delivery.ACCEPTED)
                       and c.transport.pending() <= 0, timeout=600)
                outcomes.append(d.remote.condition.name if d.remote.condition else d.remote_state)

        started = time.monotonic()
        threads = [threading.Thread(target=oversized, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"{args.clients} concurrent {args.mb} MB messages in {time.monotonic() - started:.1f} s: "
              f"{sorted(map(str, outcomes))}; peak RSS {status(child.pid, 'VmHWM')} MB, "
              f"after {status(child.pid, 'VmRSS')} MB")
        with RawAmqp(port) as c:
            c.open()
            session = c.session()
            before, started = status(child.pid, "VmRSS"), time.monotonic()
            for i in range(args.cycles):
                c.detach(c.sender(session, "hub", f"l{i}"))
            print(f"{args.cycles} attach/detach cycles on one connection in {time.monotonic() - started:.1f} s: "
                  f"RSS {before} -> {status(child.pid, 'VmRSS')} MB")
    finally:
        child.stdin.close()
        stop_processes([child])


if __name__ == "__main__":
    main()
