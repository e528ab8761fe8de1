"""A broker with the AMQP listener, and Azure SDK clients pointed at it."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, NamedTuple

import pytest
from confluent_kafka import Producer
from cproton import ffi, lib
from proton import Connection, Link, Transport

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.waits import wait_for  # noqa: F401  (the AMQP tests import it from here)
from tests.conftest import JS, node_with

MULTI_TOML = Path(__file__).parent.parent / "eventhubs" / "data" / "multi.toml"
ROOT = ("RootManageSharedAccessKey", "cm9vdC1rZXktMQ==")
SENDER = ("sender", "c2VuZC1rZXk=")
LISTENER = ("listener", "bGlzdGVuLWtleQ==")


def sdk_cs(broker: EmulatedBroker, policy: tuple[str, str] = ROOT, hub: str | None = None,
           signature: str | None = None) -> str:
    """A connection string the SDKs take for this broker's AMQP port (plain AMQP,
    as the official emulator's ``UseDevelopmentEmulator=true``)."""
    host = f"127.0.0.1:{broker.amqp_port}"
    if signature:
        return connection_string.build(host, signature=signature, entity_path=hub, emulator=True)
    return connection_string.build(host, key_name=policy[0], key=policy[1], entity_path=hub,
                                   emulator=True)


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("amqp")


@pytest.fixture(scope="module")
def broker(module_tmp):
    """Namespace contoso (SAS policies; hubs orders (2 partitions, group billing) and
    payments) served over Kafka and AMQP."""
    with EmulatedBroker(module_tmp / "data", config_file=MULTI_TOML, amqp=True) as b:
        yield b


def receive(client, count: int, timeout: float = 20.0, until_error: bool = False, **kwargs) -> list:
    """Events from ``EventHubConsumerClient.receive`` until ``count`` arrive or time runs out
    (``until_error``: or ``on_error`` is called, for a test that expects a refusal)."""
    got: list = []
    errors: list = []
    done = threading.Event()

    def on_error(context, err):
        errors.append(err)
        if until_error:
            done.set()

    def on_event(context, event):
        if event is not None:
            got.append((context.partition_id, event))
            if len(got) >= count:
                done.set()

    kwargs.setdefault("max_wait_time", 1)
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, on_error=on_error, **kwargs), daemon=True)
    thread.start()
    done.wait(timeout)
    client.close()
    thread.join(15)
    if len(got) < count and errors:
        raise errors[0]
    return got


class EnginePair(NamedTuple):
    """Two proton engines joined in memory (:func:`engine_pair`)."""
    sender: Link
    receiver: Link
    pump: Callable[[], None]  # carries what each transport wrote to the other until both are quiet
    client: Transport
    server: Transport


def engine_pair(role: str = "sender", credit: int = 10) -> EnginePair:
    """Two proton engines joined in memory (no sockets), a link open between them: the
    client's end is a ``role`` ("sender" or "receiver"), the server's the other; the
    receiver has granted ``credit``. For what proton itself writes and reads, byte for byte."""
    if role not in ("sender", "receiver"):
        raise ValueError(f"role {role!r}: 'sender' or 'receiver'")
    client_conn, server_conn = Connection(), Connection()
    client, server = Transport(Transport.CLIENT), Transport(Transport.SERVER)
    client.bind(client_conn)
    server.bind(server_conn)

    def pump() -> None:
        for _ in range(8):  # (two rounds settle an exchange; more never needed, bounded all the same)
            moved = False
            for a, b in ((client, server), (server, client)):
                n = a.pending()
                if n > 0:
                    b.push(a.peek(n))
                    a.pop(n)
                    moved = True
            if not moved:
                return

    client_conn.open()
    session = client_conn.session()
    session.open()
    mine = session.sender("s") if role == "sender" else session.receiver("r")
    mine.open()
    pump()
    server_conn.open()
    server_conn.session_head(0).open()
    theirs = server_conn.link_head(0)
    theirs.open()
    sender, receiver = (mine, theirs) if role == "sender" else (theirs, mine)
    receiver.flow(credit)
    pump()
    return EnginePair(sender, receiver, pump, client, server)


@pytest.fixture(scope="module")
def node():
    """The node executable with @azure/event-hubs installed, else a loud skip."""
    return node_with("@azure/event-hubs", "EVENT HUBS JS SDK TEST")


def held_tags(deliveries) -> list[bytes]:
    """The tags proton holds for ``deliveries`` (pn_delivery_t pointers), read back from it."""
    out = []
    for d in deliveries:
        tag = lib.pn_delivery_tag(d)
        out.append(bytes(ffi.buffer(tag.start, tag.size)))
    return out


def produce(broker: EmulatedBroker, hub: str, bodies: dict[int, list[bytes]]) -> None:
    """``bodies`` (partition -> events) appended to ``hub`` with a Kafka producer, acknowledged."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for p, items in bodies.items():
        for body in items:
            producer.produce(hub, body, partition=p)
    assert producer.flush(30) == 0


def read_on_one_session(client, hub: str, counts: dict[int, int], credit: int, on_delivery=None) -> dict:
    """Receivers of ``hub``'s partitions on one session of a RawAmqp ``client`` (their
    transfers share its delivery ids) read until each has ``counts[partition]`` events,
    granted ``credit`` again each time theirs runs out: per partition, in order, each
    (delivery, its message's bytes). ``on_delivery(delivery, n)`` is called with each
    (``n``: its partition's count so far)."""
    ssn = client.session()
    links = {}
    for p in counts:
        link = ssn.receiver(f"r{p}")
        link.source.address = f"{hub}/ConsumerGroups/$Default/Partitions/{p}"
        link.open()
        link.flow(credit)
        links[p] = link
    got: dict[int, list] = {p: [] for p in counts}

    def drain():
        for p, link in links.items():
            while link.current is not None and not link.current.partial:
                delivery = link.current
                got[p].append((delivery, link.recv(delivery.pending) or b""))
                link.advance()
                if on_delivery is not None:
                    on_delivery(delivery, len(got[p]))
            if link.credit == 0 and len(got[p]) < counts[p]:
                link.flow(credit)
        return all(len(got[p]) >= counts[p] for p in links)

    client.wait(drain, timeout=60)
    return got
