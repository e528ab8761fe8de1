"""Geo-replication a namespace was given at runtime (the management API's
geoDataReplication), found again at the next start: its replicas' state
(``DATA_DIR/_geo/<namespace>/_state.json``, kafka_wire.replication) wins over any
settings, so settings naming its primary and locations are enough to reopen it."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from kafka_wire.eventhubs.geo import GeoSettings

log = logging.getLogger(__name__)


def kept_geo_settings(data_dir: Path, namespace: str) -> GeoSettings | None:
    from kafka_wire.replication.store import GEO_DIR, STATE_FILE

    path = Path(data_dir) / GEO_DIR / namespace / STATE_FILE
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text())
        settings = GeoSettings(state["primary"], list(state["locations"]), int(state["max_lag_seconds"]))
        settings.validate(str(path))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.error("namespace %s: geo-replication state %s cannot be read (%s): not geo-replicated",
                  namespace, path, exc)
        return None
    return settings
