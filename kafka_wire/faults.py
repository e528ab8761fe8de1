"""Make the broker misbehave on purpose, the ways a real cluster does.

Each fault is something a real Kafka cluster produces and clients are built
to survive: a retriable error code, a slow response, a dropped connection, a
leader that moves (NOT_LEADER_OR_FOLLOWER, then a bumped leader epoch), a
rebalance, fetches that stall. Tests reach it as ``broker.faults``::

    broker.faults.fail("Produce", error="NOT_LEADER_OR_FOLLOWER", count=3, topic="orders")
    broker.faults.delay("Fetch", ms=500, count=2)
    broker.faults.drop_connections()
    broker.faults.partition_unavailable("orders", 0, ms=2000)
    broker.faults.force_rebalance("my-group")
    with broker.faults.paused_fetches():
        ...

Faults of every front end (AMQP, HTTP, and these Kafka ones again) go through
one protocol-neutral plan, :mod:`kafka_wire.fault_plan`, also reachable from
outside the test (``/$faults``, ``kafka-wire fault``)::

    broker.faults.add("server-busy", scope={"hub": "orders"}, count=2)
    broker.faults.fired   # what fired: time, fault, target, client

Every method is safe to call from the test's thread: state changes are
handed to the broker's event loop.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.fault_plan import Fault, FaultError, FaultPlan
from kafka_wire.whole_numbers import whole_number

log = logging.getLogger(__name__)


def api_key_of(api: int | str) -> int:
    """'Produce', 'produce', ApiKey.Produce or 0 → 0."""
    if isinstance(api, int):
        return int(api)
    for key in codec.ApiKey:
        if key.name.lower() == api.replace("_", "").lower():
            return int(key)
    raise ValueError(f"unknown Kafka API {api!r}: use a name such as 'Produce' or 'JoinGroup'")


def error_code_of(error: int | str | type) -> int:
    """'NOT_LEADER_OR_FOLLOWER', NotLeaderForPartitionError or 6 → 6."""
    if isinstance(error, int):
        return error
    if isinstance(error, type):
        return error.errno
    wanted = error.replace("_", "").lower()
    aliases = {"notleaderorfollower": "notleaderforpartition", "requesttimedout": "requesttimedout"}
    wanted = aliases.get(wanted, wanted)
    for name in dir(Errors):
        cls = getattr(Errors, name)
        if isinstance(cls, type) and getattr(cls, "errno", None) is not None:
            bare = name.lower().removesuffix("error").removesuffix("exception")
            if bare == wanted:
                return cls.errno
    raise ValueError(f"unknown Kafka error {error!r}: use a name such as 'NOT_LEADER_OR_FOLLOWER'")


@dataclass
class _Failure:
    api_key: int
    errno: int
    remaining: int
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    fault: Fault | None = None  # set through the fault plan: its firings are recorded there
    until_ms: int | None = None  # the plan fault's window ends then (for_ms): removed after

    def matches(self, api_key: int, target: dict) -> bool:
        if self.remaining <= 0 or api_key != self.api_key:
            return False
        if self.fault is not None:  # the plan's rule: every scope field, without case
            return self.fault.matches(target)
        if self.client_id is not None and target.get("client") != self.client_id:
            return False
        topic, partition = target.get("hub"), target.get("partition")
        if self.topic is not None and topic is not None and topic != self.topic:
            return False
        if self.partition is not None and partition is not None and partition != self.partition:
            return False
        return True


@dataclass
class _Delay:
    api_key: int
    seconds: float
    remaining: int
    client_id: str | None = None
    fault: Fault | None = None
    until_ms: int | None = None


class Faults:
    """Fault hooks of one running broker (see the module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, services,
                 servers: Callable[[], list] = list) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # built on the broker's loop thread
        self._services = services
        self._servers = servers  # the Kafka listeners whose connections drop_connections closes
        self._failures: list[_Failure] = []
        self._delays: list[_Delay] = []
        self._unavailable: dict[tuple[str, str, int], float] = {}  # (ns, topic, p) -> until (loop time)
        self._fetch_gate: asyncio.Event | None = None
        self.injected = 0  # how many faults fired, for test assertions
        clock = getattr(services, "clock", None)
        self.plan = FaultPlan(clock.now_ms if clock is not None else lambda: int(loop.time() * 1000))
        self.plan.kafka = self._install

    # -- configuring (any thread) -------------------------------------------------
    def _on_loop(self, fn: Callable[[], Any]) -> Any:
        if threading.get_ident() == self._loop_thread:
            return fn()
        return asyncio.run_coroutine_threadsafe(_call(fn), self._loop).result(30)

    def fail(self, api: int | str, error: int | str | type = "NOT_LEADER_OR_FOLLOWER", *,
             count: int = 1, topic: str | None = None, partition: int | None = None,
             client_id: str | None = None) -> None:
        """Answer the next ``count`` requests of ``api`` (or partitions of them,
        for Produce and Fetch) with ``error`` instead of serving them."""
        failure = _Failure(api_key_of(api), error_code_of(error), count, topic, partition, client_id)
        self._on_loop(lambda: self._failures.append(failure))

    def add(self, kind: str, *, scope: dict | None = None, params: dict | None = None,
            count: int = 1, probability: float = 1.0, seed: int = 0, after_ms: int = 0,
            for_ms: int | None = None) -> dict:
        """Set a fault of any front end (see :mod:`kafka_wire.fault_plan` for the kinds);
        its JSON description (with its ``id``). ValueError if it cannot be set."""
        spec = {"kind": kind, "scope": scope or {}, "params": params or {}, "count": count,
                "probability": probability, "seed": seed, "after_ms": after_ms, "for_ms": for_ms}
        return self._on_loop(lambda: self.plan.add(spec).to_json())

    @property
    def fired(self) -> list[dict]:
        """Every fault that fired (oldest first; the last 1,000)."""
        return self._on_loop(lambda: list(self.plan.fired))

    def remove(self, fault_id: int) -> bool:
        """Clear one fault set through the plan (``add`` or ``/$faults``); False if none."""
        def remove() -> bool:
            self._failures = [f for f in self._failures if f.fault is None or f.fault.id != fault_id]
            self._delays = [d for d in self._delays if d.fault is None or d.fault.id != fault_id]
            return self.plan.remove(fault_id)
        return self._on_loop(remove)

    def _install(self, fault: Fault) -> None:
        """The plan's Kafka kinds, served by the hooks below (on the loop thread). The
        hooks match with the fault's own scope (every field, without case); one they do
        not know (a hub, for an API answered as a whole) is refused here, as it would
        never fire."""
        scope, params = fault.scope, fault.params
        if fault.kind == "kafka-drop-connections":
            victims = [c for server in self._servers() for c in list(server.connections)
                       if fault.matches(_connection_target(c, self._services))]
            for conn in victims:
                conn.close()
                self.plan.record(fault, _connection_target(conn, self._services))
            self.injected += len(victims)
            return
        try:
            api = api_key_of(params["api"])
            errno = error_code_of(params["error"]) if fault.kind == "kafka-error" else 0
        except (ValueError, TypeError) as exc:
            raise FaultError(str(exc)) from None
        if "partition" in scope and whole_number(scope["partition"]) is None:
            raise FaultError(f"scope.partition of {fault.kind} must be a partition number, not "
                             f"{scope['partition'][:40]!r}")
        if api not in _PARTITION_APIS and ("hub" in scope or "partition" in scope):
            raise FaultError(f"{fault.kind} on {codec.ApiKey(api).name} cannot be scoped by hub or "
                             f"partition: that request is answered as a whole; scope it by "
                             f"namespace, consumer_group or client, or pick Produce, Fetch or "
                             f"ListOffsets")
        until = (fault.added_ms + fault.after_ms + fault.for_ms) if fault.for_ms is not None else None
        if fault.kind == "kafka-error":
            self._failures.append(_Failure(api, errno, fault.count, fault=fault, until_ms=until))
        else:
            self._delays.append(_Delay(api, params["ms"] / 1000.0, fault.count, fault=fault,
                                       until_ms=until))

    def _fired(self, item, target: dict) -> None:
        if item.fault is not None:
            self.plan.record(item.fault, {**target, "protocol": "kafka"})
            if item.remaining <= 0:
                self.plan.remove(item.fault.id)

    def delay(self, api: int | str, ms: int, *, count: int = 1, client_id: str | None = None) -> None:
        """Hold the next ``count`` responses of ``api`` for ``ms`` milliseconds."""
        item = _Delay(api_key_of(api), ms / 1000.0, count, client_id)
        self._on_loop(lambda: self._delays.append(item))

    def drop_connections(self, client_id: str | None = None) -> int:
        """Close every client connection (or those of one client id) at once."""
        def drop() -> int:
            victims = [c for server in self._servers() for c in list(server.connections)
                       if client_id is None or c.last_client_id == client_id]
            for conn in victims:
                conn.close()
            self.injected += len(victims)
            return len(victims)
        return self._on_loop(drop)

    def partition_unavailable(self, topic: str, partition: int, ms: int, *,
                              namespace: str | None = None) -> None:
        """The partition has no leader for ``ms``: Produce/Fetch/ListOffsets get
        NOT_LEADER_OR_FOLLOWER, Metadata LEADER_NOT_AVAILABLE; then it comes
        back with its leader epoch bumped, as after a leader election."""
        ns = namespace or self._services.default_namespace

        def mark() -> None:
            self._unavailable[(ns, topic, partition)] = self._loop.time() + ms / 1000.0
            topics = self._services.namespaces[ns].topics
            self._loop.call_later(ms / 1000.0, topics.bump_leader_epoch, topic, partition)
        self._on_loop(mark)

    def force_rebalance(self, group_id: str, *, namespace: str | None = None) -> bool:
        """Start a rebalance of ``group_id`` now, as a new member joining would."""
        ns = namespace or self._services.default_namespace
        return self._on_loop(lambda: self._services.namespaces[ns].groups.force_rebalance(group_id))

    def pause_fetches(self) -> None:
        """Fetch requests wait (up to their max_wait) until resume_fetches()."""
        def pause() -> None:
            if self._fetch_gate is None:
                self._fetch_gate = asyncio.Event()
        self._on_loop(pause)

    def resume_fetches(self) -> None:
        def resume() -> None:
            gate, self._fetch_gate = self._fetch_gate, None
            if gate is not None:
                gate.set()
        self._on_loop(resume)

    @contextlib.contextmanager
    def paused_fetches(self):
        self.pause_fetches()
        try:
            yield
        finally:
            self.resume_fetches()

    def clear(self) -> None:
        """Forget every pending fault, of every front end (unavailable partitions come back)."""
        def clear() -> None:
            self.plan.clear()
            self._failures.clear()
            self._delays.clear()
            self._unavailable.clear()
        self._on_loop(clear)
        self.resume_fetches()

    # -- hooks the broker calls (event loop thread) ---------------------------------
    @property
    def fetch_gate(self):
        """While fetches are paused: the coroutine Fetch awaits first; else None."""
        return self._gate if self._fetch_gate is not None else None

    async def _gate(self, ctx, request) -> bool:
        """Hold a fetch while paused; True if still paused when max_wait ran out."""
        gate = self._fetch_gate
        if gate is None:
            return False
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(gate.wait(), max(request.max_wait_ms, 0) / 1000.0)
        return not gate.is_set()

    def request_faults(self, ctx, request) -> tuple[int | None, float]:
        """For a request about to be handled (while ``active``): the error code to answer
        it with as a whole (None: none; Produce, Fetch and ListOffsets get theirs per
        partition, from partition_error), and how long to hold its answer (seconds)."""
        api_key = ctx.header.api_key
        group = getattr(request, "group_id", None)
        target = {"namespace": ctx.namespace.name, "client": ctx.client_id,
                  "consumer_group": group if isinstance(group, str) else None}
        stamp = None
        if self._failures and api_key not in _PARTITION_APIS:
            stamp = self.request_error(api_key, target)
        delay = self.response_delay(api_key, target, ctx, request) if self._delays else 0.0
        return stamp, delay

    def request_error(self, api_key: int, target: dict) -> int | None:
        """An error for a whole request (APIs other than Produce, Fetch and ListOffsets);
        ``target``: namespace, client and consumer group (None where the request has none)."""
        self._expire()
        for f in self._failures:
            if f.topic is None and f.partition is None and f.matches(api_key, target) \
                    and self._due(f):
                f.remaining -= 1
                self.injected += 1
                self._fired(f, target)
                self._prune()
                return f.errno
        return None

    def partition_error(self, ctx, api_key: int, topic: str, partition: int) -> int | None:
        """An error for one partition of a Produce, Fetch or ListOffsets request."""
        ns = ctx.namespace.name
        until = self._unavailable.get((ns, topic, partition))
        if until is not None:
            if self._loop.time() < until:
                self.injected += 1
                return Errors.NotLeaderForPartitionError.errno
            del self._unavailable[(ns, topic, partition)]
        plan = self.plan
        if plan.active and plan.fire(("partition-unavailable",), {
                "namespace": ns, "hub": topic, "partition": partition, "client": ctx.client_id,
                "protocol": "kafka"}) is not None:  # the plan's kind: no leader while it fires
            self.injected += 1
            return Errors.NotLeaderForPartitionError.errno
        if not self._failures:
            return None
        self._expire()
        target = {"namespace": ns, "hub": topic, "partition": partition, "client": ctx.client_id}
        for f in self._failures:
            if f.matches(api_key, target) and self._due(f):
                f.remaining -= 1
                self.injected += 1
                self._fired(f, target)
                self._prune()
                return f.errno
        return None

    def leader_unavailable(self, ctx, topic: str, partition: int) -> bool:
        until = self._unavailable.get((ctx.namespace.name, topic, partition))
        return until is not None and self._loop.time() < until

    def response_delay(self, api_key: int, target: dict, ctx=None, request=None) -> float:
        """Seconds to hold the answer to a request of ``api_key`` from ``target``
        (namespace, client, consumer group). A fault scoped by hub or partition holds a
        Produce, Fetch or ListOffsets that names a partition it matches."""
        self._expire()
        for d in self._delays:
            if d.remaining <= 0 or d.api_key != api_key:
                continue
            fault = d.fault
            if fault is None:
                if d.client_id is not None and d.client_id != target.get("client"):
                    continue
                hit = target
            elif "hub" in fault.scope or "partition" in fault.scope:
                hit = next((t for t in _partition_targets(target, ctx, request) if fault.matches(t)),
                           None)
                if hit is None:
                    continue
            elif fault.matches(target):
                hit = target
            else:
                continue
            if self._due(d):
                d.remaining -= 1
                self.injected += 1
                self._fired(d, hit)
                self._delays = [x for x in self._delays if x.remaining > 0]
                return d.seconds
        return 0.0

    def _expire(self) -> None:
        """Take out the plan's Kafka faults whose window (for_ms) has ended: they
        cannot fire again, and while any is kept every request pays the hooks."""
        if not any(x.until_ms is not None for x in self._failures) and \
                not any(x.until_ms is not None for x in self._delays):
            return
        now = self.plan.now_ms()
        for items in (self._failures, self._delays):
            for x in items:
                if x.until_ms is not None and now >= x.until_ms and x.remaining > 0:
                    x.remaining = 0
                    self.plan.remove(x.fault.id)
        self._failures = [f for f in self._failures if f.remaining > 0]
        self._delays = [d for d in self._delays if d.remaining > 0]

    def _due(self, item) -> bool:
        """A fault set through the plan fires only inside its window, with its seeded
        probability (chaos mode's low rates); one set by fail()/delay() always."""
        return item.fault is None or self.plan.due(item.fault)

    def _prune(self) -> None:
        self._failures = [f for f in self._failures if f.remaining > 0]

    @property
    def active(self) -> bool:
        return bool(self._failures or self._delays or self._unavailable)

    def partition_hook(self) -> "Faults | None":
        """Self while any fault could answer for a partition, else None: what a
        Produce, Fetch or ListOffsets request reads once, so that with nothing set
        its partitions pay one None check each."""
        return self if (self._failures or self._unavailable or self.plan.active) else None


