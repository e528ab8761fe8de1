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
import sys
from array import array
from itertools import repeat

from kafka_wire.log_lines import RepeatedWarnings, client_address

__all__ = ["FramePadder", "FIELDS", "dispositions"]

# descriptor code -> fields of the performative (AMQP 1.0 part 2.7)
FIELDS = {0x10: 10, 0x11: 8, 0x12: 14, 0x13: 11, 0x14: 11, 0x15: 6, 0x16: 3, 0x17: 1, 0x18: 1}
_SIZE = struct.Struct(">I")
_repeats = RepeatedWarnings(logging.getLogger(__name__))
_LIST8 = struct.Struct(">BB")
_LIST32 = struct.Struct(">II")
_CHANNEL = struct.Struct(">H")


class FramePadder:
    """Feed proton's output; get it back with short performatives padded.

    It also carries the payloads of the events receivers send (see
    ``consume.ConsumeLink.on_flow``): proton is handed each delivery empty, so it
    keeps the link's and session's state (ids, credit, windows, settlement)
    without copying the event twice, and the event goes into the transfer frame
    here, by the delivery's tag (unique on the connection) in :attr:`payloads`.
    A transfer of one is recorded in :attr:`written` (its owner's last tag written).

    A receiver hands over a flow's events as one run instead (:meth:`add_run`):
    consecutive tag numbers, each tag the number in sixteen hex digits (:func:`run_tag`;
    text, as qpid-proton's Python binding decodes a tag as UTF-8).
    Proton writes the run's transfers one after another, alike but for the
    delivery-id and tag, which go up by one: where its output holds exactly those
    bytes (checked in one compare against the frames made from the first), they
    are written again padded with their events from templates in C loops, not
    read frame by frame.

    A run for a link whose client asked for unsettled transfers (``add_run(...,
    unsettled=True)``) is settled in proton before it is written, so proton forgets
    each delivery once its transfer is out (no per-delivery settlement later, no
    disposition of its own): its transfers go out with settled null (the bytes proton
    writes for an unsettled one, padded), and their delivery ids are kept in
    :attr:`unsettled` until the broker writes their disposition
    (:func:`disposition_frame`)."""

    def __init__(self, peer: str = "?") -> None:
        self.peer = peer  # for the log line of a lost payload
        self._carry = b""
        self._header_done = False
        # tag -> (payload, owner, tag number); a run's first tag number -> the _Run
        self.payloads: dict = {}
        self._runs: list[_Run] = []  # the runs in payloads, oldest first
        self.written: dict = {}  # owner -> the tag number of its last transfer written
        # owner -> [channel, first delivery id, last] of its runs' unsettled transfers written
        # and not yet settled by a disposition, oldest first, consecutive ids in one
        self.unsettled: dict = {}
        self._unsettle = False  # _splice_any's transfer is to be written unsettled
        self.lost = 0  # empty transfers found without their payload (see _lose)
        self.bulk = 0  # transfers of runs written in steps of more than one (see _run_frames)

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
                            elif items_end != pos + size:
                                pass  # another link's transfer (it has a payload)
                            elif len(tag) == 16 and tag[0] == 0x30 and self._runs:
                                # one of a run (add_run): it and the run's transfers after it
                                # that proton wrote next, as expected, in one step
                                took = self._run_frames(buf, view, pos, size, end, q, tag, out)
                                if took:
                                    pos = start = took
                                    continue
                                self._lose(tag)
                            else:
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
                    if self._unsettle:  # (one of an unsettled run: settled written null)
                        self._unsettle = False
                        frame = rewrite_performative(frame, buf[pos + 4] * 4,
                                                     lambda fields: fields[:4] + [None] + fields[5:]) or frame
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

    def add_run(self, owner, first: int, events: list, unsettled: bool = False) -> None:
        """``owner``'s ``events`` go out in the empty transfers of the deliveries tagged
        ``run_tag(first)``, ``run_tag(first + 1)``, ... (proton writes them in that order);
        ``unsettled``: settled in proton, written unsettled (see the class's text)."""
        run = _Run(owner, first, events, unsettled)
        self._runs.append(run)
        self.payloads[first] = run

    def unsettled_count(self, owner) -> int:
        """How many of ``owner``'s deliveries of unsettled runs have no disposition yet:
        those written (:attr:`unsettled`) and those of its runs not yet written. Derived,
        not counted apart: what the padder drops (a detached link's runs) leaves no count
        to drift. Cheap: a few ranges, and the runs proton has not written (a few)."""
        n = 0
        for _, first, last in self.unsettled.get(owner, ()):
            n += last - first + 1
        if self._runs:
            # (proton writes a link's transfers in order: a run is written up to written[owner])
            after = self.written.get(owner, 0) + 1
            for run in self._runs:
                if run.owner is owner and run.unsettled:
                    n += max(0, run.first + len(run.events) - max(after, run.first))  # (0 once passed)
        return n

    def _run_of(self, tag: bytes):
        """(run, index) of the delivery ``tag`` names in a run, or None."""
        try:
            number = int(tag, 16)
        except ValueError:
            return None
        for run in self._runs:
            i = number - run.first
            if 0 <= i < len(run.events):
                return run, i
        return None

    def _unsettled_written(self, owner, channel: int, first_id: int, k: int) -> None:
        """``owner``'s transfers of delivery ids ``first_id`` .. ``+ k - 1`` on ``channel``
        went out unsettled: kept for their disposition."""
        ranges = self.unsettled.get(owner)
        if ranges is None:
            self.unsettled[owner] = [[channel, first_id, first_id + k - 1]]
            return
        last = ranges[-1]
        if last[2] + 1 == first_id and last[0] == channel:
            last[2] += k
        else:
            ranges.append([channel, first_id, first_id + k - 1])

    def _run_written(self, run: _Run, i: int, k: int) -> None:
        """Deliveries ``i`` to ``i + k - 1`` of ``run`` are written (and so all before them)."""
        self.written[run.owner] = run.first + i + k - 1
        if i + k >= len(run.events):
            self._runs.remove(run)
            self.payloads.pop(run.first, None)

    def _run_frames(self, buf: bytes, view, pos: int, size: int, end: int, q: int, tag: bytes,
                    out: list) -> int:
        """The empty transfer at ``pos`` (its delivery-tag's vbin8 at ``q``), of a run's
        delivery, padded with its event into ``out``, and with it every one of the run's
        next transfers that proton wrote right after it as expected; the position after
        the last one handled (0: the tag is in no run)."""
        found = self._run_of(tag)
        if found is None:
            return 0
        run, i = found
        events = run.events
        _, doff, kind, channel, descriptor, lsize, count = _HEAD14.unpack_from(buf, pos)
        pad = 11 - count
        items_end = pos + 13 + lsize
        did = pos + 14 + _UINT_SKIP[buf[pos + 14]]  # after the handle: the delivery-id
        # Settled in proton, sent unsettled: proton's settled true (its last field) written as
        # null, the byte proton's padded transfer of an unsettled delivery holds there
        flip = run.unsettled and buf[items_end - 1] == 0x41
        k = 1
        if buf[did] == 0x70 and q == did + 5:  # a uint (ids from 256 on): one length for all
            first_id = _SIZE.unpack_from(buf, did + 1)[0]
            k = min(len(events) - i, (end - pos) // size, 0x100000000 - first_id)
        if k == 1:
            payload = events[i]
            head = _HEAD14.pack(size + pad + len(payload), doff, kind, channel, descriptor, lsize + pad, 11)
            if flip:
                out += (head, buf[pos + 14:items_end - 1], _NULLS[pad + 1], payload)
                c = buf[did]
                self._unsettled_written(run.owner, channel, 0 if c == 0x43 else buf[did + 1] if c == 0x52
                                        else _SIZE.unpack_from(buf, did + 1)[0], 1)
            else:
                out += (head, buf[pos + 14:items_end], _NULLS[pad], payload)
            self._run_written(run, i, 1)
            return pos + size
        # Each of proton's frames: ``lead`` (its header to the delivery-id's constructor,
        # the same in all) and a ``mid`` (the id, the tag, the fields after it)
        lead = buf[pos:did + 1]
        rest = buf[q + 18:items_end]
        pack = _mid_struct(len(rest)).pack
        number = run.first + i
        if flip:  # the mids made as written (settled null); proton's bytes, the same so, compared
            rest = rest[:-1] + b"\x40"
            got = bytearray(view[pos:pos + k * size])
            at = items_end - 1 - pos  # (in each of the k frames: k bytes from at, size apart)
            settled = got[at::size]
            trues = len(settled) - len(settled.lstrip(b"\x41"))
            if trues < k:  # (not one of the run's frames from there: k cut, the compare cuts more)
                k = trues
                del got[k * size:]
            got[at::size] = b"\x40" * k
        else:
            got = buf[pos:pos + k * size]
        mids = list(map(pack, range(first_id, first_id + k), repeat(_VBIN8_16, k), run_tags(number, k),
                        repeat(rest, k)))
        if got != lead + lead.join(mids):
            # Something else between (a flow, another link's transfer): the run's frames up
            # to it (the first one at least: the template is made from it)
            lo, hi = 1, k - 1
            while lo < hi:
                m = (lo + hi + 1) // 2
                if got[:m * size] == lead + lead.join(mids[:m]):
                    lo = m
                else:
                    hi = m - 1
            k = lo
            del mids[k:]
        self.bulk += k
        payloads = events[i:i + k]
        lengths = list(map(len, payloads))
        after = buf[pos + 14:did + 1]  # the handle and the delivery-id's constructor
        heads = {n: _HEAD14.pack(size + pad + n, doff, kind, channel, descriptor, lsize + pad, 11) + after
                 for n in set(lengths)}
        # Each transfer's four parts (head, mid, nulls, event) put in place by extended slice
        # assignments, C loops (a zip's tuples chained cost a tuple and an iterator each)
        parts = [_NULLS[pad]] * (4 * k)
        parts[0::4] = [heads[lengths[0]]] * k if len(heads) == 1 else list(map(heads.__getitem__, lengths))
        parts[1::4] = mids
        parts[3::4] = payloads
        out += parts
        self._run_written(run, i, k)
        if flip:
            self._unsettled_written(run.owner, channel, first_id, k)
        return pos + k * size

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
        if entry is None and len(tag) == 16 and tag[0] == 0x30 and used == size - buf[pos + 4] * 4:
            found = self._run_of(tag)
            if found is None:
                return None
            run, i = found
            self._run_written(run, i, 1)
            if run.unsettled and len(fields) > 4 and fields[4] is True:
                self._unsettled_written(run.owner, _CHANNEL.unpack_from(buf, pos + 6)[0], int(fields[1]), 1)
                self._unsettle = True
            return run.events[i]
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
        """``owner``'s link has ended: drop the payloads proton did not write (and the ids
        of transfers not settled: a detached link's deliveries are not settled after)."""
        self.written.pop(owner, None)
        self.unsettled.pop(owner, None)
        for run in [run for run in self._runs if run.owner is owner]:
            self._runs.remove(run)
            del self.payloads[run.first]
        for tag in [t for t, entry in self.payloads.items() if type(entry) is tuple and entry[1] is owner]:
            del self.payloads[tag]

    def clear(self) -> None:
        """The connection has closed: let go of every receiver."""
        self.payloads.clear()
        self._runs.clear()
        self.written.clear()
        self.unsettled.clear()


class _Run:
    """A receiver's events for the consecutive tag numbers from ``first`` (add_run)."""
    __slots__ = ("owner", "first", "events", "unsettled")

    def __init__(self, owner, first: int, events: list, unsettled: bool = False) -> None:
        self.owner, self.first, self.events, self.unsettled = owner, first, events, unsettled


def _uint(n: int) -> bytes:
    """``n`` as proton encodes a uint: uint0, smalluint or uint."""
    return b"\x43" if n == 0 else b"\x52" + bytes((n,)) if n < 256 else b"\x70" + _SIZE.pack(n)


def dispositions(ranges: list) -> list:
    """The disposition frames settling ``ranges`` ([channel, first id, last], of one
    receiver or several), ranges of one session's consecutive ids in one frame."""
    if len(ranges) > 1:
        ranges = sorted(ranges)
        merged = [list(ranges[0])]
        for channel, first, last in ranges[1:]:
            top = merged[-1]
            if top[0] == channel and top[2] + 1 == first:
                top[2] = last
            else:
                merged.append([channel, first, last])
        ranges = merged
    return [disposition_frame(channel, first, last) for channel, first, last in ranges]


def disposition_frame(channel: int, first: int, last: int) -> bytes:
    """The sender's disposition settling delivery ids ``first`` .. ``last`` of the session
    on ``channel`` as accepted, byte for byte what :class:`FramePadder` makes of proton's
    (its fields padded to all six, in a list32; last null when it is first)."""
    items = (b"\x42" + _uint(first) + (b"\x40" if last == first else _uint(last))
             + b"\x41\x00\x53\x24\x45\x40")  # role sender, ..., settled, accepted, batchable
    return (_SIZE.pack(20 + len(items)) + b"\x02\x00" + channel.to_bytes(2, "big") + b"\x00\x53\x15\xd0"
            + _LIST32.pack(len(items) + 4, 6) + items)


def run_tag(number: int) -> bytes:
    """A run's delivery tag: the number in sixteen hex digits (under 2**60: "0" first,
    which no "e"-tag has)."""
    return b"%016x" % number


def run_tags(first: int, n: int) -> tuple:
    """``run_tag`` of ``first`` .. ``first + n - 1``, made in C loops: the numbers'
    big-endian bytes in hex, then cut in sixteens by one ``struct`` unpack (slices of
    the text, a slice object and a bytes each, cost ten times more)."""
    cut = _SIXTEENS.get(n)
    if cut is None:
        if len(_SIXTEENS) >= 64:  # (credit windows differ little: a few kept)
            _SIXTEENS.clear()
        cut = _SIXTEENS[n] = struct.Struct("16s" * n)
    return cut.unpack(run_tags_blob(first, n))


_SIXTEENS: dict[int, struct.Struct] = {}  # n -> a Struct cutting n sixteen-byte tags


def run_tags_blob(first: int, n: int) -> bytes:
    """The same tags joined (one buffer for proton's pn_delivery arguments)."""
    numbers = array("Q", range(first, first + n))
    if sys.byteorder == "little":
        numbers.byteswap()
    return numbers.tobytes().hex().encode()


_VBIN8_16 = b"\xa0\x10"  # a run tag's constructor and length (sixteen bytes)
_MIDS: dict[int, struct.Struct] = {}


def _mid_struct(rest: int) -> struct.Struct:
    """A run's transfer from its delivery-id on: the id (a uint's four bytes), the tag's
    vbin8 head, the tag, and ``rest`` bytes of the fields after it."""
    mid = _MIDS.get(rest)
    if mid is None:
        mid = _MIDS[rest] = struct.Struct(f">I2s16s{rest}s")
    return mid


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
