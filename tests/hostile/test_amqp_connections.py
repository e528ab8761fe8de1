"""AMQP connections past [limits] amqp_connections are closed before anything is
spent on them; a place freed is taken again."""
from __future__ import annotations

import socket
import time

from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.testing import EmulatedBroker

SASL_HEADER = b"AMQP\x03\x01\x00\x00"


def answers_header(port: int) -> bool:
    """Does the broker answer a SASL protocol header on a new connection (else it closes)?"""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(SASL_HEADER)
        try:
            return s.recv(8) == SASL_HEADER
        except ConnectionResetError:
            return False


def wait_for(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_connections_past_the_bound_are_closed_and_a_freed_place_is_taken(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, bounds=Bounds(amqp_connections=2)) as broker:
        port = broker.amqp_port
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
        server = broker.broker.amqp_server
        wait_for(lambda: len(server.connections) == 2)
        assert not answers_header(port)
        held.pop().close()
        wait_for(lambda: len(server.connections) == 1)
        assert answers_header(port)
        for s in held:
            s.close()
