"""The hostile-client suite's two axes: the credentials a client may hold, and
the surfaces (a route, node or API of each front end) it may try them on.

A credential knows how to show itself to each front end: an HTTP
``Authorization`` header, a Kafka SASL/PLAIN password, an AMQP connection
string. A surface says which right it needs (or that only the management
plane's owner may use it) and answers ``True`` when the broker served the
request, ``False`` when it refused it. Every client is real: requests for
HTTP, confluent-kafka for Kafka, azure-eventhub for AMQP."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

import requests

from kafka_wire.eventhubs import connection_string, sas

NS, OTHER = "contoso", "fabrikam"
HUB, OTHER_HUB = "payments", "orders"  # orders-writer is scoped to OTHER_HUB
HOST = f"{NS}.servicebus.windows.net"
MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
OWNER = "owner"  # the right a subscription-level route needs
GROUP = "group"  # Listen on any hub of NS: Kafka consumer groups are namespace-wide on Event Hubs


@dataclass(frozen=True)
class Credential:
    """``rights``: what it may do in NS (empty: nothing, it must be refused)."""
    kind: str
    rights: frozenset
    key_name: str | None = None
    key: str | None = None
    host: str = HOST
    hub: str | None = None          # the token's resource hub
    expired: bool = False
    hub_rights: frozenset = frozenset()  # what it may do on its own hub (``hub``) of NS

    def token(self) -> str | None:
        if self.key_name is None:
            return None
        expiry = int(time.time()) + (-3600 if self.expired else 3600)  # past the 15 min skew allowed
        return sas.generate(sas.resource_uri(self.host, self.hub), self.key_name, self.key, expiry)

    def header(self) -> dict:
        token = self.token()
        return {"Authorization": token} if token else {}

    def password(self) -> str | None:
        """A Kafka SASL/PLAIN password (a token-carrying connection string)."""
        token = self.token()
        return None if token is None else connection_string.build(self.host, signature=token,
                                                                   entity_path=self.hub)

    def amqp(self, port: int) -> str | None:
        token = self.token()
        if token is None:
            return None
        return connection_string.build(f"127.0.0.1:{port}", signature=token, entity_path=self.hub,
                                       emulator=True)


ROOT_KEY = ("RootManageSharedAccessKey", "cm9vdC1rZXktMQ==")
CREDENTIALS = [
    Credential("root", frozenset({"Manage", "Send", "Listen"}), *ROOT_KEY),
    Credential("none", frozenset()),
    Credential("wrong-key", frozenset(), ROOT_KEY[0], "bm90LXRoZS1rZXk="),
    Credential("wrong-scope", frozenset(), "orders-writer", "b3JkZXJzLWtleQ==", hub=OTHER_HUB,
               hub_rights=frozenset({"Send", "Listen"})),
    Credential("expired", frozenset(), *ROOT_KEY, expired=True),
    Credential("listen-only", frozenset({"Listen"}), "listener", "bGlzdGVuLWtleQ=="),
    Credential("send-only", frozenset({"Send"}), "sender", "c2VuZC1rZXk="),
    Credential("other-namespace", frozenset(), ROOT_KEY[0], "ZmFicmlrYW0ta2V5",
               host=f"{OTHER}.servicebus.windows.net"),
]


@dataclass(frozen=True)
class Surface:
    name: str
    right: str  # Manage, Send, Listen, any, GROUP or OWNER
    served: Callable  # (broker, credential) -> bool

    def allowed(self, credential: Credential) -> bool:
        if self.right == OWNER:
            return False  # no namespace credential is the subscription's
        if self.right == "any":
            return bool(credential.rights)
        if self.right == GROUP:
            return "Listen" in credential.rights | credential.hub_rights
        return self.right in credential.rights


# -- HTTP ---------------------------------------------------------------------------------
def _http(method: str, path: str, **kwargs) -> Callable:
    def call(broker, credential: Credential) -> bool:
        headers = {"Host": HOST, **credential.header()}
        answer = requests.request(method, broker.http_url + path, headers=headers, timeout=15, **kwargs)
        assert answer.status_code < 500, (method, path, answer.status_code, answer.text)
        if answer.status_code in (401, 403, 404):  # 404: a hub-scoped credential sees no other hub
            return False
        assert answer.status_code < 300, (method, path, answer.status_code, answer.text)
        return True
    return call


def _console_send(broker, credential: Credential) -> bool:
    return _http("POST", f"/api/namespaces/{NS}/hubs/{HUB}/events", json={"body": "hi", "partition": 0})(
        broker, credential)


HTTP = [
    Surface("mgmt list namespaces", OWNER, _http("GET", MG + API)),
    Surface("mgmt create namespace", OWNER, _http("PUT", f"{MG}/attacker1{API}", json={"sku": {"name": "Standard"}})),
    Surface("mgmt delete namespace", OWNER, _http("DELETE", f"{MG}/{OTHER}{API}")),
    Surface("mgmt get namespace", "Manage", _http("GET", f"{MG}/{NS}{API}")),
    Surface("mgmt list hubs", "Manage", _http("GET", f"{MG}/{NS}/eventhubs{API}")),
    Surface("mgmt put hub", "Manage", _http("PUT", f"{MG}/{NS}/eventhubs/made{API}",
                                            json={"properties": {"partitionCount": 1}})),
    Surface("mgmt put consumer group", "Manage",
            _http("PUT", f"{MG}/{NS}/eventhubs/{HUB}/consumergroups/made{API}", json={})),
    Surface("mgmt list rules", "Manage", _http("GET", f"{MG}/{NS}/authorizationRules{API}")),
    Surface("mgmt list keys", "Manage", _http("POST", f"{MG}/{NS}/authorizationRules/listener/listKeys{API}")),
    Surface("mgmt network rules", "Manage", _http("GET", f"{MG}/{NS}/networkRuleSets/default{API}")),
    Surface("mgmt schema group", "Manage", _http("PUT", f"{MG}/{NS}/schemagroups/made{API}",
                                                 json={"properties": {"schemaType": "Avro"}})),
    Surface("mgmt application groups", "Manage", _http("GET", f"{MG}/{NS}/applicationGroups{API}")),
    Surface("rest send", "Send", _http("POST", f"/{HUB}/messages", data=b"x")),
    Surface("rest send partition", "Send", _http("POST", f"/{HUB}/partitions/0/messages", data=b"x")),
    # (Azure's registry takes its roles, no SAS: here a namespace-wide Manage stands in for Data Owner)
    Surface("schema registry list", "Manage", _http("GET", "/$schemagroups?api-version=2022-10")),
    Surface("console hub", "any", _http("GET", f"/api/namespaces/{NS}/hubs/{HUB}")),
    Surface("console events", "Listen", _http("GET", f"/api/namespaces/{NS}/hubs/{HUB}/partitions/0/events"
                                                    "?from=earliest")),
    Surface("console send", "Send", _console_send),
    # the fault control API (docs/faults.md): the subscription's credential only
    Surface("fault control list", OWNER, _http("GET", "/$faults")),
    Surface("fault control set", OWNER, _http("POST", "/$faults", json={
        "kind": "server-busy", "scope": {"hub": "no-such-hub"}})),
    Surface("fault control clear", OWNER, _http("DELETE", "/$faults")),
    # the replica control API (docs/georeplication.md): the subscription's credential only
    Surface("replica control list", OWNER, _http("GET", "/$replicas")),
]


# -- Kafka ----------------------------------------------------------------------------------
def _kafka_conf(broker, credential: Credential) -> dict:
    # no auto-creation: a credential of another namespace must not make HUB there, where the
    # next surface would find it
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0,
            "reconnect.backoff.ms": 200, "reconnect.backoff.max.ms": 1000,
            "allow.auto.create.topics": False}
    password = credential.password()
    if password is not None:
        conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                     "sasl.username": "$ConnectionString", "sasl.password": password})
    return conf


def log_end(broker) -> int:
    """NS's HUB/0 end, read in the broker (a Kafka credential names its own namespace,
    so a delivery alone does not say where the record went)."""
    return broker.call(lambda: broker.broker.services.namespaces[NS].topics.log(HUB, 0).log_end_offset)


def _hub_hidden(client, errors: list) -> bool:
    """Does the broker's metadata answer this client that HUB is unknown or not authorized?
    librdkafka then never sends a Produce or a Fetch for it: the record would only time out
    and the consumer poll on, so the surface is not served. False without an answer (a
    refused sign-in: ``errors``, the client's error callback's, tell the caller)."""
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + 5
    while not errors and time.monotonic() < deadline:
        try:
            topic = client.list_topics(HUB, timeout=0.2).topics.get(HUB)
        except KafkaException:
            client.poll(0)  # (serves the error callback)
            continue
        return topic is None or (topic.error is not None and topic.error.code() in (
            KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED))
    return False


def kafka_produce(broker, credential: Credential) -> bool:
    from confluent_kafka import Producer

    reports: list = []
    errors: list = []
    before = log_end(broker)
    p = Producer({**_kafka_conf(broker, credential), "message.timeout.ms": 6000,
                  "error_cb": errors.append})
    if _hub_hidden(p, errors):
        return False
    p.produce(HUB, b"kafka", partition=0, on_delivery=lambda err, msg: reports.append(err))
    # A refused sign-in or a closed connection (the error callback, as _Admin) is the
    # answer: the record would only time out after message.timeout.ms.
    deadline = time.monotonic() + 15
    while not reports and not errors and time.monotonic() < deadline:
        p.poll(0.05)
    return bool(reports) and reports[0] is None and log_end(broker) == before + 1


def kafka_fetch(broker, credential: Credential) -> bool:
    """Served when the first record of HUB/0 arrives (the fixture put one there)."""
    from confluent_kafka import Consumer, TopicPartition

    errors: list = []
    c = Consumer({**_kafka_conf(broker, credential), "group.id": "hostile", "enable.auto.commit": False,
                  "error_cb": errors.append})
    try:
        if _hub_hidden(c, errors):
            return False
        c.assign([TopicPartition(HUB, 0, 0)])
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and not errors:
            msg = c.poll(0.2)
            if msg is None:
                continue
            return not msg.error() and msg.value() == b"seed"  # NS's first record, not another's
        return False
    finally:
        c.close()


def kafka_create_topic(broker, credential: Credential) -> bool:
    """CreateTopics of a fresh name: served when it exists afterwards in NS."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    name = f"made-{credential.kind}"
    admin = _admin(broker, credential)  # ends at a refused sign-in, not the request's 5 s timeout
    try:
        admin.wait(admin.create_topics([NewTopic(name, 1)], request_timeout=5)[name])
    except KafkaException:
        return False
    return broker.call(lambda: broker.broker.services.namespaces[NS].topics.get(name)) is not None