async def _call(fn):
    return fn()


_PARTITION_APIS = (codec.ApiKey.Produce, codec.ApiKey.Fetch, codec.ApiKey.ListOffsets)


def _connection_target(conn, services) -> dict:
    """What a Kafka connection is, for a kafka-drop-connections scope."""
    ns = conn.state.namespace if conn.state is not None else None
    return {"namespace": ns.name if ns is not None else services.default_namespace,
            "client": conn.last_client_id, "protocol": "kafka"}


def _partition_targets(target: dict, ctx, request):
    """``target`` with each (hub, partition) a Produce, Fetch or ListOffsets request
    names; nothing for other requests (they know no hub)."""
    if ctx is None or request is None:
        return
    api_key = ctx.header.api_key
    if api_key == codec.ApiKey.Produce:
        for t in request.topic_data:
            name = t.name or ctx.topics.name_for_id(t.topic_id)
            for p in t.partition_data:
                yield {**target, "hub": name, "partition": p.index}
    elif api_key == codec.ApiKey.Fetch:
        for t in request.topics:
            name = t.topic if ctx.version < 13 else ctx.topics.name_for_id(t.topic_id)
            for p in t.partitions:
                yield {**target, "hub": name, "partition": p.partition}
    elif api_key == codec.ApiKey.ListOffsets:
        for t in request.topics:
            for p in t.partitions:
                yield {**target, "hub": t.name, "partition": p.partition_index}


