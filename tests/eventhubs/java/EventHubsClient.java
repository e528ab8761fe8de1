// A Kafka Java client configured for Event Hubs: SASL/PLAIN with $ConnectionString.
// Usage: EventHubsClient BOOTSTRAP CONNECTION_STRING TOPIC [CA_PEM]
// Produces three records, reads them back, prints "OK <count>"; prints
// "AUTH_FAILED <message>" when authentication is refused.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class EventHubsClient {
    static Properties common(String bootstrap, String password, String ca) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", ca == null ? "SASL_PLAINTEXT" : "SASL_SSL");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\"$ConnectionString\" password=\"" + password.replace("\"", "\\\"") + "\";");
        if (ca != null) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", ca);
        }
        p.put("request.timeout.ms", "10000");
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], password = args[1], topic = args[2];
        String ca = args.length > 3 ? args[3] : null;
        Properties pp = common(bootstrap, password, ca);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        pp.put("max.block.ms", "8000");
        pp.put("linger.ms", "0");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 3; i++) {
                producer.send(new ProducerRecord<>(topic, 0, "k" + i, "java-" + i)).get();
            }
        } catch (Exception e) {
            Throwable t = e;
            while (t != null && !(t instanceof SaslAuthenticationException)) t = t.getCause();
            if (t != null) {
                System.out.println("AUTH_FAILED " + t.getMessage());
                return;
            }
            throw e;
        }
        Properties cp = common(bootstrap, password, ca);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        List<String> seen = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 15000;
            while (seen.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    if (r.value().startsWith("java-")) seen.add(r.value());
                }
            }
        }
        System.out.println("OK " + seen.size());
    }
}
