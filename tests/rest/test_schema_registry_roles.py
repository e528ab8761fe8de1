"""Who may read and write the Schema Registry: Azure's registry roles (Schema Registry Reader
reads, including POST ...:get-id, a lookup by content; Schema Registry Contributor also
registers), Azure Event Hubs Data Owner both, and the Event Hubs data roles (Sender,
Receiver) neither. Azure's registry takes no SAS; here a namespace-wide SAS policy with
Manage stands in for Data Owner, and Send or Listen alone reach nothing."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError
from azure.schemaregistry import SchemaRegistryClient

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.config_toml import namespace_config, sas_policy, toml_text

NS = "srspace"
HOST = f"{NS}.servicebus.windows.net"
SECRET = "local-signing-secret"
ROOT_KEY, LISTEN_KEY, SEND_KEY = "cm9vdC1rZXk=", "bGlzdGVuLWtleQ==", "c2VuZC1rZXk="
CONFIG = toml_text(namespace_config(
    NS, oauth={"hs256_keys": [SECRET]},
    policies={"RootManageSharedAccessKey": sas_policy(ROOT_KEY), "listen": sas_policy(LISTEN_KEY, "Listen"),
              "sender": sas_policy(SEND_KEY, "Send", "Listen")},
    hubs={"orders": {"partitions": 1, "policies": {"hubowner": sas_policy(ROOT_KEY, "Manage")}}}))
GROUP, NAME = "g1", "shop.Order"
SCHEMA = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                     "fields": [{"name": "id", "type": "string"}]})
AVRO = "application/json; serialization=Avro"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(roles, secret: str = SECRET, exp_in: int = 3600) -> str:
    claims = {"aud": f"https://{HOST}", "sub": "app", "exp": int(time.time()) + exp_in, "roles": roles}
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    sig = hmac.new(secret.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


def sas_token(policy: str, key: str, resource: str = "") -> str:
    return sas.generate(f"https://{HOST}/{resource}", policy, key, int(time.time()) + 3600)


def call(url: str, method: str, auth: str | None, body: bytes | None = None, ctype: str | None = None):
    headers = {"Host": HOST}
    if auth is not None:
        headers["Authorization"] = auth
    if ctype:
        headers["Content-Type"] = ctype
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A namespace with OAuth and SAS policies, group g1 holding one schema (id in .schema_id)."""
    tmp = tmp_path_factory.mktemp("sr-roles")
    (tmp / "c.toml").write_text(CONFIG)
    with EmulatedBroker(tmp / "data", config_file=tmp / "c.toml", http=True, tls=True) as b:
        root = sas_token("RootManageSharedAccessKey", ROOT_KEY)
        group = (f"{b.http_url}/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/"
                 f"providers/Microsoft.EventHub/namespaces/{NS}/schemagroups/{GROUP}?api-version=2022-10-01-preview")
        status, _ = call(group, "PUT", root, json.dumps({"properties": {
            "schemaType": "Avro", "schemaCompatibility": "None"}}).encode(), "application/json")
        assert status == 200
        status, _ = call(_put(b), "PUT", root, SCHEMA.encode(), AVRO)
        assert status == 204
        b.schema_id = _get_id(b, root)[1]
        yield b


def _put(b) -> str:
    return f"{b.http_url}/$schemaGroups/{GROUP}/schemas/{NAME}?api-version=2022-10"


