"""The door finds a new hub's case twin in its topics' case-folded index, not by a walk of
every hub: what it refuses is what comparing the name with each hub's, lower-cased, refuses
(the Kelvin sign lower-cases to a 'k'; a dotless i to no ASCII letter)."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings, strategies as st

from kafka_wire.testing import EmulatedBroker

HUBS = ("Orders", "k-hub", "payments", "a.B_c-9")


@pytest.fixture(scope="module")
def door(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("twins") / "data") as b:
        for hub in HUBS:
            b.create_hub(hub, 1)
        yield b, b.broker.services.default.policy


def twin_by_walk(name: str) -> str | None:
    return next((h for h in HUBS if h != name and h.lower() == name.lower()), None)


@settings(max_examples=300, deadline=None)
@example(name="orders")
@example(name="ORDERS")
@example(name="Orders")
@example(name="\u212a-hub")
@example(name="K-HUB")
@example(name="A.b_C-9")
@example(name="payments\u0131")
@example(name="order")
@given(name=st.text(alphabet=st.sampled_from("OoRrDdEeSsKk\u212a-hHuUbBpPaAyYmMnNtT._c9\u0131iI"),
                    min_size=1, max_size=9) | st.sampled_from(HUBS).map(str.swapcase))
def test_the_door_refuses_exactly_the_names_a_hub_has_in_another_case(door, name):
    broker, policy = door
    twin = twin_by_walk(name)
    for denial in (broker.call(lambda: policy.hub_name_taken(name)),
                   broker.call(lambda: policy.create_topic(None, name, 1, {}, None))):
        if twin is None:
            assert denial is None or denial.rule != "hub-name" or "case-insensitive" not in denial.message
        else:
            assert denial is not None and denial.rule == "hub-name", denial
            assert f"event hub {twin!r} exists" in denial.message and "case-insensitive" in denial.message


def test_a_third_twin_of_twins_an_older_data_directory_holds_is_refused(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("Twin", 1)
        runtime = b.broker.services.default
        b.call(lambda: runtime.topics.logs.create_topic("TWIN", 1))  # (made before twins were refused)
        b.call(lambda: runtime.topics.switch_logs(runtime.topics.logs))
        denial = b.call(lambda: runtime.policy.create_topic(None, "twin", 1, {}, None))
        assert denial is not None and denial.rule == "hub-name" and "case-insensitive" in denial.message
