"""Kafka 4.3 Java clients over SASL/OAUTHBEARER with the unsecured tokens of
Java's default login handler (``OAuthBearerUnsecuredLoginCallbackHandler``),
against a namespace that allows unsigned local tokens: the JAAS options set
the audience (which picks the namespace) and the Azure Event Hubs data role."""
from __future__ import annotations

import pytest

from kafka_wire.testing import EmulatedBroker

pytestmark = pytest.mark.slow
# The unsecured login handler builds its JWT with Jackson.
JACKSON = ["jackson-core-2.21.2.jar", "jackson-databind-2.21.2.jar", "jackson-annotations-2.21.jar"]

CONFIG = '''
default_namespace = "local-ns"

[namespaces.local-ns]
tier = "Standard"
[namespaces.local-ns.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXk="
[namespaces.local-ns.oauth]
allow_unsigned = true
[namespaces.local-ns.eventhubs.java-oauth]
partitions = 2
'''


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("java-oauth")
    (d / "oauth.toml").write_text(CONFIG)
    with EmulatedBroker(d / "data", config_file=d / "oauth.toml") as b:
        yield b


def _props(role: str) -> list[str]:
    jaas = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredLoginStringClaim_sub="java-app" '
            'unsecuredLoginStringClaim_aud="https://local-ns.servicebus.windows.net" '
            f'unsecuredLoginListClaim_roles=",{role}";')
    return ["security.protocol=SASL_PLAINTEXT", "sasl.mechanism=OAUTHBEARER",
            f"sasl.jaas.config={jaas}"]


def test_java_producer_with_an_unsecured_token_and_the_sender_role(java, broker):
    res = java.run("SimpleProducer", broker.bootstrap_servers, "java-oauth", "2", "5",
                   *_props("Azure Event Hubs Data Sender"), timeout=90, jars=JACKSON)
    assert res.returncode == 0 and "ACKED 10" in res.stdout, res.stdout + res.stderr[-3000:]


def test_java_producer_with_only_the_receiver_role_is_not_authorized(java, broker):
    res = java.run("SimpleProducer", broker.bootstrap_servers, "java-oauth", "1", "1",
                   *_props("Azure Event Hubs Data Receiver"), "max.block.ms=10000",
                   "delivery.timeout.ms=15000", timeout=90, jars=JACKSON)
    # Refused at InitProducerId (ClusterAuthorization, idempotence) or at Produce (Topic-),
    # whichever the producer reaches first; either way the cause is in the stack trace.
    assert res.returncode == 1
    assert "AuthorizationException" in res.stdout + res.stderr, res.stdout + res.stderr[-3000:]
