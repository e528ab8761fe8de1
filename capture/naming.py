"""Capture file names (the nine-token format, {Namespace}/{EventHub}/{PartitionId}/{Year}/.../{Second}).

The default format is
``{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}``;
a custom one must contain all nine tokens, in any order. The time is the
file's name time in UTC (the window's start, see capture.windows), the year
has four digits and every other number is zero-padded to two. ``.avro`` or
``.parquet`` is appended.

The format's rule (``name_format_error``) is the one Capture applies, whoever
gives the format: the command line, the Spark sink's option, a config file or
the management API. A file's name is checked again where it is written
(``file_name_error``, capture.writers): whatever the format and the values put
into it, no file goes outside its destination.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

logger = logging.getLogger(__name__)

DEFAULT_NAME_FORMAT = "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
# Every placeholder a custom name format must hold, as on Azure.
TOKENS = ("{Namespace}", "{EventHub}", "{PartitionId}", "{Year}", "{Month}", "{Day}", "{Hour}", "{Minute}", "{Second}")
NAME_FORMAT_MAX = 1024  # characters; blob names are at most 1,024
EXTENSIONS = {"avro": ".avro", "parquet": ".parquet"}


def name_format_error(name_format: object) -> str | None:
    """Why Capture may not name its files by ``name_format``, else None: the files must stay
    under their destination (a relative path without empty, '.' or '..' parts or
    backslashes), be names a blob or a file may have (printable UTF-8, 1,024 characters at
    most) and be told apart (every placeholder)."""
    if not isinstance(name_format, str):
        return "the name format must be text"
    if len(name_format) > NAME_FORMAT_MAX or not _printable(name_format):
        return f"it must be at most {NAME_FORMAT_MAX:,} printable characters"
    return _path_error(name_format) or _missing_tokens(name_format)


def file_name_error(name: object) -> str | None:
    """Why a capture file may not be written under ``name`` (relative to its destination),
    else None: the format's rule but for the placeholders and the length (the file
    system or Blob storage refuses a name too long), so that the values put into a
    format (namespace, event hub) cannot take a file elsewhere either."""
    if not isinstance(name, str):
        return "the file name must be text"
    if not _printable(name):
        return "it must be printable characters"
    return _path_error(name)


def _printable(text: str) -> bool:
    return not any(ord(c) < 32 or ord(c) == 127 for c in text)


def _path_error(path: str) -> str | None:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON's "\udcff"): no file or blob has that name
        return "it must be UTF-8 text"
    if path.startswith("/") or "\\" in path or any(p in ("", ".", "..") for p in path.split("/")):
        return "it must be a relative path without empty, '.' or '..' parts or backslashes"
    return None


def _missing_tokens(name_format: str) -> str | None:
    missing = [t for t in TOKENS if t not in name_format]
    if missing:
        return f"it lacks {', '.join(missing)}: a custom format must contain all nine placeholders"
    return None


def check_name_format(name_format: str) -> None:
    """Raise ValueError unless Capture may name its files by ``name_format`` (``name_format_error``)."""
    problem = name_format_error(name_format)
    if problem:
        raise ValueError(f"capture name format {name_format!r} is invalid: {problem}; use the nine tokens, e.g. "
                         f"{DEFAULT_NAME_FORMAT}")


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
