"""What travels from the primary to a secondary replica: a stream of plain messages.

A replica is driven only by these (never by the primary's objects), so a replica
could live in another kafka-wire process later: each message is JSON-able
(:meth:`to_json`), batches as the bytes the primary stored.

- :class:`Batches`: record batches of one partition, byte for byte as stored
  (offsets assigned, log-append times set), with their append times.
- :class:`Metadata`: the namespace's hubs (partition count, configs), its
  consumer groups' committed offsets (the checkpoints) and its settings.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Batches:
    """Batches of ``hub``/``partition`` starting at ``base_offset`` (the first batch's)."""
    hub: str
    partition: int
    base_offset: int
    data: bytes
    append_ms: tuple[int, ...]

    def to_json(self) -> dict:
        return {"type": "batches", "hub": self.hub, "partition": self.partition,
                "base_offset": self.base_offset, "append_ms": list(self.append_ms),
                "data": base64.b64encode(self.data).decode()}


@dataclass(frozen=True, slots=True)
class HubMeta:
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)
    topic_id: str = ""  # the replica's topic keeps the primary's id (Kafka clients hold it)


@dataclass(frozen=True, slots=True)
class Metadata:
    """The namespace's metadata as the primary has it now (whole, not a diff: a
    replica that missed changes while paused converges on the next one).

    ``offsets``: group -> {(hub, partition): (sequence number, metadata string)};
    ``settings``: the namespace's settings document (tier, hubs, policies)."""
    hubs: dict[str, HubMeta]
    offsets: dict[str, dict[tuple[str, int], tuple[int, str]]]
    settings: dict | None = None

    def to_json(self) -> dict:
        return {"type": "metadata",
                "hubs": {n: {"partitions": h.partitions, "configs": h.configs,
                                    "topic_id": h.topic_id} for n, h in self.hubs.items()},
                "offsets": {g: [[t, p, o, m] for (t, p), (o, m) in offs.items()]
                            for g, offs in self.offsets.items()},
                "settings": self.settings}
