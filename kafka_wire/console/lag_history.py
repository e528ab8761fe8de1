"""Each consumer group's lag per partition over the last minutes, for the
console's lag charts: sampled every :data:`EVERY_S` seconds (wall time) by the
console's sampler, :data:`KEEP` samples per group."""
from __future__ import annotations

from collections import deque

EVERY_S = 5.0
KEEP = 72  # six minutes


class LagHistory:
    def __init__(self) -> None:
        # (namespace, hub, group) -> deque of (time_ms, [lag or None per partition])
        self.series: dict[tuple[str, str, str], deque] = {}
        self._last_ms = 0

    def due(self, now_ms: int) -> bool:
        return now_ms - self._last_ms >= EVERY_S * 1000

    def record(self, now_ms: int, seen: dict[tuple[str, str, str], list[int | None]]) -> None:
        """One sample: every group's lags now; groups not seen (deleted) are forgotten."""
        self._last_ms = now_ms
        kept = {}
        for key, lags in seen.items():
            series = self.series.get(key)
            if series is None:
                series = deque(maxlen=KEEP)
            series.append((now_ms, lags))
            kept[key] = series
        self.series = kept

    def of(self, namespace: str, hub: str, group: str) -> list[dict]:
        return [{"time_ms": t, "lags": lags} for t, lags in self.series.get((namespace, hub, group), ())]
