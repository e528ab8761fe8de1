"""What a client sends, read frame by frame before proton sees it.

:class:`InputFrames` keeps what proton's Python binding does not expose (an
``attach``'s desired capabilities), drops frames the service ignores (on a
channel the client has ended), sizes proton's frames for the padder
(:mod:`kafka_wire.amqp.frames`), passes transfers on as they come, and says
when what it passed on needs handling (:attr:`InputFrames.ended`). It also keeps each
delivery's message-format (a transfer's fourth field, which the binding does not
expose either): Event Hubs takes a transfer of format 0x80013700 as a batch, of
format 0 as one event, whatever its body holds (:meth:`InputFrames.take_format`).
"""
from __future__ import annotations

import struct
from collections import deque

from kafka_wire.amqp.frames import PAD_ROOM, rewrite_performative
from kafka_wire.amqp.messages import _skip

__all__ = ["InputFrames", "DEFERRED_BYTES"]

_SIZE = struct.Struct(">I")
_U32 = struct.Struct(">I")
# A message's frames before its last (``more``) are handed to proton without a pump of
# their own, up to this many bytes since the last pump: an SDK's 1 MB batch is four or
# five 256 KiB frames, and each pump (the delivery's event, a flush, a tick) took
# 50-150 us. The bound keeps the connection's checks of arriving messages (their size,
# its budget) at most this far behind the bytes proton holds.
DEFERRED_BYTES = 1 << 20


# The constructors each of a transfer's first ten fields may have (null allowed but for
# the handle and ``more``): handle, delivery-id, delivery-tag, message-format (uints,
# binary), settled, more (booleans), rcv-settle-mode (ubyte), state (a described
# outcome), resume, aborted (booleans).
_UINT, _BOOLEAN = b"\x43\x52\x70", b"\x41\x42\x56"
_TRANSFER_FIELDS = (_UINT, _UINT + b"\x40", b"\xa0\xb0\x40", _UINT + b"\x40", _BOOLEAN + b"\x40",
                    _BOOLEAN, b"\x50\x40", b"\x00\x40", _BOOLEAN + b"\x40", _BOOLEAN + b"\x40")


def _number(buf, p: int) -> int | None:
    """The unsigned integer encoded at ``p`` (null: None); raises on another type."""
    code = buf[p]
    if code in (0x43, 0x44):
        return 0
    if code in (0x50, 0x52, 0x53):
        return buf[p + 1]
    if code == 0x60:
        return int.from_bytes(buf[p + 1:p + 3], "big")
    if code == 0x70:
        return _U32.unpack_from(buf, p + 1)[0]
    if code == 0x80:
        return int.from_bytes(buf[p + 1:p + 9], "big")
    if code == 0x40:
        return None
    raise ValueError(f"not an unsigned integer: 0x{code:02x}")


def _flag(buf, p: int) -> bool:
    code = buf[p]
    if code == 0x56:
        return buf[p + 1] != 0
    if code in (0x41, 0x42, 0x40):
        return code == 0x41
    raise ValueError(f"not a boolean: 0x{code:02x}")


