import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A transactional producer, then read_committed and read_uncommitted consumers.
 *
 * Args: bootstrap topic transactionalId group [compression.type]. Four transactions of 5 records
 * (partition i % 2): "commit-1-i" committed, "abort-1-i" aborted, "commit-2-i"
 * committed together with the group offset topic/0 -> 42 (sendOffsetsToTransaction),
 * "abort-2-i" aborted together with topic/1 -> 99.
 *
 * Prints "TXN name committed|aborted", then "RECORD isolation partition offset value"
 * for each consumer (reading until the end offsets), "COUNT isolation n",
 * "GROUP_OFFSET partition offset|none", "DONE". Exits 1 with "ERROR ..." on an exception.
 */
public class TxnProducer {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], txnId = args[2], group = args[3];
        try {
            produce(bootstrap, topic, txnId, group, args.length > 4 ? args[4] : "none");
            consume(bootstrap, topic, "read_committed");
            consume(bootstrap, topic, "read_uncommitted");
            Properties props = consumerProps(bootstrap, "read_committed");
            props.put("group.id", group);
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
                TopicPartition tp0 = new TopicPartition(topic, 0), tp1 = new TopicPartition(topic, 1);
                Map<TopicPartition, OffsetAndMetadata> got = c.committed(Set.of(tp0, tp1));
                for (TopicPartition tp : List.of(tp0, tp1)) {
                    OffsetAndMetadata om = got.get(tp);
                    System.out.println("GROUP_OFFSET " + tp.partition() + " " + (om == null ? "none" : om.offset()));
                }
            }
            System.out.println("DONE");
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    static void batch(KafkaProducer<String, String> p, String topic, String prefix) throws Exception {
        for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, i % 2, "k" + i, prefix + "-" + i));
        p.flush();
    }

    static void produce(String bootstrap, String topic, String txnId, String group, String codec)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("transactional.id", txnId);
        props.put("compression.type", codec);
        props.put("transaction.timeout.ms", "60000");
        props.put("delivery.timeout.ms", "30000");
        props.put("request.timeout.ms", "10000");
        props.put("max.block.ms", "30000");
        ConsumerGroupMetadata meta = new ConsumerGroupMetadata(group);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            p.beginTransaction();
            batch(p, topic, "commit-1");
            p.commitTransaction();
            System.out.println("TXN commit-1 committed");

            p.beginTransaction();
            batch(p, topic, "abort-1");
            p.abortTransaction();
            System.out.println("TXN abort-1 aborted");

            p.beginTransaction();
            batch(p, topic, "commit-2");
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(42)), meta);
            p.commitTransaction();
            System.out.println("TXN commit-2 committed");

            p.beginTransaction();
            batch(p, topic, "abort-2");
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 1), new OffsetAndMetadata(99)), meta);
            p.abortTransaction();
            System.out.println("TXN abort-2 aborted");
        }
    }

    static Properties consumerProps(String bootstrap, String isolation) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("isolation.level", isolation);
        return props;
    }

    static void consume(String bootstrap, String topic, String isolation) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps(bootstrap, isolation))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) tps.add(new TopicPartition(topic, p.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            int count = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) if (consumer.position(tp) < end.get(tp)) done = false;
                if (done) break;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("RECORD " + isolation + " " + r.partition() + " " + r.offset() + " " + r.value());
                    count++;
                }
            }
            System.out.println("END " + isolation + " " + end.values());
            System.out.println("COUNT " + isolation + " " + count);
        }
    }
}
