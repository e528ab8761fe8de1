"""TopicManager.hub: an event hub looked up without regard to case (AMQP, HTTPS), kept in
step with creation, deletion and a switch of logs; TopicManager.get stays exact (Kafka)."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.topics import TopicManager


@pytest.fixture
def topics(tmp_path):
    logs = LogManager(tmp_path / "logs", LogConfig())
    try:
        yield TopicManager(logs)
    finally:
        logs.close()


def test_any_case_finds_the_hub_under_its_own_name(topics):
    topics.create("Orders", 2)
    for name in ("Orders", "orders", "ORDERS", "oRDERs"):
        view = topics.hub(name)
        assert view is not None and view.name == "Orders" and view.partitions == 2
    assert topics.get("orders") is None  # Kafka's lookup is exact


def test_the_index_follows_creation_and_deletion(topics):
    assert topics.hub("payments") is None
    topics.create("Payments", 1)
    assert topics.hub("PAYMENTS").name == "Payments"
    topics.delete("Payments")
    assert topics.hub("payments") is None and topics.hub("Payments") is None
    topics.create("payments", 3)
    assert topics.hub("PAYMENTS").name == "payments" and topics.hub("PAYMENTS").partitions == 3


def test_the_index_follows_a_switch_of_logs(topics, tmp_path):
    topics.create("Orders", 1)
    other = LogManager(tmp_path / "other", LogConfig())
    try:
        other.create_topic("Telemetry", 1)
        topics.switch_logs(other)
        assert topics.hub("orders") is None
        assert topics.hub("TELEMETRY").name == "Telemetry"
    finally:
        other.close()


def test_twins_from_an_older_data_directory_are_reached_only_by_their_own_names(topics):
    # (the door refuses such twins now; a data directory may hold them from before)
    topics.create("Twin", 1)
    topics.logs.create_topic("TWIN", 1)
    topics.switch_logs(topics.logs)  # (as a start over that directory would see them)
    assert topics.hub("Twin").name == "Twin" and topics.hub("TWIN").name == "TWIN"
    assert topics.hub("twin") is None


@pytest.mark.parametrize("lookalike", ["\u212aafka", "kafk\u0430", "KAFKA\u0131", "kafka ", " kafka",
                                       "kafka\n", "kafka\x00", "", "kafka/", "../kafka"])
def test_lookalikes_are_not_the_hub(topics, lookalike):
    topics.create("kafka", 1)
    assert topics.hub(lookalike) is None


@pytest.fixture(scope="module")
def one_hub(tmp_path_factory):
    logs = LogManager(tmp_path_factory.mktemp("any-case"), LogConfig())
    try:
        topics = TopicManager(logs)
        topics.create("aB-_.k", 1)
        yield topics
    finally:
        logs.close()


@settings(max_examples=300)
@example(name="AB-_.K")
@example(name="ab-_.k")
@example(name="aB-_.\u212a")
@example(name="AB-_.k ")
@given(name=st.text(alphabet=st.sampled_from("aAbB.-_k\u212a\u0131iIK"), min_size=1, max_size=6))
def test_hub_finds_exactly_the_names_equal_in_ascii_case(one_hub, name):
    found = one_hub.hub(name)
    assert (found is not None) == (name.isascii() and name.lower() == "ab-_.k")
    if found is not None:
        assert found.name == "aB-_.k"


def test_the_case_twin_of_a_name_is_found_in_the_index_or_among_older_twins(topics):
    topics.create("Orders", 1)
    assert topics.case_twin("orders") == "Orders" and topics.case_twin("\u212aafka") is None
    assert topics.case_twin("Orders") is None and topics.case_twin("payments") is None
    topics.create("Twin", 1)
    topics.logs.create_topic("TWIN", 1)
    topics.switch_logs(topics.logs)  # (twins from an older data directory: no name in the index)
    assert topics.case_twin("twin") == "TWIN"  # (either is its twin; the first in order)
    assert topics.case_twin("Twin") == "TWIN" and topics.case_twin("TWIN") == "Twin"
