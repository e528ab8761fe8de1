"""A namespace's Schema Registry is read from its file in a thread when first asked for:
the broker's other clients (HTTP, Kafka) are answered meanwhile, requests that need the
registry wait for that one read and get the answers they got before, and a register
arriving during the read lands after it, once. (100 MB took ~0.45 s of the broker's loop.)

The read is held open by a gate around ``SchemaRegistry._load`` (it runs wherever the read
runs): the test waits on conditions, never on time."""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from kafka_wire.eventhubs import sas, schema_registry
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML
from tests.console.test_explorer_limits import send_avro
from tests.rest.test_schema_registry_bounds import (AVRO, GROUPS, HOST, call, make_group,
                                                    padded, register, versions)

API = "?api-version=2023-07-01"
LISTENER = ("listener", "bGlzdGVuLWtleQ==")
WAIT_S = 10  # the most any condition below is waited for


class Gate:
    """Holds each registry read at its start until released; counts the reads."""

    def __init__(self, monkeypatch) -> None:
        self.reads = 0
        self.started = threading.Event()
        self.release = threading.Event()
        load = schema_registry.SchemaRegistry._load

        def gated(registry, *args):
            self.reads += 1
            self.started.set()
            self.release.wait(3 * WAIT_S)  # bounded: a broker whose loop it holds still stops
            return load(registry, *args)

        monkeypatch.setattr(schema_registry.SchemaRegistry, "_load", gated)


class Waiters:
    """Counts the requests seen waiting for a registry's read."""

    def __init__(self, monkeypatch) -> None:
        self.seen = 0
        self.changed = threading.Condition()
        wait = schema_registry.RegistryLoading.wait

        async def counted(loading):
            with self.changed:
                self.seen += 1
                self.changed.notify_all()
            await wait(loading)

        monkeypatch.setattr(schema_registry.RegistryLoading, "wait", counted)

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.seen == count, WAIT_S), self.seen


@contextlib.contextmanager
def read_held(data_dir, monkeypatch, workers: int = 4):
    """(broker, pool, gate): a broker on ``data_dir`` whose Schema Registry read, once asked
    for, is held at its start until ``gate.release`` is set, or the block ends (a failed
    assertion leaves no read held: the broker stops); ``workers`` threads for clients."""
    gate = Gate(monkeypatch)
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker, \
            ThreadPoolExecutor(workers) as pool:
        try:
            yield broker, pool, gate
        finally:
            gate.release.set()


