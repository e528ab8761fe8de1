"""Entra ID tokens (local stand-ins) on every front end, as Event Hubs takes them:

- a Basic namespace has no Kafka endpoint, yet takes Entra tokens over AMQP and HTTPS;
- the Azure SDKs ask Entra for ``https://eventhubs.azure.net`` whatever the namespace, and
  such a token is good for the namespace the client names by host (AMQP's open hostname,
  HTTP's Host); Kafka names no host, so there it is the default namespace's;
- an application group ``AADAppID=<id>`` holds the clients whose token carries that
  application id (``appid``, else ``azp``), and no SAS policy of that name; ``SASKeyName=``
  holds SAS clients only;
- an open namespace takes an SDK's TokenCredential over AMQP, as it takes anyone.

Real clients: the azure-eventhub SDK with a TokenCredential, REST over HTTP, Kafka SASL."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from azure.core.credentials import AccessToken
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient, TransportType
from azure.eventhub.exceptions import EventHubError

from kafka_wire import codec
from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import receive
from tests.eventhubs.test_oauth import OWNER, SENDER, claims, jwt
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

FIRST_KEY, SECOND_KEY = "first-secret", "second-secret"
ROOT_KEY = "cm9vdC1rZXk="
SEND_KEY = "c2VuZC1rZXk="
APP = "11111111-2222-3333-4444-555555555555"
OTHER_APP = "99999999-8888-7777-6666-555555555555"
GLOBAL = "https://eventhubs.azure.net"
SUB = "00000000-0000-0000-0000-000000000000"
TOPIC_DENIED = 29
SASL_FAILED = 58


def _namespace(name: str, tier: str, key: str, extra: str = "") -> str:
    return f'''
[namespaces.{name}]
tier = "{tier}"
mode = "strict"
[namespaces.{name}.policies.RootManageSharedAccessKey]
primary_key = "{ROOT_KEY}"
[namespaces.{name}.oauth]
hs256_keys = ["{key}"]
[namespaces.{name}.eventhubs.orders]
partitions = 1
retention_hours = 24
{extra}'''


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("entra")
    apps = f'''[namespaces.apps-ns.policies.{APP}]
primary_key = "{SEND_KEY}"
rights = ["Send"]
[namespaces.apps-ns.policies.sender]
primary_key = "{SEND_KEY}"
rights = ["Send"]
'''
    (d / "entra.toml").write_text('default_namespace = "first-ns"\n'
                                  + _namespace("first-ns", "Standard", FIRST_KEY)
                                  + _namespace("second-ns", "Standard", SECOND_KEY)
                                  + _namespace("basic-ns", "Basic", FIRST_KEY)
                                  + _namespace("apps-ns", "Premium", FIRST_KEY, apps))
    with EmulatedBroker(d / "data", config_file=d / "entra.toml", http=True, amqp=True) as b:
        yield b


def token(ns: str | None = "first-ns", *, key: str = FIRST_KEY, roles=(OWNER,), **extra) -> str:
    """A signed JWT; ``ns`` None: the global audience the SDKs ask for."""
    aud = GLOBAL if ns is None else f"https://{ns}.servicebus.windows.net"
    return jwt(claims(roles=roles, aud=aud, **extra), key=key)


# -- the three front ends -----------------------------------------------------------------------
def rest_send(broker, ns: str, authorization: str | None) -> tuple[int, str]:
    """POST one event to ``ns``'s hub orders over HTTP: (status, body)."""
    headers = {"Host": f"{ns}.servicebus.windows.net",
               "Content-Type": "application/atom+xml;type=entry;charset=utf-8"}
    if authorization is not None:
        headers["Authorization"] = authorization
    req = urllib.request.Request(f"{broker.http_url}/orders/messages", data=b"event", method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Credential:
    """A TokenCredential: ``make(scope)`` mints the token; the scopes asked are kept."""

    def __init__(self, make) -> None:
        self.make, self.scopes = make, []

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        self.scopes.extend(scopes)
        return AccessToken(self.make(scopes[0] if scopes else None), int(time.time()) + 3600)


def _sdk(broker, ns: str) -> dict:
    return dict(fully_qualified_namespace=f"{ns}.servicebus.windows.net", eventhub_name="orders",
                use_tls=False, transport_type=TransportType.Amqp, retry_total=0,
                custom_endpoint_address=f"sb://127.0.0.1:{broker.amqp_port}")


def amqp_send(broker, ns: str, credential) -> list[str]:
    """The SDK's partition ids ($management) and one event sent to partition 0."""
    with EventHubProducerClient(credential=credential, **_sdk(broker, ns)) as producer:
        ids = producer.get_partition_ids()
        producer.send_batch([EventData("by token")], partition_id="0")
    return ids


def amqp_refused(broker, ns: str, credential) -> str:
    """The error an SDK send with ``credential`` meets."""
    with pytest.raises(EventHubError) as caught:
        with EventHubProducerClient(credential=credential, **_sdk(broker, ns)) as producer:
            producer.send_batch([EventData("x")], partition_id="0")
    return str(caught.value)


def kafka_login(broker, jwt_text: str) -> tuple[int, str | None, RawClient]:
    """SASL OAUTHBEARER with ``jwt_text``: (error code, message, the open client)."""
    c = RawClient(broker.bootstrap_servers)
    c.request(codec.ApiKey.SaslHandshake, 1, mechanism="OAUTHBEARER")
    answer = c.request(codec.ApiKey.SaslAuthenticate, 2,
                       auth_bytes=b"n,,\x01auth=Bearer " + jwt_text.encode() + b"\x01\x01")
    return answer.error_code, answer.error_message, c


def kafka_produce(client: RawClient, topic: str = "orders") -> int:
    Req = codec.request_class(codec.ApiKey.Produce)
    T = Req.TopicProduceData
    answer = client.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=1, timeout_ms=10000,
                            topic_data=[T(name=topic, partition_data=[T.PartitionProduceData(
                                index=0, records=make_batch(1, value_size=10))])])
    return answer.responses[0].partition_responses[0].error_code


