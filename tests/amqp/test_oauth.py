"""Bearer tokens on $cbs (put-token type jwt): an SDK with a TokenCredential, against a
namespace that trusts local signing keys; the token's roles are its rights."""
from __future__ import annotations

import time

import pytest
from azure.core.credentials import AccessToken
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient, TransportType
from azure.eventhub.exceptions import AuthenticationError, ConnectionLostError

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_oauth import ISS, OWNER, SENDER, claims, config, jwt, rsa_key  # noqa: F401

from .conftest import receive


class LocalCredential:
    """A TokenCredential handing out tokens signed with the namespace's local key."""

    def __init__(self, roles, key: str | None = None) -> None:
        self.roles, self.key = roles, key

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        extra = {"key": self.key} if self.key else {}
        return AccessToken(jwt(claims(roles=self.roles, **ISS), **extra), int(time.time()) + 3600)


@pytest.fixture(scope="module")
def oauth_broker(config, tmp_path_factory):  # noqa: F811
    with EmulatedBroker(tmp_path_factory.mktemp("amqp-oauth") / "data", config_file=config,
                        amqp=True) as b:
        yield b


def _options(broker) -> dict:
    # The namespace's own host (it selects the namespace), reached at the broker's port.
    return dict(fully_qualified_namespace="oauth-ns.servicebus.windows.net",
                eventhub_name="telemetry", use_tls=False, transport_type=TransportType.Amqp,
                custom_endpoint_address=f"sb://127.0.0.1:{broker.amqp_port}", retry_total=0)


def test_bearer_tokens_carry_their_roles(oauth_broker):
    with EventHubProducerClient(credential=LocalCredential([SENDER]), **_options(oauth_broker)) as p:
        p.send_batch([EventData("by token")], partition_id="0")
    owner = EventHubConsumerClient(credential=LocalCredential([OWNER]), consumer_group="$Default",
                                   load_balancing_interval=1, **_options(oauth_broker))
    got = receive(owner, 1, partition_id="0", starting_position="-1")
    assert [e.body_as_str() for _, e in got] == ["by token"]
    sender = EventHubConsumerClient(credential=LocalCredential([SENDER]), consumer_group="$Default",
                                    load_balancing_interval=1, **_options(oauth_broker))
    with pytest.raises((ConnectionLostError, AuthenticationError), match="unauthorized|Unauthorized"):
        receive(sender, 1, timeout=10, until_error=True, partition_id="0", starting_position="-1")


def test_a_token_signed_with_another_key_is_refused(oauth_broker):
    with pytest.raises(AuthenticationError):
        with EventHubProducerClient(credential=LocalCredential([OWNER], key="not-the-key"),
                                    **_options(oauth_broker)) as p:
            p.send_batch([EventData("x")], partition_id="0")
