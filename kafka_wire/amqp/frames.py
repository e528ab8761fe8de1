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

import logging
import struct

from kafka_wire.log_lines import RepeatedWarnings, client_address

__all__ = ["FramePadder", "FIELDS"]

# descriptor code -> fields of the performative (AMQP 1.0 part 2.7)
FIELDS = {0x10: 10, 0x11: 8, 0x12: 14, 0x13: 11, 0x14: 11, 0x15: 6, 0x16: 3, 0x17: 1, 0x18: 1}
_SIZE = struct.Struct(">I")
_repeats = RepeatedWarnings(logging.getLogger(__name__))
_LIST8 = struct.Struct(">BB")
_LIST32 = struct.Struct(">II")


class FramePadder:
    """Feed proton's output; get it back with short performatives padded.

    It also carries the payloads of the events receivers send (see
    ``consume.ConsumeLink.on_flow``): proton is handed each delivery empty, so it
    keeps the link's and session's state (ids, credit, windows, settlement)
    without copying the event twice, and the event goes into the transfer frame
    here, by the delivery's tag (unique on the connection) in :attr:`payloads`.
    A transfer of one is recorded in :attr:`written` (its owner's last tag written)."""

    def __init__(self, peer: str = "?") -> None:
        self.peer = peer  # for the log line of a lost payload
        self._carry = b""
        self._header_done = False
        self.payloads: dict[bytes, tuple] = {}  # tag -> (payload, owner, tag number)
        self.written: dict = {}  # owner -> the tag number of its last transfer written
        self.lost = 0  # empty transfers found without their payload (see _lose)

    def feed(self, data) -> bytes:
        return b"".join(self.feed_parts(data))

    def feed_parts(self, data) -> list:
        """:meth:`feed`'s output as pieces for ``writelines``: megabytes of transfers
        are not joined into one new buffer first."""
        if not isinstance(data, bytes):  # (the tags are looked up by slices of it)
            data = bytes(data)
        buf = self._carry + data if self._carry else data  # (not copied: only read, and views of)
        self._carry = b""
        out: list = []
        pos, end = 0, len(buf)
        if not self._header_done:
            if end < 8:
                self._carry = buf
                return []
            out.append(buf[:8])  # the protocol header
            pos = 8
            self._header_done = True
        view = memoryview(buf)
        start = pos  # a run of bytes passed on whole (frames that need nothing, payloads)
        unpack, unpack14, head14 = _SIZE.unpack_from, _HEAD14.unpack_from, _HEAD14.pack
        skip = _UINT_SKIP
        payloads, written = self.payloads, self.written
        pop = payloads.pop
        while end - pos >= 8:
            if end - pos >= 14:  # the frame's header and a performative's first bytes, in one call
                size, doff, kind, channel, descriptor, lsize, count = unpack14(buf, pos)
            else:
                size, descriptor = unpack(buf, pos)[0], 0
            if end - pos < size:
                break
            # size > 13: an empty frame (a heartbeat, 8 bytes) may be followed by anything
            if descriptor == _TRANSFER8 and doff == 2 and kind == 0 and size > 13:
                # A transfer as proton writes it (list8 after a smallulong descriptor),
                # one per event sent: its performative rewritten in one piece, its
                # payload left in the run that follows (not copied here), or one a
                # receiver left here put after it (see _splice_any; inline: once an event).
                pad = 11 - count
                if 0 < pad and lsize + pad < 256:
                    items_end = pos + 13 + lsize
                    if start < pos:
                        out.append(view[start:pos])
                    payload = None
                    if payloads:
                        q = pos + 14  # the handle, then the delivery-id: uint0, smalluint or uint
                        q += skip[buf[q]]
                        q += skip[buf[q]]
                        if buf[q] == 0xA0:  # the delivery-tag, a vbin8
                            tag = buf[q + 2:q + 2 + buf[q + 1]]
                            entry = pop(tag, None)
                            if entry is not None:
                                payload = entry[0]
                                if payload is None or items_end == pos + size:
                                    written[entry[1]] = entry[2]
                                else:  # another link's transfer with that tag (it has a payload)
                                    payloads[tag] = entry
                                    payload = None
                            elif items_end == pos + size:
                                self._lose(tag)
                    # as parts, joined once with the rest of the output (no bytes made per frame):
                    # the frame's head to the list8's count written again in one pack, then the
                    # fields (bytes, not views: the join takes bytes without the buffer protocol)
                    if payload is None:
                        out += (head14(size + pad, doff, kind, channel, descriptor, lsize + pad, 11),
                                buf[pos + 14:items_end], _NULLS[pad])
                    else:
                        out += (head14(size + pad + len(payload), doff, kind, channel, descriptor,
                                       lsize + pad, 11),
                                buf[pos + 14:items_end], _NULLS[pad], payload)
                    start = items_end
                    pos += size
                    continue
                padded = _pad(buf, view, pos, size) if pad > 0 else None
            else:
                padded = _pad(buf, view, pos, size)
            if self.payloads and _is_transfer(buf, pos, size):
                # Not the shape proton writes ours in (list8, fields to pad): not expected,
                # but a payload it has must not be dropped.
                payload = self._splice_any(buf, pos, size)
                if payload is not None:
                    frame = b"".join(padded) if padded is not None else buf[pos:pos + size]
                    padded = (_SIZE.pack(len(frame) + len(payload)), frame[4:], payload)
            if padded is not None:
                out.append(view[start:pos])
                out.extend(padded)
                start = pos + size
            pos += size
        if start < pos:
            out.append(view[start:pos])
        if pos < end:
            self._carry = buf[pos:]
        return out

    def _splice_any(self, buf, pos: int, size: int):
        """The payload for the transfer at ``pos``, in any encoding (decoded with
        proton), taken from :attr:`payloads` (None if it has none: a delivery proton
        carries itself has an entry without one, to be recorded written). The fast
        path in :meth:`feed_parts` does the same for the transfers proton writes."""
        from proton import Data

        data = Data()
        try:
            used = data.decode(bytes(buf[pos + buf[pos + 4] * 4:pos + size]))
            data.rewind()
            data.next()
            fields = data.get_object().value
            tag = bytes(fields[2])
        except Exception:
            return None
        entry = self.payloads.get(tag)
        if entry is None or (entry[0] is not None and used != size - buf[pos + 4] * 4):
            return None  # not ours, or another link's transfer with that tag (it has a payload)
        del self.payloads[tag]
        self.written[entry[1]] = entry[2]
        return entry[0]

    def _lose(self, tag: bytes) -> None:
        # An empty transfer whose payload is not here reaches the client as an empty
        # event: never expected (a bug), so said, once a minute per client.
        self.lost += 1
        _repeats.warn("amqp-lost-payload", client_address(self.peer),
                      f"AMQP connection from {self.peer}: the transfer of delivery {tag!r} "
                      f"went out without its event (an empty message; {self.lost} so far)")

    def forget(self, owner) -> None:
        """``owner``'s link has ended: drop the payloads proton did not write."""
        self.written.pop(owner, None)
        for tag in [t for t, entry in self.payloads.items() if entry[1] is owner]:
            del self.payloads[tag]


