"""A JWT put on AMQP's ``$cbs`` is checked by the door of the namespace the connection
opened (its hostname), as Kafka's OAUTHBEARER token is checked by the door its audience
picked: the audience must name that namespace (or be the global one), and its key must
have signed the token.

Real clients: the azure-eventhub SDK with a TokenCredential against the broker's AMQP port.
"""
from __future__ import annotations

import pytest

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_entra_front_ends import (
    FIRST_KEY, SECOND_KEY, Credential, _namespace, amqp_refused, amqp_send, kafka_sends, token)
from tests.eventhubs.test_oauth import claims, jwt

FIRST_AUD = "https://first-ns.servicebus.windows.net"
SECOND_AUD = "https://second-ns.servicebus.windows.net"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """Two Standard namespaces, each with its own key; first-ns is the default one."""
    d = tmp_path_factory.mktemp("entra-amqp")
    (d / "two.toml").write_text('default_namespace = "first-ns"\n'
                                + _namespace("first-ns", "Standard", FIRST_KEY)
                                + _namespace("second-ns", "Standard", SECOND_KEY))
    with EmulatedBroker(d / "data", config_file=d / "two.toml", amqp=True) as b:
        yield b


def test_a_token_naming_this_namespace_among_others_is_good_for_it(broker):
    """second-ns is not the default namespace, and not the first audience listed."""
    both = jwt(claims(aud=[FIRST_AUD, SECOND_AUD]), key=SECOND_KEY)
    assert amqp_send(broker, "second-ns", Credential(lambda _scope: both)) == ["0"]
    # the same token on first-ns is checked against first-ns's key, which did not sign it
    why = amqp_refused(broker, "first-ns", Credential(lambda _scope: both))
    assert "matches no key namespace 'first-ns' trusts" in why


def test_a_token_whose_audience_names_another_namespace_is_refused(broker):
    # signed with this namespace's key, yet for first-ns: checked as first-ns's, refused
    other = jwt(claims(aud=FIRST_AUD), key=SECOND_KEY)
    why = amqp_refused(broker, "second-ns", Credential(lambda _scope: other))
    assert "matches no key namespace 'first-ns' trusts" in why
    # and first-ns's own token, good there, is not good here
    why = amqp_refused(broker, "second-ns", Credential(lambda _scope: token("first-ns")))
    assert "for namespace 'first-ns', not 'second-ns'" in why
    assert amqp_send(broker, "first-ns", Credential(lambda _scope: token("first-ns"))) == ["0"]


def test_kafka_still_picks_the_namespace_by_the_tokens_audience(broker):
    assert kafka_sends(broker, jwt(claims(aud=[FIRST_AUD, SECOND_AUD]), key=FIRST_KEY)) == 0
    assert kafka_sends(broker, jwt(claims(aud=SECOND_AUD), key=SECOND_KEY)) == 0


def test_a_namespace_requiring_auth_without_oauth_refuses_a_jwt_over_amqp(tmp_path):
    """No SAS policies, no [oauth] table, auth = "required": a jwt is not taken as none
    (the namespace takes nobody without a credential) and there is no key to check it."""
    (tmp_path / "req.toml").write_text('''default_namespace = "req-ns"
[namespaces.req-ns]
tier = "Standard"
auth = "required"
[namespaces.req-ns.eventhubs.orders]
partitions = 1
''')
    unsigned = jwt(claims(aud="https://eventhubs.azure.net", roles=[]), key="no key checks this")
    with EmulatedBroker(tmp_path / "data", config_file=tmp_path / "req.toml", amqp=True) as b:
        why = amqp_refused(b, "req-ns", Credential(lambda _scope: unsigned))
        assert "takes SAS tokens, not bearer tokens" in why
