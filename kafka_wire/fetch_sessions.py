"""Incremental fetch sessions (KIP-227), as Java and librdkafka consumers use them.

A session remembers, per partition, the fetch offset and max bytes the client
last sent and the high watermark and log start offset we last reported, so
that incremental requests carry only what changed and incremental responses
only partitions with news. Sessions are bounded in number; an evicted
session's client simply gets FETCH_SESSION_ID_NOT_FOUND and starts a new one,
as with a Kafka broker. Which one goes, so that one client cannot evict every
other's: a connection holds at most MAX_SESSIONS_PER_OWNER (a consumer opens one
a broker), and opening more evicts its own least recently used; when the cache
is full, a new session evicts one unused for STALE_AFTER_S (Kafka's
min.incremental.fetch.session.eviction.ms), else the least recently used one of
no more partitions than itself, else it is not kept and the fetch is answered
without a session (session id 0), as KIP-227's cache prefers larger sessions.

A session belongs to the connection (and namespace) that opened it: the cache
serves every namespace, so another connection naming its id gets
FETCH_SESSION_ID_NOT_FOUND, and its epoch 0 or -1 (open anew, close) leaves
the session alone. Ids are drawn at random, as Kafka does, so that they are not
guessed either. A connection's sessions go when it closes.
"""
from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import kafka.errors as Errors

from kafka_wire.apis.request_bounds import MAX_ENTRIES

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
# A Java consumer opens one session a broker connection and replaces it on
# reassignment (epoch 0); a few more allow for clients that reopen before closing.
MAX_SESSIONS_PER_OWNER = 8
STALE_AFTER_S = 120.0
# Partitions a session may hold, as a request may name (a session grown by incremental
# fetches to 500,000 made each of its fetches hold other clients 2.5 s). A session
# growing past it is dropped, and its client answered FETCH_SESSION_ID_NOT_FOUND.
MAX_SESSION_PARTITIONS = MAX_ENTRIES


@dataclass(slots=True)
class CachedPartition:
    fetch_offset: int
    max_bytes: int
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchSession:
    session_id: int
    epoch: int  # the epoch the next request must carry
    owner: object = None  # who opened it (the fetch handler passes connection and namespace)
    last_used: float = 0.0  # the cache's clock
    partitions: "OrderedDict[tuple[str, int], CachedPartition]" = field(default_factory=OrderedDict)


class SessionError(Exception):
    def __init__(self, error_code: int) -> None:
        super().__init__(error_code)
        self.error_code = error_code  # a Kafka error code


