"""WriteTxnMarkers (key 27), v1–v2: the admin abort of KIP-664
(``kafka-transactions.sh abort``, kafka-python's ``abort_transaction``,
``kafka-wire txns abort``). In Kafka brokers send it to each other; here the
transaction coordinator writes its markers itself, so this door serves only
operators: it writes ABORT markers (a COMMIT gets INVALID_TXN_STATE: only the
coordinator may commit) and needs the Manage right. A coordinator epoch of -1
(the admin tools' "bypass") is taken as the coordinator's own."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.authorization import MANAGE, cluster_error
from kafka_wire.apis.registry import handles
from kafka_wire.coordinator.transactions import COORDINATOR_EPOCH
from kafka_wire.log.errors import InvalidProducerEpoch, TransactionCoordinatorFenced

_Response = codec.response_class(codec.ApiKey.WriteTxnMarkers)
_Result = _Response.WritableTxnMarkerResult
_Topic = _Result.WritableTxnMarkerTopicResult
_Part = _Topic.WritableTxnMarkerPartitionResult


def _abort(ctx, topic: str, partition: int, marker) -> int:
    if marker.transaction_result:
        return Errors.InvalidTxnStateError.errno
    view = ctx.topics.get(topic)
    if view is None or not 0 <= partition < view.partitions:
        return Errors.UnknownTopicOrPartitionError.errno
    epoch = COORDINATOR_EPOCH if marker.coordinator_epoch < 0 else marker.coordinator_epoch
    try:
        ctx.topics.append_control(topic, partition, marker.producer_id, marker.producer_epoch, False, epoch,
                                  ctx.clock.now_ms())
    except InvalidProducerEpoch:
        return Errors.InvalidProducerEpochError.errno
    except TransactionCoordinatorFenced:
        return Errors.TransactionCoordinatorFencedError.errno
    except Exception:  # a closed or failing log
        return Errors.KafkaStorageError.errno
    return 0


@handles(codec.ApiKey.WriteTxnMarkers, 1, 2)
def write_txn_markers(request, ctx):
    denied = cluster_error(ctx, MANAGE)
    results = []
    for marker in request.markers:
        topics = []
        for t in marker.topics:
            parts = [_Part(partition_index=p, error_code=denied or _abort(ctx, t.name, p, marker))
                     for p in t.partition_indexes]
            topics.append(_Topic(name=t.name, partitions=parts))
        results.append(_Result(producer_id=marker.producer_id, topics=topics))
    return _Response(version=ctx.version, markers=results)
