"""The console's event pages over many decompression bombs (stored by a broker before
Produce refused them; written here the same way, unchecked). Each costs ~0.2 s to find
out, up to the 256 MiB bound. Before, every page decompressed every bomb it met again,
on the broker's event loop, with no bound: a page over 10 held every Kafka and AMQP
client for ~2 s. Now a batch is decompressed on the loop up to 1 MiB only, past that in
a thread; its verdict is remembered, so the next page does not decompress it again; and
a request waits for the thread at most ~1 s, then ends early, saying where to go on."""
from __future__ import annotations

import logging
import threading

import pytest
import requests

from kafka_wire.console import decoding
from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.undecodable_batches import batch, bomb, produce, stored_unchecked

NS = "emulatorNs1"
BOMB = bomb()
BOMB_SECTION = len(BOMB) - 61  # its compressed records section (the batch less its header)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("bombs") / "data", http=True) as b:
        yield b


def _hub_of_bombs(broker, monkeypatch, hub: str, bombs: int) -> tuple[list[str], list[int]]:
    """good0, bomb, good1, bomb, ..., good<bombs>: (the good events' bodies, the bombs'
    sequence numbers)."""
    broker.create_hub(hub, 1)
    stored_unchecked(monkeypatch)
    with RawClient(broker.bootstrap_servers) as c:
        for i in range(bombs):
            assert produce(c, hub, batch([f"good{i}".encode()], codec_id=rec.ZSTD)).error_code == 0
            assert produce(c, hub, BOMB).error_code == 0
        assert produce(c, hub, batch([f"good{bombs}".encode()])).error_code == 0
    return [f"good{i}" for i in range(bombs + 1)], [2 * i + 1 for i in range(bombs)]


