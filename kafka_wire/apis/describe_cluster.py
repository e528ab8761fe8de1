"""DescribeCluster (key 60), v0–v2.

One broker, which is also the controller; the cluster id is the one kept in
meta.properties. Only the BROKER endpoint type (1) is served: asking for
controllers gets MISMATCHED_ENDPOINT_TYPE, any other type
UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers. The broker is never
fenced (v2). Without an authorizer every cluster operation is allowed, so
asking for authorized operations reports them all.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.DescribeCluster)
_Broker = _Response.DescribeClusterBroker

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
# The codec carries authorized operations as a set of AclOperation codes; None
# encodes Kafka's "not requested" (INT32_MIN).
_NOT_REQUESTED = None
# CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
# IDEMPOTENT_WRITE: the operations Kafka defines on the CLUSTER resource.
_CLUSTER_OPS = frozenset({5, 7, 8, 9, 10, 11, 12})


@handles(codec.ApiKey.DescribeCluster, 0, 2)
def describe_cluster(request, ctx):
    version = ctx.version
    cluster = ctx.cluster
    endpoint = request.endpoint_type if version >= 1 else BROKER_ENDPOINT
    if endpoint != BROKER_ENDPOINT:
        if endpoint == CONTROLLER_ENDPOINT:
            errno = Errors.MismatchedEndpointTypeError.errno
            message = ("The request was sent to an endpoint of type BROKER, but we wanted an "
                       "endpoint of type CONTROLLER")
        else:
            errno = Errors.UnsupportedEndpointTypeError.errno
            message = f"unsupported endpoint type {endpoint}: use 1 (brokers)"
        return _Response(version=version, throttle_time_ms=0, error_code=errno,
                         error_message=message, endpoint_type=BROKER_ENDPOINT,
                         cluster_id=cluster.cluster_id, controller_id=-1, brokers=[],
                         authorized_operations=_NOT_REQUESTED)
    ops = set(_CLUSTER_OPS) if request.include_cluster_authorized_operations else _NOT_REQUESTED
    broker = _Broker(broker_id=cluster.node_id, host=cluster.host, port=cluster.port,
                     rack=cluster.rack, is_fenced=False)
    return _Response(version=version, throttle_time_ms=0, error_code=0, error_message=None,
                     endpoint_type=BROKER_ENDPOINT, cluster_id=cluster.cluster_id,
                     controller_id=cluster.node_id, brokers=[broker],
                     authorized_operations=ops)
