"""The Data Explorer skips transaction markers and aborted transactions the way a Kafka
consumer does: which batches of a read are hidden is decided once per read (one search of
the aborted-transaction index), not once per transactional batch, which made a page of a
partition holding thousands of aborted transactions quadratic."""
from __future__ import annotations

import json
import urllib.request

import pytest

from kafka_wire.console import explorer
from kafka_wire.testing import EmulatedBroker
from tests.unit.log.log_helpers import keyed_batch

ABORTS = 2_000
NS = "emulatorNs1"


@pytest.fixture(scope="module")
def aborted(tmp_path_factory):
    """Hub ``h``: ABORTS aborted one-batch transactions, each followed by a committed event
    c<i>; then a long transaction (producer 7) whose batches span several 1 MiB reads,
    interleaved with committed events l<i>, aborted; then ``last``."""
    with EmulatedBroker(tmp_path_factory.mktemp("aborted") / "data", http=True) as b:
        b.create_hub("h", 1)
        plog = b.broker.services.default.topics.logs.get_log("h", 0)

        def fill():
            now = b.broker.services.clock.now_ms()
            for i in range(ABORTS):
                plog.append(keyed_batch([(None, b"aborted-%d" % i)], producer_id=10**6 + i,
                                        transactional=True), now_ms=now)
                plog.append_control(10**6 + i, 0, False, 0, now_ms=now)
                plog.append(keyed_batch([(None, b"c%d" % i)]), now_ms=now)
            for i in range(30):  # 30 x 100 KB of the long transaction: about 3 reads of 1 MiB
                plog.append(keyed_batch([(None, b"A" * 100_000)], producer_id=7, base_sequence=i,
                                        transactional=True), now_ms=now)
                plog.append(keyed_batch([(None, b"l%d" % i)]), now_ms=now)
            plog.append_control(7, 0, False, 0, now_ms=now)
            plog.append(keyed_batch([(None, b"last")]), now_ms=now)
        b.call(fill)
        b.plog = plog
        yield b


EXPECTED = [b"c%d" % i for i in range(ABORTS)] + [b"l%d" % i for i in range(30)] + [b"last"]


def test_a_walk_shows_only_committed_events_with_one_index_search_per_read(aborted, monkeypatch):
    b = aborted
    plog = b.plog
    searches = []
    search = type(plog).aborted_transactions

    def counted(self, fetch_offset, upper_offset):
        searches.append((fetch_offset, upper_offset))
        return search(self, fetch_offset, upper_offset)

    monkeypatch.setattr(type(plog), "aborted_transactions", counted)
    shown = b.call(lambda: [e.value for e in explorer.walk(plog, 0)])
    assert shown == EXPECTED
    # one search a read of at most READ_BYTES (the partition is about 3.5 MB), not one for
    # each of the 2,030 transactional batches
    assert 0 < len(searches) <= 10, len(searches)


@pytest.mark.parametrize("start", [0, 1, 2 * ABORTS, 3 * ABORTS + 1, 3 * ABORTS + 7])
def test_a_walk_from_inside_a_transaction_hides_all_of_it(aborted, start):
    """From a position inside the aborted transactions (a marker, an aborted batch, inside
    the long transaction), only the committed events after it are shown."""
    b = aborted
    shown = b.call(lambda: [(e.sequence_number, e.value) for e in explorer.walk(b.plog, start)])
    assert [v for _s, v in shown] == [v for s, v in _committed(b.plog) if s >= start]


def _committed(plog):
    """(sequence number, value) of every committed event, found by the log's own per-batch answer."""
    from kafka_wire.log import batch as rb
    from kafka_wire.log.records import read_event_columns

    out, offset = [], plog.log_start_offset
    while offset < plog.last_stable_offset:
        batches = plog.stored_batches(offset, explorer.READ_BYTES)
        if not batches:
            break
        for _position, _ms, data in batches:
            header = rb.parse_header(data, 0)
            offset = header.last_offset + 1
            if header.attributes & (rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT) and plog.hidden(header):
                continue
            deltas, keys, headers, values = [], [], [], []
            read_event_columns(data, header, deltas, keys, headers, values)
            out += [(header.base_offset + d, v) for d, v in zip(deltas, values)]
    return out


def test_the_console_pages_and_searches_past_the_aborted_transactions(aborted):
    b = aborted
    url = f"{b.http_url}/api/namespaces/{NS}/hubs/h/partitions/0/events"
    with urllib.request.urlopen(f"{url}?from=earliest&count=200", timeout=20) as r:
        page = json.loads(r.read())
    assert [e["body"]["text"] for e in page["events"]] == [f"c{i}" for i in range(200)]
    with urllib.request.urlopen(f"{url}?from=latest&count=5", timeout=20) as r:
        page = json.loads(r.read())
    assert [e["body"]["text"] for e in page["events"]] == ["l26", "l27", "l28", "l29", "last"]
    with urllib.request.urlopen(f"{url}?from=earliest&q=aborted", timeout=20) as r:
        found = json.loads(r.read())
    assert found["events"] == []  # (the aborted bodies hold the text: none of them is shown)
