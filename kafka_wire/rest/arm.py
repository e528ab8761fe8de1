"""Resource shapes of the Azure Resource Manager API for Event Hubs (the JSON
``azure-mgmt-eventhub`` reads and writes), and its error bodies."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from kafka_wire.rest.http import Response

PROVIDER = "Microsoft.EventHub"
JSON = "application/json; charset=utf-8"
# what azure-mgmt-eventhub 11 sends (its profiles) and the service serves
API_VERSIONS = frozenset({"2015-08-01", "2017-04-01", "2018-01-01-preview", "2021-01-01-preview",
                          "2021-06-01-preview", "2021-11-01", "2022-01-01-preview",
                          "2022-10-01-preview", "2024-01-01", "2024-05-01-preview"})
LOCATION = "local"


def ok(value, status: int = 200) -> Response:
    return Response(status, json.dumps(value, separators=(",", ":")).encode(), JSON)


def fail(status: int, code: str, message: str) -> Response:
    return Response(status, json.dumps({"error": {"code": code, "message": message}}).encode(), JSON)


def listing(items: list) -> Response:
    return ok({"value": items})


def namespace_id(subscription: str, group: str, ns: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{group}/providers/{PROVIDER}/namespaces/{ns}"


def namespace(base: str, ns, endpoint_host: str) -> dict:
    tier = ns.tier.value
    props = {"provisioningState": "Succeeded", "status": "Active",
             "serviceBusEndpoint": f"https://{endpoint_host}:443/",
             "kafkaEnabled": ns.limits.kafka, "isAutoInflateEnabled": ns.auto_inflate_max is not None,
             "maximumThroughputUnits": ns.auto_inflate_max or 0,
             "disableLocalAuth": False, "zoneRedundant": False}
    return {"id": base, "name": ns.name, "type": f"{PROVIDER}/Namespaces", "location": LOCATION,
            "sku": {"name": tier, "tier": tier, "capacity": ns.units or 1}, "properties": props}


def event_hub(base: str, name: str, partitions: int, retention_ms: int | None, hub) -> dict:
    hours = None if retention_ms is None else (-1 if retention_ms < 0 else max(retention_ms // 3_600_000, 1))
    cleanup = hub.cleanup_policy if hub is not None else "Delete"
    props = {"partitionIds": [str(p) for p in range(partitions)], "partitionCount": partitions,
             "status": hub.status if hub is not None else "Active",
             "retentionDescription": {"cleanupPolicy": cleanup, "retentionTimeInHours": hours}}
    if hours is not None and hours > 0:
        props["messageRetentionInDays"] = max(hours // 24, 1)
    if hub is not None and (hub.capture.enabled or hub.capture.storage_account):
        props["captureDescription"] = capture_description(hub.capture)
    return {"id": f"{base}/eventhubs/{name}", "name": name, "location": LOCATION,
            "type": f"{PROVIDER}/namespaces/eventhubs", "properties": props}


def capture_description(c) -> dict:
    where = {"archiveNameFormat": c.name_format}
    account_id = f"/subscriptions/local/resourceGroups/local/providers/Microsoft.Storage/storageAccounts/" \
                 f"{c.storage_account}" if c.storage_account else None
    if c.destination_type.endswith("AzureDataLake"):
        where.update(dataLakeAccountName=c.storage_account, dataLakeFolderPath=c.blob_container)
    else:
        where.update(storageAccountResourceId=account_id, blobContainer=c.blob_container or c.destination)
    return {"enabled": c.enabled, "encoding": c.encoding, "intervalInSeconds": c.interval_seconds,
            "sizeLimitInBytes": c.size_limit_bytes, "skipEmptyArchives": c.skip_empty_archives,
            "destination": {"name": c.destination_type, "properties": where}}


def capture_settings(desc: dict, current, root: Path, now_ms: int, where: str, accounts: dict | None = None):
    """A hub's CaptureSettings from a ``captureDescription`` (ValueError: 400).
    A storage account named in ``accounts`` (name -> connection string: the
    config's ``[storage_accounts]``) gets the files uploaded to its container;
    any other account's container (or Data Lake folder) stands as a local
    directory. Either way ``root/{account}/{container}`` holds the job's local
    state. Enabling starts a new capture now, as on Azure."""
    from kafka_wire.eventhubs.model import CaptureSettings

    defaults = CaptureSettings()
    if not isinstance(desc, dict):
        raise ValueError("captureDescription must be a JSON object")
    c = dataclasses.replace(current)
    enabled = bool(desc.get("enabled", c.enabled))
    encoding = desc.get("encoding", c.encoding)
    if str(encoding).lower() == "avrodeflate":
        raise ValueError("captureDescription.encoding AvroDeflate is not emulated: kafka-wire writes "
                         "Avro without compression (use Avro) or Parquet")
    if str(encoding).lower() not in ("avro", "parquet"):
        raise ValueError(f"captureDescription.encoding {encoding!r} is not Avro or Parquet")
    c.encoding = "Parquet" if str(encoding).lower() == "parquet" else "Avro"
    for key, attr in (("intervalInSeconds", "interval_seconds"), ("sizeLimitInBytes", "size_limit_bytes")):
        if key in desc:
            value = desc[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"captureDescription.{key} must be a whole number, not {value!r}")
            setattr(c, attr, value)
    if "skipEmptyArchives" in desc:
        c.skip_empty_archives = bool(desc["skipEmptyArchives"])
    dest = desc.get("destination")
    if dest is not None:
        if not isinstance(dest, dict):
            raise ValueError("captureDescription.destination must be a JSON object")
        props = dest.get("properties") or {}
        c.destination_type = str(dest.get("name") or defaults.destination_type)
        c.name_format = props.get("archiveNameFormat") or defaults.name_format
        if c.destination_type.endswith("AzureDataLake"):
            account, container = props.get("dataLakeAccountName"), props.get("dataLakeFolderPath")
            needed = "dataLakeAccountName and dataLakeFolderPath"
        else:
            resource = str(props.get("storageAccountResourceId") or "")
            account = resource.rstrip("/").rsplit("/", 1)[-1] if resource else None
            container = props.get("blobContainer")
            needed = "storageAccountResourceId and blobContainer"
        if not account or not container:
            raise ValueError(f"captureDescription.destination {c.destination_type} needs {needed}")
        c.storage_account, c.blob_container = str(account), str(container).strip("/")
        if ".." in Path(c.storage_account).parts + Path(c.blob_container).parts:
            raise ValueError("the storage account and container names must not contain '..'")
        c.destination = str(root / c.storage_account / c.blob_container)
        c.storage_connection_string = (accounts or {}).get(c.storage_account)
    elif enabled and c.storage_account is None and current.destination == defaults.destination:
        raise ValueError("captureDescription.destination is required to enable Capture")
    c.validate(where)
    if enabled and not current.enabled:
        c.enabled_at_ms = now_ms
    elif not enabled:
        c.enabled_at_ms = None
    c.enabled = enabled
    return c


def consumer_group(hub_id: str, name: str) -> dict:
    return {"id": f"{hub_id}/consumergroups/{name}", "name": name, "location": LOCATION,
            "type": f"{PROVIDER}/namespaces/eventhubs/consumergroups", "properties": {}}


def authorization_rule(owner_id: str, policy, hub_level: bool) -> dict:
    kind = "namespaces/eventhubs/authorizationRules" if hub_level else "namespaces/authorizationRules"
    return {"id": f"{owner_id}/authorizationRules/{policy.name}", "name": policy.name,
            "location": LOCATION, "type": f"{PROVIDER}/{kind}",
            "properties": {"rights": sorted(policy.rights)}}


def network_rule_set(base: str, rules) -> dict:
    props = {"defaultAction": rules.default_action if rules else "Allow",
             "publicNetworkAccess": rules.public_network_access if rules else "Enabled",
             "ipRules": [{"ipMask": r, "action": "Allow"} for r in (rules.ip_rules if rules else [])],
             "virtualNetworkRules": [], "trustedServiceAccessEnabled": False}
    return {"id": f"{base}/networkRuleSets/default", "name": "default", "location": LOCATION,
            "type": f"{PROVIDER}/Namespaces/NetworkRuleSets", "properties": props}


def application_group(base: str, group) -> dict:
    policies = [{"type": "ThrottlingPolicy", "name": p.name, "rateLimitThreshold": p.rate,
                 "metricId": p.metric} for p in group.policies]
    return {"id": f"{base}/applicationGroups/{group.name}", "name": group.name, "location": LOCATION,
            "type": f"{PROVIDER}/Namespaces/ApplicationGroups",
            "properties": {"isEnabled": group.enabled, "clientAppGroupIdentifier": group.identifier,
                           "policies": policies}}


def schema_group(base: str, group) -> dict:
    return {"id": f"{base}/schemagroups/{group.name}", "name": group.name, "location": LOCATION,
            "type": f"{PROVIDER}/Namespaces/SchemaGroups",
            "properties": {"groupProperties": group.properties, "schemaCompatibility": group.compatibility,
                           "schemaType": group.format}}


def access_keys(policy, primary_cs: str, secondary_cs: str | None) -> dict:
    return {"keyName": policy.name, "primaryKey": policy.primary_key,
            "secondaryKey": policy.secondary_key, "primaryConnectionString": primary_cs,
            "secondaryConnectionString": secondary_cs}
