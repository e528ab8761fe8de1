"""Credentials no parser expected, sent before authentication: each is a failed login
(SASL_AUTHENTICATION_FAILED with a reason, one log line), never a traceback and a dropped
connection. Connection strings and OAUTHBEARER claims of any shape either parse or raise
their module's own error, which every front end turns into its refusal."""
from __future__ import annotations

import base64
import json
import logging
import math
import struct

import kafka.errors as Errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string, oauth
from kafka_wire.eventhubs.auth import Authenticator
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML
from tests.rawclient import RawClient

NOW = 1_790_000_000.0
FAILED = Errors.SaslAuthenticationFailedError.errno


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unsigned(payload: str, alg: str = "none") -> str:
    return f"{_b64(json.dumps({'alg': alg}))}.{_b64(payload)}."


def _bearer(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def _plain(cs: str) -> bytes:
    return b"\x00$ConnectionString\x00" + cs.encode()


def _tracebacks(caplog) -> list[str]:
    return [r.getMessage()[:200] for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def _authenticate(broker, mechanism: str, token: bytes):
    with RawClient(broker.bootstrap_servers, timeout=10) as c:
        assert c.request(codec.ApiKey.SaslHandshake, 1, mechanism=mechanism).error_code == 0
        return c.request(codec.ApiKey.SaslAuthenticate, 2, auth_bytes=token)


# -- on the wire -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def multi():
    with EmulatedBroker(config_file=MULTI_TOML) as b:
        yield b


@pytest.fixture(scope="module")
def open_broker():
    with EmulatedBroker() as b:
        yield b


@pytest.mark.parametrize("mechanism,token,why", [
    ("PLAIN", _plain("Endpoint=sb://[::1;SharedAccessKeyName=a;SharedAccessKey=b"), "not a URL"),
    ("OAUTHBEARER", _bearer(_unsigned('{"aud": 5}', "HS256")), "'aud' claim"),
], ids=["endpoint-unclosed-ipv6-bracket", "aud-number"])
def test_a_namespace_requiring_auth_answers_unreadable_credentials(multi, caplog, mechanism,
                                                                    token, why):
    # Before: ValueError (urlsplit) and TypeError (iterating 5) escaped the handler.
    caplog.set_level(logging.WARNING)
    answer = _authenticate(multi, mechanism, token)
    assert answer.error_code == FAILED and why in answer.error_message, answer
    assert not _tracebacks(caplog)


@pytest.mark.parametrize("payload,why", [
    ('{"exp": NaN}', "'exp' claim"), ('{"exp": 1e999}', "'exp' claim"),
    ('{"exp": ' + "9" * 400 + "}", "'exp' claim"), ('{"exp": -1e300}', "'exp' claim"),
    ('{"exp": 4102444800, "nbf": Infinity}', "'nbf' claim"),
    ('{"exp": 4102444800, "roles": 5}', "'roles' claim"),
    ('{"exp": 4102444800, "roles": [1, "x"]}', "'roles' claim"),
], ids=["exp-nan", "exp-inf", "exp-400-digits", "exp-before-1970", "nbf-inf", "roles-number",
        "roles-mixed"])
def test_an_open_namespace_answers_unusable_claims(open_broker, caplog, payload, why):
    # An open namespace takes unsigned tokens unchecked: only the claims can go wrong.
    # Before: float('nan') -> int(), float(10**400), iterating 5 raised out of the handler.
    caplog.set_level(logging.WARNING)
    answer = _authenticate(open_broker, "OAUTHBEARER", _bearer(_unsigned(payload)))
    assert answer.error_code == FAILED and why in answer.error_message, answer
    assert not _tracebacks(caplog)
    with RawClient(open_broker.bootstrap_servers) as c:  # and it still takes a good one
        assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0


def test_a_sasl_v0_bare_token_that_cannot_be_read_closes_without_a_transport_error(multi, caplog):
    # SaslHandshake v0's bare token is read outside the handlers' try: before, the
    # ValueError escaped the protocol callback ("Fatal error on transport").
    caplog.set_level(logging.WARNING)
    with RawClient(multi.bootstrap_servers) as c:
        assert c.request(codec.ApiKey.SaslHandshake, 0, mechanism="PLAIN").error_code == 0
        token = _plain("Endpoint=sb://[::1;SharedAccessKeyName=a;SharedAccessKey=b")
        c.send_raw(struct.pack(">i", len(token)) + token)
        assert c.is_closed(10)
    assert not _tracebacks(caplog)  # (its warning may be one the same address repeats: counted)


def test_any_exception_from_a_credential_parser_is_a_failed_login(multi, caplog, monkeypatch):
    # Defence in depth: a parser's gap (here, one made to fail) is an authentication
    # failure with one log line on either SASL path, not a traceback.
    caplog.set_level(logging.WARNING)

    def broken(text):
        raise RuntimeError("a parser bug")

    monkeypatch.setattr(connection_string, "parse", broken)
    answer = _authenticate(multi, "PLAIN", _plain("Endpoint=sb://x/;SharedAccessKeyName=a;"
                                                  "SharedAccessKey=b"))
    assert answer.error_code == FAILED and "could not be read" in answer.error_message
    lines = [r.getMessage() for r in caplog.records if "a parser bug" in r.getMessage()]
    assert len(lines) == 1 and not _tracebacks(caplog)

    def raw_broken(self, services, state, token):
        raise RuntimeError("an authenticator bug")

    monkeypatch.setattr(Authenticator, "raw_sasl", raw_broken)
    with RawClient(multi.bootstrap_servers) as c:
        assert c.request(codec.ApiKey.SaslHandshake, 0, mechanism="PLAIN").error_code == 0
        c.send_raw(struct.pack(">i", 3) + b"abc")
        assert c.is_closed(10)
    assert not _tracebacks(caplog)
    assert any("an authenticator bug" in r.getMessage() for r in caplog.records)
    with RawClient(multi.bootstrap_servers) as c:  # the broker serves on
        assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0


# -- any text, any claims ---------------------------------------------------------------------
@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(max_size=300) | st.text(alphabet="Endpoint=sb://[]:;/@%.0123456789abcSharedAccessKey",
                                       max_size=300))
def test_any_connection_string_text_parses_or_is_a_connection_string_error(text):
    for candidate in (text, f"Endpoint={text};SharedAccessKeyName=a;SharedAccessKey=b",
                      f"Endpoint=sb://{text}/;SharedAccessSignature=x"):
        try:
            cs = connection_string.parse(candidate)
        except connection_string.ConnectionStringError:
            continue
        assert cs.host and cs.host == cs.host.lower()


@pytest.fixture(scope="module")
def claims_model(tmp_path_factory):
    from kafka_wire.eventhubs.config_file import load

    d = tmp_path_factory.mktemp("claims")
    (d / "claims.toml").write_text('''
default_namespace = "open-ns"
[namespaces.open-ns]
tier = "Standard"
[namespaces.unsigned-ns]
tier = "Standard"
[namespaces.unsigned-ns.oauth]
allow_unsigned = true
issuer = "https://login.local/"
audiences = ["api://unsigned"]
''')
    return load(d / "claims.toml")[0]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-10**450, max_value=10**450)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40)
    | st.sampled_from(["https://unsigned-ns.servicebus.windows.net", "api://unsigned",
                       "https://eventhubs.azure.net", "Azure Event Hubs Data Owner", "Send"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)
_claims = st.dictionaries(
    st.sampled_from(["aud", "exp", "nbf", "iss", "roles", "scope", "scp", "sub", "oid", "appid"])
    | st.text(max_size=8), _json, max_size=8)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(_claims, st.sampled_from(["none", "HS256", "RS256", 5, None]))
def test_any_json_claims_authenticate_or_are_a_token_error(claims_model, claims, alg):
    token = f"{_b64(json.dumps({'alg': alg}))}.{_b64(json.dumps(claims))}."
    try:
        principal = oauth.authenticate_token(claims_model, token, NOW)
    except oauth.TokenError:
        return
    assert math.isfinite(principal.expires_s) and principal.expires_s >= NOW - oauth.SKEW_S
