import java.nio.ByteBuffer;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Encodes sample KIP-848 messages (keys 68 and 69, every version) with the
 * Kafka 4.3 client's own generated classes and prints
 * "api version request|response hex" lines, so the Python codec built from
 * kafka_wire/schemas/*.json can be checked byte for byte against Kafka.
 */
public class WireSchemas {
    static final Uuid TOPIC = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);

    static void print(int api, short version, String kind, Message m) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, version);
        StringBuilder hex = new StringBuilder();
        for (byte b : buf.array()) hex.append(String.format("%02x", b));
        System.out.println(api + " " + version + " " + kind + " " + hex);
    }

    public static void main(String[] args) {
        for (short v = 0; v <= 1; v++) {
            ConsumerGroupHeartbeatRequestData hb = new ConsumerGroupHeartbeatRequestData()
                .setGroupId("g1").setMemberId("m-1").setMemberEpoch(3).setInstanceId("i1")
                .setRebalanceTimeoutMs(30000).setSubscribedTopicNames(List.of("a", "b"))
                .setServerAssignor("uniform")
                .setTopicPartitions(List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                    .setTopicId(TOPIC).setPartitions(List.of(0, 2))));
            if (v >= 1) hb.setSubscribedTopicRegex("re.*");
            print(68, v, "request", hb);
            print(68, v, "response", new ConsumerGroupHeartbeatResponseData()
                .setMemberId("m-1").setMemberEpoch(4).setHeartbeatIntervalMs(5000)
                .setAssignment(new ConsumerGroupHeartbeatResponseData.Assignment()
                    .setTopicPartitions(List.of(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                        .setTopicId(TOPIC).setPartitions(List.of(1))))));
            print(68, v, "response-null", new ConsumerGroupHeartbeatResponseData()
                .setErrorCode((short) 25).setErrorMessage("unknown member").setMemberEpoch(-1));
            print(69, v, "request", new ConsumerGroupDescribeRequestData()
                .setGroupIds(List.of("g1", "g2")).setIncludeAuthorizedOperations(true));
            ConsumerGroupDescribeResponseData.Member member = new ConsumerGroupDescribeResponseData.Member()
                .setMemberId("m-1").setMemberEpoch(4).setClientId("c").setClientHost("/127.0.0.1")
                .setSubscribedTopicNames(List.of("a"))
                .setAssignment(new ConsumerGroupDescribeResponseData.Assignment()
                    .setTopicPartitions(List.of(new ConsumerGroupDescribeResponseData.TopicPartitions()
                        .setTopicId(TOPIC).setTopicName("a").setPartitions(List.of(0, 1)))))
                .setTargetAssignment(new ConsumerGroupDescribeResponseData.Assignment());
            if (v >= 1) member.setMemberType((byte) 1);
            print(69, v, "response", new ConsumerGroupDescribeResponseData()
                .setGroups(List.of(new ConsumerGroupDescribeResponseData.DescribedGroup()
                    .setGroupId("g1").setGroupState("Stable").setGroupEpoch(2).setAssignmentEpoch(2)
                    .setAssignorName("uniform").setMembers(List.of(member))
                    .setAuthorizedOperations(328))));
        }
    }
}
