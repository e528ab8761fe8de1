"""Messages sent on a publish link are kept out of proton (input_frames.Payloads): the
transfers proton is handed carry no payload, and the link's handler takes each message
from Payloads when proton says it is complete. Property tests hold the scanner's reading
of a transfer's head to proton's codec, and the messages taken to the messages a proton
client sent, whatever the cuts between reads, aborts, refusals and a second link whose
messages proton keeps; a broker fed broken transfers answers with an error or a close and
goes on serving."""
from __future__ import annotations

import logging
import random
import select
import socket
import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from proton import Collector, Connection, Data, Described, Event, Transport, ubyte, uint, ulong

from kafka_wire.amqp.input_frames import InputFrames, PayloadPart, _transfer_head

from .test_input_frames_deferral import anything, frame, protons_reading, transfer_fields


def _fields(raw: bytes):
    d = Data()
    d.decode(raw[8:])
    d.rewind()
    d.next()
    return list(d.get_object().value)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(anything, max_size=12), st.binary(max_size=40))
def test_a_transfer_head_is_read_only_as_proton_reads_it(fields, payload):
    """Whatever a transfer's fields hold, its head is read (handle, more, aborted, where
    the payload starts) only when proton's codec reads the same."""
    raw = frame(0x14, fields, payload)
    head = _transfer_head(raw, 8, len(raw))
    if head is not None:
        handle, more, aborted, after = head
        assert after == len(raw) - len(payload)
        read = protons_reading(raw[8:])
        assert read == (more, aborted)
        assert _fields(raw)[0] == handle


@settings(max_examples=400, deadline=None, derandomize=True)
@given(transfer_fields(), st.integers(1, 5), st.binary(max_size=40), st.integers(0, 400))
@example([uint(3), uint(1), b"t", uint(0), False, True], 6, b"x", 400)
def test_a_clients_transfer_head_is_read_and_not_when_cut_short(fields, count, payload, cut):
    """A transfer as clients write it (of any length from its handle on) is read as proton
    reads it; cut short before its fields end, it is not read at all."""
    fields = fields[:count] if count < 6 else fields
    raw = frame(0x14, fields, payload)
    read = protons_reading(raw[8:])
    head = _transfer_head(raw, 8, len(raw))
    assert head is not None and (head[1], head[2]) == read and head[0] == int(fields[0])
    assert head[3] == len(raw) - len(payload)
    if 8 + cut < head[3]:
        assert _transfer_head(raw[:8 + cut], 8, 8 + cut) is None


class _Server:
    """A proton server fed through InputFrames as AmqpConnection feeds it: the parts in
    order (a PayloadPart applied where it stands), events handled after each feed and
    whenever proton's input is full; link "a"'s payloads kept out of proton."""

    def __init__(self, refuse: set[bytes]) -> None:
        self.transport = Transport(Transport.SERVER)
        self.transport.max_frame_size = 512
        self.conn = Connection()
        self.collector = Collector()
        self.conn.collect(self.collector)
        self.transport.bind(self.conn)
        self.scanner = InputFrames(512)
        self.payloads = None
        self.got: dict[str, list[bytes]] = {"a": [], "b": []}
        self.refuse, self.refused = refuse, set()

    def feed(self, data: bytes) -> None:
        for part in self.scanner.feed_parts(memoryview(bytearray(data))):
            if part.__class__ is PayloadPart:
                if part.head and 0 < self.transport.capacity() < len(part.head):
                    self.events()  # (room for all of its head first)
                part.apply()
                if not part.head:
                    continue
                part = part.head
            view = memoryview(part)
            while len(view):
                room = self.transport.capacity()
                assert room >= 0
                n = min(room, len(view)) if room else len(view)
                self.transport.push(view[:n])
                view = view[n:]
                if len(view):
                    self.events()
        self.events()

    def events(self) -> None:
        while True:
            event = self.collector.peek()
            if event is None:
                return
            kind = event.type
            if kind == Event.CONNECTION_REMOTE_OPEN:
                self.conn.open()
            elif kind == Event.SESSION_REMOTE_OPEN:
                event.session.open()
            elif kind == Event.LINK_REMOTE_OPEN:
                link = event.link
                link.source.copy(link.remote_source)
                link.target.copy(link.remote_target)
                link.open()
                if link.name == "a":
                    self.payloads = self.scanner.keep_payloads("a")
                    assert self.payloads is not None
                link.flow(1000)
            elif kind == Event.DELIVERY:
                self.delivery(event.delivery)
            self.collector.pop()

    def delivery(self, d) -> None:
        link = d.link
        if not d.readable:
            return
        ours = link.name == "a"
        if d.aborted:  # (settled by the client too): as AmqpConnection._admit_transfer drops it
            d.settle()
            return
        if d.partial:
            tag = d.tag.encode() if isinstance(d.tag, str) else bytes(d.tag)
            if ours and tag in self.refuse and tag not in self.refused:
                self.refused.add(tag)  # as AmqpConnection._refuse_transfer does
                self.payloads.drop(True)
                d.update(d.REJECTED)
                d.settle()
            return
        if ours:
            assert d.pending <= 1 + self.payloads.arrived(False) // 400  # (a byte a frame, of 512)
            raw = self.payloads.take(d.pending)
            assert raw is not None
            self.got["a"].append(bytes(raw))
            del raw
        else:
            self.got["b"].append(bytes(link.recv(d.pending) or b""))
        link.advance()
        d.update(d.ACCEPTED)
        d.settle()

    def output(self) -> bytes:
        n = self.transport.pending()
        if n <= 0:
            return b""
        out = self.transport.peek(n)
        self.transport.pop(n)
        return out