def kafka_sends(broker, jwt_text: str) -> int:
    """Log in with ``jwt_text`` and produce one event: the Produce error code."""
    error, message, c = kafka_login(broker, jwt_text)
    with c:
        assert error == 0, message
        return kafka_produce(c)


# -- a Basic namespace: no Kafka endpoint, Entra tokens over AMQP and HTTPS --------------------
def test_a_basic_namespace_takes_entra_tokens_over_amqp_and_https_but_has_no_kafka(broker):
    good = token("basic-ns", roles=[SENDER])
    assert rest_send(broker, "basic-ns", f"Bearer {good}") == (201, "")
    assert amqp_send(broker, "basic-ns", Credential(lambda _scope: good)) == ["0"]
    # still no Kafka endpoint, whatever the credential
    error, message, c = kafka_login(broker, good)
    c.close()
    assert error == SASL_FAILED and "Basic tier, which has no Kafka endpoint" in message
    # without a credential, or with a wrong one, HTTP and AMQP still refuse, for that reason
    assert rest_send(broker, "basic-ns", None)[0] == 401
    status, body = rest_send(broker, "basic-ns", f"Bearer {token('basic-ns', key='wrong')}")
    assert status == 401 and "matches no key" in body and "Basic" not in body
    why = amqp_refused(broker, "basic-ns", Credential(lambda _scope: token("basic-ns", key="wrong")))
    assert "matches no key" in why


# -- the global audience: the namespace the host names ----------------------------------------
def test_the_global_audience_is_good_for_the_namespace_the_host_names(broker):
    # second-ns is not the default namespace, and trusts its own key only
    assert rest_send(broker, "second-ns", f"Bearer {token(None, key=SECOND_KEY)}") == (201, "")
    missing_aud = jwt({k: v for k, v in claims().items() if k != "aud"}, key=SECOND_KEY)
    assert rest_send(broker, "second-ns", f"Bearer {missing_aud}") == (201, "")
    both = jwt(claims(aud=["https://first-ns.servicebus.windows.net",
                           "https://second-ns.servicebus.windows.net"]), key=SECOND_KEY)
    assert rest_send(broker, "second-ns", f"Bearer {both}") == (201, "")
    assert rest_send(broker, "first-ns", f"Bearer {token(None)}") == (201, "")

    # the SDK asks for the global scope; its token is taken on $cbs and $management
    credential = Credential(lambda scope: jwt(claims(aud=scope.removesuffix("/.default")),
                                              key=SECOND_KEY))
    assert amqp_send(broker, "second-ns", credential) == ["0"]
    # (the SDK asks for "https://eventhubs.azure.net//.default"; its aud keeps a slash)
    assert {s.removesuffix("/.default").rstrip("/") for s in credential.scopes} == {GLOBAL}


