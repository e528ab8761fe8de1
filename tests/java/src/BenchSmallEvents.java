import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * bench.small_events: one client instance producing to, or reading, one partition.
 *
 * Args: produce|consume bootstrap topic partition warm count size [k=v ...] (client
 * properties; bench/small_events.py passes every setting, so the figures name them).
 * Untimed first, until the JIT has settled ({@link Settle}): a producer sends at least
 * {@code warm} records and prints {@code WARM n} (n records sent); a consumer reads the
 * first {@code warm} records (give it the producer's n) as many times as it takes and
 * prints {@code WARM}. Then it waits for a line on stdin, so parallel instances and the
 * broker's CPU reading start together, handles {@code count} records timed (a consumer:
 * offsets warm to warm+count-1) and prints one line:
 * {@code RESULT records seconds processCpuSeconds busiestThreadCpuSeconds busiestThread jitSeconds ok detail}.
 * ok is 1 only when every record was acknowledged (or read) once, offsets 0, 1, 2... in
 * order on the partition, values of {@code size} bytes: a broker that drops, repeats or
 * reorders records fails the run instead of winning it.
 */
public class BenchSmallEvents {
    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /** CPU nanoseconds per live Java thread (GC and JIT threads count in the process figure only). */
    static Map<Long, Long> threadCpu() {
        Map<Long, Long> out = new HashMap<>();
        for (long id : THREADS.getAllThreadIds()) {
            long ns = THREADS.getThreadCpuTime(id);
            if (ns >= 0) out.put(id, ns);
        }
        return out;
    }

    /** Timed window: wall, process CPU and the busiest thread (is one thread the bound?). */
    static final class Window {
        final long wall0 = System.nanoTime(), cpu0 = OS.getProcessCpuTime();
        final Map<Long, Long> threads0 = threadCpu();
        final long jit0 = JIT.getTotalCompilationTime();

        String result(long records, boolean ok, String detail) {
            double seconds = (System.nanoTime() - wall0) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            long busiest = 0;
            String name = "-";
            for (Map.Entry<Long, Long> e : threadCpu().entrySet()) {
                long used = e.getValue() - threads0.getOrDefault(e.getKey(), 0L);
                if (used > busiest) {
                    busiest = used;
                    var info = THREADS.getThreadInfo(e.getKey());
                    name = info == null ? "?" : info.getThreadName().replace(' ', '_');
                }
            }
            return "RESULT " + records + " " + seconds + " " + cpu + " " + busiest / 1e9 + " " + name + " "
                    + (JIT.getTotalCompilationTime() - jit0) / 1e3 + " " + (ok ? 1 : 0) + " " + detail.replace(' ', '_');
        }
    }

    static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();

    /**
     * The untimed part: at least {@code min} records, then on while the JIT is compiling
     * (it does for seconds after start), so the timed records run settled code: until half a
     * second passes with at most 5 ms of compiling, or 30 s.
     */
    static final class Settle {
        final long min, deadline = System.nanoTime() + 30_000_000_000L;
        long windowStart = System.nanoTime(), jitStart = JIT.getTotalCompilationTime();

        Settle(long min) {
            this.min = min;
        }

        boolean more(long done) {
            long now = System.nanoTime();
            if (done < min || now - windowStart < 500_000_000L) return true;
            boolean busy = JIT.getTotalCompilationTime() - jitStart > 5;
            windowStart = now;
            jitStart = JIT.getTotalCompilationTime();
            return busy && now < deadline;
        }
    }

