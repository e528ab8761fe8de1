"""SAS tokens, connection strings and authentication decisions (no network)."""
from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.eventhubs.auth import AuthError, authenticate, authenticate_plain
from kafka_wire.eventhubs.config_file import load
from kafka_wire.eventhubs.model import LISTEN, MANAGE, SEND, EventHubsModel

from .conftest import EMULATOR_CS, MULTI_TOML

NOW = 1_700_000_000
ROOT_KEY = "cm9vdC1rZXktMQ=="


def microsoft_sample_token(uri: str, key: str, policy: str, expiry: int) -> str:
    """The token generator from Microsoft's SAS documentation (Python sample), verbatim logic."""
    sign_key = "%s\n%d" % (urllib.parse.quote_plus(uri), int(expiry))
    signature = base64.b64encode(hmac.HMAC(key.encode("utf-8"), sign_key.encode("utf-8"),
                                           hashlib.sha256).digest())
    raw = {"sr": uri, "sig": signature, "se": str(int(expiry)), "skn": policy}
    return "SharedAccessSignature " + urllib.parse.urlencode(raw)


@pytest.fixture(scope="module")
def model() -> EventHubsModel:
    return load(MULTI_TOML)[0]


def cs_token(token: str, host: str = "contoso.servicebus.windows.net", entity: str | None = None) -> str:
    return connection_string.build(host, signature=token, entity_path=entity)


# -- tokens ---------------------------------------------------------------------------
def test_token_from_microsofts_sample_verifies():
    token = sas.parse(microsoft_sample_token("https://contoso.servicebus.windows.net/orders",
                                             "k3y", "send", NOW + 60))
    assert token.resource == "https://contoso.servicebus.windows.net/orders"
    assert token.skn == "send" and token.se == NOW + 60
    assert sas.verify_signature(token, ["other", "k3y"])
    assert not sas.verify_signature(token, ["K3Y"])


def test_our_tokens_match_the_documented_algorithm():
    ours = sas.parse(sas.generate("https://ns.servicebus.windows.net/hub", "p", "key", NOW))
    theirs = sas.parse(microsoft_sample_token("https://ns.servicebus.windows.net/hub", "key", "p", NOW))
    assert ours == theirs


def test_signature_covers_sr_exactly_as_sent():
    lower = "https%3a%2f%2fcontoso.servicebus.windows.net%2forders"   # .NET escapes in lower case
    sig = urllib.parse.quote(sas.signature("k", lower, NOW), safe="")
    token = sas.parse(f"SharedAccessSignature sr={lower}&sig={sig}&se={NOW}&skn=p")
    assert sas.verify_signature(token, ["k"])
    assert token.resource == "https://contoso.servicebus.windows.net/orders"
    upper = sas.parse(f"SharedAccessSignature sr={lower.upper()}&sig={sig}&se={NOW}&skn=p")
    assert not sas.verify_signature(upper, ["k"])


def test_expiry_tolerates_fifteen_minutes_of_skew():
    token = sas.parse(sas.generate("https://a.servicebus.windows.net/", "p", "k", NOW))
    assert not sas.expired(token, NOW + 14 * 60)
    assert sas.expired(token, NOW + 16 * 60)


@pytest.mark.parametrize("uri, hub, publisher", [
    ("https://ns.servicebus.windows.net/", None, None),
    ("sb://ns.servicebus.windows.net/orders", "orders", None),
    ("amqps://ns.servicebus.windows.net/orders/publishers/dev-1", "orders", "dev-1"),
])
def test_scope_of_resource(uri, hub, publisher):
    scope = sas.scope_of(uri)
    assert (scope.host, scope.hub, scope.publisher) == ("ns.servicebus.windows.net", hub, publisher)


@pytest.mark.parametrize("uri", [
    "https://ns.servicebus.windows.net/orders/partitions/0",
    "sb://ns.servicebus.windows.net/orders/consumergroups/$Default",
    "sb://ns.servicebus.windows.net/orders/ConsumerGroups/g1/Partitions/3",
    "sb://127.0.0.1:5672/orders/$management",  # the JavaScript SDK's management audience
])
def test_scope_of_a_partition_or_consumer_group_is_its_hub(uri):
    # The AMQP SDKs sign for the entity a link addresses.
    scope = sas.scope_of(uri)
    assert (scope.hub, scope.publisher) == ("orders", None)


