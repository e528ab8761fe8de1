"""What the Python SDK (azure-eventhub 5.15, pyamqp transport) does against the fault
kinds of storage, availability, settlement, flow and token renewal
(kafka_wire.fault_plan; docs/faults.md's table pins the same):

- append-fail (disk-full, io-error): a send to a partition gets EventDataSendError at
  once (amqp:internal-error, a rejected delivery pyamqp does not retry); a send to the
  hub is retried once and stored; nothing half-stored.
- append-slow: the send returns after the hold; another client's sends meanwhile are
  not held (the loop is free).
- partition-unavailable (attach refused with com.microsoft:timeout): the producer and
  the receiver retry the attach (pyamqp backs off 2 s for that condition) and go on
  once the window ends; nothing lost or doubled.
- delay-disposition: a send waits for its settlement; withheld past the send's timeout,
  OperationTimeoutError, and the event is stored all the same (at-least-once: an
  application that sends it again stores it twice).
- withhold-flow: a receiver gets no events for ms, then every one, in order, with no
  error; a sender's credit taken back is ignored by pyamqp (it grants itself credit
  again at 0, sender.py update_pending_deliveries) and its sends go on.
- token-refused: the first put-token is served, the renewal is answered 401; the
  connection keeps the old token until it expires, then its link is detached and the
  SDK reconnects (a new connection's first put-token is served): no send fails.
"""
from __future__ import annotations

import threading
import time

import pytest
from azure.core.credentials import AccessToken
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError, OperationTimeoutError

from kafka_wire.eventhubs import sas

from .conftest import ROOT, sdk_cs, wait_for
from .test_faults_sdk import hub, kafka_send, read_all, receiving, send  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("no_faults")


def timed(fn, *args, **kwargs) -> float:
    started = time.monotonic()
    fn(*args, **kwargs)
    return time.monotonic() - started


@pytest.mark.parametrize("error,words", [("disk-full", "No space left on device"),
                                         ("io-error", "Input/output error")])
def test_a_failed_append_raises_event_data_send_error_and_stores_nothing(broker, hub, error, words):
    broker.faults.add("append-fail", scope={"hub": hub, "partition": 0}, params={"error": error})
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        with pytest.raises(EventDataSendError, match=words) as caught:
            send(producer, [0])  # a new producer's first send: raised at once
        assert "InternalError" in str(caught.value)  # amqp:internal-error
        send(producer, [1])  # the fault fired once: the same client goes on
        broker.faults.add("append-fail", scope={"hub": hub}, params={"error": error})
        send(producer, [2])  # on a link that has sent: pyamqp sends again at once, stored
    fired = broker.faults.fired
    assert [(f["kind"], f["target"]["protocol"]) for f in fired] == [("append-fail", "amqp")] * 2
    assert read_all(broker, hub, 2) == [1, 2]


def test_a_failed_append_to_the_hub_is_retried_once(broker, hub):
    broker.faults.add("append-fail", scope={"hub": hub})
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        producer.send_event(EventData(b"5"))  # no partition id: pyamqp sends again at once
    assert len(broker.faults.fired) == 1
    assert read_all(broker, hub, 1) == [5]


def test_a_slow_append_holds_its_sender_only(broker, hub):
    broker.create_hub(f"{hub}-other", 1)
    cs = sdk_cs(broker)
    with EventHubProducerClient.from_connection_string(cs, eventhub_name=hub) as slow, \
            EventHubProducerClient.from_connection_string(cs, eventhub_name=f"{hub}-other") as other:
        send(slow, [0])
        send(other, [0])
        broker.faults.add("append-slow", scope={"hub": hub}, params={"ms": 2500})
        held: list[float] = []
        thread = threading.Thread(target=lambda: held.append(timed(send, slow, [1])))
        thread.start()
        assert wait_for(lambda: broker.faults.fired, 10)
        quick = [timed(send, other, [i]) for i in range(1, 4)]  # meanwhile, not held
        thread.join(30)
        assert not thread.is_alive() and held and held[0] >= 2.4, held
        assert max(quick) < 2.0, quick
    assert read_all(broker, hub, 2) == [0, 1]


def test_an_unavailable_partition_is_retried_by_the_producer_until_it_returns(broker, hub):
    kafka_send(broker, hub, [0])
    broker.faults.add("partition-unavailable", scope={"hub": hub, "partition": 0}, count=1000,
                      for_ms=1500)
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        took = timed(send, producer, [1])  # the attach refused, retried after 2 s each
    fired = broker.faults.fired
    assert fired and {f["kind"] for f in fired} == {"partition-unavailable"}
    assert took >= 1.4, took
    assert read_all(broker, hub, 2) == [0, 1]


def test_an_unavailable_partition_is_retried_by_the_receiver_and_nothing_is_lost(broker, hub):
    kafka_send(broker, hub, range(3))
    broker.faults.add("partition-unavailable", scope={"hub": hub, "consumer_group": "$Default"},
                      count=2)
    with receiving(broker, hub) as (got, errors):
        assert wait_for(lambda: len(got) >= 3, 30), (got, errors)
    assert got == [0, 1, 2]
    assert len(broker.faults.fired) == 2
    assert broker.faults.fired[0]["target"]["consumer_group"] == "$default"


