"""Geo-replicated brokers for the tests of docs/georeplication.md."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafka_wire.log.batch import parse_header
from kafka_wire.testing import EmulatedBroker

NAMESPACE = "geonamespace1"
KEY = "Z2VvLXJvb3Qta2V5LTE="


def geo_toml(directory: Path, *, max_lag: int = 0, locations=("westus", "eastus"), tier: str = "Premium",
             partitions: int = 2, policy: bool = True, retention_hours: int | None = None) -> Path:
    """A TOML config: one geo-replicated namespace with hub ``orders``."""
    lines = [f"[namespaces.{NAMESPACE}]", f'tier = "{tier}"', "default = true"]
    if policy:
        lines += [f"[namespaces.{NAMESPACE}.policies.RootManageSharedAccessKey]",
                  f'primary_key = "{KEY}"', 'rights = ["Manage", "Send", "Listen"]']
    lines += [f"[namespaces.{NAMESPACE}.eventhubs.orders]", f"partitions = {partitions}",
              *([f"retention_hours = {retention_hours}"] if retention_hours is not None else []),
              f"[namespaces.{NAMESPACE}.geo_replication]",
              "replicas = [" + ", ".join(f'"{loc}"' for loc in locations) + "]",
              f"max_replication_lag_seconds = {max_lag}"]
    path = Path(directory) / "geo.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def geo_broker(tmp_path: Path, **kwargs) -> EmulatedBroker:
    """An (unstarted) broker of :func:`geo_toml`; ``virtual_clock``, ``http``, ``amqp``
    are the broker's, the rest the config's."""
    broker_args = {k: kwargs.pop(k) for k in ("virtual_clock", "http", "amqp") if k in kwargs}
    return EmulatedBroker(tmp_path / "data", config_file=geo_toml(tmp_path, **kwargs), **broker_args)


def geo(broker: EmulatedBroker):
    return broker.broker.services.namespaces[NAMESPACE].geo


def log_bytes(logs, hub: str, partition: int) -> bytes:
    """The bytes of every batch a LogManager holds for one partition, in order."""
    plog = logs.get_log(hub, partition)
    out, at = [], plog.log_start_offset
    while at < plog.log_end_offset:
        batches = plog.stored_batches(at, 1 << 20)
        if not batches:
            break
        for _pos, _ms, view in batches:
            out.append(bytes(view))
        at = parse_header(out[-1]).last_offset + 1
    return b"".join(out)


def stored(broker: EmulatedBroker, location: str, hub: str = "orders", partition: int = 0) -> bytes:
    """The bytes of every batch a region holds for one partition (on the broker's loop)."""
    return broker.call(lambda: log_bytes(geo(broker)._stores[location].logs, hub, partition))


@pytest.fixture
def offset_refusals(monkeypatch) -> list[str]:
    """The broker's invalid-offset refusals as they happen (georeplication.start_offset
    raising InvalidOffset): the SDKs retry a refused attach quietly, so a test counts here."""
    from kafka_wire.amqp import georeplication

    refusals: list[str] = []
    checked = georeplication.start_offset

    def counting(*args):
        try:
            return checked(*args)
        except georeplication.InvalidOffset as exc:
            refusals.append(str(exc))
            raise
    monkeypatch.setattr(georeplication, "start_offset", counting)
    return refusals
