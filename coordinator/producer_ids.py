"""Producer ids: unique for the life of the data directory.

Ids are handed out from blocks; the end of the current block is persisted
before any id of it is used, so a crash may skip ids but never reuse one.
"""
from __future__ import annotations

import os
from pathlib import Path

from kafka_wire.log.recovery import fsync_dir

BLOCK = 1000


class ProducerIdManager:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # The lowest id never handed out: every id issued is below it (Produce refuses an
        # idempotent batch under any other). A restart skips the rest of a block, so ids
        # just below it may never have been issued either. Read it, never set it.
        self.first_unissued = 0
        self._block_end = 0
        if self.path.exists():
            try:
                self.first_unissued = self._block_end = int(self.path.read_text().strip() or 0)
            except ValueError:
                # A damaged file: skip far ahead rather than risk reusing ids.
                self.first_unissued = self._block_end = 1 << 40

    def next_id(self) -> int:
        if self.first_unissued >= self._block_end:
            self._block_end = self.first_unissued + BLOCK
            tmp = self.path.with_suffix(".tmp")
            with open(tmp, "w") as fh:
                fh.write(str(self._block_end))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.path.parent)  # the new block end survives a power loss: no id is reused
        pid = self.first_unissued
        self.first_unissued += 1
        return pid