def _transfer_fields(buf, body: int, stop: int) -> tuple | None:
    """(handle, delivery-tag, message-format, more, aborted, continued) of the transfer
    whose performative starts at ``body``, read from its bytes up to ``stop``; None when
    they do not hold all of its first ten fields, or hold one of a type not read here.

    ``continued``: is the transfer a message's part with ``more`` to come, not
    ``aborted``, each of its first ten fields of the type the specification gives it (as
    a client writes them)? False when in doubt: the frame is then handled at once, as any
    other (see DEFERRED_BYTES). One walk answers both, as the frame's bytes come once."""
    try:
        code = buf[body + 3]
        if code == 0xC0:    # list8: size, count
            count, p = buf[body + 5], body + 6
        elif code == 0xD0:  # list32
            count, p = _U32.unpack_from(buf, body + 8)[0], body + 12
        else:               # list0, or not a list: no handle (proton refuses it)
            return None
        at = []
        typed = count >= 6  # (more absent: not continued)
        for field in range(min(count, 10)):
            if p >= stop:
                return None
            at.append(p)
            if typed and buf[p] not in _TRANSFER_FIELDS[field]:
                typed = False
            p = _skip(buf, p)
        if p > stop or not at:
            return None
        at += [None] * (10 - len(at))
        tag = None
        if at[2] is not None:
            code = buf[at[2]]
            if code == 0xA0:
                tag = bytes(buf[at[2] + 2:at[2] + 2 + buf[at[2] + 1]])
            elif code == 0xB0:
                tag = bytes(buf[at[2] + 5:at[2] + 5 + _U32.unpack_from(buf, at[2] + 1)[0]])
            elif code != 0x40:
                return None
        handle = _number(buf, at[0])
        if handle is None:
            return None
        more = at[5] is not None and _flag(buf, at[5])
        aborted = at[9] is not None and _flag(buf, at[9])
        # (more written true as 0x41 or as 0x56 0x01: another byte is a client's oddity)
        continued = (typed and not aborted
                     and (buf[at[5]] == 0x41 or (buf[at[5]] == 0x56 and buf[at[5] + 1] == 1)))
        return (handle, tag, None if at[3] is None else _number(buf, at[3]), more, aborted,
                continued)
    except Exception:  # noqa: BLE001 - cut short, or a value of another type
        return None


def _transfer_fields_decoded(performative: bytes) -> tuple | None:
    """:func:`_transfer_fields` by proton's decoder, for encodings that one does not
    read (proton refuses the frame when this cannot read it either); never ``continued``
    (such a frame is handled at once)."""
    from proton import Data

    data = Data()
    try:
        data.decode(performative)
        data.rewind()
        data.next()
        fields = list(data.get_object().value)
    except Exception:  # noqa: BLE001 - proton reports the bad frame itself
        return None
    fields += [None] * (10 - len(fields))
    handle, tag, message_format = fields[0], fields[2], fields[3]
    if (not _unsigned(handle) or not (tag is None or isinstance(tag, (bytes, memoryview)))
            or not (message_format is None or _unsigned(message_format))):
        return None  # (of another type than the field's: proton refuses the frame)
    return (int(handle), None if tag is None else bytes(tag),
            None if message_format is None else int(message_format),
            fields[5] is True, fields[9] is True, False)


