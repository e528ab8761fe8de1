"""The console's send form keeps in the log exactly what an AMQP sender's message of the same
event keeps there, without going through the AMQP decoder."""
from __future__ import annotations

import pytest
from proton import Message

from kafka_wire.amqp.messages import decode_message
from kafka_wire.console import api

NOW_S = 1_700_000_000.123


def _as_an_sdk_sends_it(doc: dict):
    message = Message(body=doc.get("body", "").encode("utf-8"),
                      properties=dict(doc.get("properties") or {}) or None, inferred=True,
                      content_type=doc.get("content_type") or None)
    message.creation_time = NOW_S
    return decode_message(bytes(message.encode()))._replace(partition_key=doc.get("partition_key"))


@pytest.mark.parametrize("doc", [
    {"body": '{"hello": 1}', "content_type": "application/json",
     "properties": {"n": 5, "who": "console", "ok": True, "ratio": 1.5, "none": None, "neg": -7,
                    "big": 2 ** 40}},
    {"body": ""},
    {"body": "x" * 1000, "content_type": "t" * 300, "partition_key": "k"},
    {"body": "é", "content_type": "é", "properties": {}},
], ids=["typed-properties", "empty", "long-content-type", "non-ascii"])
def test_the_console_event_is_what_an_sdk_send_leaves(doc):
    event, partition = api._event(doc, 4, int(NOW_S * 1000))
    assert partition is None
    assert event == _as_an_sdk_sends_it(doc)


@pytest.mark.parametrize("doc", [{"body": "x", "content_type": 5},
                                 {"body": "x", "properties": {"huge": 2 ** 70}}])
def test_values_amqp_cannot_carry_are_refused(doc):
    with pytest.raises(ValueError):
        api._event(doc, 4, 0)
