"""Outgoing frames with every field of their performative present.

AMQP lets a sender omit trailing fields that hold their defaults, and proton
does. The Azure SDKs' own AMQP stack (``azure.eventhub._pyamqp``, and the
same code in the Service Bus SDK) does not take that: it indexes the fields
(``frame[9]`` of ``open``, ``frame[7]`` of ``begin``) and finds a transfer's
payload at index 11, because the service always sends them all. So the bytes
proton writes pass through :class:`FramePadder`, which appends nulls to each
performative's field list up to its full length (nulls mean the defaults, so
any AMQP peer reads the same frame).
"""
from __future__ import annotations

import struct

__all__ = ["FramePadder", "FIELDS"]

# descriptor code -> fields of the performative (AMQP 1.0 part 2.7)
FIELDS = {0x10: 10, 0x11: 8, 0x12: 14, 0x13: 11, 0x14: 11, 0x15: 6, 0x16: 3, 0x17: 1, 0x18: 1}
_SIZE = struct.Struct(">I")
_LIST8 = struct.Struct(">BB")
_LIST32 = struct.Struct(">II")


class FramePadder:
    """Feed proton's output; get it back with short performatives padded."""

    def __init__(self) -> None:
        self._carry = b""
        self._header_done = False

    def feed(self, data) -> bytes:
        buf = self._carry + bytes(data) if self._carry else bytes(data)
        self._carry = b""
        out = []
        pos, end = 0, len(buf)
        if not self._header_done:
            if end < 8:
                self._carry = buf
                return b""
            out.append(buf[:8])  # the protocol header
            pos = 8
            self._header_done = True
        while pos < end:
            if end - pos < 8:
                break
            size = _SIZE.unpack_from(buf, pos)[0]
            if end - pos < size:
                break
            out.append(_pad(buf, pos, size))
            pos += size
        if pos < end:
            self._carry = buf[pos:]
        return b"".join(out)


def _pad(buf: bytes, pos: int, size: int) -> bytes:
    frame = buf[pos:pos + size]
    doff = frame[4] * 4
    if frame[5] != 0 or size <= doff + 3:  # not an AMQP frame, or empty (a heartbeat)
        return frame
    body = doff
    if frame[body] != 0x00:
        return frame
    if frame[body + 1] == 0x53:        # smallulong descriptor
        code, at = frame[body + 2], body + 3
    elif frame[body + 1] == 0x80:      # ulong descriptor
        code, at = int.from_bytes(frame[body + 2:body + 10], "big"), body + 10
    else:
        return frame
    want = FIELDS.get(code)
    if want is None:
        return frame
    constructor = frame[at]
    if constructor == 0x45:            # list0
        count, items_at, items_end = 0, at + 1, at + 1
    elif constructor == 0xC0:          # list8: size, count
        lsize, count = _LIST8.unpack_from(frame, at + 1)
        items_at, items_end = at + 3, at + 2 + lsize
    elif constructor == 0xD0:          # list32
        lsize, count = _LIST32.unpack_from(frame, at + 1)
        items_at, items_end = at + 9, at + 5 + lsize
    else:
        return frame
    if count >= want:
        return frame
    items = frame[items_at:items_end] + b"\x40" * (want - count)
    new_list = b"\xd0" + _LIST32.pack(len(items) + 4, want) + items
    rest = frame[items_end:]  # a transfer's payload
    head = frame[:at]
    total = len(head) + len(new_list) + len(rest)
    return _SIZE.pack(total) + head[4:] + new_list + rest


class InputFrames:
    """Feed what a client sends (after SASL); get back what proton should see.

    Two things proton's Python binding cannot do are done here, frame by frame:
    an ``attach``'s desired capabilities are kept by link name (a receiver asks
    for the runtime metric that way), and frames on a channel the client has
    already ended are dropped: the SDKs' pyamqp sends a ``detach`` after its
    ``end``, which proton answers by closing the whole connection, while the
    service ignores it.
    """

    def __init__(self, max_frame: int) -> None:
        self.max_frame = max_frame
        self._carry = b""
        self._header_done = False
        self._ended: set[bytes] = set()
        self.capabilities: dict[str, set[str]] = {}
        self.dropped = 0

    def feed(self, data) -> bytes:
        buf = self._carry + bytes(data) if self._carry else bytes(data)
        self._carry = b""
        pos, end = 0, len(buf)
        if not self._header_done:
            if end < 8:
                self._carry = buf
                return b""
            pos = 8
            self._header_done = True
        out = [buf[:pos]] if pos else []
        start = pos  # a run of frames passed whole
        while end - pos >= 8:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 8 or size > self.max_frame:
                # Malformed or over the limit: proton fails the connection with a
                # framing error (holding back the frame would buffer it whole).
                pos = end
                break
            if end - pos < size:
                break
            keep = self._frame(buf, pos, size)
            if not keep:
                out.append(buf[start:pos])
                start = pos + size
            pos += size
        out.append(buf[start:pos])
        if pos < end:
            self._carry = buf[pos:]
        return b"".join(out)

    def _frame(self, buf: bytes, pos: int, size: int) -> bool:
        doff = buf[pos + 4] * 4
        if buf[pos + 5] != 0 or size < doff + 3 or doff < 8:
            return True
        channel = buf[pos + 6:pos + 8]
        body = pos + doff
        if buf[body] != 0x00 or buf[body + 1] != 0x53:
            return True
        code = buf[body + 2]
        if code == 0x11:          # begin: the channel is in use again
            self._ended.discard(channel)
            return True
        if channel in self._ended and code not in (0x10, 0x18):
            # open and close belong to the connection, whatever their channel
            # (rhea ends session 0 and then closes on channel 0)
            self.dropped += 1
            return False
        if code == 0x17:          # end
            self._ended.add(channel)
        elif code == 0x12:        # attach
            self._attach(buf[body:pos + size])
        return True

    def _attach(self, performative: bytes) -> None:
        from proton import Data

        data = Data()
        try:
            data.decode(performative)
            data.rewind()
            data.next()
            fields = data.get_object().value
        except Exception:  # proton will report the bad frame itself
            return
        if len(fields) > 12 and fields[0] is not None and fields[12] is not None:
            wanted = fields[12]
            values = wanted if isinstance(wanted, (list, tuple)) or hasattr(wanted, "elements") else [wanted]
            values = getattr(values, "elements", values)
            self.capabilities[str(fields[0])] = {str(v) for v in values}