def _page(broker, hub: str, **query) -> dict:
    r = requests.get(f"{broker.http_url}/api/namespaces/{NS}/hubs/{hub}/partitions/0/events",
                     params=query, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()


def _bombs_of(body: dict) -> list[int]:
    for u in body["unreadable_batches"]:
        assert u["first_sequence_number"] == u["last_sequence_number"]
        assert "decompresses to more than" in u["error"], u
    return [u["first_sequence_number"] for u in body["unreadable_batches"]]


def test_a_page_waits_for_the_thread_at_most_its_budget_then_says_where_to_go_on(broker, monkeypatch):
    monkeypatch.setattr(decoding, "THREAD_BUDGET_S", 0.0)  # one batch decompressed per request
    good, bombs = _hub_of_bombs(broker, monkeypatch, "forward-bombs", 5)
    first = _page(broker, "forward-bombs")
    # The first bomb decompressed (in the thread), then the page ended before the second.
    assert [e["body"]["text"] for e in first["events"]] == ["good0", "good1"]
    assert _bombs_of(first) == [1]
    assert first["next_sequence_number"] == 3 and first["scanned"] == 3
    # Going on from next_sequence_number, as the console does, meets every event and bomb once.
    seen, met, body, pages = [], [], first, 1
    while True:
        seen += [e["body"]["text"] for e in body["events"]]
        met += _bombs_of(body)
        if body["next_sequence_number"] > body["last_sequence_number"]:
            break
        body = _page(broker, "forward-bombs", **{"from": "sequence", "value": str(body["next_sequence_number"])})
        pages += 1
    assert (seen, met) == (good, bombs) and pages == 5
    # Every verdict is remembered: a page over them all is whole at once.
    whole = _page(broker, "forward-bombs")
    assert [e["body"]["text"] for e in whole["events"]] == good and _bombs_of(whole) == bombs


def test_a_before_page_waits_at_most_its_budget_and_shows_the_newest_first(broker, monkeypatch):
    monkeypatch.setattr(decoding, "THREAD_BUDGET_S", 0.0)
    good, bombs = _hub_of_bombs(broker, monkeypatch, "before-bombs", 4)
    body = _page(broker, "before-bombs", **{"from": "latest"})
    # The newest bomb decompressed; the page holds what is after the next one still to do.
    assert [e["body"]["text"] for e in body["events"]] == ["good3", "good4"]
    assert _bombs_of(body) == [7] and body["next_sequence_number"] == 9
    # Older pages, before the oldest thing a page shows (as the console's Older does).
    seen, met = [], []
    for _ in range(10):
        seen = [e["body"]["text"] for e in body["events"]] + seen
        met = _bombs_of(body) + met
        oldest = min([e["sequence_number"] for e in body["events"]] + met[:1])
        if oldest <= body["first_sequence_number"]:
            break
        body = _page(broker, "before-bombs", before=str(oldest))
    assert (seen, met) == (good, bombs)


def test_a_second_page_does_not_decompress_a_bomb_again(broker, monkeypatch, caplog):
    good, bombs = _hub_of_bombs(broker, monkeypatch, "remembered-bombs", 3)
    caplog.set_level(logging.WARNING, logger="kafka_wire.console.explorer")
    calls = []
    real = rec.decompress

    def counted(codec_id, data, limit=None):
        if len(data) == BOMB_SECTION:
            calls.append(limit)
        return real(codec_id, data, limit)
    monkeypatch.setattr(rec, "decompress", counted)
    monkeypatch.setattr(decoding, "THREAD_BUDGET_S", 60.0)  # (a slow machine's page is whole)
    body = _page(broker, "remembered-bombs")
    assert [e["body"]["text"] for e in body["events"]] == good and _bombs_of(body) == bombs
    assert len(calls) >= len(bombs)
    calls.clear()
    for query in ({}, {"from": "latest"}, {"before": "3"}, {"q": "good2"}):
        again = _page(broker, "remembered-bombs", **query)
        assert _bombs_of(again), query
    assert calls == []  # each bomb's verdict was remembered
    # One log line a bomb, not one a page (five pages showed each).
    logged = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert sorted(int(m.split("sequence numbers ")[1].split(".")[0]) for m in logged) == bombs, logged


def test_pages_over_bombs_decompress_them_whole_off_the_event_loop(broker, monkeypatch):
    """What kept other clients waiting was each bomb decompressed whole on the loop: now
    the loop decompresses at most LOOP_DECOMPRESS of it, the console's thread the rest.
    (How long another client waits meanwhile: ``python -m bench.explorer --bombs 10``.)"""
    good, bombs = _hub_of_bombs(broker, monkeypatch, "stalling-bombs", 10)
    calls = []  # (thread, limit) of each decompression of a bomb's records
    real = rec.decompress

    def counted(codec_id, data, limit=None):
        if len(data) == BOMB_SECTION:
            calls.append((threading.current_thread(), limit))
        return real(codec_id, data, limit)
    monkeypatch.setattr(rec, "decompress", counted)
    seen, body = [], _page(broker, "stalling-bombs")
    for _ in range(40):  # to the end, as the console goes on
        seen += [e["body"]["text"] for e in body["events"]]
        if body["next_sequence_number"] > body["last_sequence_number"]:
            break
        body = _page(broker, "stalling-bombs", **{"from": "sequence", "value": str(body["next_sequence_number"])})
    latest = _page(broker, "stalling-bombs", **{"from": "latest"})
    assert seen == good and [e["body"]["text"] for e in latest["events"]] == good
    loop = broker._thread
    on_loop = [limit for thread, limit in calls if thread is loop]
    elsewhere = {thread.name.split("_")[0] for thread, limit in calls if thread is not loop}
    # Each bomb decompressed whole once, in the console's thread; the loop only tried a few
    # (LOOP_TRIES a request), each up to LOOP_DECOMPRESS.
    assert len(calls) - len(on_loop) == len(bombs), calls
    assert elsewhere == {"kafka-wire-console-decompress"}
    assert on_loop and all(limit is not None and limit <= decoding.LOOP_DECOMPRESS for limit in on_loop)


def test_the_verdicts_remembered_are_bounded_least_recently_used_out():
    verdicts = decoding.Verdicts(size=3)
    for k in "abc":
        verdicts.put((k,), f"bad {k}")
    assert verdicts.get(("a",)) == "bad a"  # used: now the newest
    verdicts.put(("d",), None)
    assert len(verdicts) == 3 and verdicts.get(("b",)) is False
    assert [verdicts.get((k,)) for k in "acd"] == ["bad a", "bad c", None]
