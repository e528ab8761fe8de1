"""AddPartitionsToTxn (key 24), v0–v5.

Clients (v0–v3) name one transaction; v4+ (KIP-890) carries a list of
transactions, each optionally ``verify_only``. Unknown partitions fail the
whole request as in Kafka (the others get OPERATION_NOT_ATTEMPTED). Event
Hubs: transactions allowed (Send, tier), and the Send right on each hub.
"""
from __future__ import annotations

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import SEND, topic_error, transactional_error

_Response = codec.response_class(codec.ApiKey.AddPartitionsToTxn)
_TxnResult = _Response.AddPartitionsToTxnResult
_TopicResult = _Response.AddPartitionsToTxnTopicResult
_PartResult = _TopicResult.AddPartitionsToTxnPartitionResult


def _results(ctx, txn_id, pid, epoch, topics, verify_only=False):
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    txn_denied = transactional_error(ctx, transactional_id=txn_id)
    denied = {tp: txn_denied or topic_error(ctx, SEND, tp[0]) for tp in wanted}
    if any(denied.values()):
        from kafka.errors import OperationNotAttemptedError
        codes = {tp: denied[tp] or OperationNotAttemptedError.errno for tp in wanted}
    else:
        codes = ctx.txns.add_partitions(txn_id, pid, epoch, wanted, verify_only)
    by_topic: dict[str, list] = {}
    for (topic, part), code in codes.items():
        by_topic.setdefault(topic, []).append(_PartResult(partition_index=part, partition_error_code=code))
    return [_TopicResult(name=t, results_by_partition=parts) for t, parts in by_topic.items()]


@handles(codec.ApiKey.AddPartitionsToTxn, 0, 5)
def add_partitions_to_txn(request, ctx):
    if ctx.version <= 3:
        results = _results(ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                           request.v3_and_below_producer_epoch, request.v3_and_below_topics)
        return _Response(version=ctx.version, throttle_time_ms=0, results_by_topic_v3_and_below=results)
    out = [_TxnResult(transactional_id=t.transactional_id,
                      topic_results=_results(ctx, t.transactional_id, t.producer_id, t.producer_epoch,
                                             t.topics, t.verify_only))
           for t in request.transactions]
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=0, results_by_transaction=out)