def _exchange(messages: list[tuple[str, bytes, str]], seed: int, refuse: set[bytes]) -> _Server:
    """A proton client sends ``messages`` ((link, body, how: "sent", "aborted")) on links
    "a" and "b"; its bytes reach the server in reads cut at random (``seed``)."""
    rng = random.Random(seed)
    client = Transport(Transport.CLIENT)
    client.max_frame_size = 512
    conn = Connection()
    client.bind(conn)
    server = _Server(refuse)
    conn.open()
    session = conn.session()
    session.open()
    links = {"a": session.sender("a"), "b": session.sender("b")}
    for link in links.values():
        link.open()

    def move() -> None:
        for _ in range(20):  # (bounded: an exchange settles in a few rounds)
            out = client.peek(client.pending()) if client.pending() > 0 else b""
            if out:
                client.pop(len(out))
                pos = 0
                while pos < len(out):  # reads cut anywhere
                    n = rng.choice((1, 7, 40, 333, 4096, 70000))
                    server.feed(out[pos:pos + n])
                    pos += n
            back = server.output()
            if back:
                client.push(back)
            if not out and not back:
                return

    move()
    assert links["a"].credit > 0 and links["b"].credit > 0
    for i, (name, body, how) in enumerate(messages):
        link = links[name]
        d = link.delivery(str(i).encode())
        if how == "aborted":
            link.send(body[:len(body) // 2])
            move()  # (some of it on the wire first, when it spans frames)
            d.abort()
        else:
            link.send(body)
            link.advance()
        if rng.random() < 0.3:
            move()
    move()
    return server


message_lists = st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 3000),
                                   st.sampled_from(["sent", "sent", "sent", "aborted"])), max_size=14)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(message_lists, st.integers(0, 2**32), st.sets(st.integers(0, 13), max_size=3))
def test_the_messages_taken_are_the_messages_sent(specs, seed, refused):
    """Every message sent on the kept link and not aborted or refused is taken from
    Payloads whole and in order, with proton holding none of its bytes; the other link's
    messages stay proton's, unchanged."""
    rng = random.Random(seed)
    messages = [(name, rng.randbytes(size), how) for name, size, how in specs]
    refuse = {str(i).encode() for i in refused}
    server = _exchange(messages, seed, refuse)
    refused_tags = server.refused
    want_a = [body for i, (name, body, how) in enumerate(messages)
              if name == "a" and how == "sent" and str(i).encode() not in refused_tags]
    want_b = [body for name, body, how in messages if name == "b" and how == "sent"]
    # (a message refused while arriving is one proton had partial: a one-frame one never is)
    assert server.got["a"] == want_a
    assert server.got["b"] == want_b
    payloads = server.payloads
    assert not payloads.ends and payloads.start == payloads.fill


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(min_size=1, max_size=200), st.integers(0, 10_000), st.integers(0, 2**32))
def test_broken_bytes_on_a_kept_link_never_raise(junk, where, seed):
    """Bytes of a client's conversation overwritten anywhere (on a link whose payloads are
    kept) are read without an exception, whatever proton then makes of them."""
    rng = random.Random(seed)
    server = _exchange([("a", rng.randbytes(900), "sent")], seed, set())
    scanner = server.scanner
    body = b"".join(frame(0x14, [uint(0), uint(9), b"9", uint(0), False, True], rng.randbytes(300))
                    for _ in range(3))
    spot = where % len(body)
    broken = body[:spot] + junk + body[spot + len(junk):]
    for cut in (1, 13, 250, len(broken)):
        for pos in range(0, len(broken), cut):
            for part in scanner.feed_parts(memoryview(broken[pos:pos + cut])):
                if part.__class__ is PayloadPart:
                    part.apply()


# -- the broker: broken transfers on a publish link ------------------------------------------
from proton import Message  # noqa: E402

from kafka_wire.testing import EmulatedBroker  # noqa: E402