class _Admin:
    """An AdminClient that gives up as soon as the client reports a refused sign-in or a
    closed connection (its error callback), instead of waiting out a request's timeout."""

    def __init__(self, broker, credential: Credential) -> None:
        from confluent_kafka.admin import AdminClient

        self.errors: list = []
        self.client = AdminClient({**_kafka_conf(broker, credential), "socket.timeout.ms": 5000,
                                   "error_cb": self.errors.append})

    def __getattr__(self, name: str):
        return getattr(self.client, name)

    def wait(self, future, timeout: float = 10.0):
        def answer():
            if not future.done():
                raise TimeoutError
            return future.result()  # the broker's answer, or its error raised
        return _until_refused(self.client, self.errors, answer, timeout)


def _until_refused(client, errors: list, attempt: Callable, timeout: float = 10.0):
    """``attempt()`` (which raises a TimeoutError or KafkaException while the answer is not
    there) again until it answers, ``client`` reports an error (served by its poll), or
    ``timeout`` passes."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            return attempt()
        except TimeoutError:
            client.poll(0.05)  # the error callback runs only here
            if errors:
                raise KafkaException(errors[0]) from None
            if time.monotonic() > deadline:
                raise


def _admin(broker, credential: Credential) -> _Admin:
    return _Admin(broker, credential)


def _kafka_served(call: Callable) -> Callable:
    """A surface served unless the client raises (a Kafka error code, or no connection:
    a refused sign-in leaves librdkafka without a broker until its timeout)."""
    def served(broker, credential: Credential) -> bool:
        from confluent_kafka import KafkaException

        try:
            return call(broker, credential)
        except (KafkaException, ValueError, TimeoutError):
            return False
    return served


def _fresh_hub(broker, prefix: str, credential: Credential, partitions: int = 1) -> str:
    """A hub of NS made for one case (in-process: the setup needs no credential)."""
    name = f"{prefix}-{credential.kind}"
    broker.create_hub(name, partitions)
    return name


def _seeded_group(broker, prefix: str, credential: Credential) -> str:
    """A Kafka group of NS with a commit on HUB/0 and no members, made for one case
    (in-process), so a group of the same name in another namespace cannot answer for it."""
    group = f"{prefix}-{credential.kind}"
    results = broker.call(lambda: broker.broker.services.namespaces[NS].groups.commit_offsets(
        group, -1, "", None, [(HUB, 0, 1, -1, None)]))
    assert [r.error_code for r in results] == [0], results
    return group


def _group_exists(broker, group: str) -> bool:
    return broker.call(lambda: group in broker.broker.services.namespaces[NS].groups.group_ids())


def _hub_gone(broker, name: str) -> bool:
    return broker.call(lambda: broker.broker.services.namespaces[NS].topics.get(name)) is None


@_kafka_served
def kafka_metadata(broker, credential: Credential) -> bool:
    """Metadata of HUB: served when it is listed without an error (a credential without a
    right on it does not see it)."""
    from confluent_kafka import KafkaException

    admin = _admin(broker, credential)

    def answer():
        try:
            return admin.list_topics(topic=HUB, timeout=1)
        except KafkaException as e:  # no metadata yet: no answer, or no connection
            raise TimeoutError from e
    topic = _until_refused(admin.client, admin.errors, answer).topics.get(HUB)
    return topic is not None and topic.error is None and len(topic.partitions) == 1


@_kafka_served
def kafka_list_offsets(broker, credential: Credential) -> bool:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    tp = TopicPartition(HUB, 0)
    admin = _admin(broker, credential)  # held: a collected client never completes its futures
    got = admin.wait(admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=8)[tp])
    return got.offset >= 1  # the fixture's record is there


@_kafka_served
def kafka_commit_offsets(broker, credential: Credential) -> bool:
    """OffsetCommit of HUB/0 in a group of its own: served when NS's group has it."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    group = f"commit-{credential.kind}"
    admin = _admin(broker, credential)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(HUB, 0, 1)])
    (tp,) = admin.wait(admin.alter_consumer_group_offsets([request], request_timeout=8)[group]) \
        .topic_partitions
    return tp.error is None and _group_exists(broker, group)


