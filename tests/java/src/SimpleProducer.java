import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produce "p-i" values to every partition and wait for each acknowledgement.
 *
 * Args: bootstrap topic partitions perPartition [key=value ...] (producer properties;
 * defaults are Java's, so idempotence is on).
 * Prints "ACKED n" and exits 0, or "ERROR text" and exits 1.
 */
public class SimpleProducer {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        props.put("linger.ms", "5");
        props.put("delivery.timeout.ms", "30000");
        props.put("request.timeout.ms", "10000");
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]), per = Integer.parseInt(args[3]);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int p = 0; p < partitions; p++)
                for (int i = 0; i < per; i++)
                    acks.add(producer.send(new ProducerRecord<>(topic, p, null, p + "-" + i)));
            for (Future<RecordMetadata> f : acks) f.get();
            System.out.println("ACKED " + acks.size());
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }
}