def _is_transfer(buf, pos: int, size: int) -> bool:
    body = pos + buf[pos + 4] * 4
    return (buf[pos + 5] == 0 and size > body - pos + 3 and buf[body] == 0 and buf[body + 1] == 0x53
            and buf[body + 2] == 0x14)


_UINT_SIZE = {0x43: 1, 0x52: 2, 0x70: 5, 0x40: 1}  # uint0, smalluint, uint, null: encoded sizes
_UINT_SKIP = [_UINT_SIZE.get(b, 1) for b in range(256)]  # the same by constructor, as a list
_TRANSFER8 = 0x005314C0  # described transfer, its fields a list8 (four bytes, big-endian)
# size, data offset, type, channel, descriptor and list8 constructor, list8 size and count
_HEAD14 = struct.Struct(">IBBHIBB")


def _pad(buf: bytes, view: memoryview, pos: int, size: int) -> tuple | None:
    """The frame at ``pos`` with its performative padded, as parts to join (the
    payload of a transfer is not copied); None when it needs nothing."""
    doff = buf[pos + 4] * 4
    if buf[pos + 5] != 0 or size <= doff + 3:  # not an AMQP frame, or empty (a heartbeat)
        return None
    body = pos + doff
    if buf[body] != 0x00:
        return None
    if buf[body + 1] == 0x53:        # smallulong descriptor
        code, at = buf[body + 2], body + 3
    elif buf[body + 1] == 0x80:      # ulong descriptor
        code, at = int.from_bytes(buf[body + 2:body + 10], "big"), body + 10
    else:
        return None
    want = FIELDS.get(code)
    if want is None:
        return None
    if code in _WITH_ERROR and _ERROR in buf[body:pos + size]:
        return _pad_with_error(buf, view, pos, size, body, want)
    constructor = buf[at]
    if constructor == 0x45:            # list0
        count, items_at, items_end = 0, at + 1, at + 1
    elif constructor == 0xC0:          # list8: size, count
        lsize, count = _LIST8.unpack_from(buf, at + 1)
        items_at, items_end = at + 3, at + 2 + lsize
    elif constructor == 0xD0:          # list32
        lsize, count = _LIST32.unpack_from(buf, at + 1)
        items_at, items_end = at + 9, at + 5 + lsize
    else:
        return None
    if count >= want:
        return None
    pad = want - count
    items_len = items_end - items_at + pad
    # frame size grows by the padding and by the list header's growth to list32
    total = size + pad + 9 - (items_at - at)
    return (_SIZE.pack(total), view[pos + 4:at], b"\xd0", _LIST32.pack(items_len + 4, want),
            view[items_at:items_end], _NULLS[pad], view[items_end:pos + size])


