"""Which batches of a read a read_committed reader skips, decided as Kafka's
consumer does (its fetcher's aborted-transaction queue), with one search of the
aborted-transaction index per read rather than one per transactional batch: a
hub holding thousands of aborted transactions cost each read quadratic time."""

from __future__ import annotations

import heapq

from . import batch as rb


class CommittedFilter:
    """Shown the batches of one read in offset order (the first at or below
    ``first``, none at or past ``upper``), says which to skip: transaction
    markers, and the batches of transactions that were aborted."""

    __slots__ = ("_plog", "_first", "_upper", "_pending", "_aborting")

    def __init__(self, plog, first: int, upper: int) -> None:
        self._plog, self._first, self._upper = plog, first, upper
        self._pending: list[tuple[int, int]] | None = None  # (first offset, producer id): a heap
        self._aborting: set[int] = set()  # producers whose aborted transaction has begun

    def hidden(self, header) -> bool:
        attributes = header.attributes
        if not attributes & (rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT):
            return False
        pending = self._pending
        if pending is None:  # (most reads meet no transaction: searched only when one is met)
            pending = self._pending = [(first, pid) for pid, first in
                                       self._plog.aborted_transactions(self._first, self._upper)]
            heapq.heapify(pending)
        # Markers too (a read may start at the marker of a transaction begun before it)
        while pending and pending[0][0] <= header.last_offset:
            self._aborting.add(heapq.heappop(pending)[1])
        if attributes & rb.CONTROL_BIT:
            # A marker ends its producer's transaction (a later one of the same producer
            # enters again from the queue) and is never shown.
            self._aborting.discard(header.producer_id)
            return True
        return header.producer_id in self._aborting
