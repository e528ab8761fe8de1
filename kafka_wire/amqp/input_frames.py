"""What a client sends, read frame by frame before proton sees it.

:class:`InputFrames` keeps what proton's Python binding does not expose (an
``attach``'s desired capabilities), drops frames the service ignores (on a
channel the client has ended), sizes proton's frames for the padder
(:mod:`kafka_wire.amqp.frames`), passes transfers on as they come, keeps the
messages sent on a link that asked for them (:class:`Payloads`) out of proton,
and says when what it passed on needs handling (:attr:`InputFrames.ended`).
"""
from __future__ import annotations

import struct
import threading
from collections import deque

from kafka_wire.amqp.frames import PAD_ROOM, rewrite_performative
from kafka_wire.amqp.messages import _skip

__all__ = ["InputFrames", "Payloads", "DEFERRED_BYTES"]

_SIZE = struct.Struct(">I")
_U32 = struct.Struct(">I")
# A message's frames before its last (``more``) are handed to proton without a pump of
# their own, up to this many bytes since the last pump: an SDK's 1 MB batch is four or
# five 256 KiB frames, and each pump (the delivery's event, a flush, a tick) took
# 50-150 us. The bound keeps the connection's checks of arriving messages (their size,
# its budget) at most this far behind the bytes proton holds.
DEFERRED_BYTES = 1 << 20


def _continued(buf: bytes, body: int, stop: int) -> bool:
    """Is the transfer whose performative starts at ``body`` (its bytes up to ``stop``
    at hand) a message's part with ``more`` to come, not ``aborted``, each of its first
    ten fields of the type the specification gives it (as a client writes them)? False
    when in doubt: the frame is then handled at once, as any other."""
    try:
        code = buf[body + 3]
        if code == 0xC0:    # list8: size, count
            count, p = buf[body + 5], body + 6
        elif code == 0xD0:  # list32
            count, p = _U32.unpack_from(buf, body + 8)[0], body + 12
        else:               # list0 (more absent: false), or not a list
            return False
        if count < 6:       # (more absent: false)
            return False
        for field in range(min(count, 10)):
            if p >= stop:
                return False
            value = buf[p]
            allowed = _TRANSFER_FIELDS[field]
            if value not in allowed:
                return False
            if field == 5 and not (value == 0x41 or (value == 0x56 and buf[p + 1] == 1)):
                return False  # more: true
            if field == 9 and (value == 0x41 or (value == 0x56 and buf[p + 1] != 0)):
                return False  # aborted: not true
            p = _skip(buf, p)
        return p <= stop
    except Exception:  # noqa: BLE001 - cut short, or a value _skip cannot size
        return False


# The constructors each of a transfer's first ten fields may have (null allowed but for
# the handle and ``more``): handle, delivery-id, delivery-tag, message-format (uints,
# binary), settled, more (booleans), rcv-settle-mode (ubyte), state (a described
# outcome), resume, aborted (booleans).
_UINT, _BOOLEAN = b"\x43\x52\x70", b"\x41\x42\x56"
_TRANSFER_FIELDS = (_UINT, _UINT + b"\x40", b"\xa0\xb0\x40", _UINT + b"\x40", _BOOLEAN + b"\x40",
                    _BOOLEAN, b"\x50\x40", b"\x00\x40", _BOOLEAN + b"\x40", _BOOLEAN + b"\x40")


_WAIT = object()  # (InputFrames._stripped: not yet known)


def _transfer_head(buf, body: int, stop: int) -> tuple[int, bool, bool, int] | None:
    """(handle, more, aborted, the performative's end) of the transfer whose performative
    starts at ``body`` (its bytes up to ``stop`` at hand); None when it is cut short there,
    or a field read here (handle, more, aborted) is not of the type the specification
    gives it (absent and null fields are false)."""
    try:
        p = body + 3
        code = buf[p]
        if code == 0xC0:    # list8: size, count
            count, q, after = buf[p + 2], p + 3, p + 2 + buf[p + 1]
        elif code == 0xD0:  # list32
            count, q, after = _U32.unpack_from(buf, p + 5)[0], p + 9, p + 5 + _U32.unpack_from(buf, p + 1)[0]
        else:
            return None
        if after > stop or count < 1:
            return None
        handle = _uint(buf, q)
        if handle is None:
            return None
        flags = [False, False]  # more, aborted
        for field in range(min(count, 10)):
            if q >= after:
                return None
            if field == 5 or field == 9:
                value = buf[q]
                if value == 0x41 or (value == 0x56 and buf[q + 1] == 1):
                    flags[field == 9] = True
                elif not (value == 0x42 or value == 0x40 or (value == 0x56 and buf[q + 1] == 0)):
                    return None
            q = _skip(buf, q)
        if q > after:
            return None
        return handle, flags[0], flags[1], after
    except Exception:  # noqa: BLE001 - cut short, or a value _skip cannot size
        return None