def api_versions(port: int) -> int:
    """A Kafka ApiVersions v0 request's error code (bounded by WAIT_S)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        body = struct.pack(">hhih", 18, 0, 7, 5) + b"probe"
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        answer = sock.recv(size, socket.MSG_WAITALL)
        correlation, error = struct.unpack(">ih", answer[:6])
        assert correlation == 7
        return error


def raw_get(broker, path: str, authorization: str | None) -> requests.Response:
    headers = {"Host": HOST} if authorization is None else {"Host": HOST, "Authorization": authorization}
    return requests.get(broker.http_url + path, headers=headers, timeout=WAIT_S)


def wrong_token() -> str:
    return sas.generate(sas.resource_uri(HOST), "listener", "d3Jvbmcta2V5", int(time.time()) + 600)


# Names a client may send: path-like (encoded and not), huge, odd; each answered as before.
ODD_PATHS = [f"/$schemaGroups/{'g' * 5000}/schemas/s/versions{API}",
             f"/$schemaGroups/g/schemas/{'s' * 5000}/versions{API}",
             f"/$schemaGroups/..%2F..%2F_schemas/schemas/s/versions{API}",
             f"/$schemaGroups/g/schemas/..%2Fcontoso.json/versions/1{API}",
             f"/$schemaGroups/$schemas/..%2F..%2Fcontoso{API}",
             f"/$schemaGroups/g/schemas/s/versions/{'9' * 400}{API}",
             f"/$schemaGroups/g/schemas/s/versions/0{API}",
             f"/$schemaGroups{API}"]


BAD_NAME = "..:" + "n" * 3000  # a register under a path-like, huge name: refused (400)


def answers(broker, paths: list[str]) -> list[tuple[int, bytes]]:
    out = []
    for path in paths:
        answer = call(broker, "GET", path, timeout=WAIT_S)  # (Manage: Listen does not read the registry)
        out.append((answer.status_code, answer.content))
    return out


@pytest.fixture
def filled(tmp_path):
    """A data directory whose namespace contoso has a registry: group g, schema s, 3 versions."""
    data_dir = tmp_path / "data"
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker:
        make_group(broker, "g", "None")
        for i in range(3):
            assert register(broker, "g", "s", padded(str(i), 20_000)).status_code == 204
        expected = answers(broker, ODD_PATHS)
        bad = register(broker, "g", BAD_NAME, padded("bad"))
        expected.append((bad.status_code, bad.content))
    return data_dir, expected


def test_other_clients_are_answered_while_the_registry_is_read(filled, monkeypatch):
    data_dir, expected = filled
    with read_held(data_dir, monkeypatch) as (broker, pool, gate):
        first = pool.submit(versions, broker, "g", "s")  # starts the read
        assert gate.started.wait(WAIT_S)
        # The read is under way: the broker's loop answers everyone else.
        assert requests.get(broker.http_url + "/health", timeout=WAIT_S).status_code == 200
        assert api_versions(broker.port) == 0
        # Without a credential, or with a wrong one: refused at once, as before.
        anonymous = raw_get(broker, f"/$schemaGroups/g/schemas/s/versions{API}", None)
        assert anonymous.status_code == 401, anonymous.text
        wrong = raw_get(broker, f"/$schemaGroups/g/schemas/s/versions{API}", wrong_token())
        assert wrong.status_code == 401, wrong.text
        arm = raw_get(broker, f"{GROUPS}?api-version=2024-01-01", None)  # the management API's
        assert arm.status_code == 401, arm.text
        assert not first.done()
        gate.release.set()
        assert first.result(WAIT_S) == [1, 2, 3]
        assert gate.reads == 1
        assert raw_get(broker, f"/$schemaGroups/g/schemas/s/versions{API}", None).content == anonymous.content
        assert raw_get(broker, f"/$schemaGroups/g/schemas/s/versions{API}", wrong_token()).content \
            == wrong.content
        assert raw_get(broker, f"{GROUPS}?api-version=2024-01-01", None).content == arm.content


def test_requests_during_the_read_wait_for_it_once_and_answer_as_before(filled, monkeypatch):
    data_dir, expected = filled
    waiters = Waiters(monkeypatch)
    new = json.dumps(padded("new"))
    with read_held(data_dir, monkeypatch, len(ODD_PATHS) + 4) as (broker, pool, gate):
        first = pool.submit(versions, broker, "g", "s")
        assert gate.started.wait(WAIT_S)
        odd = [pool.submit(answers, broker, [path]) for path in ODD_PATHS]
        bad = pool.submit(register, broker, "g", BAD_NAME, padded("bad"))
        registered = pool.submit(register, broker, "g", "s", json.loads(new))
        found = pool.submit(call, broker, "POST", f"/$schemaGroups/g/schemas/s:get-id{API}",
                            headers=AVRO, data=json.dumps(padded("1", 20_000)))
        waiters.wait_for(len(ODD_PATHS) + 4)  # every one of them is waiting for the one read
        assert not registered.done()
        gate.release.set()
        assert first.result(WAIT_S) == [1, 2, 3]
        bad = bad.result(WAIT_S)
        assert [f.result(WAIT_S)[0] for f in odd] + [(bad.status_code, bad.content)] == expected
        assert bad.status_code == 400
        assert registered.result(WAIT_S).headers["Schema-Version"] == "4"
        assert found.result(WAIT_S).headers["Schema-Version"] == "2"
        assert gate.reads == 1
        assert versions(broker, "g", "s") == [1, 2, 3, 4]
    # The register made during the read was appended to the file the read left in place.
    gate.release.set()
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker:
        assert versions(broker, "g", "s") == [1, 2, 3, 4]
        assert call(broker, "GET", f"/$schemaGroups/g/schemas/s/versions/4{API}").text == new


def test_a_rewritten_registry_keeps_each_version_on_a_line_of_its_own(tmp_path):
    # A line is one call into the JSON parser, which holds the GIL: a deleted group's rewrite
    # must not leave the whole registry on one line for the next start to read.
    path = tmp_path / "ns.json"
    registry = schema_registry.SchemaRegistry(path)
    registry.put_group("g", "Avro", "None", {})
    registry.put_group("h", "Avro", "None", {})
    for i in range(4):
        registry.register("g", "s", "Avro", json.dumps(padded(str(i), 50_000)))
    registry.register("h", "t", "Avro", json.dumps(padded("h")))
    assert registry.delete_group("h")
    lines = path.read_bytes().rstrip(b"\n").split(b"\n")
    assert len(lines) == 5 and max(len(line) for line in lines) < 51_000
    again = schema_registry.SchemaRegistry(path)
    assert again.versions("g", "s") == [1, 2, 3, 4] and again.group("h") is None
    assert [again.version("g", "s", v).id for v in (1, 2, 3, 4)] == \
        [registry.version("g", "s", v).id for v in (1, 2, 3, 4)]


# -- the namespaces' registries, on a loop of their own ----------------------------------------

def journal(tmp_path):
    path = tmp_path / schema_registry.STATE_DIR / "ns.json"
    path.parent.mkdir()
    registry = schema_registry.SchemaRegistry(path)
    registry.put_group("g", "Avro", "None", {})
    registry.register("g", "s", "Avro", json.dumps(padded("0")))
    return path


def test_a_cancelled_waiter_leaves_the_read_to_the_others(tmp_path, monkeypatch):
    journal(tmp_path)
    gate = Gate(monkeypatch)
    registries = schema_registry.Registries(tmp_path, lambda ns: None)

    async def main():
        waits = []
        for _ in range(2):
            with pytest.raises(schema_registry.RegistryLoading) as loading:
                registries.get("ns")
            waits.append(asyncio.ensure_future(loading.value.wait()))
        await asyncio.sleep(0)  # (one turn of the loop: both are waiting)
        waits[0].cancel()
        gate.release.set()
        await asyncio.wait_for(waits[1], WAIT_S)
        assert waits[0].cancelled()
        return registries.get("ns")

    assert asyncio.run(main()).versions("g", "s") == [1]
    assert gate.reads == 1


def test_a_namespace_deleted_during_its_read_starts_afresh(tmp_path, monkeypatch):
    path = journal(tmp_path)
    gate = Gate(monkeypatch)
    registries = schema_registry.Registries(tmp_path, lambda ns: None)

    async def main():
        with pytest.raises(schema_registry.RegistryLoading) as loading:
            registries.get("ns")
        registries.forget("ns")  # as the broker deletes a namespace: its file goes too
        path.unlink()
        gate.release.set()
        await asyncio.wait_for(loading.value.wait(), WAIT_S)
        return registries.get("ns")  # a namespace made again under the name

    assert asyncio.run(main()).groups == {}


def test_a_caller_outside_the_routes_awaits_the_read_under_way(tmp_path, monkeypatch):
    journal(tmp_path)
    gate = Gate(monkeypatch)
    registries = schema_registry.Registries(tmp_path, lambda ns: None)

    async def main():
        with pytest.raises(schema_registry.RegistryLoading) as loading:
            registries.get("ns")
        console = asyncio.ensure_future(registries.read("ns"))  # (the console's)
        await asyncio.sleep(0)  # (one turn of the loop: it is waiting, the loop is not held)
        assert not console.done()
        gate.release.set()
        now = await asyncio.wait_for(console, WAIT_S)
        await asyncio.wait_for(loading.value.wait(), WAIT_S)
        assert registries.get("ns") is now
        return now

    assert asyncio.run(main()).versions("g", "s") == [1]
    assert gate.reads == 1


def test_a_caller_outside_the_routes_gets_none_where_the_read_fails(tmp_path, monkeypatch):
    journal(tmp_path)
    registries = schema_registry.Registries(tmp_path, lambda ns: None)

    def fails(registry, *args):
        raise MemoryError("past what the process may hold")  # (a file kept aside starts empty)

    monkeypatch.setattr(schema_registry.SchemaRegistry, "_load", fails)
    assert asyncio.run(registries.read("ns")) is None


# -- the console, first to use the registry --------------------------------------------------

@pytest.fixture
def avro_event(filled):
    """``filled``, with one event in contoso/payments whose body is Avro of schema g/s v1."""
    data_dir, _expected = filled
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker:
        schema_id = call(broker, "GET", f"/$schemaGroups/g/schemas/s/versions/1{API}").headers["Schema-Id"]
        send_avro(broker, [(schema_id, b"\x2a")])  # {"a": 21}
    return data_dir


def console_events(broker) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *LISTENER, int(time.time()) + 600)
    return requests.get(f"{broker.http_url}/api/namespaces/contoso/hubs/payments/partitions/0/events",
                        headers={"Authorization": token}, timeout=WAIT_S)


def test_the_console_waits_for_the_read_without_holding_the_loop(avro_event, monkeypatch):
    # Before, the console joined the read on the broker's loop (get_now): every HTTP and
    # Kafka client waited for the whole read (here, for the gate: /health timed out).
    with read_held(avro_event, monkeypatch, 2) as (broker, pool, gate):
        page = pool.submit(console_events, broker)  # the first to use the registry
        assert gate.started.wait(WAIT_S)
        assert requests.get(broker.http_url + "/health", timeout=WAIT_S).status_code == 200
        assert api_versions(broker.port) == 0
        assert not page.done()
        gate.release.set()
        answer = page.result(WAIT_S)
        assert answer.status_code == 200, answer.text
        [event] = answer.json()["events"]
        assert event["body"]["avro"]["value"] == {"a": 21}, event["body"]  # (decoded: the read was in)
        assert gate.reads == 1


# -- what a route does with the registry, it does once, after the read -----------------------

def test_schema_group_changes_during_the_read_are_made_once_after_it(filled, monkeypatch):
    data_dir, _expected = filled
    waiters = Waiters(monkeypatch)
    with read_held(data_dir, monkeypatch) as (broker, pool, gate):
        made = pool.submit(call, broker, "PUT", f"{GROUPS}/h?api-version=2024-01-01", timeout=WAIT_S,
                           json={"properties": {"schemaType": "Avro", "schemaCompatibility": "None"}})
        assert gate.started.wait(WAIT_S)
        malformed = pool.submit(call, broker, "PUT", f"{GROUPS}/i?api-version=2024-01-01",
                                timeout=WAIT_S, json={"properties": {"groupProperties": "x"}})
        gone = pool.submit(call, broker, "DELETE", f"{GROUPS}/g?api-version=2024-01-01",
                           timeout=WAIT_S)
        waiters.wait_for(3)  # all three wait for the read: nothing is made yet
        assert not made.done()
        gate.release.set()
        assert made.result(WAIT_S).status_code == 200, made.result().text
        answer = malformed.result(WAIT_S)  # the management API's 400, as for any malformed body
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "BadRequest", answer.text
        assert gone.result(WAIT_S).status_code == 200
        listed = call(broker, "GET", f"{GROUPS}?api-version=2024-01-01").json()["value"]
        assert sorted(g["name"] for g in listed) == ["h"]
        assert gate.reads == 1