# A response's list of results whose name differs from the request's list of entities
# (Kafka's AbstractRequest.getErrorResponse pairs them by hand, per API).
_ENTITIES = {"responses": ("topics", "topic_names", "resources"),
             "results": ("topics", "resources", "groups_names", "creations", "partitions"),
             "transaction_states": ("transactional_ids",),
             "groups": ("group_ids",),
             "filter_results": ("filters",),
             "partitions": ("partition_indexes",),
             "coordinators": ("coordinator_keys",),
             "results_by_topic_v3_and_below": ("v3_and_below_topics",),
             "results_by_partition": ("partitions",)}


def error_response(api_key: int, version: int, request: Any, errno: int):
    """The answer to ``request`` when it fails as a whole with ``errno``, built without
    serving it, as Kafka's AbstractRequest.getErrorResponse: the top-level error code
    where the API has one at this version; else each entity the request names (topic,
    partition, group, resource, ...) answered with ``errno``."""
    cls = codec.response_class(api_key)
    field = cls.fields.get("error_code")
    if field is not None and field.for_version_q(version):
        return cls(version=version, error_code=errno)
    return cls(version=version, **_echo(cls.fields, request, version, errno))


def _echo(fields: dict, request: Any, version: int, errno: int) -> dict:
    """Values of a response struct's ``fields`` for the request struct ``request``:
    error codes ``errno``; lists of results, one per entity of the request's list
    of the same name (or its _ENTITIES alias); keys (names, ids, indexes) copied."""
    given = getattr(request, "_struct", None)
    req_fields = given.fields if given is not None else {}
    values = {}
    for name, f in fields.items():
        if not f.for_version_q(version) or f.tag is not None:
            continue
        if name.endswith("error_code"):
            values[name] = errno
        elif f.is_struct_array() and _has_error(f.fields, version):
            source = next((n for n in (name, *_ENTITIES.get(name, ()))
                           if n in req_fields and req_fields[n].for_version_q(version)
                           and req_fields[n].is_array()), None)
            items = getattr(request, source, None) if source is not None else None
            if items and _answers(f.fields, items[0], version):
                values[name] = [f.data_class(**_element(f.fields, item, version, errno))
                                for item in items]
        elif name in req_fields and req_fields[name].for_version_q(version) \
                and req_fields[name].type_str == f.type_str and not f.is_array():
            values[name] = getattr(request, name)
    return values


