"""A micro-batch of the eventhubs source (planning on the driver: latestOffset, then
partitions' replanning) opens each ``.txnindex`` of the log once, and the next
micro-batch none that has not changed: the reader opened every segment's file at
each of its asks, three times a micro-batch on the driver."""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager

from confluent_kafka import Producer

from kafka_wire.spark.source import EventHubsStreamReader

NS, HUB = "emulatorNs1", "txns"

_opened: list[Counter] = []


def _audit(event: str, args) -> None:
    if event == "open" and _opened and str(args[0]).endswith(".txnindex"):
        _opened[-1]["/".join(str(args[0]).rsplit("/", 2)[-2:])] += 1


sys.addaudithook(_audit)  # (a hook stays for the process: it counts only inside ``txnindex_opened``)


@contextmanager
def txnindex_opened():
    _opened.append(Counter())
    try:
        yield _opened[-1]
    finally:
        _opened.pop()


def transactions(bootstrap: str, n: int, *, abort_every: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "capture-polls", "linger.ms": 0})
    p.init_transactions(10)
    for i in range(n):
        p.begin_transaction()
        for j in range(5):
            p.produce(HUB, value=b"x" * 300, partition=j % 2)
        p.flush(10)  # (an abort drops what is not sent yet: the log would hold nothing of it)
        if i % abort_every == 0:
            p.abort_transaction(10)
        else:
            p.commit_transaction(10)


def test_a_micro_batch_opens_each_txnindex_once(broker):
    broker.create_hub(HUB, 2, {"segment.bytes": "16384"})
    transactions(broker.bootstrap_servers, 60, abort_every=3)
    files = sorted("/".join(p.parts[-2:]) for p in (broker.data_dir / NS).glob(f"{HUB}-*/*.txnindex"))
    assert len(files) >= 4  # several segments of each partition hold aborted transactions
    source = EventHubsStreamReader({"datadir": str(broker.data_dir), "namespace": NS, "eventhubs": HUB,
                                    "windowseconds": "60", "closeopenwindows": "true", "rows": "plans"})
    start = source.initialOffset()
    with txnindex_opened() as opened:
        end = source.latestOffset(start)
        assert source.partitions(start, end)
    assert opened == {name: 1 for name in files}
    with txnindex_opened() as opened:  # the next micro-batch: nothing new
        source.partitions(end, source.latestOffset(end))
    assert not opened
