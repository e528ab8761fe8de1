"""The refusals the HTTP listener makes before a route sees the request (a chunked body:
411; a body past 64 MiB: 413; a Content-Length that is not a number: 400) come in the
route family's own error shape, as the route's own refusals do: ARM's JSON on the
management API, the Schema Registry and the control APIs, the data plane's
``<Error><Code>`` on REST send. A 2 MiB management body and a 65 MiB one are refused
in the same shape."""
from __future__ import annotations

import json

import pytest

from kafka_wire.testing.http_raw import answer as read_answer
from tests.rest.helpers import HOST, MG, http_broker, token

ARM_PUT = f"PUT {MG}/eventhubs/x?api-version=2024-01-01"
SR_PUT = "PUT /$schemaGroups/g/schemas/s?api-version=2023-07-01"
SEND = "POST /orders/messages"
FAULTS = "POST /$faults"
CHUNKED = "Transfer-Encoding: chunked"
broker = http_broker("listener-refusals")


def answer(broker, request_line: str, header: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of the answer to a head with no body sent."""
    status, headers, body = read_answer(
        broker.http_port,
        f"{request_line} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {token()}\r\n{header}\r\n\r\n".encode(),
        timeout=15)
    return status, headers["content-type"], body


@pytest.mark.parametrize("request_line, header, status, code", [
    (ARM_PUT, f"Content-Length: {2 << 20}", 413, "RequestTooLarge"),  # the route's own refusal
    (ARM_PUT, f"Content-Length: {65 << 20}", 413, "RequestTooLarge"),
    (ARM_PUT, CHUNKED, 411, "LengthRequired"),
    (ARM_PUT, "Content-Length: 1e3", 400, "BadRequest"),
    (SR_PUT, CHUNKED, 411, "LengthRequired"),
    (SR_PUT, f"Content-Length: {65 << 20}", 413, "RequestTooLarge"),
    (FAULTS, CHUNKED, 411, "LengthRequired"),
    (FAULTS, "Content-Length: -5", 400, "BadRequest"),
])
def test_management_registry_and_control_refusals_are_arm_json(broker, request_line, header, status, code):
    got, ctype, body = answer(broker, request_line, header)
    assert (got, ctype.split(";")[0]) == (status, "application/json"), body
    assert json.loads(body)["error"]["code"] == code
    assert json.loads(body)["error"]["message"]


@pytest.mark.parametrize("header, status", [
    (CHUNKED, 411), (f"Content-Length: {65 << 20}", 413), ("Content-Length: " + "9" * 50, 413),
    ("Content-Length: 12x", 400)])
def test_rest_send_refusals_are_the_data_planes_error(broker, header, status):
    got, ctype, body = answer(broker, SEND, header)
    assert (got, ctype.split(";")[0]) == (status, "application/xml"), body
    assert body.startswith(f"<Error><Code>{status}</Code><Detail>".encode()), body
