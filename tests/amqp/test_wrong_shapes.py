"""Well-formed AMQP of the wrong shape, where the broker's own code reads what a
client put in an attach or a request: an owner level that is a string, a
selector with a number Python's int() refuses, a partition id of superscript
digits, a request whose application properties are a list. Each gets an AMQP
answer (a detach with a condition, or a node's response with an error status),
the connection stays up, nothing is logged with a traceback, and the broker goes
on serving an SDK client."""
from __future__ import annotations

import logging
import socket
import struct

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from proton import Data, Delivery, Described, Endpoint, Message, int32, symbol, uint, ulong

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import receive
from .test_bad_input import AMQP_HEADER, frames

INVALID_FIELD = "amqp:invalid-field"
NOT_FOUND = "amqp:not-found"
SELECTOR = symbol("apache.org:selector-filter:string")
EPOCH = symbol("com.microsoft:epoch")
RECEIVER = "hub/ConsumerGroups/$Default/Partitions/0"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("shapes") / "data", amqp=True) as b:
        b.create_hub("hub", 2)
        yield b


@pytest.fixture
def no_tracebacks(caplog, monkeypatch):
    """Fails the test if the broker logged an exception (its handler's last resort), or
    a line that quotes a client's huge value whole (one line a person can read). Every
    refusal is logged here (the broker counts repeats from one address instead)."""
    from kafka_wire.amqp import connection
    from kafka_wire.log_lines import RepeatedWarnings

    monkeypatch.setattr(connection, "_repeats", RepeatedWarnings(connection.log, window_s=0))
    caplog.set_level(logging.WARNING)
    yield
    raised = [r for r in caplog.records if r.exc_info]
    assert not raised, [r.getMessage() for r in raised]
    long = [r.getMessage()[:300] for r in caplog.records if len(r.getMessage()) > 2_000]
    assert not long, long


def selector(text, descriptor=SELECTOR) -> dict:
    return {SELECTOR: Described(descriptor, text)}


def refused(client: RawAmqp, link) -> tuple[str | None, str]:
    """Wait for the broker's detach of ``link``: its condition's name and description."""
    client.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, 10)
    condition = link.remote_condition
    return (condition.name, condition.description) if condition else (None, "")


def still_open(client: RawAmqp, ssn) -> None:
    """The connection survived: a good receiver attaches on it."""
    assert not client.closed, client.conn.remote_condition
    link = ssn.receiver("good")
    link.source.address = RECEIVER
    link.open()
    client.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED), 10)
    assert link.state & Endpoint.REMOTE_ACTIVE and link.remote_condition is None


# -- attach -----------------------------------------------------------------------------
# Before: ValueError or TypeError inside the attach, logged with a traceback; the whole
# connection closed with amqp:internal-error. Or accepted as something it is not.
@pytest.mark.parametrize("properties, source_filter, condition", [
    ({EPOCH: "abc"}, None, INVALID_FIELD),               # before: int("abc"), internal-error
    ({EPOCH: ["x"]}, None, INVALID_FIELD),               # before: int([...]), internal-error
    ({EPOCH: "7"}, None, INVALID_FIELD),                 # before: taken as owner level 7
    ({EPOCH: 1.5}, None, INVALID_FIELD),                 # before: taken as owner level 1
    ({EPOCH: True}, None, INVALID_FIELD),                # before: taken as owner level 1
    ({EPOCH: ulong(2 ** 64 - 1)}, None, INVALID_FIELD),  # past a long
    ({EPOCH: {"a": 1}}, None, INVALID_FIELD),
    (None, selector("amqp.annotation.x-opt-offset > '--5'"), INVALID_FIELD),
    (None, selector("amqp.annotation.x-opt-sequence-number > '\u00b2'"), INVALID_FIELD),
    (None, selector("amqp.annotation.x-opt-sequence-number >= '" + "9" * 5000 + "'"), INVALID_FIELD),
    (None, selector("amqp.annotation.x-opt-enqueued-time > '-\u0661'"), INVALID_FIELD),
    (None, selector("x" * 200_000), INVALID_FIELD),  # before: a detach with no condition
    (None, selector(int32(5)), INVALID_FIELD),
    (None, selector(["a", 1]), INVALID_FIELD),
    (None, selector({"a": 1}), INVALID_FIELD),
], ids=["epoch-text", "epoch-list", "epoch-digits-text", "epoch-float", "epoch-bool",
        "epoch-past-long", "epoch-map", "offset-two-signs", "sequence-superscript",
        "sequence-5000-digits", "time-arabic-digit", "selector-200k", "selector-number",
        "selector-list", "selector-map"])