class FetchSessionCache:
    def __init__(self, max_sessions: int = 1000, clock=time.monotonic) -> None:
        self.max_sessions = max_sessions
        self.clock = clock  # seconds
        self._sessions: "OrderedDict[int, FetchSession]" = OrderedDict()  # least recently used first
        self._owned: dict[object, int] = {}  # sessions held, by owner
        # Session ids by connection (owners are (connection id, namespace)), to drop them
        # when it closes without a walk of the cache.
        self._by_connection: dict[object, set[int]] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def resolve(self, session_id: int, epoch: int,
                requested: list[tuple[tuple[str, int], int, int]],
                forgotten: list[tuple[str, int]],
                owner: object = None) -> tuple[FetchSession | None, bool]:
        """Apply a request from ``owner`` to the cache.

        Returns (session or None for a sessionless fetch, incremental?).
        ``requested`` holds ((topic, partition), fetch_offset, max_bytes).
        Raises SessionError with the Kafka error code for bad ids or epochs;
        another owner's session is one not found.
        """
        if session_id == 0:
            if epoch == INITIAL_EPOCH:
                session = FetchSession(self._new_id(), 1, owner=owner, last_used=self.clock())
                for key, offset, max_bytes in requested:
                    session.partitions[key] = CachedPartition(offset, max_bytes)
                return (session if self._add(session) else None), False
            if epoch == FINAL_EPOCH:
                return None, False
            raise SessionError(Errors.InvalidFetchSessionEpochError.errno)
        session = self._sessions.get(session_id)
        if session is not None and session.owner != owner:
            session = None  # (someone else's: not closed, not read, not advanced)
        if epoch == FINAL_EPOCH:
            if session is not None:
                self._remove(session_id)
            return None, False
        if epoch == INITIAL_EPOCH:
            # Client closes this session (if it is its own) and opens a new full one.
            if session is not None:
                self._remove(session_id)
            return self.resolve(0, INITIAL_EPOCH, requested, forgotten, owner)
        if session is None:
            raise SessionError(Errors.FetchSessionIdNotFoundError.errno)
        if epoch != session.epoch:
            raise SessionError(Errors.InvalidFetchSessionEpochError.errno)
        if requested and self._grows_past_bound(session, requested, forgotten):
            # As if evicted: the client starts a full session, which one request bounds.
            self._remove(session_id)
            raise SessionError(Errors.FetchSessionIdNotFoundError.errno)
        session.epoch = epoch + 1 if epoch < 2**31 - 1 else 1
        self._sessions.move_to_end(session_id)
        session.last_used = self.clock()
        for key in forgotten:
            session.partitions.pop(key, None)
        for key, offset, max_bytes in requested:
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = CachedPartition(offset, max_bytes)
            else:
                cached.fetch_offset = offset
                cached.max_bytes = max_bytes
        return session, True

    @staticmethod
    def _grows_past_bound(session: FetchSession, requested, forgotten) -> bool:
        cached = session.partitions
        if len(cached) + len(requested) <= MAX_SESSION_PARTITIONS:
            return False
        gone = {key for key in forgotten if key in cached}
        added = {key for key, _o, _m in requested if key not in cached or key in gone}
        return len(cached) - len(gone) + len(added) > MAX_SESSION_PARTITIONS

    def _new_id(self) -> int:
        while True:  # (a random positive int32: a sequential one is guessed by the next client)
            sid = secrets.randbits(31)
            if sid and sid not in self._sessions:
                return sid

    def _add(self, session: FetchSession) -> bool:
        """Keep ``session``, evicting as the module says; False if it is not kept."""
        owner = session.owner
        if self._owned.get(owner, 0) >= MAX_SESSIONS_PER_OWNER:
            self._remove(next(sid for sid, s in self._sessions.items() if s.owner == owner))
        elif len(self._sessions) >= self.max_sessions:
            size = len(session.partitions)
            oldest = next(iter(self._sessions.values()))
            victim = oldest.session_id if session.last_used - oldest.last_used >= STALE_AFTER_S else \
                next((sid for sid, s in self._sessions.items() if len(s.partitions) <= size), None)
            if victim is None:
                return False
            self._remove(victim)
        self._sessions[session.session_id] = session
        self._owned[owner] = self._owned.get(owner, 0) + 1
        self._by_connection.setdefault(_connection(owner), set()).add(session.session_id)
        return True

    def _remove(self, session_id: int) -> None:
        owner = self._sessions.pop(session_id).owner
        left = self._owned[owner] - 1
        if left:
            self._owned[owner] = left
        else:
            del self._owned[owner]
        held = self._by_connection.get(_connection(owner))
        if held is not None:  # (None: drop_connection took the set)
            held.discard(session_id)
            if not held:
                del self._by_connection[_connection(owner)]

    def drop_connection(self, connection_id: int) -> None:
        """The connection closed: its sessions go at once (no one else may use them; they
        held a slot, and their partitions, until evicted)."""
        for sid in self._by_connection.pop(connection_id, ()):
            self._remove(sid)

    def drop_topic(self, topic: str) -> None:
        for session in self._sessions.values():
            for key in [k for k in session.partitions if k[0] == topic]:
                del session.partitions[key]


def _connection(owner: object) -> object:
    """The connection of an owner: the fetch handler's owners are (connection id, namespace)."""
    return owner[0] if isinstance(owner, tuple) else owner