@pytest.mark.parametrize("uri", ["https://ns.servicebus.windows.net/orders/other/0",
                                 "https://ns.servicebus.windows.net/orders/publishers/a/b"])
def test_scope_of_other_resources_is_refused(uri):
    with pytest.raises(sas.SasError, match="not a namespace"):
        sas.scope_of(uri)


@pytest.mark.parametrize("bad", ["SharedAccessSignature sr=a&sig=b&se=1", "sr=a&sig=b&se=x&skn=p",
                                 "sr=a&sig=b&se=-1000000000000000&skn=p",  # datetime raised on it
                                 "sr=a&sig=b&se=" + "9" * 40 + "&skn=p"])
def test_malformed_tokens(bad):
    with pytest.raises(sas.SasError):
        sas.parse(bad)


@pytest.mark.parametrize("uri", ["sb://[contoso/orders", "sb%3A%2F%2F%5Bcontoso", "https://[::1/x",
                                 "sb://]/orders"])
def test_a_resource_urllib_cannot_split_is_a_sas_error(uri):
    # urllib's ValueError escaped, and the AMQP connection closed with internal-error.
    with pytest.raises(sas.SasError):
        sas.scope_of(urllib.parse.unquote(uri))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(max_size=300) | st.text(alphabet="sr=&sig=se=kn[]:/%0123456789-.", max_size=300))
def test_any_token_text_parses_or_is_a_sas_error(text):
    # Every caller (AMQP $cbs and $management, Kafka SASL, HTTP) turns SasError into its
    # front end's refusal: anything else became a traceback and a dropped connection.
    for candidate in (text, "SharedAccessSignature " + text, f"sr={text}&sig=a&se=1&skn=b",
                      f"sr=a&sig=b&se={text}&skn=c"):
        try:
            token = sas.parse(candidate)
            sas.scope_of(token.resource)
            sas.expired(token, NOW)
        except sas.SasError:
            pass


# -- connection strings ------------------------------------------------------------------
def test_emulator_connection_string_parses():
    cs = connection_string.parse(EMULATOR_CS)
    assert (cs.host, cs.key_name, cs.key, cs.use_development_emulator) == (
        "localhost", "RootManageSharedAccessKey", "SAS_KEY_VALUE", True)


def test_connection_string_keys_are_case_insensitive_and_values_keep_equals():
    cs = connection_string.parse("endpoint=sb://ns.servicebus.windows.net:9093/;"
                                 "sharedaccesskeyname=p;SHAREDACCESSKEY=abc==;entitypath=hub")
    assert (cs.host, cs.port, cs.key, cs.entity_path) == ("ns.servicebus.windows.net", 9093, "abc==", "hub")


@pytest.mark.parametrize("text, why", [
    ("SharedAccessKeyName=p;SharedAccessKey=k", "no Endpoint"),
    ("Endpoint=sb://ns/;SharedAccessKeyName=p", "needs SharedAccessKeyName"),
    ("Endpoint=sb://ns/;garbage", "has no '='"),
])
def test_invalid_connection_strings(text, why):
    with pytest.raises(connection_string.ConnectionStringError, match=why):
        connection_string.parse(text)


# -- authentication ------------------------------------------------------------------------
def test_key_authentication(model):
    p = authenticate(model, connection_string.build(
        "contoso.servicebus.windows.net", key_name="RootManageSharedAccessKey", key=ROOT_KEY))
    assert (p.namespace, p.policy, p.hub) == ("contoso", "RootManageSharedAccessKey", None)
    assert p.rights == {SEND, LISTEN, MANAGE}


def test_secondary_key_works_too(model):
    p = authenticate(model, connection_string.build(
        "localhost", key_name="RootManageSharedAccessKey", key="cm9vdC1rZXktMg=="))
    assert p.namespace == "contoso"


def test_wrong_key_is_refused(model):
    with pytest.raises(AuthError, match="SharedAccessKey for policy 'sender' is wrong"):
        authenticate(model, connection_string.build("contoso.servicebus.windows.net",
                                                    key_name="sender", key=ROOT_KEY))


def test_unknown_namespace_endpoint_is_refused(model):
    with pytest.raises(AuthError, match="does not serve"):
        authenticate(model, connection_string.build("northwind.servicebus.windows.net",
                                                    key_name="RootManageSharedAccessKey", key=ROOT_KEY))