def test_a_receiver_attach_of_the_wrong_shape_is_refused(broker, no_tracebacks, properties,
                                                        source_filter, condition):
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = ssn.receiver("odd")
        link.source.address = RECEIVER
        if properties is not None:
            link.properties = properties
        if source_filter is not None:
            link.source.filter.put_object(source_filter)
        link.open()
        name, description = refused(client, link)
        assert name == condition, (name, description)
        assert len(description) < 2000, len(description)
        still_open(client, ssn)


@pytest.mark.parametrize("address", [
    "hub/ConsumerGroups/$Default/Partitions/\u00b2",          # before: int('²'), internal-error
    "hub/ConsumerGroups/$Default/Partitions/" + "9" * 5000,   # before: int() past 4300 digits
    "hub/ConsumerGroups/$Default/Partitions/\u0661",          # before: read as partition 1
    "amqps://[::1/hub/ConsumerGroups/$Default/Partitions/0",  # before: urlsplit's ValueError
    "h" * 100_000 + "/ConsumerGroups/$Default/Partitions/0",  # a refusal echoing it whole
], ids=["superscript", "5000-digits", "arabic-digit", "bad-ipv6", "100k-hub"])
def test_a_receiver_address_of_the_wrong_shape_is_refused(broker, no_tracebacks, address):
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = ssn.receiver("odd")
        link.source.address = address
        link.open()
        name, description = refused(client, link)
        assert name == NOT_FOUND, (name, description)
        assert len(description) < 2000, len(description)
        still_open(client, ssn)


@pytest.mark.parametrize("address", ["hub/Partitions/\u00b2", "hub/Partitions/" + "7" * 5000,
                                     "amqps://[x/hub"], ids=["superscript", "5000-digits", "bad-ipv6"])
def test_a_sender_address_of_the_wrong_shape_is_refused(broker, no_tracebacks, address):
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = client.sender(ssn, address, "odd")
        name, description = refused(client, link)
        assert name == NOT_FOUND, (name, description)
        still_open(client, ssn)


# -- $cbs and $management ---------------------------------------------------------------
def raw_request(app_properties, body=None) -> bytes:
    """A request message whose application properties may be any AMQP value (proton's
    Message would only take a map)."""
    data = Data()
    data.put_object(Described(ulong(0x73), [ulong(1), None, None, None, "replies"]))
    if app_properties is not None:
        data.put_object(Described(ulong(0x74), app_properties))
    data.put_object(Described(ulong(0x77), body))
    return bytes(data.encode())


def ask(broker, node: str, request: bytes) -> tuple[int, str]:
    """Send one request to ``node`` on a fresh connection; the answer's status and description.
    The connection must still be open after it."""
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        replies = ssn.receiver("replies")
        replies.source.address, replies.target.address = node, "replies"
        replies.open()
        replies.flow(10)
        requests = client.sender(ssn, node, "requests")
        client.wait(lambda: requests.credit > 0, 10)
        requests.delivery(b"1")
        requests.send(request)
        requests.advance()
        delivery = client.wait(lambda: replies.current if replies.current is not None
                               and not replies.current.partial else None, 10)
        answer = Message()
        answer.decode(replies.recv(delivery.pending))
        still_open(client, ssn)
        return answer.properties["status-code"], answer.properties["status-description"]


SAS = "servicebus.windows.net:sastoken"
READ_PARTITION = {"operation": "READ", "type": "com.microsoft:partition", "name": "hub"}


