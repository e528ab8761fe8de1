"""An AMQP receiver (the azure-eventhub SDK) meets a stored batch no reader can decode:
a decompression bomb, compressed bytes that do not decompress, records that do not
parse (stored by a broker before Produce checked compressed batches; an uncompressed
one is stored as sent today). The first receiver to meet it is detached with
amqp:internal-error naming it, and every read after that goes on past it: the SDK's
re-attach receives the events before and after. Before, every re-attach was detached
again at the same batch, and the partition's receivers got nothing, for good."""
from __future__ import annotations

import pytest

from tests.undecodable_batches import UNDECODABLE, batch

from .batch_between import amqp_broker, received_bodies, store_between

KINDS = {**UNDECODABLE, "uncompressed-not-parsing": lambda: batch([b"x", b"y"], body=b"\x7f" * 40)}

broker = pytest.fixture(scope="module", name="broker")(amqp_broker)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_receivers_go_on_past_a_batch_that_cannot_be_read(broker, monkeypatch, kind):
    hub = f"unreadable-{kind}"
    store_between(broker, monkeypatch, hub, KINDS[kind]())
    assert received_bodies(broker, hub, "$Default") == ["before", "after"]
    assert received_bodies(broker, hub, "$Default") == ["before", "after"]  # again, from the start