def test_a_delayed_disposition_holds_the_send_and_a_withheld_one_times_out(broker, hub):
    broker.faults.add("delay-disposition", scope={"hub": hub}, params={"ms": 600_000})
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        started = time.monotonic()
        batch = producer.create_batch(partition_id="0")
        batch.add(EventData("0"))
        with pytest.raises(OperationTimeoutError):  # a new producer's first send
            producer.send_batch(batch, timeout=2)
        assert 1.5 < time.monotonic() - started < 15
        broker.faults.add("delay-disposition", scope={"hub": hub}, params={"ms": 1000})
        assert timed(send, producer, [1]) >= 0.9  # held, then settled: done
    # the send that timed out was stored: the application cannot tell (at-least-once)
    assert read_all(broker, hub, 2) == [0, 1]


def test_a_withheld_disposition_on_a_link_that_has_sent_is_sent_again_and_doubled(broker, hub):
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        send(producer, [0])
        broker.faults.add("delay-disposition", scope={"hub": hub}, params={"ms": 600_000})
        batch = producer.create_batch(partition_id="0")
        batch.add(EventData("1"))
        took = timed(producer.send_batch, batch, timeout=2)  # timed out, sent again: no error
        assert 1.5 < took < 15, took
    assert read_all(broker, hub, 3) == [0, 1, 1]  # stored twice: the first try was stored


def test_withheld_flow_delays_a_receiver_without_losing_or_reordering(broker, hub):
    with receiving(broker, hub, stamped=True) as (got, errors):
        kafka_send(broker, hub, [0])
        assert wait_for(lambda: got, 20)
        broker.faults.add("withhold-flow", scope={"hub": hub, "consumer_group": "$Default"},
                          params={"ms": 1500})
        sent = time.monotonic()
        kafka_send(broker, hub, [1, 2])
        assert wait_for(lambda: len(got) >= 3, 20), got
    assert [v for v, _ in got] == [0, 1, 2] and errors == []
    assert got[1][1] - sent >= 1.3, got[1][1] - sent
    assert [f["kind"] for f in broker.faults.fired] == ["withhold-flow"]


def test_credit_taken_from_a_python_sender_is_ignored_by_pyamqp(broker, hub):
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        send(producer, [0])
        broker.faults.add("withhold-flow", scope={"hub": hub}, params={"ms": 5000})
        send(producer, [1])  # settled; the link's credit is then taken back for 5 s
        took = timed(send, producer, [2])  # pyamqp grants itself credit again and sends
    assert took < 2.5, took
    assert read_all(broker, hub, 3) == [0, 1, 2]


class ShortLivedSas:
    """A credential whose SAS tokens live ``seconds``: pyamqp renews a token when a tenth
    of its life is left, so a renewal comes ``0.9 * seconds`` after the first put-token."""
    token_type = b"servicebus.windows.net:sastoken"

    def __init__(self, audience: str, seconds: int) -> None:
        self.audience, self.seconds = audience, seconds
        self.issued = 0
        self.expiries: list[int] = []  # of each token issued, in order

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        self.issued += 1
        expiry = int(time.time()) + self.seconds
        self.expiries.append(expiry)
        return AccessToken(sas.generate(self.audience, *ROOT, expiry), expiry)

    def issued_after(self, when: int) -> bool:
        """Whether a token was issued in second ``when`` or later. With ``when`` the
        first connection's tokens' expiry, that is a new connection's put-token: a
        renewal is asked for before the token it renews expires (pyamqp's cbs.py)."""
        return any(e - self.seconds >= when for e in self.expiries)


def test_a_token_refused_at_renewal_is_outlived_by_a_new_connection(broker, hub):
    """The renewal refused, the connection keeps its token until it expires (as the service
    does); then the link is detached and the SDK reconnects, where its first put-token is
    served: no send fails, nothing is lost or doubled."""
    host = f"127.0.0.1:{broker.amqp_port}"
    credential = ShortLivedSas(f"sb://{host}/{hub}", 10)
    broker.faults.add("token-refused", scope={"hub": hub}, count=1000)
    producer = EventHubProducerClient(host, hub, credential, uamqp_transport=False,
                                      use_tls=False, retry_total=1)
    sent = 0
    with producer:
        send(producer, [0])  # the first put-token is not a renewal: served
        assert broker.faults.fired == []
        expired = max(credential.expiries)  # when the tokens of the first connection(s) expire
        # until a send is served on a connection opened after that expiry (at the latest
        # 14 s: past the first token's expiry, as it always ran)
        deadline = time.monotonic() + 14
        while time.monotonic() < deadline:
            reconnected = credential.issued_after(expired)
            sent += 1
            send(producer, [sent])
            if reconnected and broker.faults.fired:  # a send served on the new connection
                break
            time.sleep(0.25)
    fired = broker.faults.fired
    assert fired and {f["kind"] for f in fired} == {"token-refused"} and credential.issued >= 2
    assert read_all(broker, hub, sent + 1) == list(range(sent + 1))


def test_server_busy_on_a_link_that_has_sent_is_sent_again_at_once(broker, hub):
    """As append-fail: pyamqp raises a refused transfer on a new producer's first send
    (tests/amqp/test_faults_sdk.py), but on a link that has sent it sends again at once."""
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as producer:
        send(producer, [0])
        broker.faults.add("server-busy", scope={"hub": hub})
        assert timed(send, producer, [1]) < 2.0  # no 4 s server-busy backoff either
    assert [f["kind"] for f in broker.faults.fired] == ["server-busy"]
    assert read_all(broker, hub, 2) == [0, 1]