    /** The client's own averages (over its last 30 s) that tell waiting from working. */
    static String metrics(Map<MetricName, ? extends Metric> all, String group, String... names) {
        StringBuilder out = new StringBuilder();
        for (String name : names)
            for (Map.Entry<MetricName, ? extends Metric> e : all.entrySet())
                if (e.getKey().group().equals(group) && e.getKey().name().equals(name) && e.getKey().tags().size() == 1)
                    out.append(',').append(name).append('=').append(e.getValue().metricValue());
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2];
        int partition = Integer.parseInt(args[3]);
        long warm = Long.parseLong(args[4]), count = Long.parseLong(args[5]);
        int size = Integer.parseInt(args[6]);
        Properties props = properties(bootstrap, args, 7);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        if (mode.equals("produce")) produce(props, topic, partition, warm, count, size, stdin);
        else consume(props, topic, partition, warm, count, size, stdin);
    }

    /** The client's properties: bootstrap.servers, then each {@code k=v} argument from {@code from} on. */
    static Properties properties(String bootstrap, String[] args, int from) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        for (int i = from; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        return props;
    }

    /** Before the client closes (a consumer's close takes ~0.5 s), so the reader's clock stops too. */
    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Callbacks of one partition arrive in send order on the producer's I/O thread. */
    static final class Acks {
        long next, errors, misordered;
        String firstError = "";

        void on(long offset, Exception e) {
            if (e != null) {
                if (errors++ == 0) firstError = e.toString();
            } else if (offset != next++) {
                misordered++;
            }
        }
    }

    static void produce(Properties props, String topic, int partition, long warm, long count, int size,
                          BufferedReader stdin) throws Exception {
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        byte[] value = new byte[size];
        new Random(30).nextBytes(value);  // incompressible, the same in every run
        Acks acks = new Acks();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.partitionsFor(topic);
            Settle settle = new Settle(warm);
            long sent = 0;
            for (; settle.more(sent); sent += 20_000)
                send(producer, topic, partition, value, acks, 20_000);
            producer.flush();
            say("WARM " + sent);
            stdin.readLine();
            Window w = new Window();
            send(producer, topic, partition, value, acks, count);
            // Every callback has run when flush returns (it waits on each batch's latch, counted
            // down after the callbacks), so the I/O thread's writes to acks are visible after it.
            producer.flush();
            boolean ok = acks.errors == 0 && acks.misordered == 0 && acks.next == sent + count;
            say(w.result(count, ok, "acked=" + acks.next + ",errors=" + acks.errors + ",misordered="
                    + acks.misordered + metrics(producer.metrics(), "producer-metrics", "request-latency-avg",
                    "produce-throttle-time-avg", "batch-size-avg", "bufferpool-wait-ratio", "io-wait-ratio")
                    + (acks.firstError.isEmpty() ? "" : ",first=" + acks.firstError)));
        }
    }

    /** One method for the untimed and the timed records, so the timed ones run compiled code. */
    static void send(KafkaProducer<byte[], byte[]> producer, String topic, int partition, byte[] value, Acks acks,
                     long n) {
        for (long i = 0; i < n; i++)
            producer.send(new ProducerRecord<>(topic, partition, null, value), (md, e) -> acks.on(md.offset(), e));
    }

    static final class Reads {
        final int size;
        long next, gaps, badSize;

        Reads(int size) {
            this.size = size;
        }
    }

    /** Polls until the offset {@code upTo} is read (or the time is up), checking every record. */
    static void read(KafkaConsumer<byte[], byte[]> consumer, Reads reads, long upTo, long seconds) {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (reads.next < upTo && System.nanoTime() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                if (r.offset() != reads.next) reads.gaps++;
                if (r.value().length != reads.size) reads.badSize++;
                reads.next = r.offset() + 1;
            }
        }
    }

    static void consume(Properties props, String topic, int partition, long warm, long count, int size,
                          BufferedReader stdin) throws Exception {
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, partition);
        Reads reads = new Reads(size);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            consumer.assign(List.of(tp));
            consumer.seek(tp, 0);
            Settle settle = new Settle(warm);
            for (long done = 0; settle.more(done); done += warm) {  // the first warm records, again and again
                consumer.seek(tp, 0);
                reads.next = 0;
                read(consumer, reads, warm, 120);
                if (reads.next < warm) reads.gaps++;  // the untimed records must all be there too
            }
            consumer.seek(tp, warm);  // drops what was fetched beyond warm: the timed part fetches it
            reads.next = warm;
            say("WARM");
            stdin.readLine();
            Window w = new Window();
            read(consumer, reads, warm + count, 600);
            boolean ok = reads.next == warm + count && reads.gaps == 0 && reads.badSize == 0;
            say(w.result(reads.next - warm, ok,
                    "read_to=" + reads.next + ",gaps=" + reads.gaps + ",bad_size=" + reads.badSize
                    + metrics(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-latency-avg",
                    "fetch-size-avg", "records-per-request-avg", "fetch-throttle-time-avg")));
        }
    }
}