@pytest.mark.parametrize("node, app_properties, body, status", [
    ("$cbs", ["put-token", SAS], "token", 400),              # before: internal-error close
    ("$cbs", {"operation": "put-token", "type": SAS, "name": ["sb://x/hub"]},
     "SharedAccessSignature sr=a&sig=b&se=1&skn=c", 400),      # before: audience str(list)
    ("$cbs", {"operation": "put-token", "type": SAS, "name": "sb://x/hub"}, 5, 400),
    ("$cbs", {"operation": "put-token", "type": SAS, "name": "sb://x/hub"}, {"a": 1}, 400),
    ("$cbs", {"operation": "put-token", "type": 7, "name": "sb://x/hub"}, "token", 400),
    ("$cbs", {"operation": {"a": 1}}, "token", 400),
    ("$cbs", {"operation": "put-token", "type": SAS, "name": "sb://x/hub",
              "expiration": "soon"}, "SharedAccessSignature sr=a&sig=b&se=\u00b2&skn=c", 401),
    ("$cbs", {"operation": "put-token", "type": SAS, "name": "sb://x/hub"},
     "SharedAccessSignature sr=sb%3A%2F%2F%5Bx%2Fhub&sig=b&se=1&skn=c", 401),  # before: urllib raised
    ("$cbs", {"operation": "put-token", "type": SAS, "name": "sb://x/hub"},
     "SharedAccessSignature sr=sb%3A%2F%2Fx%2Fhub&sig=b&se=-1000000000000000&skn=c", 401),  # datetime
    ("$management", {"operation": "READ", "type": "com.microsoft:eventhub", "name": "hub",
                     "security_token": "SharedAccessSignature sr=sb%3A%2F%2F%5Bx&sig=b&se=1&skn=c"},
     None, 401),
    ("$management", ["READ"], None, 400),                    # before: internal-error close
    ("$management", {**READ_PARTITION, "partition": "\u00b2"}, None, 404),  # before: int('²')
    ("$management", {**READ_PARTITION, "partition": "9" * 10_000}, None, 404),  # before: int()
    ("$management", {**READ_PARTITION, "partition": "\u0661"}, None, 404),  # before: partition 1
    ("$management", {**READ_PARTITION, "partition": "../x"}, None, 404),
    ("$management", {**READ_PARTITION, "partition": "-1"}, None, 404),
    ("$management", {**READ_PARTITION, "partition": ["0"]}, None, 400),
    ("$management", {**READ_PARTITION, "partition": True}, None, 400),
    ("$management", READ_PARTITION, None, 400),
    ("$management", {"operation": ["READ"], "type": "com.microsoft:eventhub", "name": "hub"},
     None, 400),
    ("$management", {"operation": "READ", "type": "com.microsoft:eventhub", "name": 5}, None, 400),
], ids=["cbs-properties-list", "cbs-name-list", "cbs-token-number", "cbs-token-map",
        "cbs-type-number", "cbs-operation-map", "cbs-expiry-superscript", "cbs-sr-unclosed-bracket",
        "cbs-expiry-before-year-1", "mgmt-token-sr-unclosed-bracket", "mgmt-properties-list",
        "mgmt-partition-superscript", "mgmt-partition-10k-digits", "mgmt-partition-arabic",
        "mgmt-partition-dots", "mgmt-partition-negative", "mgmt-partition-list",
        "mgmt-partition-bool", "mgmt-partition-missing", "mgmt-operation-list", "mgmt-name-number"])
def test_a_request_of_the_wrong_shape_gets_an_error_status(broker, no_tracebacks, node,
                                                          app_properties, body, status):
    got, description = ask(broker, node, raw_request(app_properties, body))
    assert got == status, description
    assert len(description) < 2000, len(description)


def test_a_numeric_partition_id_is_still_read_as_its_digits(broker, no_tracebacks):
    """A number where the id goes was always served (as its digits): kept."""
    got, description = ask(broker, "$management", raw_request({**READ_PARTITION, "partition": 1}))
    assert got == 200, description


def test_the_broker_serves_an_sdk_client_after_wrong_shapes(broker, no_tracebacks):
    """Every shape above again on one connection each, then an SDK sends and receives."""
    for address in ("hub/ConsumerGroups/$Default/Partitions/\u00b2", "amqps://[::1/hub"):
        with RawAmqp(broker.amqp_port) as client:
            client.open()
            link = client.session().receiver("odd")
            link.source.address = address
            link.open()
            assert refused(client, link)[0] == NOT_FOUND
    ask(broker, "$management", raw_request(["READ"]))
    ask(broker, "$cbs", raw_request(["put-token"], "token"))
    cs = broker.amqp_connection_string()
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="hub") as producer:
        producer.send_batch([EventData("after")], partition_id="1")
    consumer = EventHubConsumerClient.from_connection_string(cs, "$Default", eventhub_name="hub")
    got = receive(consumer, 1, partition_id="1", starting_position="-1")
    assert [e.body_as_str() for _, e in got] == ["after"]


# -- desired capabilities (read from the attach frame by InputFrames, not by proton) -----
def _frame(code: int, fields: list, channel: int = 0) -> bytes:
    data = Data()
    data.put_object(Described(ulong(code), fields))
    body = bytes(data.encode())
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def _receiver_attach(name: str, handle: int, desired) -> bytes:
    source = Described(ulong(0x28), [RECEIVER])
    target = Described(ulong(0x29), [None])
    return _frame(0x12, [name, uint(handle), True, None, None, source, target, None, None, None,
                         None, None, desired])


