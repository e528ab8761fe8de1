"""An EmulatedBroker lowers the interpreter's switch interval while it runs, so a client
thread of the same process that busy-waits (azure-eventhub's sync EventProcessor until it
claims a partition) does not hold the broker's thread off for 5 ms at each hand-over.

Each scenario runs in a fresh interpreter: a broker of this session (a session fixture)
would otherwise hold the interval lowered across the test."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kafka_wire.testing.broker import SWITCH_INTERVAL


def run(scenario: str) -> list[float]:
    """The intervals ``scenario`` records with ``seen()``, run in a fresh interpreter."""
    script = textwrap.dedent("""
        import json, socket, sys
        from kafka_wire.broker import StartupError
        from kafka_wire.testing import EmulatedBroker
        seen_at = []
        def seen():
            seen_at.append(sys.getswitchinterval())
    """) + textwrap.dedent(scenario) + "\nprint(json.dumps(seen_at))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_lowered_while_any_broker_runs_and_restored_after_the_last():
    got = run("""
        sys.setswitchinterval(0.005)
        outer = EmulatedBroker(in_memory=True).start()
        seen()
        with EmulatedBroker(in_memory=True):
            seen()
        seen()  # the outer one still runs
        outer.stop()
        seen()
        outer.stop()  # a second stop changes nothing
        seen()
    """)
    assert got == pytest.approx([SWITCH_INTERVAL] * 3 + [0.005] * 2)


def test_a_lower_interval_the_process_chose_is_kept():
    got = run("""
        sys.setswitchinterval(0.0001)
        with EmulatedBroker(in_memory=True):
            seen()
        seen()
    """)
    assert got == pytest.approx([0.0001, 0.0001])


def test_a_broker_that_fails_to_start_restores_it():
    got = run("""
        sys.setswitchinterval(0.005)
        with socket.socket() as taken:  # its port is the broker's: the broker cannot listen
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            try:
                EmulatedBroker(in_memory=True, listen_port=taken.getsockname()[1]).start()
            except StartupError:
                seen()
        with EmulatedBroker(in_memory=True):  # and the count is right for the next one
            seen()
        seen()
    """)
    assert got == pytest.approx([0.005, SWITCH_INTERVAL, 0.005])
