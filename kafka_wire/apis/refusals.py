"""The namespace's refusals (:mod:`kafka_wire.eventhubs.refusals`) as Kafka error codes:
the Kafka front end's one table.

A tier rule answers what Event Hubs' Kafka endpoint answers for it; a refusal
without a rule answers by its reason. Codes chosen where Microsoft documents
none (all listed in docs/eventhubs.md): oversized publication
MESSAGE_TOO_LARGE; codec not offered UNSUPPORTED_FOR_MESSAGE_FORMAT;
transactions where the tier has none TRANSACTIONAL_ID_AUTHORIZATION_FAILED
(what Java clients report against Standard namespaces); partitions over quota
INVALID_PARTITIONS; other management over quota (hubs, growth, retention,
compaction, DeleteRecords) POLICY_VIOLATION; no Kafka endpoint (Basic)
TOPIC_AUTHORIZATION_FAILED. The broker also hands
:func:`error_code` to the compatibility report, whose entries say which Kafka
error a client meets on Event Hubs.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire.eventhubs.refusals import Denial, Refusal

__all__ = ["RULE_ERRORS", "REASON_ERRORS", "error_code", "kafka_error"]

# Tier rules (eventhubs.tier_rules.RULES, the policy's throughput-units): the error Event
# Hubs' Kafka endpoint answers. The broker's [limits] refuse with the same rule ids.
RULE_ERRORS: dict[str, type[Errors.BrokerResponseError]] = {
    "kafka-endpoint": Errors.TopicAuthorizationFailedError,       # Basic: no Kafka endpoint
    "publication-size": Errors.MessageSizeTooLargeError,
    "compression": Errors.UnsupportedForMessageFormatError,
    "idempotence": Errors.ClusterAuthorizationFailedError,
    "transactions": Errors.TransactionalIdAuthorizationFailedError,  # what Java clients report
    "transaction-timeout": Errors.InvalidTransactionTimeoutError,
    "hub-name": Errors.InvalidTopicError,
    "hubs-per-namespace": Errors.PolicyViolationError,
    "partitions-per-hub": Errors.InvalidPartitionsError,
    "namespace-partitions": Errors.InvalidPartitionsError,
    "partition-growth": Errors.PolicyViolationError,
    "compaction": Errors.PolicyViolationError,
    "retention": Errors.PolicyViolationError,
    "delete-records": Errors.PolicyViolationError,
    "group-id-length": Errors.InvalidGroupIdError,
    "kafka-groups-per-namespace": Errors.PolicyViolationError,
    "session-timeout": Errors.InvalidSessionTimeoutError,
    "commit-metadata": Errors.OffsetMetadataTooLargeError,
    "throughput-units": Errors.PolicyViolationError,  # Event Hubs refuses a throttled produce so
}

# A refusal no rule decided (a missing right, a hub that is not Active, a failed append).
REASON_ERRORS: dict[Refusal, type[Errors.BrokerResponseError]] = {
    Refusal.UNAUTHENTICATED: Errors.SaslAuthenticationFailedError,
    Refusal.ADDRESS: Errors.SaslAuthenticationFailedError,
    Refusal.DENIED: Errors.TopicAuthorizationFailedError,
    Refusal.NOT_FOUND: Errors.UnknownTopicOrPartitionError,
    Refusal.INVALID: Errors.InvalidRequestError,
    Refusal.LIMIT: Errors.PolicyViolationError,
    Refusal.TOO_LARGE: Errors.MessageSizeTooLargeError,
    Refusal.UNSUPPORTED: Errors.PolicyViolationError,
    Refusal.DISABLED: Errors.PolicyViolationError,
    Refusal.BUSY: Errors.PolicyViolationError,
    # Kafka's own word for "not enough replicas have it" (retriable): clients retry
    # until the secondaries catch up or their delivery timeout ends.
    Refusal.REPLICATION: Errors.NotEnoughReplicasError,
    Refusal.FAILED: Errors.KafkaStorageError,
}


def error_code(denial: Denial) -> int:
    """The Kafka error code of ``denial``: its rule's, else its reason's."""
    error = RULE_ERRORS.get(denial.rule) if denial.rule is not None else None
    return (error or REASON_ERRORS[denial.reason]).errno


def kafka_error(denial: Denial) -> tuple[int, str]:
    """(error code, message), as the API modules answer a refusal."""
    return error_code(denial), denial.message