def test_key_of_one_namespace_is_refused_by_another(model):
    with pytest.raises(AuthError, match="wrong"):
        authenticate(model, connection_string.build("fabrikam.servicebus.windows.net",
                                                    key_name="RootManageSharedAccessKey", key=ROOT_KEY))


def test_entity_path_scopes_to_a_hub(model):
    p = authenticate(model, connection_string.build("contoso.servicebus.windows.net",
                                                    key_name="listener", key="bGlzdGVuLWtleQ==",
                                                    entity_path="orders"))
    assert (p.hub, p.rights) == ("orders", {LISTEN})


def test_hub_policy_only_for_its_hub(model):
    good = authenticate(model, connection_string.build(
        "contoso.servicebus.windows.net", key_name="orders-writer", key="b3JkZXJzLWtleQ==",
        entity_path="orders"))
    assert good.hub == "orders"
    with pytest.raises(AuthError, match="not defined"):
        authenticate(model, connection_string.build(
            "contoso.servicebus.windows.net", key_name="orders-writer", key="b3JkZXJzLWtleQ==",
            entity_path="payments"))


def test_sas_token_authentication_and_scope(model):
    token = sas.generate("https://contoso.servicebus.windows.net/orders", "sender", "c2VuZC1rZXk=",
                         NOW + 3600)
    p = authenticate(model, cs_token(token), now_s=NOW)
    assert (p.namespace, p.hub, p.rights, p.expires_s) == ("contoso", "orders", {SEND}, NOW + 3600)


def test_expired_token_is_refused(model):
    token = sas.generate("https://contoso.servicebus.windows.net/", "sender", "c2VuZC1rZXk=", NOW)
    with pytest.raises(AuthError, match="expired"):
        authenticate(model, cs_token(token), now_s=NOW + 3600)


def test_token_signed_with_wrong_key_is_refused(model):
    token = sas.generate("https://contoso.servicebus.windows.net/", "sender", "bad", NOW + 60)
    with pytest.raises(AuthError, match="signature does not match"):
        authenticate(model, cs_token(token), now_s=NOW)


def test_token_for_another_namespace_is_refused(model):
    token = sas.generate("https://fabrikam.servicebus.windows.net/", "RootManageSharedAccessKey",
                         "ZmFicmlrYW0ta2V5", NOW + 60)
    with pytest.raises(AuthError, match="not for namespace 'contoso'"):
        authenticate(model, cs_token(token), now_s=NOW)


def test_token_scope_must_agree_with_entity_path(model):
    token = sas.generate("https://contoso.servicebus.windows.net/orders", "sender", "c2VuZC1rZXk=",
                         NOW + 60)
    with pytest.raises(AuthError, match="not EntityPath 'payments'"):
        authenticate(model, cs_token(token, entity="payments"), now_s=NOW)


def test_publisher_token_is_send_only(model):
    token = sas.generate("https://contoso.servicebus.windows.net/orders/publishers/dev-1",
                         "RootManageSharedAccessKey", ROOT_KEY, NOW + 60)
    p = authenticate(model, cs_token(token), now_s=NOW)
    assert (p.hub, p.publisher, p.rights) == ("orders", "dev-1", {SEND})
    listen_only = sas.generate("https://contoso.servicebus.windows.net/orders/publishers/dev-1",
                               "listener", "bGlzdGVuLWtleQ==", NOW + 60)
    with pytest.raises(AuthError, match="needs the Send right"):
        authenticate(model, cs_token(listen_only), now_s=NOW)


def test_open_namespace_accepts_any_connection_string_for_it():
    model = EventHubsModel.single("emulatorNs1")
    p = authenticate(model, "Endpoint=sb://localhost;SharedAccessKeyName=x;SharedAccessKey=y")
    assert p.namespace == "emulatorNs1" and MANAGE in p.rights
    with pytest.raises(AuthError, match="does not serve"):
        authenticate(model, "Endpoint=sb://other1.servicebus.windows.net/;SharedAccessKeyName=x;"
                            "SharedAccessKey=y")


def test_plain_username_must_be_connection_string(model):
    with pytest.raises(AuthError, match=r"\$ConnectionString"):
        authenticate_plain(model, b"\x00alice\x00secret")
    p = authenticate_plain(model, b"\x00$ConnectionString\x00" + connection_string.build(
        "localhost", key_name="RootManageSharedAccessKey", key=ROOT_KEY).encode())
    assert p.namespace == "contoso"
