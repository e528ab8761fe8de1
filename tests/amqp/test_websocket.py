"""AMQP over WebSockets (subprotocol AMQPWSB10 on /$servicebus/websocket): on the HTTP
listener, on the AMQP port (ws://) and on AMQPS (wss://, which the JavaScript SDK
always uses); the same endpoint behind it, and bad upgrades refused."""
from __future__ import annotations

import socket
import struct

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient, TransportType

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import client_frame, server_frames, upgrade

from .conftest import receive
from .test_sdk_js import run_js


@pytest.fixture(scope="module")
def ws_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("ws") / "data", amqp=True, tls=True, http=True) as b:
        yield b


def _cs(broker) -> str:
    parsed = connection_string.parse(broker.connection_string())
    return connection_string.build("localhost", key_name=parsed.key_name, key=parsed.key)


def _roundtrip(broker, hub: str, cs: str, **options) -> list[str]:
    # Over WebSockets the SDK's socket_timeout is 1 s (0.2 s on plain AMQP), and its
    # readiness checks and receive turns each wait it out: the plain default here.
    options.setdefault("socket_timeout", 0.2)
    broker.create_hub(hub, 1)
    with EventHubProducerClient.from_connection_string(cs, eventhub_name=hub, **options) as p:
        assert p.get_partition_ids() == ["0"]
        p.send_batch([EventData(f"{hub}-{i}") for i in range(3)], partition_id="0")
    c = EventHubConsumerClient.from_connection_string(
        cs, consumer_group="$Default", eventhub_name=hub, load_balancing_interval=1, **options)
    return [e.body_as_str() for _, e in receive(c, 3, partition_id="0", starting_position="-1")]


@pytest.mark.parametrize("hub, port", [("ws-http", "http_port"), ("ws-amqp", "amqp_port")],
                         ids=["http-listener", "amqp-port"])
def test_python_sdk_over_websockets(ws_broker, hub, port):
    cs = connection_string.build("localhost", key_name="RootManageSharedAccessKey", key="x",
                                 emulator=True)
    got = _roundtrip(ws_broker, hub, cs, transport_type=TransportType.AmqpOverWebsocket,
                     custom_endpoint_address=f"sb://127.0.0.1:{getattr(ws_broker, port)}")
    assert got == [f"{hub}-0", f"{hub}-1", f"{hub}-2"]


def test_python_sdk_over_secure_websockets_on_amqps(ws_broker):
    got = _roundtrip(ws_broker, "ws-tls", _cs(ws_broker),
                     transport_type=TransportType.AmqpOverWebsocket,
                     custom_endpoint_address=f"sb://localhost:{ws_broker.amqps_port}",
                     connection_verify=str(ws_broker.ca_file))
    assert got == ["ws-tls-0", "ws-tls-1", "ws-tls-2"]


def test_js_sdk_over_secure_websockets(ws_broker, node):  # noqa: F811
    ws_broker.create_hub("ws-js", 2)
    env = {"EH_WEBSOCKET": f"localhost:{ws_broker.amqps_port}", "EH_CA": str(ws_broker.ca_file)}
    cs = _cs(ws_broker)
    props = run_js(node, "properties", cs, "ws-js", env=env)
    assert props["partitionIds"] == ["0", "1"], props
    run_js(node, "send", cs, "ws-js", env=env, stdin={"batches": [
        {"partitionId": "1", "events": [{"body": "js-ws-0"}, {"body": "js-ws-1"}]}]})
    events = run_js(node, "receive", cs, "ws-js", 2, "1", env=env)["events"]
    assert [e["body"] for e in events] == ["js-ws-0", "js-ws-1"]


def _until_closed(s: socket.socket) -> bytes:
    out = b""
    while True:
        chunk = s.recv(65536)  # a hang fails with socket.timeout
        if not chunk:
            return out
        out += chunk