@_kafka_served
def kafka_fetch_offsets(broker, credential: Credential) -> bool:
    """OffsetFetch of NS's group: served when its commit (offset 1) comes back."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    group = _seeded_group(broker, "fetched", credential)
    admin = _admin(broker, credential)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(HUB, 0)])
    (tp,) = admin.wait(admin.list_consumer_group_offsets([request], request_timeout=8)[group]) \
        .topic_partitions
    return tp.error is None and tp.offset == 1


@_kafka_served
def kafka_describe_group(broker, credential: Credential) -> bool:
    """DescribeGroups of NS's group: served when it is described as it is (Empty: offsets,
    no members), not as a group unknown to the client's namespace (Dead)."""
    from confluent_kafka import ConsumerGroupState

    group = _seeded_group(broker, "described", credential)
    admin = _admin(broker, credential)
    return admin.wait(admin.describe_consumer_groups([group], request_timeout=8)[group]).state \
        == ConsumerGroupState.EMPTY


@_kafka_served
def kafka_delete_group(broker, credential: Credential) -> bool:
    """DeleteGroups of NS's group: served when it is gone from NS."""
    group = _seeded_group(broker, "deleted", credential)
    admin = _admin(broker, credential)
    admin.wait(admin.delete_consumer_groups([group], request_timeout=8)[group])
    return not _group_exists(broker, group)


