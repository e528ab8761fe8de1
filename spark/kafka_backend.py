"""Reading event hub partitions through the Kafka protocol (``bootstrap``).

For a Spark cluster that cannot see the broker's disk. A small blocking
client (Metadata v4, ListOffsets v2, Fetch v4 read_committed; PLAINTEXT,
SSL, SASL PLAIN as Event Hubs uses) built on kafka-python's message classes;
it keeps the raw record batches, which capture decodes as it does from disk.

What the Kafka protocol does not carry is approximated, and said so:

- enqueued time: the batch's maxTimestamp. Event hubs default to
  LogAppendTime, where that is the broker's append time, as on disk; a hub
  with CreateTime gives the producers' timestamps instead;
- Event Hubs offset (byte position): kafka-wire serves stored batches
  unchanged, so positions are the running sum of batch sizes. The sum starts
  at the ``pos`` the source keeps with its offsets, 0 at offset 0; a log
  whose start was moved by retention starts counting at 0 there.

Transactions are filtered as a read_committed consumer does: up to the last
stable offset, aborted batches dropped by the fetch's aborted-transaction
list, control batches never returned.
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
from typing import Iterator

from kafka.errors import OffsetOutOfRangeError
from kafka.protocol.consumer import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
)

from kafka_wire.capture.windows import BatchRef
from kafka_wire.log import batch as rb
from kafka_wire.log.reader import StoredBatch

logger = logging.getLogger(__name__)

FETCH_VERSION, LIST_OFFSETS_VERSION, METADATA_VERSION = 4, 2, 4
MAX_FETCH_BYTES = 8 * 1024 * 1024
EARLIEST, LATEST = -2, -1


class KafkaError(RuntimeError):
    pass


class OffsetOutOfRange(KafkaError):
    pass


class _Connection:
    def __init__(self, bootstrap: str, options: dict):
        host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
        self.options = options
        self.client_id = options.get("client_id", "kafka-wire-capture")
        sock = socket.create_connection((host, int(port)), timeout=float(options.get("request_timeout_s", 30)))
        protocol = options.get("security_protocol", "PLAINTEXT").upper()
        if protocol in ("SSL", "SASL_SSL"):
            ctx = ssl.create_default_context(cafile=options.get("ssl_cafile"))
            if str(options.get("ssl_check_hostname", "true")).lower() == "false":
                ctx.check_hostname = False
            sock = ctx.wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.correlation = 0
        if protocol.startswith("SASL"):
            self._sasl_plain()

    def _sasl_plain(self) -> None:
        mechanism = self.options.get("sasl_mechanism", "PLAIN").upper()
        if mechanism != "PLAIN":
            raise KafkaError(f"SASL mechanism {mechanism} is not supported by the capture reader: use PLAIN")
        r = self.request(SaslHandshakeRequest, SaslHandshakeResponse, 1, mechanism="PLAIN")
        if r.error_code:
            raise KafkaError(f"SASL handshake refused (error {r.error_code})")
        user, password = self.options.get("sasl_plain_username", ""), self.options.get("sasl_plain_password", "")
        token = b"\0" + user.encode() + b"\0" + password.encode()
        r = self.request(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, auth_bytes=token)
        if r.error_code:
            raise KafkaError(f"SASL authentication failed: {r.error_message}")

    def request(self, req_cls, resp_cls, version: int, **fields):
        self.correlation += 1
        body = bytes(req_cls(version=version, **fields).encode(version=version))
        cid = self.client_id.encode()
        header = struct.pack(">hhih", req_cls.API_KEY, version, self.correlation, len(cid)) + cid
        payload = header + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        if struct.unpack_from(">i", data)[0] != self.correlation:
            raise KafkaError("response out of order")
        return resp_cls.decode(data[4:], version=version)

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise KafkaError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


class KafkaBackend:
    needs_positions = True

    def __init__(self, bootstrap: str, options: dict):
        self.bootstrap = bootstrap
        self.options = options
        self._conn: _Connection | None = None
        self._positions: dict[tuple[str, int, int], int] = {}  # (hub, partition, offset) -> byte position

    @property
    def conn(self) -> _Connection:
        if self._conn is None:
            self._conn = _Connection(self.bootstrap, self.options)
        return self._conn

    def partition_count(self, hub: str) -> int:
        r = self.conn.request(MetadataRequest, MetadataResponse, METADATA_VERSION,
                              topics=[MetadataRequest.MetadataRequestTopic(name=hub)],
                              allow_auto_topic_creation=False)
        for t in r.topics:
            if t.name == hub and not t.error_code:
                return len(t.partitions)
        return 0

    def _list_offset(self, hub: str, partition: int, timestamp: int) -> int:
        T = ListOffsetsRequest.ListOffsetsTopic
        r = self.conn.request(
            ListOffsetsRequest, ListOffsetsResponse, LIST_OFFSETS_VERSION, replica_id=-1, isolation_level=1,
            topics=[T(name=hub, partitions=[T.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)])],
        )
        p = r.topics[0].partitions[0]
        if p.error_code:
            raise KafkaError(f"ListOffsets {hub}/{partition} failed with error {p.error_code}")
        return p.offset

    def log_start(self, hub: str, partition: int) -> int:
        return self._list_offset(hub, partition, EARLIEST)

    def end_offset(self, hub: str, partition: int) -> int:
        return self._list_offset(hub, partition, LATEST)  # read_committed: the last stable offset

    def end_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {key: self.end_offset(*key) for key in partitions}

    def position_of(self, hub: str, partition: int, offset: int) -> int:
        return self._positions.get((hub, partition, offset), 0)

    def refs(self, hub: str, partition: int, start: int, end: int | None = None,
             start_pos: int | None = None) -> tuple[list[BatchRef], int]:
        stop = self._list_offset(hub, partition, LATEST) if end is None else end  # LATEST read_committed = LSO
        refs = [BatchRef(b.base_offset, b.next_offset, b.append_time_ms, b.size)
                for b in self.read(hub, partition, start, stop, start_pos, with_data=False)]
        return refs, stop

    def read(self, hub: str, partition: int, start: int, end: int, start_pos: int | None = None, *,
             with_data: bool = True) -> Iterator[StoredBatch]:
        pos = self._positions.get((hub, partition, start), 0) if start_pos is None else start_pos
        offset = start
        aborted: dict[int, int] = {}  # producer id -> first offset of an aborted transaction
        while offset < end:
            before = offset
            try:
                data, more = self._fetch(hub, partition, offset, aborted)
            except OffsetOutOfRange:
                # Below the log start (retention, DeleteRecords): those events are gone; go on
                # from the start, as the log backend's reader does.
                first = self._list_offset(hub, partition, EARLIEST)
                if first <= offset:
                    raise
                logger.info("%s/%d: offset %d is below the log start %d: reading from there",
                            hub, partition, offset, first)
                offset = first
                continue
            if not data:
                break
            for p, h in rb.iter_batches(data):
                if h.next_offset <= offset:
                    pos += h.size  # the start of a batch before ``offset`` (fetches return whole batches)
                    continue
                if h.base_offset >= end:
                    return
                batch_pos, pos = pos, pos + h.size
                offset = h.next_offset
                self._positions[(hub, partition, offset)] = pos
                if h.is_control:
                    aborted.pop(h.producer_id, None)  # its transaction ends here
                    continue
                if h.is_transactional and aborted.get(h.producer_id, offset) <= h.base_offset:
                    continue
                if not h.records_count:
                    continue
                chunk = bytes(data[p : p + h.size]) if with_data else None
                yield StoredBatch(h.base_offset, h.next_offset, batch_pos, h.max_timestamp, h.size, -1, h, chunk)
            if not more or offset == before:
                break

    def _fetch(self, hub: str, partition: int, offset: int, aborted: dict[int, int]) -> tuple[bytes, bool]:
        T = FetchRequest.FetchTopic
        r = self.conn.request(
            FetchRequest, FetchResponse, FETCH_VERSION, replica_id=-1, max_wait_ms=0, min_bytes=0,
            max_bytes=MAX_FETCH_BYTES, isolation_level=1,
            topics=[T(topic=hub, partitions=[T.FetchPartition(partition=partition, fetch_offset=offset,
                                                               partition_max_bytes=MAX_FETCH_BYTES)])],
        )
        p = r.responses[0].partitions[0]
        if p.error_code == OffsetOutOfRangeError.errno:
            raise OffsetOutOfRange(f"Fetch {hub}/{partition} at offset {offset}: offset out of range")
        if p.error_code:
            raise KafkaError(f"Fetch {hub}/{partition} at offset {offset} failed with error {p.error_code}")
        for txn in p.aborted_transactions or ():
            aborted.setdefault(txn.producer_id, txn.first_offset)
        data = bytes(p.records or b"")
        return data, bool(data)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
