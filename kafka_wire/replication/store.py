"""One region's copy of a namespace (a replica): its own partition logs and a
metadata file, changed only by the messages of :mod:`.stream`.

Layout, inside the data directory (``_geo`` cannot be a namespace's name, which
begins with a letter, so it meets none)::

    DATA_DIR/<namespace>/                 the first primary's logs (as for any namespace)
    DATA_DIR/_geo/<namespace>/<location>/ each other region's logs (a LogManager root)
    DATA_DIR/_geo/<namespace>/<location>.json  its checkpoints and settings
    DATA_DIR/_geo/<namespace>/_state.json      roles, segments, max lag, paused replicas
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from kafka_wire.log.errors import UnknownTopic
from kafka_wire.log.manager import LogManager
from kafka_wire.log.recovery import write_atomic
from kafka_wire.replication.stream import Batches, Metadata

log = logging.getLogger(__name__)

GEO_DIR = "_geo"
STATE_FILE = "_state.json"


def serving_log_dir(data_dir, namespace: str) -> Path:
    """The directory of the logs ``namespace`` serves from now: DATA_DIR/<namespace>,
    or after a promotion the primary region's DATA_DIR/_geo/<namespace>/<location>/
    (read from the geo state file, which a promotion rewrites once the new primary
    serves). What reads a namespace's log from outside the broker (Capture) asks here."""
    data_dir = Path(data_dir)
    home = data_dir / namespace
    try:
        state = json.loads((data_dir / GEO_DIR / namespace / STATE_FILE).read_text())
        primary = state["primary"]
        if primary == state["home"]:
            return home
        region = data_dir / GEO_DIR / namespace / str(primary)
    except FileNotFoundError:  # not geo-replicated
        return home
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("namespace %s: geo-replication state unreadable (%s): reading %s", namespace, exc, home)
        return home
    return region if region.is_dir() else home


class ReplicaStore:
    """A region's logs (``logs``) and replicated metadata (``offsets``, ``settings``)."""

    def __init__(self, location: str, logs: LogManager, meta_file: Path) -> None:
        self.location = location
        self.logs = logs
        self.meta_file = meta_file
        self.offsets: dict[str, dict[tuple[str, int], tuple[int, str]]] = {}
        self.settings: dict | None = None
        self._load()

    # -- reading -------------------------------------------------------------------
    def end_offset(self, hub: str, partition: int) -> int:
        plog = self.logs.get_log(hub, partition)
        return plog.log_end_offset if plog is not None else 0

    def ends(self) -> dict[tuple[str, int], int]:
        """Every partition's log end offset."""
        return {key: plog.log_end_offset for key, plog in self.logs.logs().items()}

    # -- applying the stream -----------------------------------------------------------
    def apply_hubs(self, meta: Metadata) -> None:
        """Make the hubs (and their partition counts and configs) those of ``meta``."""
        have = self.logs.topics()
        for name in [n for n in have if n not in meta.hubs]:
            self.logs.delete_topic(name)
        for name, hub in meta.hubs.items():
            info = have.get(name)
            if info is None:
                self.logs.create_topic(name, hub.partitions, hub.configs, topic_id=hub.topic_id)
                continue
            if info.topic_id != hub.topic_id and hub.topic_id:  # deleted and made again meanwhile
                self.logs.delete_topic(name)
                self.logs.create_topic(name, hub.partitions, hub.configs, topic_id=hub.topic_id)
                continue
            if hub.partitions > info.partitions:
                self.logs.create_partitions(name, hub.partitions)
            if dict(info.configs) != dict(hub.configs):
                self.logs.alter_topic_config(name, dict(hub.configs), replace=True)

    def apply_rest(self, meta: Metadata) -> None:
        """Checkpoints and settings (after the events they refer to)."""
        if meta.offsets != self.offsets or meta.settings != self.settings:
            self.offsets = {g: dict(o) for g, o in meta.offsets.items()}
            self.settings = meta.settings
            self._save()

    def apply_batches(self, batches: Batches) -> int:
        plog = self.logs.get_log(batches.hub, batches.partition)
        if plog is None:
            raise UnknownTopic(f"replica {self.location} has no partition {batches.hub}-{batches.partition}")
        return plog.append_as_follower(batches.data, list(batches.append_ms))

    def truncate(self, hub: str, partition: int, offset: int) -> int:
        """Drop what this replica holds from ``offset`` on; returns how many offsets went."""
        plog = self.logs.get_log(hub, partition)
        if plog is None or plog.log_end_offset <= offset:
            return 0
        dropped = plog.log_end_offset - offset
        plog.truncate_to(offset)
        return dropped

    def close(self) -> None:
        self.logs.close()

    # -- persistence -------------------------------------------------------------------
    def _save(self) -> None:
        doc = {"location": self.location, "settings": self.settings,
               "offsets": {g: [[t, p, o, m] for (t, p), (o, m) in offs.items()]
                           for g, offs in self.offsets.items()}}
        write_atomic(self.meta_file, json.dumps(doc, sort_keys=True).encode())

    def _load(self) -> None:
        try:
            doc = json.loads(self.meta_file.read_text())
            self.settings = doc.get("settings")
            self.offsets = {str(g): {(str(t), int(p)): (int(o), str(m)) for t, p, o, m in rows}
                            for g, rows in doc.get("offsets", {}).items()}
        except FileNotFoundError:
            pass
        except (ValueError, TypeError, AttributeError) as exc:
            log.error("replica %s: unreadable metadata %s ignored (%s): it is copied again from "
                      "the primary", self.location, self.meta_file, exc)
