"""The Azure SDK's own AMQP client (azure.eventhub._pyamqp), as the SDK's samples and
tests use it below EventHubConsumerClient: a link exactly as asked, no filter added
and no client-side checks of partition ids."""
from __future__ import annotations

from azure.eventhub._pyamqp import ReceiveClient
from azure.eventhub._pyamqp.authentication import SASTokenAuth
from azure.eventhub._pyamqp.error import RetryPolicy

from .conftest import ROOT


def receive_client(broker, address: str, policy: tuple[str, str] = ROOT, **kwargs) -> ReceiveClient:
    """A pyamqp receiver of ``address`` (``HUB/ConsumerGroups/G/Partitions/N``) on the
    broker's plain AMQP port, with a SAS token for it put on $cbs, not retrying."""
    host = f"127.0.0.1:{broker.amqp_port}"
    uri = f"sb://{host}/{address}"
    auth = SASTokenAuth(uri, uri, policy[0], policy[1])
    kwargs.setdefault("retry_policy", RetryPolicy(retry_total=0))
    return ReceiveClient(host, f"amqp://{host}/{address}", auth=auth, use_tls=False, **kwargs)
