"""SASL/OAUTHBEARER with local tokens: HS256 and RS256 signatures, unsigned
tokens where allowed, the audience selecting the namespace, expiry, and the
Azure Event Hubs data roles becoming Send/Listen/Manage; confluent-kafka
(librdkafka's oauth_cb) authenticates with them end to end."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from kafka_wire import codec
from kafka_wire.eventhubs.config_file import load_toml
from kafka_wire.eventhubs.model import LISTEN, MANAGE, SEND
from kafka_wire.eventhubs.oauth import TokenError, authenticate_token, parse_client_first
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

SECRET = "local-signing-secret"
OWNER, SENDER, RECEIVER = ("Azure Event Hubs Data Owner", "Azure Event Hubs Data Sender",
                           "Azure Event Hubs Data Receiver")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims: dict, *, alg: str = "HS256", key: str = SECRET, private_key=None) -> str:
    head = _b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    signed = f"{head}.{body}".encode()
    if alg == "none":
        sig = b""
    elif alg in ("HS256", "HS512"):
        digest = hashlib.sha256 if alg == "HS256" else hashlib.sha512
        sig = hmac.new(key.encode(), signed, digest).digest()
    else:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        sig = private_key.sign(signed, padding.PKCS1v15(), hashes.SHA256())
    return f"{head}.{body}.{_b64(sig)}"


def claims(ns: str = "oauth-ns", roles=(OWNER,), ttl: int = 3600, **extra) -> dict:
    now = int(time.time())
    out = {"aud": f"https://{ns}.servicebus.windows.net", "sub": "app-1", "iat": now,
           "exp": now + ttl, "roles": list(roles)}
    out.update(extra)
    return out


@pytest.fixture(scope="module")
def rsa_key():
    from cryptography.hazmat.primitives.asymmetric import rsa
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def config(tmp_path_factory, rsa_key):
    from cryptography.hazmat.primitives import serialization

    d = tmp_path_factory.mktemp("oauth")
    (d / "rs256.pem").write_bytes(rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (d / "oauth.toml").write_text(f'''
default_namespace = "oauth-ns"

[namespaces.oauth-ns]
tier = "Standard"
[namespaces.oauth-ns.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXk="
[namespaces.oauth-ns.oauth]
hs256_keys = ["{SECRET}"]
public_key_files = ["rs256.pem"]
issuer = "https://login.local/tenant/"
[namespaces.oauth-ns.eventhubs.telemetry]
partitions = 1

[namespaces.unsigned-ns]
tier = "Standard"
[namespaces.unsigned-ns.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXk="
[namespaces.unsigned-ns.oauth]
allow_unsigned = true

[namespaces.sas-only-ns]
tier = "Standard"
[namespaces.sas-only-ns.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXk="
''')
    return d / "oauth.toml"


@pytest.fixture(scope="module")
def model(config):
    from kafka_wire.eventhubs.config_file import load
    return load(config)[0]


ISS = {"iss": "https://login.local/tenant/"}


# -- the SASL message ---------------------------------------------------------------------------
def test_client_first_message_is_parsed_with_authzid_and_extensions():
    assert parse_client_first(b"n,,\x01auth=Bearer abc.def.\x01\x01") == ("abc.def.", {})
    token, ext = parse_client_first(b"n,a=user,\x01auth=Bearer t.t.t\x01traceId=7\x01\x01")
    assert (token, ext) == ("t.t.t", {"traceId": "7"})
    for bad in (b"", b"p,,\x01auth=Bearer x\x01\x01", b"n,,\x01auth=Basic x\x01\x01",
                b"n,,\x01nothing\x01\x01", b"\xff\xfe"):
        with pytest.raises(TokenError):
            parse_client_first(bad)


# -- tokens --------------------------------------------------------------------------------------
def test_signed_tokens_give_the_roles_rights_in_the_audiences_namespace(model, rsa_key):
    now = time.time()
    p = authenticate_token(model, jwt(claims(roles=[SENDER], **ISS)), now)
    assert (p.namespace, p.rights, p.policy) == ("oauth-ns", frozenset({SEND}), "oauth:app-1")
    p = authenticate_token(model, jwt(claims(roles=[OWNER], **ISS), alg="RS256",
                                      private_key=rsa_key), now)
    assert p.rights == frozenset({SEND, LISTEN, MANAGE})
    p = authenticate_token(model, jwt(claims(roles=[], scope="Listen", **ISS)), now)
    assert p.rights == frozenset({LISTEN})
    assert authenticate_token(model, jwt(claims(roles=[RECEIVER], **ISS)), now).rights == \
        frozenset({LISTEN})


@pytest.mark.parametrize("token, why", [
    (lambda k: jwt(claims(**ISS), key="wrong"), "matches no key"),
    (lambda k: jwt(claims(ttl=-3600, **ISS)), "expired"),
    (lambda k: jwt(claims(nbf=int(time.time()) + 3600, **ISS)), "not valid before"),
    (lambda k: jwt(claims(iss="https://elsewhere/")), "issuer"),
    (lambda k: jwt(claims(**ISS), alg="none"), "refuses unsigned"),
    (lambda k: jwt(claims(ns="nowhere", **ISS)), "names no namespace"),
    (lambda k: jwt({k: v for k, v in claims(**ISS).items() if k != "exp"}), "no 'exp'"),
    (lambda k: jwt(claims(ns="sas-only-ns")), "does not accept OAUTHBEARER"),
    (lambda k: jwt(claims(**ISS), alg="HS512"), "not supported"),
    (lambda k: "not-a-jwt", "not a JWT"),
])
def test_bad_tokens_are_refused_with_the_reason(model, rsa_key, token, why):
    with pytest.raises(TokenError, match=why):
        authenticate_token(model, token(rsa_key), time.time())


def test_a_tampered_rs256_token_is_refused(model, rsa_key):
    good = jwt(claims(roles=[SENDER], **ISS), alg="RS256", private_key=rsa_key)
    head, _body, sig = good.split(".")
    forged = f"{head}.{_b64(json.dumps(claims(roles=[OWNER], **ISS)).encode())}.{sig}"
    with pytest.raises(TokenError, match="matches no key"):
        authenticate_token(model, forged, time.time())


def test_unsigned_tokens_where_allowed_and_open_namespaces_accept_any_token(model):
    p = authenticate_token(model, jwt(claims(ns="unsigned-ns"), alg="none"), time.time())
    assert p.namespace == "unsigned-ns" and MANAGE in p.rights
    open_model = load_toml({"namespaces": {"open-ns": {"tier": "Standard"}}})[0]
    p = authenticate_token(open_model, jwt(claims(ns="open-ns", roles=[RECEIVER]), key="any"),
                           time.time())
    assert (p.namespace, p.rights) == ("open-ns", frozenset({LISTEN}))


def test_oauth_settings_must_trust_something():
    with pytest.raises(ValueError, match="trusts no token"):
        load_toml({"namespaces": {"some-ns": {"oauth": {"issuer": "x"}}}})


# -- on the wire -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker(config, tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("ob") / "data", config_file=config) as b:
        yield b


def _conf(broker, roles, **extra) -> dict:
    token = jwt(claims(roles=roles, **ISS))

    def oauth_cb(_config):
        return token, time.time() + 3600

    conf = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb, "log_level": 2,
            "reconnect.backoff.max.ms": 1000}
    conf.update(extra)
    return conf


def test_confluent_sender_produces_but_cannot_read_and_owner_reads(broker):
    results = []
    producer = Producer(_conf(broker, [SENDER], **{"linger.ms": 0}))
    producer.produce("telemetry", b"from-oauth", on_delivery=lambda err, msg: results.append(err))
    producer.flush(15)
    assert results == [None]

    def read(roles) -> tuple[list, list]:
        errors, values = [], []
        consumer = Consumer(_conf(broker, roles, **{"group.id": f"oauth-{len(roles)}-{roles[0][-8:]}",
                                                    "auto.offset.reset": "earliest",
                                                    "enable.auto.commit": False}))
        try:
            consumer.subscribe(["telemetry"])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not values and not errors:
                msg = consumer.poll(0.3)
                if msg is None:
                    continue
                (errors if msg.error() else values).append(msg.error() or msg.value())
        finally:
            consumer.close()
        return errors, values

    errors, values = read([SENDER])
    assert not values and errors and errors[0].code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)
    assert read([OWNER]) == ([], [b"from-oauth"])


def test_a_bad_token_fails_sasl_and_closes_the_connection(broker):
    message = b"n,,\x01auth=Bearer " + jwt(claims(**ISS), key="wrong").encode() + b"\x01\x01"
    with RawClient(broker.bootstrap_servers) as c:
        hs = c.request(codec.ApiKey.SaslHandshake, 1, mechanism="OAUTHBEARER")
        assert hs.error_code == 0 and "OAUTHBEARER" in hs.mechanisms
        resp = c.request(codec.ApiKey.SaslAuthenticate, 2, auth_bytes=message)
        assert resp.error_code == Errors.SaslAuthenticationFailedError.errno
        assert "matches no key" in resp.error_message
        assert c.is_closed()


def test_the_console_takes_a_jwt_on_a_namespace_with_oauth(tmp_path, config):
    import requests

    with EmulatedBroker(tmp_path / "data", config_file=config, http=True) as broker:
        base = f"{broker.http_url}/api/namespaces/oauth-ns"
        events = f"{base}/hubs/telemetry/partitions/0/events"
        assert requests.get(events, timeout=10).status_code == 401
        receiver = jwt(claims(roles=[RECEIVER], **ISS))
        signed_in = requests.post(f"{base}/token", json={"connection_string": receiver}, timeout=10)
        assert signed_in.status_code == 200, signed_in.text
        assert signed_in.json()["rights"] == ["Listen"]
        token = signed_in.json()["token"]
        assert requests.get(events, headers={"Authorization": token}, timeout=10).status_code == 200
        sent = requests.post(f"{base}/hubs/telemetry/events", json={"body": "x"},
                             headers={"Authorization": token}, timeout=10)
        assert sent.status_code == 401  # a receiver may not send
        forged = jwt(claims(roles=[OWNER], **ISS), key="not-the-secret")
        assert requests.post(f"{base}/token", json={"connection_string": forged},
                             timeout=10).status_code == 401


def test_an_open_namespace_takes_any_well_formed_token_over_kafka(tmp_path):
    """No policies and no [oauth] table: OAUTHBEARER with any unexpired token gets in, as the
    docs say (the namespace's door verifies it like any other)."""
    with EmulatedBroker(tmp_path / "data") as broker:
        broker.create_hub("open-oauth", 1)  # a Sender may not create it
        token = jwt(claims(ns=broker.config.default_namespace, roles=[SENDER]), key="any key at all")
        results = []
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                             "sasl.mechanism": "OAUTHBEARER", "log_level": 2,
                             "oauth_cb": lambda _config: (token, time.time() + 3600),
                             "message.timeout.ms": 10000})
        producer.produce("open-oauth", b"in", on_delivery=lambda err, msg: results.append(err))
        producer.flush(15)
        assert results == [None]
