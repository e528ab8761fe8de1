import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produce with the default (idempotent) Java producer, one compression codec
 * per topic, then read topics back from the beginning with a plain consumer.
 *
 * Args: bootstrap n produce=topic:codec,topic:codec,... consume=topic,topic,...
 * [keys=K] [flush=F] (either list may be empty). Produced record i of a topic
 * has key "k-i" (with keys=K: "k-(i % K)" for even i, "u-i" for odd i, so a
 * compacted batch keeps some records and loses others) and value "java-CODEC-i-" +
 * 200 x "abc" (compressible), partition i % partitions; flush=F flushes every
 * F records (one batch each, so a small segment.bytes rolls segments).
 *
 * Prints "ACKED topic n" per produced topic, then for every consumed topic
 * "RECORD topic partition offset key value" per record, "COUNT topic n"
 * (reading stops at the end offsets) and "TIMESTAMPS topic types minMs maxMs"
 * (types as Kafka names them: CreateTime, LogAppendTime), then "DONE". Exits 1 with "ERROR ..."
 * on an exception.
 */
public class JavaProduceConsume {
    static final String PAD = "abc".repeat(200);

    static List<String> list(String arg, String name) {
        List<String> out = new ArrayList<>();
        String v = arg.substring(name.length() + 1);
        for (String s : v.split(",")) if (!s.isEmpty()) out.add(s);
        return out;
    }

    public static void main(String[] args) {
        String bootstrap = args[0];
        int n = Integer.parseInt(args[1]);
        List<String> produce = list(args[2], "produce"), consume = list(args[3], "consume");
        int keys = 0, flush = 0;
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv[0].equals("keys")) keys = Integer.parseInt(kv[1]);
            else if (kv[0].equals("flush")) flush = Integer.parseInt(kv[1]);
            else throw new IllegalArgumentException("unknown option " + args[i]);
        }
        try {
            for (String spec : produce) {
                String[] tc = spec.split(":");
                produce(bootstrap, tc[0], tc[1], n, keys, flush);
            }
            for (String topic : consume) consume(bootstrap, topic);
            System.out.println("DONE");
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    static String key(int i, int keys) {
        if (keys <= 0) return "k-" + i;
        return i % 2 == 0 ? "k-" + (i % keys) : "u-" + i;
    }

    static void produce(String bootstrap, String topic, String codec, int n, int keys, int flush)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("compression.type", codec);
        // With flush=F the batches must be exactly F records (tests count them), so
        // linger far longer than a slow CI machine takes to send F records.
        props.put("linger.ms", flush > 0 ? "15000" : "20");
        props.put("delivery.timeout.ms", "30000");
        props.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            int partitions = producer.partitionsFor(topic).size();
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                acks.add(producer.send(new ProducerRecord<>(topic, i % partitions, key(i, keys),
                                                            "java-" + codec + "-" + i + "-" + PAD)));
                if (flush > 0 && (i + 1) % flush == 0) producer.flush();
            }
            for (Future<RecordMetadata> f : acks) f.get();
            System.out.println("ACKED " + topic + " " + acks.size());
        }
    }

    static void consume(String bootstrap, String topic) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("enable.auto.commit", "false");
        props.put("auto.offset.reset", "earliest");
        props.put("check.crcs", "true");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) tps.add(new TopicPartition(topic, p.partition()));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            int count = 0;
            java.util.TreeSet<String> types = new java.util.TreeSet<>();
            long minTs = Long.MAX_VALUE, maxTs = Long.MIN_VALUE;
            long deadline = System.currentTimeMillis() + 30_000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) if (consumer.position(tp) < end.get(tp)) done = false;
                if (done) break;
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println("RECORD " + topic + " " + r.partition() + " " + r.offset() + " "
                                       + r.key() + " " + r.value());
                    count++;
                    types.add(r.timestampType().name);
                    minTs = Math.min(minTs, r.timestamp());
                    maxTs = Math.max(maxTs, r.timestamp());
                }
            }
            System.out.println("COUNT " + topic + " " + count);
            System.out.println("TIMESTAMPS " + topic + " " + String.join(",", types) + " " + minTs + " " + maxTs);
        }
    }
}
