"""ApiVersions (key 18), v0–v4.

The list is built from the handler registry, so a version appears only once a
handler for it exists. Versions above v4 get the v0 fallback from the server.
No feature flags are advertised (no KRaft features to finalize here).
"""
from __future__ import annotations

from kafka_wire import codec
from kafka_wire.apis.registry import advertised, handles

_Response = codec.response_class(codec.ApiKey.ApiVersions)


@handles(codec.ApiKey.ApiVersions, 0, 4, pre_auth=True)
def api_versions(request, ctx):
    return _Response(
        version=ctx.version,
        error_code=0,
        api_keys=[_Response.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                  for k, lo, hi in advertised()],
        throttle_time_ms=0,
    )