def _first_uint(buf, body: int) -> int | None:
    """The first field of the performative at ``body`` when it is a uint (a detach's handle)."""
    try:
        code = buf[body + 3]
        if code == 0xC0 and buf[body + 5]:
            return _uint(buf, body + 6)
        if code == 0xD0 and _U32.unpack_from(buf, body + 8)[0]:
            return _uint(buf, body + 12)
    except (IndexError, struct.error):
        pass
    return None


def _uint(buf, q: int) -> int | None:
    """The uint encoded at ``q`` (uint0, smalluint, uint), else None."""
    code = buf[q]
    if code == 0x43:
        return 0
    if code == 0x52:
        return buf[q + 1]
    if code == 0x70:
        return _U32.unpack_from(buf, q + 1)[0]
    return None


class Payloads:
    """The messages sent on one link, their bytes kept here and not handed to proton.

    Proton copied each message sent three times (into its input, into the delivery,
    and out to us: a third of the send path's copies, 0.2 us of a 1 KiB event's 2 us).
    :class:`InputFrames` hands proton each transfer on the link with only the first
    byte of its payload (without one, proton has no event for a message's part, and the
    connection's checks of arriving messages need them) and puts the payload here, in
    order; proton does all the rest (delivery ids, credit, settlement), and the link's
    handler takes each message here when proton says it is complete (:meth:`take`), in
    the same order, checking that proton holds the bytes it was given of it.

    The bytes are kept in one buffer while the link has messages arriving or not taken,
    from a few the thread keeps for its links in turn (a megabyte allocated per batch is
    faulted in again each time: see nodes.received_view; one kept per link would be a
    megabyte per idle link)."""
    __slots__ = ("buf", "start", "fill", "given", "ends", "skipping", "closed")

    def __init__(self) -> None:
        self.buf: bytearray | None = None  # (None while it holds nothing)
        self.start = 0       # the first byte not taken
        self.fill = 0        # the end of what has arrived
        self.given = 0       # the bytes proton was handed of the arriving message
        # (end, bytes proton was handed) of each message complete and not taken
        self.ends: deque[tuple[int, int]] = deque()
        self.skipping = False  # the arriving message was refused: its bytes are dropped
        self.closed = False

    def add(self, chunk) -> None:
        """More of the arriving message."""
        n = len(chunk)
        if self.skipping or self.closed or not n:
            return
        if self.buf is None:
            self.buf = _pooled()
        fill = self.fill
        if fill + n > len(self.buf):
            live = self.fill - self.start
            grown = bytearray(max(2 * len(self.buf), live + n, 4096))
            grown[:live] = self.buf[self.start:self.fill]
            self.ends = deque((end - self.start, given) for end, given in self.ends)
            self.buf, self.start, self.fill = grown, 0, live
            fill = live
        memoryview(self.buf)[fill:fill + n] = chunk  # (a bytearray's slice copies a view twice)
        self.fill = fill + n

    def end(self, aborted: bool) -> None:
        """The arriving message is complete (or ``aborted``: its bytes are dropped)."""
        if self.skipping or aborted:
            self.skipping = False
            self.fill = self._arriving_from()
            self._release_if_empty()
        elif not self.closed:
            self.ends.append((self.fill, self.given))
        self.given = 0

    def _release_if_empty(self) -> None:
        if self.fill == self.start and not self.ends and self.buf is not None:
            _release(self.buf)
            self.buf, self.start, self.fill = None, 0, 0

    def _arriving_from(self) -> int:
        return self.ends[-1][0] if self.ends else self.start

    def arrived(self, partial: bool) -> int:
        """The bytes of the message proton has as arriving (``partial``), else of the next
        complete one: what proton's delivery.pending said of a message it held whole."""
        if partial:
            return self.fill - self._arriving_from()
        return self.ends[0][0] - self.start if self.ends else 0

    def take(self, pending: int) -> memoryview | None:
        """The next complete message, of which proton holds ``pending`` bytes: a view valid
        until the next :meth:`add`, of which the caller keeps nothing. None when there is
        none, or proton holds other than the bytes it was handed of it (then proton and
        this disagree: a transfer on the link was handed to proton whole)."""
        if not self.ends or self.ends[0][1] != pending:
            return None
        end = self.ends.popleft()[0]
        view = memoryview(self.buf)[self.start:end] if self.buf is not None else memoryview(b"")  # (empty)
        self.start = end
        self._release_if_empty()  # (the view holds it until the caller is done with it)
        return view

    def drop(self, partial: bool) -> None:
        """The message proton has as arriving (``partial``), else the next complete one,
        is refused: its bytes are dropped (the rest of an arriving one as it comes)."""
        if partial:
            self.skipping = True
            self.fill = self._arriving_from()
            self.given = 0
        elif self.ends:
            self.start = self.ends.popleft()[0]
        self._release_if_empty()