def _get_id(b, auth) -> tuple[int, str | None]:
    url = f"{b.http_url}/$schemaGroups/{GROUP}/schemas/{NAME}:get-id?api-version=2022-10"
    req = urllib.request.Request(url, data=SCHEMA.encode(), method="POST",
                                 headers={"Host": HOST, "Content-Type": AVRO,
                                          **({"Authorization": auth} if auth else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Schema-Id")
    except urllib.error.HTTPError as e:
        return e.code, None


def _reads(b, auth) -> list[int]:
    """The statuses of every read the SDK makes."""
    base = f"{b.http_url}/$schemaGroups"
    v = "?api-version=2022-10"
    return [call(base + v, "GET", auth)[0],
            call(f"{base}/{GROUP}/schemas/{NAME}/versions{v}", "GET", auth)[0],
            call(f"{base}/{GROUP}/schemas/{NAME}/versions/1{v}", "GET", auth)[0],
            call(f"{base}/$schemas/{b.schema_id}{v}", "GET", auth)[0],
            _get_id(b, auth)[0]]


READ_OK = [200, 200, 200, 200, 204]
NONE = [401] * 5

CASES = {  # credential -> (reads, register)
    "Schema Registry Reader": (READ_OK, 401),
    "Schema Registry Reader (Preview)": (READ_OK, 401),
    "Schema Registry Contributor": (READ_OK, 204),
    "schema registry contributor (preview)": (READ_OK, 204),  # (role names: any case)
    "Azure Event Hubs Data Owner": (READ_OK, 204),
    "Azure Event Hubs Data Sender": (NONE, 401),
    "Azure Event Hubs Data Receiver": (NONE, 401),
    "no role": (NONE, 401),
}


@pytest.mark.parametrize("role", list(CASES))
def test_registry_roles_decide_reads_and_registers(registry, role):
    b = registry
    auth = "Bearer " + jwt([] if role == "no role" else [role])
    reads, register = CASES[role]
    assert _reads(b, auth) == reads
    status, body = call(_put(b), "PUT", auth, SCHEMA.encode(), AVRO)
    assert status == register, body
    if status == 401:
        error = json.loads(body)["error"]
        assert error["code"] == "Unauthorized" and "Schema Registry Contributor" in error["message"]


CREDENTIALS = [
    ("manage SAS", sas_token("RootManageSharedAccessKey", ROOT_KEY), READ_OK, 204),
    ("manage SAS as a bearer token", "Bearer " + sas_token("RootManageSharedAccessKey", ROOT_KEY),
     READ_OK, 204),
    ("listen SAS", sas_token("listen", LISTEN_KEY), NONE, 401),
    ("send and listen SAS", sas_token("sender", SEND_KEY), NONE, 401),
    ("a hub's manage SAS", sas_token("hubowner", ROOT_KEY, "orders"), NONE, 401),
    ("no credential", None, NONE, 401),
    ("a wrong SAS key", sas_token("RootManageSharedAccessKey", "d3Jvbmc="), NONE, 401),
    ("a JWT signed with another key", "Bearer " + jwt(["Azure Event Hubs Data Owner"], "other"), NONE, 401),
    ("an expired JWT", "Bearer " + jwt(["Azure Event Hubs Data Owner"], exp_in=-3600), NONE, 401),
    ("a malformed bearer", "Bearer a.b.c", NONE, 401),
    ("a huge header", "Bearer " + "x" * 60_000, [431] * 5, 431),  # (the listener's head limit)
]


@pytest.mark.parametrize("name,auth,reads,register", CREDENTIALS, ids=[c[0] for c in CREDENTIALS])
def test_sas_and_bad_credentials(registry, name, auth, reads, register):
    b = registry
    assert _reads(b, auth) == reads, name
    assert call(_put(b), "PUT", auth, SCHEMA.encode(), AVRO)[0] == register, name


@pytest.mark.parametrize("path", ["/$schemaGroups/..%2F..%2Fetc/schemas/x/versions",
                                  "/$schemaGroups/g1/schemas/" + "n" * 5000 + ":get-id",
                                  "/$schemaGroups/g1/schemas/shop.Order/versions/-1"])
def test_a_reader_meets_odd_paths_with_answers_not_errors(registry, path):
    status, body = call(f"{registry.http_url}{path}?api-version=2022-10",
                        "POST" if path.endswith(":get-id") else "GET",
                        "Bearer " + jwt(["Schema Registry Reader"]), SCHEMA.encode(), AVRO)
    assert status in (400, 404, 405) and "error" in json.loads(body)


class JwtCredential:
    def __init__(self, role: str) -> None:
        self.role = role

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        return AccessToken(jwt([self.role]), int(time.time()) + 3600)


def test_the_sdk_reads_with_a_reader_and_registers_with_a_contributor(registry):
    b = registry
    port = b.https_url.rsplit(":", 1)[1]

    def client(role):
        return SchemaRegistryClient(f"localhost:{port}", JwtCredential(role),
                                    connection_verify=str(b.ca_file))

    reader = client("Schema Registry Reader")
    assert reader.get_schema(b.schema_id).definition == SCHEMA
    assert reader.get_schema_properties(GROUP, NAME, SCHEMA, "Avro").id == b.schema_id
    with pytest.raises(HttpResponseError) as refused:
        reader.register_schema(GROUP, NAME, SCHEMA, "Avro")
    assert refused.value.status_code == 401
    assert client("Schema Registry Contributor").register_schema(GROUP, NAME, SCHEMA, "Avro").id == b.schema_id
    with pytest.raises(HttpResponseError) as refused:
        client("Azure Event Hubs Data Sender").get_schema(b.schema_id)
    assert refused.value.status_code == 401