@_kafka_served
def kafka_describe_configs(broker, credential: Credential) -> bool:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, HUB)
    admin = _admin(broker, credential)
    return "retention.ms" in admin.wait(admin.describe_configs([resource], request_timeout=8)[resource])


@_kafka_served
def kafka_alter_configs(broker, credential: Credential) -> bool:
    """IncrementalAlterConfigs of a hub made for the case: served when the value changed."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    name = _fresh_hub(broker, "altered", credential)
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    admin = _admin(broker, credential)
    admin.wait(admin.incremental_alter_configs([resource], request_timeout=8)[resource])
    return broker.call(lambda: broker.broker.services.namespaces[NS].topics.get(name)
                       .configs.get("retention.ms")) == "7200000"


@_kafka_served
def kafka_create_partitions(broker, credential: Credential) -> bool:
    from confluent_kafka.admin import NewPartitions

    name = _fresh_hub(broker, "grown", credential)
    admin = _admin(broker, credential)
    admin.wait(admin.create_partitions([NewPartitions(name, 2)], request_timeout=8)[name])
    return broker.call(lambda: broker.broker.services.namespaces[NS].topics.get(name).partitions) == 2


@_kafka_served
def kafka_delete_records(broker, credential: Credential) -> bool:
    from confluent_kafka import TopicPartition

    name = _fresh_hub(broker, "trimmed", credential)
    tp = TopicPartition(name, 0, 0)  # offset 0 of an empty partition: served without data to lose
    admin = _admin(broker, credential)
    (got,) = admin.delete_records([tp], request_timeout=8).values()
    return admin.wait(got).low_watermark == 0


@_kafka_served
def kafka_delete_topic(broker, credential: Credential) -> bool:
    name = _fresh_hub(broker, "doomed", credential)
    admin = _admin(broker, credential)
    admin.wait(admin.delete_topics([name], request_timeout=8)[name])
    return _hub_gone(broker, name)


KAFKA = [Surface("kafka produce", "Send", kafka_produce), Surface("kafka fetch", "Listen", kafka_fetch),
         Surface("kafka create topic", "Manage", kafka_create_topic),
         Surface("kafka metadata", "any", kafka_metadata),
         Surface("kafka list offsets", "Listen", kafka_list_offsets),
         Surface("kafka commit offsets", "Listen", kafka_commit_offsets),
         Surface("kafka fetch offsets", "Listen", kafka_fetch_offsets),
         # Its group has offsets on HUB: a key scoped to another hub may not describe it.
         Surface("kafka describe group", "Listen", kafka_describe_group),
         Surface("kafka delete group", "Manage", kafka_delete_group),
         Surface("kafka describe configs", "any", kafka_describe_configs),
         Surface("kafka alter configs", "Manage", kafka_alter_configs),
         Surface("kafka create partitions", "Manage", kafka_create_partitions),
         Surface("kafka delete records", "Manage", kafka_delete_records),
         Surface("kafka delete topic", "Manage", kafka_delete_topic)]


# -- AMQP -------------------------------------------------------------------------------------
def _with_producer(act: Callable) -> Callable:
    """A surface that ``act(producer)`` on an SDK producer: served unless the SDK raises."""
    def call(broker, credential: Credential) -> bool:
        from azure.eventhub import EventHubProducerClient
        from azure.eventhub.exceptions import EventHubError

        cs = credential.amqp(broker.amqp_port)
        if cs is None:
            return False
        try:
            with EventHubProducerClient.from_connection_string(cs, eventhub_name=HUB, retry_total=0) as p:
                return act(p)
        except EventHubError:
            return False
    return call


def _send(producer) -> bool:
    from azure.eventhub import EventData

    producer.send_batch([EventData(b"amqp")], partition_id="0")
    return True


amqp_send = _with_producer(_send)
amqp_management = _with_producer(lambda p: p.get_partition_properties("0")["id"] == "0")


def amqp_receive(broker, credential: Credential) -> bool:
    from azure.eventhub import EventHubConsumerClient

    cs = credential.amqp(broker.amqp_port)
    if cs is None:
        return False
    outcome: list = []
    done = threading.Event()

    def on_event(_ctx, event):
        outcome.append(event is not None)
        done.set()

    def on_error(_ctx, error):
        outcome.append(False)
        done.set()

    client = EventHubConsumerClient.from_connection_string(cs, "$Default", eventhub_name=HUB, retry_total=0)
    worker = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, on_error=on_error, partition_id="0", starting_position="-1"), daemon=True)
    worker.start()
    done.wait(15)
    client.close()
    worker.join(15)
    return bool(outcome) and outcome[0]


AMQP = [Surface("amqp send", "Send", amqp_send), Surface("amqp $management", "any", amqp_management),
        Surface("amqp receive", "Listen", amqp_receive)]
