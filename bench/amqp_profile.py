"""Where the broker's time goes on AMQP receive, and the receive path's encoder alone:
the ``--profile`` and ``--in-process`` modes of ``python -m bench.amqp`` (see its text).

``--profile`` samples the broker with py-spy (``record --native --rate 500 --format raw``,
collapsed stacks) during each timed read only and sorts the samples into slices of the
receive path. A sample goes to the slice of its innermost frame that names one (a
``free`` inside ``pn_delivery_settle`` is freeing; ``memcpy`` inside ``pn_transport_peek``
is proton writing frames), so each sample counts once. py-spy ``--native`` keeps the samples
of threads that wait (the event loop in epoll, the thread pool's idle workers): those are
counted apart and left out of the shares. libc's functions without symbols (memcpy, memmove)
count to the slice of their caller.

``--in-process`` times ``kafka_wire.amqp.outgoing.batch_events`` (a stored batch to the
AMQP messages a receiver sends) per event, without a broker or a client: the figure the
receive path's encoding work is judged by, free of the SDK's and the socket's noise.
"""
from __future__ import annotations

import gc
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

PY_SPY_RATE = 500  # samples a second

# -- the slices -------------------------------------------------------------------------------
READING = "reading and encoding events"
PADDER = "the padder (FramePadder)"
DELIVERIES = "proton making/advancing/settling deliveries"
PROTON_OUTPUT = "proton writing frames"
WRITE = "join and socket write"
REST = "flush and the rest of the connection"
FREEING = "freeing (dealloc / free)"
ON_FLOW = "on_flow's Python (consume.py)"
OTHER = "other"
IDLE = "idle (waiting)"  # not in the shares: py-spy --native keeps waiting threads' samples
SLICES = [READING, PADDER, DELIVERIES, PROTON_OUTPUT, WRITE, REST, FREEING, ON_FLOW, OTHER]

_FREEING = {"free", "__libc_free", "cfree", "_int_free", "_int_free_merge_chunk", "PyObject_Free",
            "_PyObject_Free", "PyMem_Free", "PyMem_RawFree", "_PyMem_RawFree", "munmap", "__munmap",
            "_Py_Dealloc", "pn_free", "pn_decref", "pn_class_decref", "pn_class_free",
            "pn_delivery_finalize", "pni_free_tpwork", "pn_clear_tpwork"}
_DELIVERIES = {"pn_delivery", "pn_link_advance", "pn_delivery_settle", "pn_delivery_update", "pn_link_send",
               "pn_link_credit"}
_PROTON_OUTPUT = {"pn_transport_pending", "pn_transport_peek", "pn_transport_pop", "pn_transport_output",
                  "pn_output", "pn_output_write_amqp", "pni_process", "pn_post_frame", "pn_write_frame"}
# the socket's calls, as the C library and CPython's socket module name them
_SOCKET = {"write", "__write", "__libc_write", "send", "__send", "__libc_send", "sendmsg", "__sendmsg",
           "__libc_sendmsg", "sock_send", "sock_send_impl", "sock_sendmsg", "sock_sendmsg_impl", "writev",
           "__writev"}
# a thread waiting: the event loop's poll, the thread pool's idle workers, a lock or the GIL
_WAITS = {"epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6",
          "PyThread_acquire_lock_timed", "pthread_cond_wait", "pthread_cond_timedwait", "sem_wait",
          "sem_timedwait", "sem_clockwait", "do_futex_wait", "__futex_abstimed_wait_common",
          "nanosleep", "clock_nanosleep", "take_gil"}
_ON_FLOW = {"on_flow", "tags", "_tag_structs"}  # (RunTagSlots.tags: the run's tags, per flow)
_NOT_PADDER = {"run_tags_blob", "dispositions", "disposition_frame"}  # frames.py, called from elsewhere


def slice_of(frame: str) -> str | None:
    """The slice one frame of a collapsed stack names, or None (look further out). Python
    frames read ``name (path:line)``, native ones ``name (library)``; cffi's wrappers of
    proton's calls are ``_cffi_f_NAME``."""
    name, _, where = frame.partition(" (")
    name = name.strip()
    if name.startswith("_cffi_f_"):
        name = name[8:]
    if ".py:" in where:
        path = where.replace("\\", "/")
        if "kafka_wire/amqp/outgoing.py" in path or "kafka_wire/log/" in path:
            return READING
        if "kafka_wire/amqp/consume.py" in path:
            return READING if name == "_read" else ON_FLOW if name in _ON_FLOW else None
        if "kafka_wire/amqp/frames.py" in path:
            return None if name in _NOT_PADDER else PADDER
        if "kafka_wire/amqp/connection.py" in path and name == "_write_parts":
            return WRITE
        if "asyncio/selector_events.py" in path and name in ("write", "writelines", "_write_ready",
                                                                 "_write_sendmsg", "_write_send"):
            return WRITE
        if "proton/_transport.py" in path and name in ("pending", "peek", "pop"):
            return PROTON_OUTPUT
        if "kafka_wire/amqp/" in path:
            return REST
        return None
    if name in _WAITS:
        return IDLE
    if name in _FREEING or name.endswith("_dealloc"):
        return FREEING
    if name in _DELIVERIES:
        return DELIVERIES
    if name in _PROTON_OUTPUT:
        return PROTON_OUTPUT
    if name in _SOCKET:
        return WRITE
    return None


def classify(lines) -> Counter:
    """Samples per slice of py-spy's raw output (``frame;frame;... count``, outermost first)."""
    shares: Counter = Counter()
    for line in lines:
        stack, _, n = line.rstrip("\n").rpartition(" ")
        if not stack or not n.isdigit():
            continue
        hit = OTHER
        for frame in reversed(stack.split(";")):
            found = slice_of(frame)
            if found is not None:
                hit = found
                break
        shares[hit] += int(n)
    return shares