@pytest.fixture(scope="module")
def open_broker(tmp_path_factory):
    """A broker whose namespace needs no token (any client sends), with hub ``h``."""
    from confluent_kafka.admin import AdminClient, NewTopic
    with EmulatedBroker(tmp_path_factory.mktemp("payloads") / "data", amqp=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        admin.create_topics([NewTopic("h", 1, 1)])["h"].result(30)
        yield b


class _RawSender:
    """A proton client on a socket, its sender attached to ``h`` with credit."""

    def __init__(self, broker) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10)
        self.transport = Transport()
        self.transport.sasl().allowed_mechs("ANONYMOUS")
        self.conn = Connection()
        self.conn.hostname = "127.0.0.1"
        self.transport.bind(self.conn)
        self.conn.open()
        session = self.conn.session()
        session.open()
        self.link = session.sender("payloads-test")
        self.link.target.address = "h"
        self.link.open()
        for _ in range(100):  # (bounded: credit comes in a few round trips)
            self.exchange()
            if self.link.credit > 0:
                return
        raise AssertionError("no credit")

    def exchange(self) -> None:
        """Send what proton has to send; read what has come within 0.2 s."""
        self.sock.sendall(self._output())
        if select.select([self.sock], [], [], 0.2)[0]:
            data = self.sock.recv(1 << 20)
            if data:
                self.transport.push(data)
            else:
                self.transport.close_tail()

    def _output(self) -> bytes:
        out = b""
        for _ in range(100):  # (bounded: proton hands its output over in pieces)
            n = self.transport.pending()
            if n <= 0:
                break
            out += self.transport.peek(n)
            self.transport.pop(n)
        return out

    def transfers(self, body: bytes) -> bytes:
        """The frames of one message, as the client would send them (not sent)."""
        self.delivery = self.link.delivery(b"1")
        message = Message(body=body)
        message.inferred = True  # (a data section: stored as the record's value)
        self.link.send(message.encode())
        self.link.advance()
        return self._output()

    def close(self) -> None:
        self.sock.close()


def _sends_and_is_accepted(broker, body: bytes) -> None:
    client = _RawSender(broker)
    try:
        client.sock.sendall(client.transfers(body))
        for _ in range(100):  # (bounded: 20 s)
            client.exchange()
            if client.delivery.remote_state:
                break
        assert client.delivery.remote_state == client.delivery.ACCEPTED
    finally:
        client.close()


class _Errors(logging.Handler):
    """The broker's exceptions while handling a frame (AmqpConnection.pump logs them)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record) -> None:
        if record.exc_info or "error handling" in record.getMessage():
            self.records.append(record.getMessage())


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.binary(min_size=1, max_size=64), st.integers(0, 2**20), st.sampled_from([100, 300_000]))
def test_broken_transfers_get_an_error_or_a_close_and_the_broker_serves_on(open_broker, junk, where, size):
    """A message whose frames (one, or two of a 256 KiB frame size) are overwritten anywhere
    is answered as the broker answers broken input (a rejection, a detach, or a close) and
    the connection ends when the client stops; nothing raises in the broker, and the next
    client's message is accepted."""
    errors = _Errors()
    logger = logging.getLogger("kafka_wire.amqp")
    logger.addHandler(errors)
    client = _RawSender(open_broker)
    try:
        out = client.transfers(random.Random(where).randbytes(size))
        spot = where % len(out)
        client.sock.sendall(out[:spot] + junk + out[spot + len(junk):])
        client.sock.shutdown(socket.SHUT_WR)
        while client.sock.recv(1 << 20):  # (a hang fails with socket.timeout)
            pass
    finally:
        client.close()
        logger.removeHandler(errors)
    assert not errors.records
    _sends_and_is_accepted(open_broker, b"after")


def test_a_message_of_many_frames_is_stored_as_sent(open_broker):
    """A message over one frame (300 KB, two 256 KiB frames) sent by a plain proton client
    is accepted and stored as sent (read back with Kafka)."""
    from confluent_kafka import Consumer, TopicPartition
    body = random.Random(7).randbytes(300_000)
    _sends_and_is_accepted(open_broker, body)
    c = Consumer({"bootstrap.servers": open_broker.bootstrap_servers, "group.id": "payloads",
                  "fetch.max.bytes": 10_000_000, "max.partition.fetch.bytes": 10_000_000})
    try:
        c.assign([TopicPartition("h", 0, 0)])
        values = []
        for _ in range(100):  # (bounded)
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                values.append(msg.value())
                if msg.value() == body:
                    break
        assert body in values
    finally:
        c.close()


def test_a_message_kept_past_its_use_is_not_written_over():
    """Buffers go back to the thread's few once their messages are taken; one still
    viewed by whoever took a message (kept past its use) is not handed to another link."""
    from kafka_wire.amqp.input_frames import Payloads
    first, second = Payloads(), Payloads()
    first.add(b"x" * 5000)
    first.end(False)
    kept = first.take(0)
    for _ in range(8):  # (more than the thread keeps)
        second.add(b"y" * 5000)
        second.end(False)
        assert bytes(second.take(0)) == b"y" * 5000
    assert bytes(kept) == b"x" * 5000
