"""CreateAcls (key 30) and DeleteAcls (key 31), v1–v3.

As on a Kafka broker without an authorizer, every creation and every delete
filter is answered SECURITY_DISABLED (Event Hubs authorizes with SAS
policies, not ACLs). MirrorMaker 2 and admin tools expect exactly this.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Create = codec.response_class(codec.ApiKey.CreateAcls)
_Delete = codec.response_class(codec.ApiKey.DeleteAcls)
_NO_AUTHORIZER = "no authorizer is configured"


@handles(codec.ApiKey.CreateAcls, 1, 3)
def create_acls(request, ctx):
    return _Create(version=ctx.version, throttle_time_ms=0, results=[
        _Create.AclCreationResult(error_code=Errors.SecurityDisabledError.errno, error_message=_NO_AUTHORIZER)
        for _ in request.creations])


@handles(codec.ApiKey.DeleteAcls, 1, 3)
def delete_acls(request, ctx):
    return _Delete(version=ctx.version, throttle_time_ms=0, filter_results=[
        _Delete.DeleteAclsFilterResult(error_code=Errors.SecurityDisabledError.errno,
                                       error_message=_NO_AUTHORIZER, matching_acls=[])
        for _ in request.filters])