def print_shares(shares: Counter, reads: int) -> None:
    total = sum(n for name, n in shares.items() if name != IDLE)
    print(f"\nWhere the broker's busy samples went during the {reads} timed read(s) (py-spy --native, "
          f"{PY_SPY_RATE} Hz): {total:,} samples ({shares.get(IDLE, 0):,} more of threads waiting left out)")
    for name in SLICES:
        n = shares.get(name, 0)
        print(f"  {name:48}{n:>8,}{n / total if total else 0:>8.1%}")


class ProfileError(RuntimeError):
    """py-spy is missing or could not sample the broker; the text says why."""


def find_py_spy() -> str:
    """py-spy beside this Python (a venv's bin) or on PATH; else :class:`ProfileError`."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise ProfileError("py-spy is not installed (pip install -e '.[bench]', or pip install py-spy)")
    return found


class Sampler:
    """py-spy recording process ``pid`` while the ``with`` block runs (started and attached
    before it, stopped with SIGINT after it); the raw stacks in :attr:`path`."""

    def __init__(self, py_spy: str, pid: int, path: Path, attach_s: float = 30.0) -> None:
        self.py_spy, self.pid, self.path, self.attach_s = py_spy, pid, path, attach_s

    def __enter__(self) -> "Sampler":
        self.proc = subprocess.Popen(
            [self.py_spy, "record", "--pid", str(self.pid), "--native", "--rate", str(PY_SPY_RATE),
             "--format", "raw", "--output", str(self.path)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.said: list[str] = []
        attached = threading.Event()

        def read() -> None:
            for line in self.proc.stdout:
                self.said.append(line.rstrip())
                if "Sampling process" in line:
                    attached.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        deadline = time.monotonic() + self.attach_s
        while not attached.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._end()
                why = [line for line in self.said if line.startswith("Error")] or self.said[-3:]
                raise ProfileError(f"py-spy could not sample the broker (PID {self.pid}): {' | '.join(why)} "
                                   f"(it needs ptrace rights: root, or CAP_SYS_PTRACE)")
        return self

    def _end(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # (py-spy writes its file on SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(10)
        return self.proc.returncode

    def __exit__(self, *exc) -> None:
        rc = self._end()
        if exc[0] is None and (rc not in (0, -signal.SIGINT) or not self.path.exists()):
            raise ProfileError(f"py-spy ended with {rc} and wrote no stacks: " + " | ".join(self.said[-5:]))


# -- in process -------------------------------------------------------------------------------
IN_PROCESS_BATCHES = 40  # distinct stored batches, read in turn (not one batch kept warm in cache)
BATCH_BYTES = 1 << 20    # a batch's records: about what one full SDK batch of them holds, at most 950
NOW_MS = 1_700_000_000_000


def stored_batches(bodies: list[bytes], per_batch: int, one_length: bool) -> list[tuple]:
    """``IN_PROCESS_BATCHES`` batches of ``per_batch`` events each, cycling through
    ``bodies``, as the send path stores them (records_batch of PlainEvents), laid out
    one after another as in a log: (view, header, byte position, append ms) each."""
    from kafka_wire.eventhubs.events import PlainEvents, records_batch
    from kafka_wire.log import batch as rb

    log = bytearray()
    spans = []
    base = 0
    k = 0
    for _ in range(IN_PROCESS_BATCHES):
        chosen = [bodies[(k + i) % len(bodies)] for i in range(per_batch)]
        k += per_batch
        data = records_batch(PlainEvents(None, chosen, len(chosen[0]) if one_length else None), NOW_MS)
        rb.patch_base_offset(data, 0, base)
        spans.append((len(log), len(data)))
        log += data
        base += per_batch
    view = memoryview(bytes(log))
    return [(view[pos:pos + size], rb.parse_header(view, pos), pos, NOW_MS) for pos, size in spans]


def time_batch_events(batches: list[tuple], count: int) -> float:
    """ns per event of ``batch_events`` over ``batches`` in turn until ``count`` events."""
    from kafka_wire.amqp.outgoing import batch_events

    calls, events = 0, 0
    per = [h.records_count for _, h, _, _ in batches]
    while events < count:
        events += per[calls % len(batches)]
        calls += 1
    gc.collect()
    t0 = time.perf_counter_ns()
    for i in range(calls):
        data, header, position, append_ms = batches[i % len(batches)]
        batch_events(data, header, 0, position, append_ms, True, b"", None)
    return (time.perf_counter_ns() - t0) / events


def in_process(size: int, spread: float, count: int, repeat: int, event_bodies) -> int:
    """``--in-process``: batch_events per event, one-length then mixed-length batches."""
    import kafka_wire

    per_batch = max(1, min(950, BATCH_BYTES // max(size, 1)))
    mixed_spread = spread or 0.5
    cases = [("one length", event_bodies(size, 0.0) * per_batch, True),
             (f"mixed lengths (±{mixed_spread:.0%})", event_bodies(size, mixed_spread), False)]
    print(f"batch_events in process ({kafka_wire.__file__}): {IN_PROCESS_BATCHES} stored batches of "
          f"{per_batch} x {size} B events read in turn, {count:,} events a timing, {repeat} timings; "
          f"load average {os.getloadavg()[0]:.2f}")
    for label, bodies, one_length in cases:
        batches = stored_batches(bodies, per_batch, one_length)
        time_batch_events(batches, min(count, 10 * per_batch))  # warm-up (caches, first-use costs)
        runs = [time_batch_events(batches, count) for _ in range(repeat)]
        print(f"  {label:28}{statistics.median(runs):>8.0f} ns an event ({min(runs):.0f}-{max(runs):.0f})")
    return 0
