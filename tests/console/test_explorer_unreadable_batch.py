"""The console's event pages over a partition holding a batch no reader can decode (a
decompression bomb, bytes that do not decompress, records that do not parse, records
followed by garbage: stored by a broker before Produce checked compressed batches, or
sent uncompressed). Every page (forward, 'before', a search) shows the events before and
after it and an entry naming the batch and why, with 200. Before, every page that met
the batch answered 500, hiding the partition's every event from the console."""
from __future__ import annotations

import pytest
import requests

from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.undecodable_batches import UNDECODABLE, batch, produce, stored_unchecked

NS = "emulatorNs1"
KINDS = {
    **UNDECODABLE,
    "uncompressed-not-parsing": lambda: batch([b"x", b"y"], body=b"\x7f" * 40),
    "trailing-garbage": lambda: batch(
        [b"x"], codec_id=rec.ZSTD, body=rec.compress(rec.ZSTD, rec.encode_record(0, 0, b"k", b"x") + b"\x00\x02zz")),
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("unreadable") / "data", http=True) as b:
        yield b


def _get(broker, hub: str, tail: str = "", **query) -> requests.Response:
    return requests.get(f"{broker.http_url}/api/namespaces/{NS}/hubs/{hub}/partitions/0/events{tail}",
                        params=query, timeout=60)


def _page(broker, hub: str, **query) -> tuple[list[str], list[tuple[int, int]], dict]:
    r = _get(broker, hub, **query)
    assert r.status_code == 200, r.text
    body = r.json()
    for u in body["unreadable_batches"]:
        assert u["error"].startswith(f"the batch at sequence numbers {u['first_sequence_number']}.."
                                     f"{u['last_sequence_number']} cannot be read: "), u
    return ([e["body"]["text"] for e in body["events"]],
            [(u["first_sequence_number"], u["last_sequence_number"]) for u in body["unreadable_batches"]], body)


def _search(broker, hub: str, q: str) -> tuple[list[str], list[tuple[int, int]]]:
    """A search's pages as the console asks for them: each from where the last stopped (a
    search stops after 25 ms of work, which a bomb's decompression takes on its own)."""
    found, met, start = [], [], "0"
    for _ in range(10):
        events, entries, body = _page(broker, hub, q=q, **{"from": "sequence", "value": start})
        found += events
        met += entries
        assert set(entries) <= {(1, body["last_sequence_number"] - 1)}
        if body["next_sequence_number"] > body["last_sequence_number"]:
            return found, met
        start = str(body["next_sequence_number"])
    raise AssertionError(f"the search of {q!r} did not reach the end")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_pages_go_on_past_a_batch_that_cannot_be_read(broker, monkeypatch, kind):
    hub = f"unreadable-{kind}"
    broker.create_hub(hub, 1)
    stored_unchecked(monkeypatch)
    bad = KINDS[kind]()
    with RawClient(broker.bootstrap_servers) as c:
        assert produce(c, hub, batch([b"before"])).error_code == 0
        stored = produce(c, hub, bad)
        assert stored.error_code == 0  # stored unchecked
        assert produce(c, hub, batch([b"after"], codec_id=rec.GZIP)).error_code == 0
    first = 1
    last = first + int.from_bytes(bad[23:27], "big")  # the batch's last offset delta
    after = last + 1
    seen = (["before", "after"], [(first, last)])

    assert _page(broker, hub)[:2] == seen  # from the earliest
    assert _page(broker, hub, **{"from": "latest"})[:2] == seen  # the page that ends at the end
    assert _page(broker, hub, before=str(after + 1))[:2] == seen
    assert _page(broker, hub, before=str(after), count="1")[:2] == (["before"], [(first, last)])
    assert _page(broker, hub, **{"from": "sequence", "value": str(after)})[:2] == (["after"], [])
    nxt = _page(broker, hub, count="1")[2]["next_sequence_number"]
    assert _page(broker, hub, **{"from": "sequence", "value": str(nxt)})[:2] == (["after"],
                                                                              [] if nxt > last else [(first, last)])
    # A search: ASCII (batches not holding it skipped unparsed, when they can be read) and not
    for q, found in (("after", ["after"]), ("befor", ["before"]), ("äfter", [])):
        assert _search(broker, hub, q)[0] == found, q
        events, entries, _ = _page(broker, hub, q=q, **{"from": "latest"})
        assert events == found and entries in ([], [(first, last)]), (q, entries)
    assert _search(broker, hub, "äfter")[1] == [(first, last)]  # every batch read, so met
    # The event's own view: not a 500 either
    r = _get(broker, hub, f"/{first}")
    assert r.status_code == 422 and "cannot be read" in r.text, r.text
    assert _get(broker, hub, f"/{after}").json()["body"]["text"] == "after"
