"""Message classes kafka-python's codec lacks, built from JSON schemas here.

Each ``<Name>.json`` in this package is a Kafka message definition in the
format of Kafka's own ``clients/src/main/resources/common/message/`` files
(the format kafka-python's ``kafka/protocol/schemas/resources/`` uses); a
class named after the file is built from it by kafka-python's
``ApiMessage`` machinery and registered with :func:`kafka_wire.codec.register_message`.

    ConsumerGroupHeartbeat  (key 68) v0-v1   KIP-848
    ConsumerGroupDescribe   (key 69) v0-v1   KIP-848 (v1: MemberType, KIP-1099)

:mod:`kafka_wire.codec` imports this module at its end, so importing the
codec is enough. To add a message: drop its request and response JSON here,
declare the two classes below and add them to ``MESSAGES``.
"""
from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

__all__ = ["ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
           "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse", "MESSAGES"]

_HERE = __name__  # the package the JSON files are read from


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_HERE):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_HERE):
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=_HERE):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=_HERE):
    pass


MESSAGES = [
    (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse),
]


def _register() -> None:
    from kafka_wire import codec

    for request_cls, response_cls in MESSAGES:
        codec.register_message(request_cls, response_cls)


_register()
