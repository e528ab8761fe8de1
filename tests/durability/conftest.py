"""A broker subprocess whose fsyncs are journaled, so a test can SIGKILL it and
then drop every write it did not fsync (fsync_journal.power_loss)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import BrokerProcess

HERE = Path(__file__).resolve().parent


class JournaledBroker(BrokerProcess):
    """``kafka-wire serve`` under journaled_broker.py, which journals every fsync."""

    def __init__(self, data_dir: Path, journal_dir: Path, extra: list[str], port: int = 0) -> None:
        super().__init__(data_dir, port, extra)
        self.journal_dir = journal_dir

    def launcher(self) -> list[str]:
        return [sys.executable, str(HERE / "journaled_broker.py"), str(self.journal_dir)]


@pytest.fixture
def journaled_broker(tmp_path):
    started: list[JournaledBroker] = []

    def make(extra: list[str], port: int = 0) -> JournaledBroker:
        b = JournaledBroker(tmp_path / "data", tmp_path / "journal", extra, port).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.kill()
