"""Where ``--once`` stops: at the end of the log as it is when the job starts, every
event acknowledged by then included. The broker writes most ``.batches`` entries of
an active segment about once a second (log.index.BatchIndex), so the index alone
trails the acknowledged log by up to that much; a ``--once`` started right after
the acknowledgements (a warm Spark session starts its query in about a second)
captured only what the index listed. The log backend's ends wait for the index to
list what the ``.log`` holds."""
from __future__ import annotations

from kafka_wire.log.reader import PartitionReader
from kafka_wire.spark.source import EventHubsStreamReader

from .conftest import produce

NS, HUB, PARTITIONS = "emulatorNs1", "orders", 4


def _index_ends(data_dir) -> dict[tuple[str, int], int]:
    return {(HUB, p): PartitionReader(data_dir / NS / f"{HUB}-{p}").end_offset() for p in range(PARTITIONS)}


def test_the_end_a_once_job_captures_to_includes_every_acknowledged_event(broker):
    broker.create_hub(HUB, PARTITIONS)
    acked: dict = {}
    for attempt in range(5):
        acked |= produce(broker.bootstrap_servers, HUB, 2000, compression="snappy", start=len(acked))
        expected = {(HUB, p): 1 + max(o for q, o in acked if q == p) for p in range(PARTITIONS)}
        if _index_ends(broker.data_dir) != expected:
            break  # the index trails the acknowledged log: what this test is about
        # else the broker's flusher wrote the entries between the last ack and our look: again
    else:
        raise AssertionError("the .batches index never trailed the acknowledged log in 5 rounds")
    # The source as a --once job drives it (Spark's Trigger.AvailableNow), options as Spark passes them.
    source = EventHubsStreamReader({"datadir": str(broker.data_dir), "namespace": NS, "eventhubs": HUB,
                                    "windowseconds": "60", "closeopenwindows": "true", "rows": "plans"})
    source.prepareForTriggerAvailableNow()
    end = source.latestOffset(source.initialOffset())
    assert {(HUB, int(key.rpartition("/")[2])): value["next"] for key, value in end.items()} == expected
    assert _index_ends(broker.data_dir) == expected  # what it waited for: the broker's own writes
