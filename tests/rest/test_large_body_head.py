"""A body over 64 KiB is read only after its head passed the door (httpd/listener.py):
what the head's check decided is kept for the request, and a bug in that check is
answered as one, without reading the body it was to guard."""
from __future__ import annotations

import logging
import socket
import time

import pytest
import requests

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

HOST = "contoso.servicebus.windows.net"
HUB = "orders"
HUGE = 60 << 20  # a Content-Length whose body never comes


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("large-body") / "data", config_file=MULTI_TOML,
                        http=True) as b:
        yield b


def _token() -> str:
    return sas.generate(sas.resource_uri(HOST), ROOT[0], ROOT[1], int(time.time()) + 600)


@pytest.fixture
def sign_ins(broker):
    """The door's sign-ins in namespace contoso while the test runs (the real door,
    counted on its way in)."""
    door = broker.broker.services.namespaces["contoso"].door
    calls = []
    real = door.sign_in

    def counted(*args, **kwargs):
        calls.append(args[2] if len(args) > 2 else kwargs.get("what"))
        return real(*args, **kwargs)

    door.sign_in = counted
    try:
        yield calls
    finally:
        del door.sign_in  # the class's method again


@pytest.mark.parametrize("size", [100, 200 << 10], ids=["small", "200KiB"])
def test_a_rest_send_signs_in_once(broker, sign_ins, size):
    answer = requests.post(f"{broker.http_url}/{HUB}/partitions/0/messages", data=b"x" * size,
                           headers={"Host": HOST, "Authorization": _token()}, timeout=20)
    assert answer.status_code == 201, (answer.status_code, answer.text[:300])
    assert len(sign_ins) == 1, sign_ins


@pytest.mark.parametrize("size", [100, 100 << 10], ids=["small", "100KiB"])
def test_a_console_send_signs_in_once(broker, sign_ins, size):
    answer = requests.post(f"{broker.http_url}/api/namespaces/contoso/hubs/{HUB}/events",
                           headers={"Authorization": _token()}, timeout=20,
                           json={"body": "x" * size, "partition": 1})
    assert answer.status_code == 201, (answer.status_code, answer.text[:300])
    assert len(sign_ins) == 1, sign_ins


def test_a_wrong_credential_on_a_large_send_is_still_refused(broker, sign_ins):
    """Only a success is kept: a refused head ends the request, and the next request
    signs in afresh."""
    wrong = sas.generate(sas.resource_uri(HOST), ROOT[0], "d3Jvbmc=", int(time.time()) + 600)
    for token, status in ((wrong, 401), (_token(), 201), (wrong, 401)):
        answer = requests.post(f"{broker.http_url}/{HUB}/partitions/0/messages", data=b"y" * (80 << 10),
                               headers={"Host": HOST, "Authorization": token}, timeout=20)
        assert answer.status_code == status, (answer.status_code, answer.text[:300])
    assert len(sign_ins) == 3, sign_ins


def _head_only(broker, path: str, auth: str) -> bytes:
    port = int(broker.http_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {auth}\r\n"
                  f"Content-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n".encode("latin-1"))
        answer = b""
        while chunk := s.recv(65536):  # the answer closes the connection
            answer += chunk
    return answer


@pytest.mark.parametrize("side, path, starts", [
    ("rest", f"/{HUB}/messages", b"<Error><Code>500</Code>"),
    ("rest", "/subscriptions/x/resourceGroups/y/providers/Microsoft.EventHub/namespaces/contoso",
     b'{"error": {"code": "InternalServerError"'),
    ("console", f"/api/namespaces/contoso/hubs/{HUB}/events", b'{"error"'),
], ids=["rest-send", "management", "console-send"])
def test_a_bug_in_the_head_check_is_a_500_and_the_body_is_not_read(broker, caplog, side, path, starts):
    """Before, a check that raised let the request go on: its body, up to 64 MiB, was
    read unchecked. Now the client gets its front end's 500 at once (the body never
    comes, so an answer that waited for it could not arrive) and the log one line."""
    listener = broker.broker.http
    target = listener.rest if side == "rest" else listener.console

    def broken(*_args):
        raise RuntimeError("a bug in the head's check")

    target.refuse_unread = broken
    try:
        with caplog.at_level(logging.ERROR, logger="kafka_wire.httpd.listener"):
            answer = _head_only(broker, path, _token())
    finally:
        del target.refuse_unread
    assert answer.startswith(b"HTTP/1.1 500 "), answer[:300]
    assert answer.split(b"\r\n\r\n", 1)[1].startswith(starts), answer[:600]
    assert [r for r in caplog.records if r.getMessage().startswith("checking the head of POST")]
    assert requests.get(broker.http_url + "/health", timeout=20).status_code == 200
