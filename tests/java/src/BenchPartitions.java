import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * bench.partitions: the Java producer round robin over many partitions and to one.
 *
 * Args: bootstrap spreadTopic partitions oneTopic warm count size [k=v ...] (producer
 * properties). Each record names its partition: partitions 0..partitions-1 of spreadTopic in
 * turn, or partition 0 of oneTopic, from a producer each way. Untimed first, both ways in turn
 * until the JIT has settled ({@link BenchSmallEvents.Settle}, at least {@code warm} records),
 * then {@code WARM n ok}. Then each stdin line {@code spread} or {@code one} sends {@code count}
 * records that way, timed, and prints {@code BenchSmallEvents.Window}'s RESULT line; {@code quit}
 * (or end of input) closes.
 * ok is 1 only when every record sent so far was acknowledged once, at the next offset of its
 * partition from the log end offset read before the first send: a broker that drops, repeats or
 * reorders records fails the run instead of winning it.
 */
public class BenchPartitions {
    /** Next expected offset per partition; callbacks of one partition arrive in send order. */
    static final class Acks {
        final long[] next;
        long sent, acked, errors, misordered;
        String firstError = "";

        Acks(long[] start) {
            next = start;
        }

        void on(int partition, long offset, Exception e) {
            if (e != null) {
                if (errors++ == 0) firstError = e.toString();
            } else {
                acked++;
                if (offset != next[partition]++) misordered++;
            }
        }

        boolean ok() {
            return errors == 0 && misordered == 0 && acked == sent;
        }

        String detail() {
            return "acked=" + acked + "/" + sent + ",errors=" + errors + ",misordered=" + misordered
                    + (firstError.isEmpty() ? "" : ",first=" + firstError);
        }
    }

    static long[] logEnds(Properties props, String topic, int partitions) throws Exception {
        Properties admin = new Properties();
        admin.put("bootstrap.servers", props.get("bootstrap.servers"));
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        for (int p = 0; p < partitions; p++) ask.put(new TopicPartition(topic, p), OffsetSpec.latest());
        long[] out = new long[partitions];
        try (Admin a = Admin.create(admin)) {
            a.listOffsets(ask).all().get().forEach((tp, info) -> out[tp.partition()] = info.offset());
        }
        return out;
    }

    /** One method for the untimed and the timed records, so the timed ones run compiled code. */
    static void send(KafkaProducer<byte[], byte[]> producer, String topic, int partitions, byte[] value, Acks acks,
                     long n) {
        for (long i = 0; i < n; i++) {
            int p = (int) (i % partitions);
            producer.send(new ProducerRecord<>(topic, p, null, value), (md, e) -> acks.on(p, md.offset(), e));
        }
        acks.sent += n;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], spreadTopic = args[1], oneTopic = args[3];
        int partitions = Integer.parseInt(args[2]);
        long warm = Long.parseLong(args[4]), count = Long.parseLong(args[5]);
        int size = Integer.parseInt(args[6]);
        Properties props = BenchSmallEvents.properties(bootstrap, args, 7);
        Acks spread = new Acks(logEnds(props, spreadTopic, partitions)), one = new Acks(logEnds(props, oneTopic, 1));
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        byte[] value = new byte[size];
        new Random(30).nextBytes(value);  // incompressible, the same in every run
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        // A producer each way: the Java producer's sender visits every partition it has batched
        // for on each pass, so one that had written to 1,000 would slow the one-partition runs.
        try (KafkaProducer<byte[], byte[]> wideProducer = new KafkaProducer<>(props);
             KafkaProducer<byte[], byte[]> oneProducer = new KafkaProducer<>(props)) {
            wideProducer.partitionsFor(spreadTopic);
            oneProducer.partitionsFor(oneTopic);
            BenchSmallEvents.Settle settle = new BenchSmallEvents.Settle(warm);
            long sent = 0;
            for (; settle.more(sent); sent += partitions * 20L) {
                send(wideProducer, spreadTopic, partitions, value, spread, partitions * 20L);
                send(oneProducer, oneTopic, 1, value, one, partitions * 20L);
            }
            wideProducer.flush();
            oneProducer.flush();
            BenchSmallEvents.say("WARM " + sent + " " + (spread.ok() && one.ok() ? 1 : 0));
            for (String line; (line = stdin.readLine()) != null && !line.equals("quit"); ) {
                boolean wide = line.equals("spread");
                Acks acks = wide ? spread : one;
                KafkaProducer<byte[], byte[]> producer = wide ? wideProducer : oneProducer;
                BenchSmallEvents.Window w = new BenchSmallEvents.Window();
                long main0 = BenchSmallEvents.THREADS.getCurrentThreadCpuTime(), wall0 = System.nanoTime();
                send(producer, wide ? spreadTopic : oneTopic, wide ? partitions : 1, value, acks, count);
                // Every callback has run when flush returns (see BenchSmallEvents.produce).
                producer.flush();
                // The sending thread's share beside the busiest (mostly the I/O thread): both are busy.
                double mainShare = (double) (BenchSmallEvents.THREADS.getCurrentThreadCpuTime() - main0)
                        / (System.nanoTime() - wall0);
                BenchSmallEvents.say(w.result(count, spread.ok() && one.ok(), acks.detail()
                        + String.format(",main_thread=%.2f", mainShare)
                        + BenchSmallEvents.metrics(producer.metrics(), "producer-metrics", "request-latency-avg",
                        "batch-size-avg", "records-per-request-avg", "bufferpool-wait-ratio", "io-wait-ratio")));
            }
        }
    }
}