def _element(fields: dict, item: Any, version: int, errno: int) -> dict:
    if hasattr(item, "_struct"):
        return _echo(fields, item, version, errno)
    # a bare name or index (DeleteTopics' topic_names, AddPartitionsToTxn's partitions):
    # the result's first field of its type
    kind = "string" if isinstance(item, str) else "int32"
    values = {n: errno for n, f in fields.items()
              if f.for_version_q(version) and f.tag is None and n.endswith("error_code")}
    key = next((n for n, f in fields.items() if f.for_version_q(version) and f.tag is None
                and f.type_str == kind and not n.startswith("error")), None)
    if key is not None:
        values[key] = item
    return values


def _answers(fields: dict, item: Any, version: int) -> bool:
    """Is a result struct of ``fields`` the answer to one request entity like ``item``:
    it repeats its key (a name, an id, an index), or it holds nothing but an error and
    lists (CreateAcls' and DeleteAcls' results, one per creation or filter)? (Not
    DescribeLogDirs' results before v3: one per log directory, not per topic asked.)"""
    given = getattr(item, "_struct", None)
    kind = None if given is not None else ("string" if isinstance(item, str) else "int32")
    plain = True
    for n, f in fields.items():
        if not f.for_version_q(version) or f.tag is not None or n.startswith("error"):
            continue
        if f.is_array():  # (DeleteAcls' matching_acls: empty in an error's answer)
            continue
        plain = False
        if kind is not None and f.type_str == kind:
            return True
        if given is not None and n in given.fields and given.fields[n].type_str == f.type_str \
                and given.fields[n].for_version_q(version):
            return True
    return plain


def _has_error(fields: dict, version: int) -> bool:
    """Does a result struct carry an error code (itself or inside)?"""
    return any(f.for_version_q(version) and f.tag is None
               and (n.endswith("error_code") or (f.fields and _has_error(f.fields, version)))
               for n, f in fields.items())
