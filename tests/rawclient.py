"""A minimal blocking Kafka client for wire tests: frames requests built with
kafka-python's message classes and reads the reply."""
from __future__ import annotations

import socket
import struct

from kafka_wire import codec


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0, source: str | None = None) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.correlation = 0

    def login(self, password: str, username: str = "$ConnectionString") -> int:
        """SASL PLAIN (Event Hubs: a connection string as password); the error code."""
        self.request(codec.ApiKey.SaslHandshake, 1, mechanism="PLAIN")
        answer = self.request(codec.ApiKey.SaslAuthenticate, 2,
                              auth_bytes=b"\0" + username.encode() + b"\0" + password.encode())
        return answer.error_code

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self, api_key: int, version: int, body: bytes, client_id: str = "raw") -> bytes:
        self.correlation += 1
        cid = client_id.encode()
        header = struct.pack(">hhih", api_key, version, self.correlation, len(cid)) + cid
        if codec.is_flexible(api_key, version) and api_key != -1:
            header += b"\x00"
        payload = header + body
        return struct.pack(">i", len(payload)) + payload

    def request(self, api_key: int, version: int, **fields):
        cls = codec.request_class(api_key)
        body = bytes(cls(version=version, **fields).encode(version=version))
        self.send_raw(self.frame(api_key, version, body))
        return self.read_response(api_key, version)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv(4))[0]
        return self._recv(size)

    def read_response(self, api_key: int, version: int):
        data = self.read_frame()
        corr = struct.unpack(">i", data[:4])[0]
        assert corr == self.correlation, (corr, self.correlation)
        pos = 4
        if codec.is_flexible(api_key, version) and api_key != codec.ApiKey.ApiVersions:
            pos += 1  # empty tagged fields of response header v1
        return codec.response_class(api_key).decode(data[pos:], version=version)

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def is_closed(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
