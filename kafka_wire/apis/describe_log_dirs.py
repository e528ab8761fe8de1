"""DescribeLogDirs (key 35), v1–v4.

One log dir: the directory of the namespace's partitions under the data
dir. Each partition reports its size on disk (all segments) and an offset
lag of 0 (there are no future replicas). topics null lists every partition;
partitions of unknown topics are left out, as Kafka does. v4 adds the
volume's total and usable bytes. Not emulated: several log dirs,
AlterReplicaLogDirs, v5 (is_cordoned).
"""
from __future__ import annotations

import logging
import shutil

from kafka_wire import codec
from kafka_wire.apis.authorization import visible
from kafka_wire.apis.registry import handles

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.DescribeLogDirs)
_Result = _Response.DescribeLogDirsResult
_Topic = _Result.DescribeLogDirsTopic
_Partition = _Topic.DescribeLogDirsPartition


def _wanted(request, ctx) -> list[tuple[str, list[int]]]:
    """The partitions asked for, of the hubs this connection sees (a hub-scoped key
    sees its hub only, as in Metadata): others are left out, as unknown ones are."""
    topics = ctx.topics
    if request.topics is None:
        return [(view.name, list(range(view.partitions))) for view in topics.all()
                if visible(ctx, view.name)]
    out = []
    for t in request.topics:
        view = topics.get(t.topic)
        if view is not None and visible(ctx, view.name):
            out.append((view.name, [p for p in t.partitions if 0 <= p < view.partitions]))
    return out


@handles(codec.ApiKey.DescribeLogDirs, 1, 4)
def describe_log_dirs(request, ctx):
    topics = ctx.topics
    entries = []
    for name, partitions in _wanted(request, ctx):
        parts = []
        for index in partitions:
            plog = topics.log(name, index)
            if plog is not None:
                parts.append(_Partition(partition_index=index, partition_size=plog.size_bytes,
                                        offset_lag=0, is_future_key=False))
        if parts:
            entries.append(_Topic(name=name, partitions=parts))
    directory = topics.logs_dir()
    total = usable = -1
    if ctx.version >= 4:
        try:
            usage = shutil.disk_usage(directory)
            total, usable = usage.total, usage.free
        except OSError as exc:
            log.warning("cannot read disk usage of %s: %s", directory, exc)
    result = _Result(error_code=0, log_dir=str(directory.resolve()), topics=entries,
                     total_bytes=total, usable_bytes=usable)
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=0, results=[result])