def test_a_token_for_another_namespace_or_key_is_still_refused(broker):
    status, body = rest_send(broker, "second-ns", f"Bearer {token('first-ns')}")
    assert status == 401 and "for namespace 'first-ns', not 'second-ns'" in body
    status, body = rest_send(broker, "second-ns", f"Bearer {token(None, key=FIRST_KEY)}")
    assert status == 401 and "matches no key namespace 'second-ns' trusts" in body
    status, body = rest_send(broker, "second-ns", f"Bearer {jwt(claims(aud=12345), key=SECOND_KEY)}")
    assert status == 401 and "'aud' claim must be a string" in body
    assert rest_send(broker, "second-ns", None)[0] == 401
    why = amqp_refused(broker, "second-ns", Credential(lambda _scope: token("first-ns")))
    assert "for namespace 'first-ns', not 'second-ns'" in why
    why = amqp_refused(broker, "second-ns", Credential(lambda _scope: token(None, key=FIRST_KEY)))
    assert "matches no key" in why


def test_kafka_names_no_host_so_the_global_audience_is_the_default_namespaces(broker):
    """Kafka clients ask Entra for https://<namespace>.servicebus.windows.net; a global
    token selects the default namespace (first-ns), whose key must have signed it."""
    assert kafka_sends(broker, token(None)) == 0
    error, message, c = kafka_login(broker, token(None, key=SECOND_KEY))
    c.close()
    assert error == SASL_FAILED and "namespace 'first-ns'" in message
    assert kafka_sends(broker, token("second-ns", key=SECOND_KEY)) == 0


