import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A group consumer driven line by line from a test.
 *
 * Args: bootstrap group protocol(classic|consumer) topic [key=value ...]
 * (extra consumer properties; max.seconds=N bounds the run, default 120).
 * A topic "pattern:REGEX" subscribes with a SubscriptionPattern, the KIP-848
 * regex the coordinator resolves (consumer protocol only).
 *
 * Prints (stdout, one event per line):
 *   ASSIGNED p,p,...     the full assignment after every change (may be empty)
 *   RECORD p offset value
 *   COMMITTED            after each synchronous commit of polled records
 *   CLOSED               after the final commit and close
 *   ERROR text           on an exception (exit code 1)
 * Reads stdin: "stop" (or end of input) commits, closes and exits 0.
 */
public class GroupConsumer {
    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> ps = new TreeSet<>();
        for (TopicPartition tp : tps) ps.add(tp.partition());
        StringBuilder sb = new StringBuilder();
        for (Integer p : ps) {
            if (sb.length() > 0) sb.append(',');
            sb.append(p);
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], protocol = args[2], topic = args[3];
        long maxSeconds = 120;
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("group.protocol", protocol);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());
        props.put("client.id", "java-" + protocol + "-" + ProcessHandle.current().pid());
        if (protocol.equals("classic")) {
            props.put("session.timeout.ms", "10000");
            props.put("heartbeat.interval.ms", "500");
        }
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv[0].equals("max.seconds")) maxSeconds = Long.parseLong(kv[1]);
            else props.put(kv[0], kv[1]);
        }

        final boolean[] stop = {false};
        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.trim().equals("stop")) break;
                }
            } catch (Exception ignored) {
            }
            synchronized (stop) { stop[0] = true; }
        });
        stdin.setDaemon(true);
        stdin.start();

        long deadline = System.currentTimeMillis() + maxSeconds * 1000;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    if (!revoked.isEmpty()) {
                        consumer.commitSync();
                        out("REVOKED " + partitions(revoked));
                    }
                }
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    out("ASSIGNED " + partitions(consumer.assignment()));
                }
                public void onPartitionsLost(Collection<TopicPartition> lost) {
                    out("LOST " + partitions(lost));
                }
            };
            if (topic.startsWith("pattern:")) {
                consumer.subscribe(new SubscriptionPattern(topic.substring(8)), listener);
            } else {
                consumer.subscribe(List.of(topic), listener);
            }
            while (true) {
                synchronized (stop) { if (stop[0]) break; }
                if (System.currentTimeMillis() > deadline) {
                    out("ERROR max.seconds reached");
                    System.exit(1);
                }
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                List<String> lines = new ArrayList<>();
                for (ConsumerRecord<String, String> r : records) {
                    lines.add("RECORD " + r.partition() + " " + r.offset() + " " + r.value()
                              + (topic.startsWith("pattern:") ? " " + r.topic() : ""));
                }
                for (String l : lines) out(l);
                consumer.commitSync();
                out("COMMITTED");
            }
            consumer.commitSync();
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(10)));
            out("CLOSED");
        } catch (Exception e) {
            out("ERROR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }
}
