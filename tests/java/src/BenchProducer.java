import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** bench: bootstrap topic count size -> "RESULT <count> <seconds> <errors> <maxOffset>" with Java defaults. */
public class BenchProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        byte[] value = new byte[Integer.parseInt(args[3])];
        AtomicLong errors = new AtomicLong();
        AtomicLong maxOffset = new AtomicLong(-1);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.partitionsFor(topic);  // metadata before the clock starts
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, value), (md, e) -> {
                    if (e != null) errors.incrementAndGet();
                    else maxOffset.accumulateAndGet(md.offset(), Math::max);
                });
            }
            producer.flush();
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("RESULT " + count + " " + seconds + " " + errors.get() + " " + maxOffset.get());
        }
    }
}