def _unsigned(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _smaller_frames(frame: bytes, doff: int) -> bytes | None:
    """The client's ``open`` with a max-frame-size :data:`PAD_ROOM` smaller (at
    least 512), for proton to size its frames by: the padder lengthens frames
    proton fills to the limit, and a client refuses one past it. None to leave it."""
    from proton._data import uint

    def smaller(fields: list) -> list | None:
        if len(fields) < 3 or not isinstance(fields[2], uint) or int(fields[2]) >= 0xFFFFFFFF:
            return None  # (absent, or not the uint the field must be: proton answers that)
        size = max(512, int(fields[2]) - PAD_ROOM)  # (512, the least a peer may take, stays)
        if size == int(fields[2]):
            return None
        fields[2] = uint(size)
        return fields

    return rewrite_performative(frame, doff, smaller)


class InputFrames:
    """Feed what a client sends (after SASL); get back what proton should see.

    Two things proton's Python binding cannot do are done here, frame by frame:
    an ``attach``'s desired capabilities are kept by link name (a receiver asks
    for the runtime metric that way), and frames on a channel the client has
    already ended are dropped: the SDKs' pyamqp sends a ``detach`` after its
    ``end``, which proton answers by closing the whole connection, while the
    service ignores it.
    """

    def __init__(self, max_frame: int, deferred_bytes: int = DEFERRED_BYTES) -> None:
        self.max_frame = max_frame
        self.deferred_bytes = deferred_bytes
        self._carry = b""
        self._through = 0  # bytes of a transfer frame still to come, passed on as they come
        self._through_size = 0
        self._through_continued = False  # is that frame a message's part with more to come?
        # Did the last feed end a frame that needs handling now (else proton has nothing to
        # do, or only a message's part that can wait: see DEFERRED_BYTES)?
        self.ended = False
        self._deferred = 0  # bytes of message parts passed on since the last feed that ended
        self._header_done = False
        self._ended: set[bytes] = set()
        self.capabilities: dict[str, set[str]] = {}
        self.dropped = 0
        # (channel, handle) -> [link name, a delivery's frames still to come?], from the
        # client's attaches; and per link name, the (delivery-tag, message-format) of each
        # delivery begun on it that take_format has not yet taken, in order.
        self._links: dict[tuple[bytes, int], list] = {}
        self._formats: dict[str, deque] = {}

    def feed(self, data) -> bytes:
        return b"".join(self.feed_parts(data))

    def feed_parts(self, data) -> list:
        """:meth:`feed`'s bytes as parts to hand proton in turn, views of ``data`` where
        they pass whole. A transfer frame (a 256 KiB part of a batch, which spans two
        reads) is passed on as it comes, not held until it is whole: that was a copy of
        every batch sent, and another to join it. ``data`` may be a view of a buffer the
        caller reuses once the parts are handed on: nothing kept here refers to it."""
        buf = self._carry + data if self._carry else data
        self._carry = b""
        pos, end = 0, len(buf)
        view = memoryview(buf)
        out = []
        self.ended = False
        if self._through:  # (never with a carry: a frame is held or passed on, not both)
            pos = min(self._through, end)
            self._through -= pos
            if not self._through:
                self._ended_frame(self._through_size, self._through_continued)
            out.append(view[:pos])
        if not self._header_done:
            if end < 8:
                self._carry = bytes(buf)
                return []
            pos = 8
            self._header_done = self.ended = True
            out.append(view[:pos])
        start = pos  # a run of frames passed whole
        while end - pos >= 8:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 8 or size > self.max_frame:
                # Malformed or over the limit: proton fails the connection with a
                # framing error (holding back the frame would buffer it whole).
                pos, self.ended = end, True
                break
            if end - pos < size:
                # (passed on once its first ten fields are here to be read: else held)
                if self._transfer(buf, pos, size):
                    fields = self._note_transfer(buf, pos, end)
                    if fields is not None:
                        self._through = pos + size - end
                        self._through_size = size
                        self._through_continued = fields[5]
                        pos = end
                break
            if self._transfer(buf, pos, size):  # passed on whole, its fields noted
                self._ended_frame(size, self._whole_transfer(buf, pos, size))
                pos += size
                continue
            keep = self._frame(buf, pos, size)
            if keep is not True:  # dropped (False), or written anew (bytes)
                out.append(view[start:pos])
                if keep:
                    out.append(keep)
                start = pos + size
            self._ended_frame(size, False)
            pos += size
        out.append(view[start:pos])
        if pos < end:
            self._carry = bytes(buf[pos:])
        if self.ended:
            self._deferred = 0  # (handled by the pump this feed brings)
        return [part for part in out if len(part)]

    def _ended_frame(self, size: int, continued: bool) -> None:
        """A frame of ``size`` has been passed on whole: does it need a pump now? Not if it
        is a message's part with more to come, while such parts since the last pump stay
        within ``deferred_bytes`` (a pump comes with the message's last frame)."""
        if continued and self._deferred + size <= self.deferred_bytes:
            self._deferred += size
        else:
            self.ended = True

    def _transfer(self, buf: bytes, pos: int, size: int) -> bool:
        """Is the frame at ``pos``, of which not all has come, a transfer that
        :meth:`_frame` would pass whole, as far as the bytes it reads have come?"""
        doff = buf[pos + 4] * 4
        body = pos + doff
        return (len(buf) >= body + 3 and buf[pos + 5] == 0 and doff >= 8 and size >= doff + 3
                and buf[body] == 0x00 and buf[body + 1] == 0x53 and buf[body + 2] == 0x14
                and bytes(buf[pos + 6:pos + 8]) not in self._ended)

    def _frame(self, buf: bytes, pos: int, size: int) -> bool | bytes:
        doff = buf[pos + 4] * 4
        if buf[pos + 5] != 0 or size < doff + 3 or doff < 8:
            return True
        channel = bytes(buf[pos + 6:pos + 8])
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
        if code == 0x10:          # open
            return _smaller_frames(bytes(buf[pos:pos + size]), doff) or True
        if code == 0x17:          # end (a transfer is read by _whole_transfer)
            self._ended.add(channel)
            for key in [key for key in self._links if key[0] == channel]:
                del self._links[key]
        elif code == 0x12:        # attach
            self._attach(bytes(buf[body:pos + size]), channel)
        elif code == 0x16 and buf[body + 3] in (0xC0, 0xD0):  # detach: the handle may name another link
            try:
                self._links.pop((channel, _number(buf, body + (6 if buf[body + 3] == 0xC0 else 12))), None)
            except Exception:  # noqa: BLE001 - proton reports the bad frame itself
                pass
        return True

    def _whole_transfer(self, buf, pos: int, size: int) -> bool:
        """Keep the message-format of the delivery the whole transfer frame at ``pos``
        begins (if it begins one): is the frame a message's part with more to come?"""
        fields = self._note_transfer(buf, pos, pos + size)
        if fields is None:  # (an encoding read by proton's decoder alone)
            body = pos + buf[pos + 4] * 4
            self._note(_transfer_fields_decoded(bytes(buf[body:pos + size])), bytes(buf[pos + 6:pos + 8]))
            return False
        return fields[5]

    def _note_transfer(self, buf, pos: int, stop: int) -> tuple | None:
        """Keep the message-format of the delivery the transfer frame at ``pos`` begins (if
        it begins one); its :func:`_transfer_fields`, None when its first ten fields are
        not all read from its bytes up to ``stop``."""
        fields = _transfer_fields(buf, pos + buf[pos + 4] * 4, stop)
        if fields is not None:
            self._note(fields, bytes(buf[pos + 6:pos + 8]))
        return fields

    def _note(self, fields: tuple | None, channel: bytes) -> None:
        if fields is None:
            return
        handle, tag, message_format, more, aborted, _ = fields
        link = self._links.get((channel, handle))
        if link is None:  # (not attached: proton refuses the transfer)
            return
        if not link[1]:  # the first transfer of a delivery: a continuation may omit the format
            queue = self._formats.get(link[0])
            if queue is None:
                queue = self._formats[link[0]] = deque()
            queue.append((tag, message_format or 0))
        link[1] = more and not aborted

    def take_format(self, link_name: str, tag: bytes) -> int | None:
        """The message-format of the next delivery proton made on the link (proton makes
        them in the order their transfers came; each is asked for once, when first seen),
        checked by its delivery-tag; None if none was read for it (then a delivery made
        without a transfer read here, or the other way round, is skipped by its tag)."""
        queue = self._formats.get(link_name)
        if not queue:
            return None
        for i, (kept, message_format) in enumerate(queue):
            if kept == tag or (kept is None and not tag):
                for _ in range(i + 1):
                    queue.popleft()
                if not queue:
                    del self._formats[link_name]
                return message_format
        return None

    def forget_link(self, link_name: str) -> None:
        """The link has ended: formats kept for it and never taken (none, as clients
        behave) go."""
        self._formats.pop(link_name, None)

    def _attach(self, performative: bytes, channel: bytes) -> None:
        from proton import Data

        data = Data()
        try:
            data.decode(performative)
            data.rewind()
            data.next()
            fields = data.get_object().value
        except Exception:  # proton will report the bad frame itself
            return
        if not isinstance(fields, list):  # (a described null or number: proton refuses it)
            return
        if len(fields) > 1 and isinstance(fields[0], str) and isinstance(fields[1], int):
            self._links[(channel, int(fields[1]))] = [fields[0], False]
        if len(fields) > 12 and fields[0] is not None and fields[12] is not None:
            wanted = fields[12]
            values = wanted if isinstance(wanted, (list, tuple)) or hasattr(wanted, "elements") else [wanted]
            values = getattr(values, "elements", values)
            self.capabilities[str(fields[0])] = {str(v) for v in values}
