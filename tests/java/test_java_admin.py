"""The Kafka 4.3 Java AdminClient against kafka-wire: every admin call Kafka
Connect and MirrorMaker 2 make (MirrorMaker 2 itself cannot run here: its jar
is in no reachable package), in one JVM (tests/java/src/AdminOps.java).

Pinned: describe cluster; create topics (with configs; creating one twice is
TopicExistsException), list and describe topics; describe topic and broker
configs; incremental alter configs (SET then DELETE); create partitions;
list offsets (earliest, latest, max timestamp, for a timestamp); consumer
group offsets alter/list/delete, list groups (all, consumer groups only, the
deprecated listConsumerGroups), describe/delete groups; describe ACLs answered
as a broker without an authorizer answers (SecurityDisabledException); create
ACLs refused the same way; delete topics.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

CHECKS = (
    "describe_cluster", "create_topics", "create_existing_topic_fails", "list_topics",
    "describe_topics", "describe_configs", "describe_broker_configs",
    "incremental_alter_configs", "create_partitions", "list_offsets",
    "alter_consumer_group_offsets", "list_consumer_group_offsets", "list_groups",
    "list_consumer_groups", "describe_consumer_groups", "delete_consumer_group_offsets", "delete_consumer_groups",
    "describe_acls", "create_acls", "delete_topics",
)


def test_java_admin_client_calls_of_connect_and_mirrormaker2(java, broker):
    res = java.run("AdminOps", broker.bootstrap_servers, "java-admin", timeout=120)
    output = f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-3000:]}"
    assert res.returncode == 0 and not res.timed_out, output
    failed = [line for line in res.lines() if line.startswith("FAIL ")]
    assert not failed, "\n".join(failed) + "\n" + output
    passed = {line.split()[1] for line in res.lines() if line.startswith("OK ")}
    assert passed == set(CHECKS), output
    assert f"DONE ok={len(CHECKS)} fail=0" in res.lines(), output
    # No authorizer: DescribeAcls says SECURITY_DISABLED rather than inventing ACLs.
    assert "OK describe_acls SecurityDisabledException" in res.lines()
    assert "OK create_acls SecurityDisabledException" in res.lines()
