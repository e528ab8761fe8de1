"""Capture file names (the nine-token format, {Namespace}/{EventHub}/{PartitionId}/{Year}/.../{Second}).

The default format is
``{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}``;
a custom one must contain all nine tokens, in any order. The time is the
file's name time in UTC (the window's start, see capture.windows), the year
has four digits and every other number is zero-padded to two. ``.avro`` or
``.parquet`` is appended.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from pathlib import PurePosixPath

logger = logging.getLogger(__name__)

DEFAULT_NAME_FORMAT = "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
TOKENS = ("{Namespace}", "{EventHub}", "{PartitionId}", "{Year}", "{Month}", "{Day}", "{Hour}", "{Minute}", "{Second}")
EXTENSIONS = {"avro": ".avro", "parquet": ".parquet"}


def check_name_format(name_format: str) -> None:
    """Raise ValueError unless the format holds all nine tokens."""
    missing = [t for t in TOKENS if t not in name_format]
    if missing:
        raise ValueError(
            f"capture name format {name_format!r} lacks {', '.join(missing)}: a custom format must contain "
            f"all nine tokens, e.g. {DEFAULT_NAME_FORMAT}"
        )
    if name_format.startswith("/") or ".." in PurePosixPath(name_format).parts:
        raise ValueError(f"capture name format {name_format!r} must be a relative path without '..'")


def file_name(name_format: str, namespace: str, event_hub: str, partition: int, name_ms: int, encoding: str) -> str:
    """The relative path of a capture file, e.g. ``ns/hub/0/2017/12/08/03/03/17.avro``."""
    t = datetime.fromtimestamp(name_ms // 1000, tz=timezone.utc)
    values = {
        "{Namespace}": namespace,
        "{EventHub}": event_hub,
        "{PartitionId}": str(partition),
        "{Year}": f"{t.year:04d}",
        "{Month}": f"{t.month:02d}",
        "{Day}": f"{t.day:02d}",
        "{Hour}": f"{t.hour:02d}",
        "{Minute}": f"{t.minute:02d}",
        "{Second}": f"{t.second:02d}",
    }
    name = name_format
    for token, value in values.items():
        name = name.replace(token, value)
    try:
        return name + EXTENSIONS[encoding]
    except KeyError:
        raise ValueError(f"capture encoding {encoding!r} is unknown: use avro or parquet") from None
