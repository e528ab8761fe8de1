"""Resource shapes of the Azure Resource Manager API for Event Hubs (the JSON
``azure-mgmt-eventhub`` reads and writes), and its error bodies."""
from __future__ import annotations

import json

from kafka_wire.rest.http import Response

PROVIDER = "Microsoft.EventHub"
JSON = "application/json; charset=utf-8"
# The service's api-versions for Microsoft.EventHub (Azure's "resource types and versions"
# list): what azure-mgmt-eventhub 11 (its profiles) and 12 (2026-01-01) send. Their
# shapes agree where kafka-wire reads and writes them.
API_VERSIONS = frozenset({"2014-09-01", "2015-08-01", "2017-04-01", "2018-01-01-preview",
                          "2021-01-01-preview", "2021-06-01-preview", "2021-11-01", "2022-01-01-preview",
                          "2022-10-01-preview", "2023-01-01-preview", "2024-01-01", "2024-05-01-preview",
                          "2025-05-01-preview", "2026-01-01"})
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
