import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Every AdminClient call a tool like MirrorMaker 2 or Kafka Connect makes,
 * in one JVM: describe cluster, create/list/describe topics, describe and
 * incrementally alter configs, create partitions, list offsets (earliest,
 * latest, max timestamp, for a timestamp), consumer group offsets
 * list/alter/delete, list/describe/delete groups, describe and create ACLs.
 *
 * Args: bootstrap prefix. Prints "OK check" or "FAIL check reason" per check,
 * then "DONE ok=N fail=M"; exits 0 (the Python test asserts on the lines).
 */
public class AdminOps {
    interface Check { String run() throws Exception; }

    static int ok = 0, fail = 0;

    static void check(String name, Check c) {
        try {
            String detail = c.run();
            ok++;
            System.out.println("OK " + name + (detail == null || detail.isEmpty() ? "" : " " + detail));
        } catch (Throwable t) {
            fail++;
            Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            System.out.println("FAIL " + name + " " + cause.getClass().getSimpleName() + ": "
                               + String.valueOf(cause.getMessage()).replace('\n', ' '));
        }
        System.out.flush();
    }

    static void expect(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], prefix = args[1];
        String topic = prefix + "-plain", compacted = prefix + "-compacted", group = prefix + "-group";
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", "15000");
        props.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(props)) {
            check("describe_cluster", () -> {
                DescribeClusterResult r = admin.describeCluster();
                String id = r.clusterId().get();
                int nodes = r.nodes().get().size();
                expect(id != null && !id.isEmpty(), "no cluster id");
                expect(nodes >= 1, "no nodes");
                expect(r.controller().get() != null, "no controller");
                return "cluster_id=" + id + " nodes=" + nodes;
            });
            check("create_topics", () -> {
                Map<String, String> cfg = new HashMap<>();
                cfg.put("cleanup.policy", "compact");
                // Event Hubs stamps LogAppendTime by default; CreateTime lets
                // list_offsets check timestamp lookups against the producer's stamps.
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1)
                                               .configs(Map.of("message.timestamp.type", "CreateTime")),
                                           new NewTopic(compacted, 1, (short) 1).configs(cfg))).all().get();
                return "";
            });
            check("create_existing_topic_fails", () -> {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
                } catch (ExecutionException e) {
                    expect(e.getCause() instanceof TopicExistsException, "wrong error " + e.getCause());
                    return "";
                }
                throw new AssertionError("created twice");
            });
            check("list_topics", () -> {
                Set<String> names = admin.listTopics().names().get();
                expect(names.contains(topic) && names.contains(compacted), "missing: " + names);
                return "";
            });
            check("describe_topics", () -> {
                Map<String, TopicDescription> d = admin.describeTopics(List.of(topic, compacted)).allTopicNames().get();
                expect(d.get(topic).partitions().size() == 2, "partitions " + d.get(topic));
                expect(d.get(compacted).partitions().size() == 1, "partitions " + d.get(compacted));
                return "";
            });
            ConfigResource topicRes = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            ConfigResource compactedRes = new ConfigResource(ConfigResource.Type.TOPIC, compacted);
            check("describe_configs", () -> {
                Map<ConfigResource, Config> all = admin.describeConfigs(List.of(topicRes, compactedRes)).all().get();
                ConfigEntry policy = all.get(compactedRes).get("cleanup.policy");
                expect(policy != null && policy.value().equals("compact"), "compacted policy " + policy);
                expect(policy.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, "source " + policy.source());
                ConfigEntry plain = all.get(topicRes).get("cleanup.policy");
                expect(plain != null && plain.value().equals("delete"), "plain policy " + plain);
                expect(all.get(topicRes).get("retention.ms") != null, "no retention.ms");
                ConfigEntry tsType = all.get(topicRes).get("message.timestamp.type");
                expect(tsType != null && tsType.value().equals("CreateTime"), "timestamp type " + tsType);
                return "entries=" + all.get(topicRes).entries().size();
            });
            check("describe_broker_configs", () -> {
                String node = String.valueOf(admin.describeCluster().nodes().get().iterator().next().id());
                ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, node);
                Config c = admin.describeConfigs(List.of(b)).all().get().get(b);
                expect(!c.entries().isEmpty(), "no broker entries");
                return "entries=" + c.entries().size();
            });
            check("incremental_alter_configs", () -> {
                Map<ConfigResource, Collection<AlterConfigOp>> ops = new HashMap<>();
                ops.put(topicRes, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"),
                                                            AlterConfigOp.OpType.SET)));
                admin.incrementalAlterConfigs(ops).all().get();
                ConfigEntry e = admin.describeConfigs(List.of(topicRes)).all().get().get(topicRes).get("retention.ms");
                expect(e.value().equals("3600000"), "retention.ms=" + e.value());
                ops.put(topicRes, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", ""),
                                                            AlterConfigOp.OpType.DELETE)));
                admin.incrementalAlterConfigs(ops).all().get();
                e = admin.describeConfigs(List.of(topicRes)).all().get().get(topicRes).get("retention.ms");
                expect(!e.value().equals("3600000"), "DELETE did not reset retention.ms");
                return "";
            });
            check("create_partitions", () -> {
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                expect(d.partitions().size() == 4, "partitions " + d.partitions().size());
                return "";
            });

            // Ten records on partition 0 with timestamps base+0 .. base+9.
            long base = System.currentTimeMillis() - 60_000;
            Properties pp = new Properties();
            pp.put("bootstrap.servers", bootstrap);
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            pp.put("delivery.timeout.ms", "30000");
            pp.put("request.timeout.ms", "10000");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
                for (int i = 0; i < 10; i++)
                    producer.send(new ProducerRecord<>(topic, 0, base + i, "k" + i, "v" + i)).get();
            }
            TopicPartition tp0 = new TopicPartition(topic, 0), tp1 = new TopicPartition(topic, 1);
            check("list_offsets", () -> {
                Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
                specs.put(tp0, OffsetSpec.earliest());
                specs.put(tp1, OffsetSpec.latest());
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> r = admin.listOffsets(specs).all().get();
                expect(r.get(tp0).offset() == 0, "earliest " + r.get(tp0));
                expect(r.get(tp1).offset() == 0, "latest of empty partition " + r.get(tp1));
                long latest = admin.listOffsets(Map.of(tp0, OffsetSpec.latest())).all().get().get(tp0).offset();
                expect(latest == 10, "latest " + latest);
                ListOffsetsResult.ListOffsetsResultInfo max =
                    admin.listOffsets(Map.of(tp0, OffsetSpec.maxTimestamp())).all().get().get(tp0);
                expect(max.offset() == 9 && max.timestamp() == base + 9, "max timestamp " + max);
                ListOffsetsResult.ListOffsetsResultInfo at =
                    admin.listOffsets(Map.of(tp0, OffsetSpec.forTimestamp(base + 4))).all().get().get(tp0);
                expect(at.offset() == 4 && at.timestamp() == base + 4, "for timestamp " + at);
                return "";
            });

            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            commit.put(tp0, new OffsetAndMetadata(7, "mm2"));
            commit.put(tp1, new OffsetAndMetadata(0));
            check("alter_consumer_group_offsets", () -> {
                admin.alterConsumerGroupOffsets(group, commit).all().get();
                return "";
            });
            check("list_consumer_group_offsets", () -> {
                Map<TopicPartition, OffsetAndMetadata> got =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                expect(got.get(tp0) != null && got.get(tp0).offset() == 7 && "mm2".equals(got.get(tp0).metadata()),
                       "tp0 " + got.get(tp0));
                expect(got.get(tp1) != null && got.get(tp1).offset() == 0, "tp1 " + got.get(tp1));
                return "";
            });
            check("list_groups", () -> {
                boolean found = false;
                for (GroupListing g : admin.listGroups().all().get())
                    if (g.groupId().equals(group)) found = true;
                expect(found, "group not listed");
                return "";
            });
            check("list_consumer_groups", () -> {
                // MirrorCheckpointConnector lists consumer groups only (ListGroups with a type filter).
                boolean found = false;
                for (GroupListing g : admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get())
                    if (g.groupId().equals(group)) found = true;
                expect(found, "group not listed as a consumer group");
                @SuppressWarnings("deprecation")
                Collection<ConsumerGroupListing> legacy = admin.listConsumerGroups().all().get();
                expect(legacy.stream().anyMatch(g -> g.groupId().equals(group)), "listConsumerGroups");
                return "";
            });
            check("describe_consumer_groups", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                expect(d.members().isEmpty(), "members " + d.members());
                expect(d.groupState() == GroupState.EMPTY, "state " + d.groupState());
                return "";
            });
            check("delete_consumer_group_offsets", () -> {
                admin.deleteConsumerGroupOffsets(group, Set.of(tp0)).all().get();
                Map<TopicPartition, OffsetAndMetadata> got =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                expect(!got.containsKey(tp0) || got.get(tp0) == null, "tp0 still committed " + got);
                expect(got.get(tp1) != null && got.get(tp1).offset() == 0, "tp1 gone " + got);
                return "";
            });
            check("delete_consumer_groups", () -> {
                admin.deleteConsumerGroups(List.of(group)).all().get();
                for (GroupListing g : admin.listGroups().all().get())
                    expect(!g.groupId().equals(group), "group still listed");
                return "";
            });
            check("describe_acls", () -> {
                try {
                    Collection<AclBinding> acls = admin.describeAcls(AclBindingFilter.ANY).values().get();
                    expect(acls.isEmpty(), "acls " + acls);
                    return "empty";
                } catch (ExecutionException e) {
                    expect(e.getCause() instanceof SecurityDisabledException, "wrong error " + e.getCause());
                    return "SecurityDisabledException";
                }
            });
            check("create_acls", () -> {
                // MirrorMaker 2 copies ACLs only when it could describe some; a broker
                // without an authorizer refuses with SECURITY_DISABLED, as kafka-wire does.
                AclBinding binding = new AclBinding(
                    new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    new AccessControlEntry("User:mm2", "*", AclOperation.READ, AclPermissionType.ALLOW));
                try {
                    admin.createAcls(List.of(binding)).all().get();
                } catch (ExecutionException e) {
                    expect(e.getCause() instanceof SecurityDisabledException, "wrong error " + e.getCause());
                    return e.getCause().getClass().getSimpleName();
                }
                throw new AssertionError("ACL created without an authorizer");
            });
            check("delete_topics", () -> {
                admin.deleteTopics(List.of(topic, compacted)).all().get();
                Set<String> names = admin.listTopics().names().get();
                expect(!names.contains(topic) && !names.contains(compacted), "still listed: " + names);
                return "";
            });
        }
        System.out.println("DONE ok=" + ok + " fail=" + fail);
    }
}