# Buffers the links of this thread (one broker loop; tests run several) take in turn:
# a few, none over 4 MiB (a larger message's is its own).
_POOLED, _POOLED_BYTES = 4, 4 << 20
_pool = threading.local()


def _pooled() -> bytearray:
    free = getattr(_pool, "free", None)
    while free:
        buf = free.pop()
        if not _exported(buf):  # (a view of it kept past its use: left to its holder)
            return buf
    return bytearray()


def _release(buf: bytearray) -> None:
    free = getattr(_pool, "free", None)
    if free is None:
        free = _pool.free = []
    if len(free) < _POOLED and len(buf) <= _POOLED_BYTES:
        free.append(buf)


def _exported(buf: bytearray) -> bool:
    """Is a view of ``buf`` still alive? (A bytearray with views cannot change size.)"""
    try:
        buf.append(0)
    except BufferError:
        return True
    buf.pop()
    return False


class PayloadPart:
    """A kept transfer's payload (or part of it) among the parts :meth:`InputFrames.feed_parts`
    returns, with the frame's ``head`` for proton once the frame is whole: :meth:`apply`
    it where it stands, then hand proton its head before proton's events are handled, so
    :class:`Payloads` has the messages proton has, and of the one arriving at least as much."""
    __slots__ = ("payloads", "data", "given", "last", "aborted", "head")

    def __init__(self, payloads: Payloads, data, given: int = 0, last: bool = False,
                 aborted: bool = False, head: bytes = b"") -> None:
        self.payloads, self.data, self.given, self.last, self.aborted = payloads, data, given, last, aborted
        self.head = head

    def apply(self) -> None:
        """(``given``: the bytes of it its head hands proton)"""
        payloads = self.payloads
        payloads.add(self.data)
        if not payloads.skipping:
            payloads.given += self.given
        if self.last:
            payloads.end(self.aborted)


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
        # Payloads kept out of proton (see Payloads): by (channel, handle) as the client
        # numbers them; and the links the client attached as a sender that have sent
        # nothing yet (by name, and the names by (channel, handle)), the ones whose
        # payloads may be kept from their first transfer on.
        self._payloads: dict[tuple[bytes, int], Payloads] = {}
        self._idle_senders: dict[str, tuple[bytes, int] | None] = {}
        self._idle_keys: dict[tuple[bytes, int], str] = {}
        self._through_payloads: Payloads | None = None  # the through frame's, if stripped
        self._through_head = b""
        self._through_aborted = False
        self._through_given = 0

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
            payloads = self._through_payloads
            if payloads is None:
                out.append(view[:pos])
            elif self._through:
                out.append(PayloadPart(payloads, view[:pos]))
            else:  # its payload's end, then its head (proton sees the frame once it is whole)
                out.append(PayloadPart(payloads, view[:pos], self._through_given, not self._through_continued,
                                       self._through_aborted, self._through_head))
                self._through_payloads, self._through_head = None, b""
            if not self._through:
                self._ended_frame(self._through_size, self._through_continued)
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
            whole = end - pos >= size
            if (self._payloads or self._idle_keys) and self._transfer(buf, pos, size):
                head = self._stripped(buf, pos, size, end)
                if head is _WAIT:
                    break  # (carried until its performative is here)
                if head is not None:
                    payloads, more, aborted, after = head
                    out.append(view[start:pos])
                    frame_end = min(pos + size, end)
                    start = frame_end
                    # Its head, with its payload's first byte if it has one (see Payloads)
                    given = 1 if pos + size > after else 0
                    header = _SIZE.pack(after + given - pos) + bytes(buf[pos + 4:after + given])
                    if whole:
                        out.append(PayloadPart(payloads, view[after:frame_end], given, not more or aborted,
                                               aborted, header))
                        self._ended_frame(size, more and not aborted)
                        pos = frame_end
                        continue
                    out.append(PayloadPart(payloads, view[after:frame_end]))
                    self._through_given = given
                    self._through = pos + size - end
                    self._through_size = size
                    self._through_continued = more and not aborted
                    self._through_payloads, self._through_head = payloads, header
                    self._through_aborted = aborted
                    pos = end
                    break
            if not whole:
                if self._transfer(buf, pos, size):
                    self._through = pos + size - end
                    self._through_size = size
                    self._through_continued = _continued(buf, pos + buf[pos + 4] * 4, end)
                    pos = end
                break
            keep = self._frame(buf, pos, size)
            if keep is not True:  # dropped (False), or written anew (bytes)
                out.append(view[start:pos])
                if keep:
                    out.append(keep)
                start = pos + size
            self._ended_frame(size, keep is True and self._transfer(buf, pos, size)
                              and _continued(buf, pos + buf[pos + 4] * 4, pos + size))
            pos += size
        out.append(view[start:pos])
        if pos < end:
            self._carry = bytes(buf[pos:])
        if self.ended:
            self._deferred = 0  # (handled by the pump this feed brings)
        return [part for part in out if part.__class__ is PayloadPart or len(part)]

    def _stripped(self, buf, pos: int, size: int, end: int):
        """For the transfer at ``pos``: (its link's Payloads, more, aborted, its
        performative's end) when its payload is to be kept out of proton; None when not;
        _WAIT when that cannot be told until more of it has come."""
        body = pos + buf[pos + 4] * 4
        head = _transfer_head(buf, body, min(pos + size, end))
        if head is None:
            if end - pos < size:
                return _WAIT  # (cut short, or not as specified: decided once it is whole)
            # Not as the specification types it: handed to proton as it is (which refuses it).
            # Whichever link it is on, proton now holds a payload: the link's handler sees
            # a payload in proton, not here, and detaches it (publish.PublishLink).
            return None
        handle, more, aborted, after = head
        if after == end < pos + size:
            return _WAIT  # (its payload's first byte, for its head, has not come)
        key = (bytes(buf[pos + 6:pos + 8]), handle)
        name = self._idle_keys.pop(key, None)
        if name is not None:  # its first transfer: its payloads are proton's from now on
            self._idle_senders.pop(name, None)
            return None
        payloads = self._payloads.get(key)
        if payloads is None:
            return None
        return payloads, more, aborted, after

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
        if code == 0x17:          # end
            self._ended.add(channel)
            if self._payloads or self._idle_keys:
                for key in [k for k in (*self._payloads, *self._idle_keys) if k[0] == channel]:
                    self._forget(key)
        elif code == 0x12:        # attach
            self._attach(channel, bytes(buf[body:pos + size]))
        elif code == 0x16 and (self._payloads or self._idle_keys):  # detach: its handle may be used again
            handle = _first_uint(buf, body)
            if handle is not None:
                self._forget((channel, handle))
        return True

    def keep_payloads(self, name: str) -> Payloads | None:
        """Keep the payloads of the messages the client sends on link ``name`` out of
        proton, from its first transfer on: where they will be, or None when they cannot
        be (the link has sent already, or the name is not one link's: then proton has them)."""
        key = self._idle_senders.pop(name, None)
        if key is None:
            return None
        self._idle_keys.pop(key, None)
        payloads = self._payloads[key] = Payloads()
        return payloads

    def drop_payloads(self, payloads: Payloads) -> None:
        """The link ``payloads`` serves has ended: its transfers go to proton again."""
        payloads.closed = True
        for key, held in list(self._payloads.items()):
            if held is payloads:
                del self._payloads[key]

    def _forget(self, key: tuple[bytes, int]) -> None:
        payloads = self._payloads.pop(key, None)
        if payloads is not None:
            payloads.closed = True
        name = self._idle_keys.pop(key, None)
        if name is not None:
            self._idle_senders.pop(name, None)

    def _attach(self, channel: bytes, performative: bytes) -> None:
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
        if len(fields) > 2 and fields[2] is False and isinstance(fields[0], str) and isinstance(fields[1], int):
            # The client's sender: its payloads may be kept out of proton (keep_payloads).
            # A name attached twice is no one link's.
            key = (channel, int(fields[1]))
            self._forget(key)
            name = fields[0]
            if name in self._idle_senders:
                old = self._idle_senders[name]
                if old is not None:
                    self._idle_keys.pop(old, None)
                self._idle_senders[name] = None
            else:
                self._idle_senders[name] = key
                self._idle_keys[key] = name
        if len(fields) > 12 and fields[0] is not None and fields[12] is not None:
            wanted = fields[12]
            values = wanted if isinstance(wanted, (list, tuple)) or hasattr(wanted, "elements") else [wanted]
            values = getattr(values, "elements", values)
            self.capabilities[str(fields[0])] = {str(v) for v in values}
