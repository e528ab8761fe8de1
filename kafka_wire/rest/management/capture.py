"""A hub's ``captureDescription``: what Capture writes, and where.

A storage account named in the config's ``[storage_accounts]`` gets the files
uploaded to its container; any other account's container (or Data Lake
folder) stands as a local directory under the capture root (``--capture-dir``,
else ``DATA_DIR/capture``). Either way ``root/{account}/{container}`` holds
the job's local state, so the place must stay under the root: account and
container names follow Azure Storage's rules, a Data Lake folder path is
relative with no ``.`` or ``..`` parts, symbolic links may not lead out, and a
name format must hold every placeholder and no part that climbs. Refused at
the door with a 400, never accepted and then failed in the job.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from kafka_wire.eventhubs.bounds import name_format_error
from kafka_wire.eventhubs.model import CaptureSettings
from kafka_wire.rest.management.common import BadRequest, flag, obj, text, whole

_ACCOUNT = re.compile(r"[a-z0-9]{3,24}")                          # Azure Storage account names
_CONTAINER = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}")  # Blob container names
_FOLDER_PART = re.compile(r"[^\x00-\x1f\\:*?\"<>|]{1,255}")


def _account(name: str) -> str:
    if not _ACCOUNT.fullmatch(name):
        raise BadRequest(f"storage account name {name[:64]!r} is invalid: use 3-24 lowercase letters "
                         "and digits")
    return name


def _container(name: str) -> str:
    if ".." in name:
        raise BadRequest("the storage account and container names must not contain '..'")
    if not _CONTAINER.fullmatch(name):
        raise BadRequest(f"blob container name {name[:64]!r} is invalid: use 3-63 lowercase letters, "
                         "digits and single hyphens, starting and ending with a letter or digit")
    return name


def _folder(path: str) -> str:
    """A Data Lake folder path: relative, its parts neither ``.`` nor ``..``."""
    parts = path.strip("/").split("/")
    if path.startswith("/") or any(p in (".", "..") for p in parts):
        raise BadRequest("dataLakeFolderPath must be a relative path without '.' or '..' parts "
                         "(the storage account and container names must not contain '..')")
    if not all(_FOLDER_PART.fullmatch(p) for p in parts) or len(parts) > 32:
        raise BadRequest(f"dataLakeFolderPath {path[:64]!r} is invalid: use up to 32 parts of "
                         "printable characters, without \\ : * ? \" < > |")
    return "/".join(parts)


def _name_format(fmt: str, where: str) -> str:
    problem = name_format_error(fmt)
    if problem:
        raise BadRequest(f"{where} is invalid: {problem}")
    return fmt


def inside(root: Path, place: Path) -> Path:
    """``place`` as it resolves (symbolic links followed), refused when that leaves ``root``."""
    resolved_root = root.resolve()
    resolved = place.resolve()
    if resolved != resolved_root and resolved_root not in resolved.parents:
        raise BadRequest("the capture destination resolves outside the capture directory")
    return resolved


def settings(desc, current: CaptureSettings, root: Path, now_ms: int, where: str,
             accounts: dict | None = None) -> CaptureSettings:
    """A hub's CaptureSettings from a ``captureDescription`` (BadRequest: 400).
    Enabling starts a new capture now, as on Azure."""
    if not isinstance(desc, dict):
        raise BadRequest("captureDescription must be a JSON object")
    defaults = CaptureSettings()
    c = dataclasses.replace(current)
    enabled = flag(desc, "enabled", "captureDescription.enabled")
    enabled = c.enabled if enabled is None else enabled
    encoding = text(desc, "encoding", "captureDescription.encoding", 32) or c.encoding
    if encoding.lower() == "avrodeflate":
        raise BadRequest("captureDescription.encoding AvroDeflate is not emulated: kafka-wire writes "
                         "Avro without compression (use Avro) or Parquet")
    if encoding.lower() not in ("avro", "parquet"):
        raise BadRequest(f"captureDescription.encoding {encoding!r} is not Avro or Parquet")
    c.encoding = "Parquet" if encoding.lower() == "parquet" else "Avro"
    for key, attr in (("intervalInSeconds", "interval_seconds"), ("sizeLimitInBytes", "size_limit_bytes")):
        value = whole(desc, key, f"captureDescription.{key}")
        if value is not None:
            setattr(c, attr, value)
    skip = flag(desc, "skipEmptyArchives", "captureDescription.skipEmptyArchives")
    if skip is not None:
        c.skip_empty_archives = skip
    if desc.get("destination") is not None:
        dest = obj(desc, "destination", "captureDescription.destination")
        where_props = "captureDescription.destination.properties"
        p = obj(dest, "properties", where_props)
        c.destination_type = text(dest, "name", "captureDescription.destination.name", 64) \
            or defaults.destination_type
        c.name_format = _name_format(text(p, "archiveNameFormat", f"{where_props}.archiveNameFormat")
                                     or defaults.name_format, f"{where_props}.archiveNameFormat")
        if c.destination_type.endswith("AzureDataLake"):
            account = text(p, "dataLakeAccountName", f"{where_props}.dataLakeAccountName", 64)
            container = text(p, "dataLakeFolderPath", f"{where_props}.dataLakeFolderPath", 1024)
            needed = "dataLakeAccountName and dataLakeFolderPath"
        else:
            resource = text(p, "storageAccountResourceId", f"{where_props}.storageAccountResourceId") or ""
            account = resource.rstrip("/").rsplit("/", 1)[-1] if resource else None
            container = text(p, "blobContainer", f"{where_props}.blobContainer", 64)
            needed = "storageAccountResourceId and blobContainer"
        if not account or not container:
            raise BadRequest(f"captureDescription.destination {c.destination_type} needs {needed}")
        container = _folder(container) if c.destination_type.endswith("AzureDataLake") \
            else _container(container)
        c.storage_account, c.blob_container = _account(account), container
        c.destination = str(inside(root, root / c.storage_account / c.blob_container))
        c.storage_connection_string = (accounts or {}).get(c.storage_account)
    elif enabled and c.storage_account is None and current.destination == defaults.destination:
        raise BadRequest("captureDescription.destination is required to enable Capture")
    try:
        c.validate(where)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if enabled and not current.enabled:
        c.enabled_at_ms = now_ms
    elif not enabled:
        c.enabled_at_ms = None
    c.enabled = enabled
    return c
