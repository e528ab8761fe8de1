"""A Kafka 4.3 Java transactional producer and a KIP-848 consumer (group.protocol=consumer):
sendOffsetsToTransaction with the consumer's group metadata commits, and metadata whose
epoch is not the member's, or whose member id the group does not know, is fenced
(CommitFailedException: ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, as Kafka's
validateTransactionalOffsetCommit answers); the committed offset stays
(tests/java/src/TxnCommitKip848.java). Before, kafka-wire accepted both zombies."""
from __future__ import annotations


def test_java_zombie_txn_commits_to_a_kip848_group_are_fenced(java, broker):
    broker.create_hub("in", partitions=1)
    broker.create_hub("out", partitions=1)
    res = java.run("TxnCommitKip848", broker.bootstrap_servers, timeout=120)
    lines = res.lines()
    output = f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-3000:]}"
    assert res.returncode == 0 and lines[-1] == "DONE", output
    member, epoch = next(line.split()[1:] for line in lines if line.startswith("MEMBER "))
    assert "LEGIT 3" in lines, output
    assert [line for line in lines if line.startswith(("FENCED", "ACCEPTED"))] == [
        f"FENCED {member} {int(epoch) + 3}", f"FENCED no-such-member {epoch}"], output
    assert "COMMITTED 3" in lines, output