def _whole_frames(data: bytes) -> bytes:
    """``data`` up to the end of its last whole frame (a read may end inside one)."""
    pos = 0
    while pos + 4 <= len(data) and pos + struct.unpack_from(">I", data, pos)[0] <= len(data):
        pos += struct.unpack_from(">I", data, pos)[0]
    return data[:pos]


@pytest.mark.parametrize("desired", [
    {symbol("com.microsoft:enable-receiver-runtime-metric"): True}, int32(5), "x" * 10_000,
    Described(symbol("x"), [symbol("y")]), [{"a": [1, 2]}, None, 1.5], [],
], ids=["map", "number", "long-string", "described", "mixed-list", "empty"])
def test_desired_capabilities_of_any_shape_attach_the_link(broker, no_tracebacks, desired):
    """A receiver whose desired capabilities are not a list of symbols is attached
    (they name nothing we offer), and a good link after it on the same session too."""
    with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
        s.sendall(AMQP_HEADER + _frame(0x10, ["shapes"]) + _frame(0x11, [None, uint(0), uint(100), uint(100)])
                  + _receiver_attach("odd", 0, desired) + _receiver_attach("good", 1, None))
        got = bytearray()
        attaches: dict = {}
        while len(attaches) < 2:  # a hang fails the test with socket.timeout
            chunk = s.recv(65536)
            assert chunk, f"closed: {frames(bytes(got[8:]))}"
            got += chunk
            for _, performative in frames(_whole_frames(bytes(got[8:]))):
                assert int(performative.descriptor) != 0x18, performative  # no close
                if int(performative.descriptor) == 0x12:
                    attaches[performative.value[0]] = performative.value
        # attached: our source echoed (a refusal answers with a null one)
        assert all(fields[5] is not None for fields in attaches.values()), attaches


def test_desired_capabilities_are_forgotten_with_their_link(broker):
    """A client that attaches and detaches links under new names, each desiring a long
    list of capabilities, does not grow what the broker keeps for its connection (the
    capabilities were kept by link name for the connection's life: 300 links of 64
    capabilities left 300 entries)."""
    import asyncio

    desired = [symbol(f"capability-{i:04d}-" + "x" * 40) for i in range(64)]
    target = Described(ulong(0x29), ["hub"])
    with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
        s.sendall(AMQP_HEADER + _frame(0x10, ["shapes"]) + _frame(0x11, [None, uint(0), uint(100), uint(100)]))
        for i in range(300):
            s.sendall(_frame(0x12, [f"link-{i}", uint(i), False, None, None, Described(ulong(0x28), [None]),
                                    target, None, None, uint(0), None, None, desired])
                      + _frame(0x16, [uint(i), True]))  # detach, closed
        host, port = s.getsockname()[:2]
        got, detaches = bytearray(), 0
        while detaches < 300:  # the broker's 300 detaches (a hang fails with socket.timeout)
            chunk = s.recv(1 << 20)
            assert chunk, "closed"
            got += chunk
            detaches = sum(int(p.descriptor) == 0x16 for _, p in frames(_whole_frames(bytes(got[8:]))))

        async def kept():
            conn = next(c for c in broker.broker.amqp_server.connections if c.peer == f"{host}:{port}")
            return len(conn.scanner.capabilities), len(conn.links)
        assert asyncio.run_coroutine_threadsafe(kept(), broker._loop).result(10) == (0, 0)


@pytest.mark.parametrize("node", ["$cbs", "$management"])
@pytest.mark.parametrize("request_bytes", [
    b"\x00\x53\x74\x73\x18\x18\x64\x87",  # application properties: a char past U+10FFFF
    b"\x00\x53\x77\x73\xce\x32\x0c\x35",  # a value: a char past a C int
], ids=["app-properties-char", "value-char"])
def test_a_request_that_does_not_decode_is_rejected_saying_so(broker, no_tracebacks, node,
                                                             request_bytes):
    # (proton's Message reads most garbage as an empty message, answered with a status;
    # these raise.) The rejected outcome carried no error, which pyamqp indexes.
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        requests = client.sender(ssn, node, "requests")
        client.wait(lambda: requests.credit > 0, 10)
        delivery = requests.delivery(b"1")
        requests.send(request_bytes)
        requests.advance()
        client.wait(lambda: delivery.remote_state, 10)
        assert delivery.remote_state == Delivery.REJECTED
        condition = delivery.remote.condition
        assert condition is not None and condition.name == "amqp:decode-error", condition
        assert node in condition.description and len(condition.description) <= 500
        still_open(client, ssn)