_NULLS = [b"\x40" * n for n in range(16)]
# disposition (a rejected outcome), detach, end and close carry an AMQP error,
# which pyamqp reads as error[0..2] (condition, description, info)
_WITH_ERROR = {0x15, 0x16, 0x17, 0x18}
_ERROR = b"\x00\x53\x1d"


def _pad_with_error(buf: bytes, view: memoryview, pos: int, size: int, body: int, want: int) -> tuple:
    """A frame that holds an error, decoded and written again with the
    performative and every error in it padded (rare frames: no fast path)."""
    from proton import Data
    from proton._data import Described

    def padded(value, fields=None):
        if isinstance(value, Described):
            items = value.value
            if isinstance(items, list):
                n = fields or (3 if value.descriptor == 0x1D else len(items))
                items = [padded(item) for item in items] + [None] * (n - len(items))
            return Described(value.descriptor, items)
        return value

    data = Data()
    end = body + data.decode(bytes(view[body:pos + size]))
    data.rewind()
    data.next()
    out = Data()
    out.put_object(padded(data.get_object(), want))
    encoded = out.encode()
    return (_SIZE.pack(size - (end - body) + len(encoded)), view[pos + 4:body], encoded,
            view[end:pos + size])


PAD_ROOM = 32  # the most FramePadder adds to a frame (nulls, a list8 made a list32), and more


def rewrite_performative(frame: bytes, doff: int, change) -> bytes | None:
    """``frame`` (whole, its body at ``doff``) with its performative's fields
    replaced by ``change(fields)`` (a list, trailing ones maybe omitted); None when
    ``change`` returns None or the performative does not decode (proton, reading
    it, reports a bad frame itself). For rare frames: decoded with proton."""
    from proton import Data
    from proton._data import Described

    data = Data()
    try:
        data.decode(frame[doff:])
        data.rewind()
        data.next()
        described = data.get_object()
        if not isinstance(described.value, list):  # (a performative's fields are a list)
            return None
        fields = list(described.value)
    except Exception:
        return None
    fields = change(fields)
    if fields is None:
        return None
    out = Data()
    out.put_object(Described(described.descriptor, fields))
    body = out.encode()
    return _SIZE.pack(doff + len(body)) + frame[4:doff] + body
