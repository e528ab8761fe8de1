"""The durability switch at each scope of the TOML config: the broker's [server]
durability, a namespace's, a hub's, and a topic's own flush.messages over all of
them. Read back from the running broker: each partition log's flush settings, the
checkpoint store's and the transaction coordinator's fsync."""
from __future__ import annotations

import pytest

from kafka_wire.testing import EmulatedBroker

CONFIG = """
default_namespace = "safe-ns"

[server]
durability = "crash"

[namespaces.safe-ns]
durability = "power-loss"
[namespaces.safe-ns.eventhubs.ledger]
[namespaces.safe-ns.eventhubs.scratch]
durability = "crash"

[namespaces.fast-ns]
[namespaces.fast-ns.eventhubs.clicks]
[namespaces.fast-ns.eventhubs.orders]
durability = "power-loss"
"""


@pytest.fixture
def scoped(tmp_path):
    config = tmp_path / "kw.toml"
    config.write_text(CONFIG)
    with EmulatedBroker(tmp_path / "data", config_file=config) as broker:
        yield broker


def _fsyncs(broker, namespace: str, hub: str) -> bool:
    def read():
        runtime = broker.broker.services.namespaces[namespace]
        return runtime.topics.logs.get_log(hub, 0)._fsyncs
    return broker.call(read)


def _stores(broker, namespace: str) -> tuple[bool, bool]:
    def read():
        runtime = broker.broker.services.namespaces[namespace]
        return runtime.groups.offsets.store._fsync, runtime.txns.store.fsync
    return broker.call(read)


def test_a_namespace_and_a_hub_each_set_their_own_durability(scoped):
    assert _fsyncs(scoped, "safe-ns", "ledger")        # the namespace's power-loss
    assert not _fsyncs(scoped, "safe-ns", "scratch")   # the hub's crash over it
    assert not _fsyncs(scoped, "fast-ns", "clicks")    # the broker's crash
    assert _fsyncs(scoped, "fast-ns", "orders")        # the hub's power-loss over it
    assert _stores(scoped, "safe-ns") == (True, True)  # commits and transactions fsynced too
    assert _stores(scoped, "fast-ns") == (False, False)


def test_a_hub_made_later_in_a_power_loss_namespace_fsyncs(scoped):
    scoped.create_hub("later", 1)  # the default namespace: safe-ns
    assert _fsyncs(scoped, "safe-ns", "later")


@pytest.mark.parametrize("where,line", [
    ("[namespaces.xxxxxx]", 'durability = "fast"'),
    ("[namespaces.xxxxxx]", "durability = 1"),
    ("[namespaces.xxxxxx.eventhubs.h]", 'durability = "never"'),
])
def test_a_bad_durability_is_named_with_its_place(tmp_path, where, line):
    from kafka_wire.eventhubs.config_file import load

    config = tmp_path / "kw.toml"
    config.write_text(f"{where}\n{line}\n" + ("" if "eventhubs" in where else "[namespaces.xxxxxx.eventhubs.h]\n"))
    with pytest.raises(ValueError, match="durability") as err:
        load(config)
    assert "'xxxxxx'" in str(err.value)