# -- application groups: SASKeyName= for SAS clients, AADAppID= for Entra applications ----------
def _group(broker, name: str, identifier: str | None, enabled: bool = False) -> None:
    """Create (identifier) or delete (None) application group ``name`` of apps-ns."""
    host = "apps-ns.servicebus.windows.net"
    root = sas.generate(f"https://{host}/", "RootManageSharedAccessKey", ROOT_KEY, int(time.time()) + 3600)
    url = (f"{broker.http_url}/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.EventHub/"
           f"namespaces/apps-ns/applicationGroups/{name}?api-version=2024-01-01")
    body = None if identifier is None else json.dumps({"properties": {
        "clientAppGroupIdentifier": identifier, "isEnabled": enabled}}).encode()
    req = urllib.request.Request(url, data=body, method="DELETE" if body is None else "PUT",
                                 headers={"Host": host, "Authorization": root,
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (200, 201, 204)


@pytest.fixture
def aad_group(broker):
    _group(broker, "entra-app", f"AADAppID={APP}")
    yield
    _group(broker, "entra-app", None)


def app_token(key: str = FIRST_KEY, **ids) -> str:
    return token("apps-ns", key=key, roles=[SENDER], **ids)


def sas_header(policy: str, key: str = SEND_KEY) -> str:
    return sas.generate("https://apps-ns.servicebus.windows.net/orders", policy, key, int(time.time()) + 3600)


def test_a_disabled_aad_app_group_refuses_its_application_on_every_front_end(broker, aad_group):
    for ids in ({"appid": APP, "sub": "someone"}, {"azp": APP}, {"appid": APP.upper()}):
        status, body = rest_send(broker, "apps-ns", f"Bearer {app_token(**ids)}")
        assert status == 401 and "application group 'entra-app'" in body and "disabled" in body, ids
    why = amqp_refused(broker, "apps-ns", Credential(lambda _scope: app_token(appid=APP)))
    assert "entra-app" in why and "disabled" in why
    assert kafka_sends(broker, app_token(appid=APP)) == TOPIC_DENIED


def test_an_aad_app_group_holds_no_other_client(broker, aad_group):
    # another application, a subject or a SAS policy named like the id, a v1 appid of
    # another app beside the group's azp (appid wins), and ids that only look like it
    others = [{"appid": OTHER_APP}, {"sub": APP}, {"oid": APP}, {"appid": OTHER_APP, "azp": APP},
              {"appid": f"../{APP}"}, {"appid": f"AADAppID={APP}"}, {"appid": f"{APP}/x"},
              {"appid": f"{APP} "}, {"appid": ""}]
    for ids in others:
        assert rest_send(broker, "apps-ns", f"Bearer {app_token(**ids)}") == (201, ""), ids
    assert rest_send(broker, "apps-ns", sas_header(APP)) == (201, "")
    assert amqp_send(broker, "apps-ns", Credential(lambda _scope: app_token(appid=OTHER_APP))) == ["0"]
    assert kafka_sends(broker, app_token(appid=OTHER_APP)) == 0
    # a token without a credential, or one signed with a wrong key, is refused before any group
    assert rest_send(broker, "apps-ns", None)[0] == 401
    status, body = rest_send(broker, "apps-ns", f"Bearer {app_token(key='wrong', appid=APP)}")
    assert status == 401 and "matches no key" in body


@pytest.mark.parametrize("appid, why", [
    (12345, "'appid' claim must be a string"),
    ([APP], "'appid' claim must be a string"),
    ({"id": APP}, "'appid' claim must be a string"),
    (True, "'appid' claim must be a string"),
    ("x" * 257, "'appid' claim is 257 characters long"),
    (APP * 200, "characters long"),
])
def test_a_malformed_application_id_refuses_the_token(broker, aad_group, appid, why):
    """Read as absent, it would let an application out of its group."""
    status, body = rest_send(broker, "apps-ns", f"Bearer {app_token(appid=appid)}")
    assert status == 401 and why in body
    status, body = rest_send(broker, "apps-ns", f"Bearer {app_token(azp=appid)}")
    assert status == 401 and why.replace("appid", "azp") in body
    error, message, c = kafka_login(broker, app_token(appid=appid))
    c.close()
    assert error == SASL_FAILED and why in message


def test_a_malformed_application_id_is_refused_over_amqp(broker):
    why = amqp_refused(broker, "apps-ns", Credential(lambda _scope: app_token(appid=["not", "an", "id"])))
    assert "'appid' claim must be a string" in why


def test_a_sas_key_name_group_holds_sas_clients_only(broker):
    _group(broker, "sas-app", "SASKeyName=sender")
    # (an Entra client shows as oauth:<sub>: a group named so must not take it for a key)
    _group(broker, "sas-oauth", "SASKeyName=oauth:sender")
    try:
        status, body = rest_send(broker, "apps-ns", sas_header("sender"))
        assert status == 401 and "application group 'sas-app'" in body
        for ids in ({"appid": "sender", "sub": "sender"}, {"sub": "oauth:sender"}, {"azp": "sender"}):
            assert rest_send(broker, "apps-ns", f"Bearer {app_token(**ids)}") == (201, ""), ids
        assert kafka_sends(broker, app_token(sub="sender")) == 0
        status, body = rest_send(broker, "apps-ns", sas_header("sender", key="d3Jvbmc="))
        assert status == 401 and "signature does not match" in body
    finally:
        _group(broker, "sas-app", None)
        _group(broker, "sas-oauth", None)
    assert rest_send(broker, "apps-ns", sas_header("sender")) == (201, "")


# -- an open namespace takes a TokenCredential over AMQP, as it takes anyone --------------------
def test_an_open_namespace_takes_a_token_credential_over_amqp(tmp_path):
    unsigned = jwt(claims(aud=GLOBAL, roles=[]), key="no key checks this")
    with EmulatedBroker(tmp_path / "data", amqp=True, http=True) as b:
        ns = b.config.default_namespace
        b.create_hub("orders", 1)
        for text in (unsigned, "not-a-jwt-at-all"):
            assert amqp_send(b, ns, Credential(lambda _scope, t=text: t)) == ["0"]
        consumer = EventHubConsumerClient(credential=Credential(lambda _scope: unsigned),
                                          consumer_group="$Default", **_sdk(b, ns))
        got = receive(consumer, 2, partition_id="0", starting_position="-1")
        assert [e.body_as_str() for _, e in got] == ["by token", "by token"]
        # HTTP takes it too, as it always did
        status, _ = rest_send(b, ns, f"Bearer {unsigned}")
        assert status == 201


def test_a_token_on_a_namespace_with_neither_oauth_nor_openness_is_still_refused_over_amqp(tmp_path):
    d = tmp_path
    (d / "sas.toml").write_text(f'''default_namespace = "sas-ns"
[namespaces.sas-ns]
tier = "Standard"
[namespaces.sas-ns.policies.RootManageSharedAccessKey]
primary_key = "{ROOT_KEY}"
[namespaces.sas-ns.eventhubs.orders]
partitions = 1
''')
    with EmulatedBroker(d / "data", config_file=d / "sas.toml", amqp=True) as b:
        why = amqp_refused(b, "sas-ns", Credential(lambda _scope: token("sas-ns")))
        assert "token type 'jwt' is not accepted here" in why
