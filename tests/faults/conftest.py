"""Broker processes a fault test started are killed by PID when it ends, pass or fail."""
from __future__ import annotations

import pytest

from tests.faults.harness import kill_live_brokers


@pytest.fixture(autouse=True)
def _kill_started_brokers():
    yield
    kill_live_brokers()
