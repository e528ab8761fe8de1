"""DescribeAcls (key 29), v1–v3.

kafka-wire has no Kafka authorizer (Event Hubs authorizes with SAS policies,
not ACLs), so it answers as a Kafka broker without ``authorizer.class.name``
does: SECURITY_DISABLED, "no authorizer is configured". MirrorMaker 2 calls
this to sync ACLs and copes with that answer. Not emulated: ACLs,
CreateAcls, DeleteAcls.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.DescribeAcls)


@handles(codec.ApiKey.DescribeAcls, 1, 3)
def describe_acls(request, ctx):
    return _Response(version=ctx.version, throttle_time_ms=0,
                     error_code=Errors.SecurityDisabledError.errno,
                     error_message="no authorizer is configured", resources=[])
