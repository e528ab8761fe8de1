import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/**
 * KIP-447 fencing of a transactional producer on a KIP-848 (group.protocol=consumer) group:
 * a consume-transform-produce commit with the consumer's own group metadata succeeds, then
 * metadata with an epoch that is not the member's and with a member id the group does not
 * know are refused (CommitFailedException) and the committed offset stays.
 * Args: bootstrap. Topics "in" and "out" (1 partition each) must exist.
 * Prints: MEMBER id epoch, LEGIT offset, FENCED|ACCEPTED member epoch (per zombie),
 * COMMITTED offset, DONE.
 */
public class TxnCommitKip848 {
    public static void main(String[] a) throws Exception {
        String bs = a[0];
        TopicPartition in0 = new TopicPartition("in", 0);
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bs);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>("in", 0, "k", "v" + i)).get();
        }
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bs);
        cp.put("group.id", "eos");
        cp.put("group.protocol", "consumer");
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("isolation.level", "read_committed");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of("in"));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < 3 && System.currentTimeMillis() < deadline)
                c.poll(Duration.ofMillis(200)).forEach(got::add);
            if (got.size() < 3) throw new IllegalStateException("records not consumed: " + got.size());
            ConsumerGroupMetadata real = c.groupMetadata();
            System.out.println("MEMBER " + real.memberId() + " " + real.generationId());
            pp.put("transactional.id", "eos-848-java");
            try (KafkaProducer<String, String> tp = new KafkaProducer<>(pp)) {
                tp.initTransactions();
                tp.beginTransaction();
                for (int i = 0; i < 3; i++) tp.send(new ProducerRecord<>("out", 0, "k", got.get(i).value().toUpperCase()));
                tp.sendOffsetsToTransaction(Map.of(in0, new OffsetAndMetadata(3)), real);
                tp.commitTransaction();
                System.out.println("LEGIT " + c.committed(Set.of(in0)).get(in0).offset());
                ConsumerGroupMetadata[] zombies = {
                    new ConsumerGroupMetadata("eos", real.generationId() + 3, real.memberId(), Optional.empty()),
                    new ConsumerGroupMetadata("eos", real.generationId(), "no-such-member", Optional.empty()),
                };
                for (ConsumerGroupMetadata z : zombies) {
                    tp.beginTransaction();
                    tp.send(new ProducerRecord<>("out", 0, "k", "zombie"));
                    String who = z.memberId() + " " + z.generationId();
                    try {
                        tp.sendOffsetsToTransaction(Map.of(in0, new OffsetAndMetadata(5)), z);
                        tp.commitTransaction();
                        System.out.println("ACCEPTED " + who);
                    } catch (CommitFailedException e) {
                        System.out.println("FENCED " + who);
                        tp.abortTransaction();
                    }
                }
            }
            System.out.println("COMMITTED " + c.committed(Set.of(in0)).get(in0).offset());
        }
        System.out.println("DONE");
    }
}