@pytest.mark.parametrize("where", ["amqp", "http"])
def test_bad_upgrades_and_frames_close_cleanly(ws_broker, where):
    port = ws_broker.amqp_port if where == "amqp" else ws_broker.http_port
    s, head = upgrade(port, protocol="chat")
    assert head.startswith(b"HTTP/1.1 400"), head
    s.close()
    if where == "amqp":
        s, head = upgrade(port, path="/other")
        assert head.startswith(b"HTTP/1.1 404"), head
        s.close()
    # An unmasked client frame: a close frame with status 1002, then the end.
    s, head = upgrade(port)
    assert head.startswith(b"HTTP/1.1 101"), head
    s.sendall(struct.pack(">BB", 0x82, 8) + b"AMQP\x00\x01\x00\x00")
    rest = _until_closed(s)
    assert rest[:1] == b"\x88" and struct.unpack(">H", rest[2:4])[0] == 1002, rest
    s.close()
    # Garbage inside a proper frame: AMQP's answer (its header), then the close.
    s, head = upgrade(port)
    s.sendall(client_frame(0x2, b"GARBAGE!"))
    rest = _until_closed(s)
    assert b"AMQP" in rest and b"\x88" in rest, rest
    s.close()
    # ... and the endpoint still serves.
    cs = connection_string.build("localhost", key_name="RootManageSharedAccessKey", key="x",
                                 emulator=True)
    ws_broker.create_hub(f"ws-bad-{where}", 1)
    with EventHubProducerClient.from_connection_string(
            cs, eventhub_name=f"ws-bad-{where}",
            transport_type=TransportType.AmqpOverWebsocket,
            custom_endpoint_address=f"sb://127.0.0.1:{port}") as p:
        assert p.get_partition_ids() == ["0"]


@pytest.mark.parametrize("together", [False, True], ids=["after-the-answer", "in-one-write"])
def test_a_websocket_close_after_the_amqp_close_is_answered_at_once(ws_broker, monkeypatch, together):
    # After the AMQP close the broker lingers (dropping what the client still sends); a
    # client's WebSocket close must still get its answer then, not at the linger's end: the
    # Python SDK waits for it on every connection it closes, and sends it in the same write
    # as its AMQP close. A 60 s linger makes a missed answer a timeout.
    from proton import Connection, Endpoint, Transport

    from kafka_wire.amqp import connection as amqp_connection
    monkeypatch.setattr(amqp_connection, "LINGER_S", 60.0)
    s, head = upgrade(ws_broker.amqp_port)
    assert head.startswith(b"HTTP/1.1 101"), head
    transport, conn = Transport(Transport.CLIENT), Connection()
    transport.bind(conn)
    buf = bytearray()

    def exchange(until) -> None:
        while not until():
            pending = transport.pending()
            if pending > 0:
                s.sendall(client_frame(0x2, transport.peek(pending)))
                transport.pop(pending)
            chunk = s.recv(65536)  # (a hang fails with socket.timeout: 10 s)
            assert chunk, "the broker closed before answering"
            buf.extend(chunk)
            for opcode, payload in server_frames(buf):
                assert opcode == 0x2, (opcode, payload)
                transport.push(payload)

    conn.open()
    exchange(lambda: conn.state & Endpoint.REMOTE_ACTIVE)
    conn.close()
    close = client_frame(0x8, struct.pack(">H", 1000))
    if together:
        pending = transport.pending()
        s.sendall(client_frame(0x2, transport.peek(pending)) + close)
        transport.pop(pending)
    else:
        exchange(lambda: conn.state & Endpoint.REMOTE_CLOSED)
        s.sendall(close)
    rest = buf + _until_closed(s)  # before the fix: socket.timeout, the linger being 60 s
    frames = server_frames(rest)
    assert frames and frames[-1][0] == 0x8, frames
    assert struct.unpack(">H", frames[-1][1][:2])[0] == 1000
    if together:  # the AMQP close was answered before it
        assert any(op == 0x2 and b"\x00\x53\x18" in p for op, p in frames[:-1]), frames
    s.close()
