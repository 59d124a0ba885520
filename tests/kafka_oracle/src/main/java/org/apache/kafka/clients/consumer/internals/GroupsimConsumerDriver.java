package org.apache.kafka.clients.consumer.internals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import groupsim.oracle.Driver;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ConsumerProtocolAssignment;
import org.apache.kafka.common.message.ConsumerProtocolSubscription;

/**
 * Drives Kafka's consumer assignors and {@link ConsumerProtocol} codecs for groupsim's
 * differential tests (area {@code consumer}).
 *
 * <p>Verbs:
 * <ul>
 *   <li>{@code serialize_subscription}: {@code ConsumerProtocol.serializeSubscription(
 *       subscription, version)}. Fields {@code version}, {@code topics}, {@code user_data}
 *       (base64 or null), {@code owned} ({@code [[topic, partition], ...]}),
 *       {@code generation_id}, {@code rack_id} (string or null). Answers base64.</li>
 *   <li>{@code deserialize_subscription}: {@code deserializeConsumerProtocolSubscription} of
 *       {@code data} (base64); answers the message's fields as above plus {@code version}
 *       (the message's own fields, not the {@code Subscription} view).</li>
 *   <li>{@code serialize_assignment} / {@code deserialize_assignment}: the same for
 *       {@code ConsumerProtocolAssignment} ({@code partitions}, {@code user_data}).</li>
 *   <li>{@code assign}: {@code assignor.assign(Cluster, GroupSubscription)} of a fresh
 *       {@code range}, {@code roundrobin}, {@code sticky} or {@code cooperative-sticky}
 *       assignor. Fields {@code assignor}, {@code members} ({@code [{id, instance, topics,
 *       user_data, owned, generation_id, rack_id}, ...]} in JoinGroup order, put into a
 *       {@code HashMap} in that order as {@code ConsumerCoordinator.onLeaderElected} does),
 *       {@code topics} ({@code {topic: [[replica rack or null, ...] per partition]}}). Answers
 *       {@code {member id: [[topic, partition], ...]}} in the returned map's iteration order.</li>
 *   <li>{@code replay}: one leader round of a groupsim log, for the referee
 *       ({@code scenarios/referee/consumer.py}): {@code assign(Cluster, GroupSubscription)} of
 *       the {@code assignor} kept under ({@code session}, {@code assignor_key}) — the leader's
 *       instance lives across rebalances as in {@code ConsumerCoordinator}, so a sticky
 *       assignor keeps its {@code maxGeneration}. Fields {@code members} ({@code [{id,
 *       instance, metadata}, ...]} in JoinGroup order, {@code metadata} the base64 JoinGroup
 *       metadata, read with {@code ConsumerProtocol.deserializeSubscription}) and {@code topics}
 *       as for {@code assign}. Answers {@code {member id: {partitions, user_data}}}, for a
 *       sticky assignor with {@code user_data_again}: the member's subscription user data as
 *       Kafka reads and writes it again (see {@link #userDataAgain}).</li>
 *   <li>{@code reset}: forgets the assignors of {@code session}.</li>
 *   <li>{@code time}: times the leader's full path for {@code benchmarks/bench_vs_kafka.py}
 *       ({@code ConsumerCoordinator.onLeaderElected}'s work): {@code deserializeSubscription}
 *       of every member's bytes into a {@code HashMap} in JoinGroup order,
 *       {@code assign(Cluster, GroupSubscription)} of a fresh assignor, and
 *       {@code serializeAssignment} of every member's assignment. Fields as {@code replay}
 *       ({@code assignor}, {@code members}, {@code topics}) plus {@code warmup},
 *       {@code warmup_ms} and {@code iterations}. The {@code Cluster} and the assignor are
 *       built before the clocks start; untimed warm-up iterations run first (at least
 *       {@code warmup} and for at least {@code warmup_ms} of wall time, JIT warm-up as JMH's).
 *       Answers {@code cpu_ns} (this thread's CPU time, {@code ThreadMXBean}) and
 *       {@code wall_ns} ({@code System.nanoTime}) per timed iteration, and {@code digest}: the
 *       SHA-256 of the last iteration's assignment bytes (per member id in sorted order: its
 *       UTF-8 bytes, a zero byte, the length as 4 bytes big-endian, the bytes).</li>
 *   <li>{@code sticky_user_data}: {@code subscriptionUserData} of a fresh {@code sticky} /
 *       {@code cooperative-sticky} assignor after {@code onAssignment} (fields {@code assignor},
 *       {@code partitions}, {@code generation}).</li>
 * </ul>
 *
 * <p>Each replica is its own {@link Node} (ids counted from 0 per request) with the given
 * rack; a partition's leader is its first replica (none if it has no replicas).
 */
public final class GroupsimConsumerDriver implements Driver {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The leaders' assignor instances of {@code replay}: session → "key/assignor" → assignor. */
    private final Map<String, Map<String, ConsumerPartitionAssignor>> sessions = new HashMap<>();

    @Override
    public JsonNode handle(String verb, JsonNode request) throws Exception {
        switch (verb) {
            case "serialize_subscription":
                return JSON.getNodeFactory().textNode(b64(ConsumerProtocol.serializeSubscription(
                        subscription(request), (short) request.get("version").asInt())));
            case "deserialize_subscription":
                return subscriptionJson(unb64(request.get("data").asText()));
            case "serialize_assignment":
                return JSON.getNodeFactory().textNode(b64(ConsumerProtocol.serializeAssignment(
                        new Assignment(partitions(request.get("partitions")), bytes(request.get("user_data"))),
                        (short) request.get("version").asInt())));
            case "deserialize_assignment":
                return assignmentJson(unb64(request.get("data").asText()));
            case "assign":
                return assign(request);
            case "replay":
                return replay(request);
            case "reset":
                sessions.remove(request.get("session").asText());
                return JSON.getNodeFactory().nullNode();
            case "time":
                return time(request);
            case "sticky_user_data":
                return JSON.getNodeFactory().textNode(b64(userData(request)));
            default:
                throw new IllegalArgumentException("unknown verb consumer." + verb);
        }
    }

    /** {@code subscriptionUserData} of a fresh {@code sticky} or {@code cooperative-sticky}
     *  assignor after {@code onAssignment(partitions, generation)} (fields {@code assignor},
     *  {@code partitions}, {@code generation}); answers base64 ("" for null). */
    private static ByteBuffer userData(JsonNode request) {
        ConsumerPartitionAssignor a = assignor(request.get("assignor").asText());
        a.onAssignment(new Assignment(partitions(request.get("partitions"))),
                new ConsumerGroupMetadata("groupsim", request.get("generation").asInt(), "member", Optional.empty()));
        ByteBuffer out = a.subscriptionUserData(Collections.emptySet());
        return out == null ? ByteBuffer.allocate(0) : out;
    }

    private static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    private JsonNode replay(JsonNode request) {
        String name = request.get("assignor").asText();
        ConsumerPartitionAssignor assignor = sessions
                .computeIfAbsent(request.get("session").asText(), k -> new HashMap<>())
                .computeIfAbsent(request.get("assignor_key").asText() + "/" + name, k -> assignor(name));
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode m : request.get("members")) {
            Subscription s = ConsumerProtocol.deserializeSubscription(unb64(m.get("metadata").asText()));
            JsonNode instance = m.get("instance");
            s.setGroupInstanceId(instance == null || instance.isNull() ? Optional.empty() : Optional.of(instance.asText()));
            subscriptions.put(m.get("id").asText(), s);
        }
        Map<String, Assignment> result = assignor
                .assign(cluster(request.get("topics")), new GroupSubscription(subscriptions)).groupAssignment();
        ObjectNode out = JSON.createObjectNode();
        result.forEach((member, a) -> {
            ObjectNode one = out.putObject(member);
            one.set("partitions", partitionsJson(a.partitions()));
            one.put("user_data", a.userData() == null ? null : b64(a.userData()));
        });
        if (assignor instanceof AbstractStickyAssignor) {
            for (JsonNode m : request.get("members")) {
                ByteBuffer again = userDataAgain(name, unb64(m.get("metadata").asText()));
                JsonNode entry = out.get(m.get("id").asText());
                if (again != null && entry instanceof ObjectNode)
                    ((ObjectNode) entry).put("user_data_again", b64(again));
            }
        }
        return out;
    }

    /** See {@code time} in the class comment. */
    private static JsonNode time(JsonNode request) throws Exception {
        String name = request.get("assignor").asText();
        int warmup = request.path("warmup").asInt(5);
        long warmupNs = request.path("warmup_ms").asLong(0) * 1_000_000L;
        int iterations = request.path("iterations").asInt(5);
        Cluster cluster = cluster(request.get("topics"));
        List<String> ids = new ArrayList<>();
        List<Optional<String>> instances = new ArrayList<>();
        List<byte[]> metadata = new ArrayList<>();
        for (JsonNode m : request.get("members")) {
            ids.add(m.get("id").asText());
            JsonNode instance = m.get("instance");
            instances.add(instance == null || instance.isNull() ? Optional.empty() : Optional.of(instance.asText()));
            metadata.add(Base64.getDecoder().decode(m.get("metadata").asText()));
        }
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        ObjectNode result = JSON.createObjectNode();
        ArrayNode cpu = result.putArray("cpu_ns");
        ArrayNode wall = result.putArray("wall_ns");
        Map<String, ByteBuffer> last = null;
        long warmStart = System.nanoTime();
        for (int w = 0; w < warmup || System.nanoTime() - warmStart < warmupNs; w++)
            leaderPath(assignor(name), cluster, ids, instances, metadata);
        for (int i = 0; i < iterations; i++) {
            ConsumerPartitionAssignor assignor = assignor(name);
            long c0 = threads.getCurrentThreadCpuTime();
            long w0 = System.nanoTime();
            Map<String, ByteBuffer> out = leaderPath(assignor, cluster, ids, instances, metadata);
            long w1 = System.nanoTime();
            long c1 = threads.getCurrentThreadCpuTime();
            cpu.add(c1 - c0);
            wall.add(w1 - w0);
            last = out;
        }
        result.put("digest", digest(last));
        return result;
    }

    /** The timed part of {@code time}: decode, assign, encode. */
    private static Map<String, ByteBuffer> leaderPath(ConsumerPartitionAssignor assignor, Cluster cluster,
            List<String> ids, List<Optional<String>> instances, List<byte[]> metadata) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
            Subscription s = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(metadata.get(i)));
            s.setGroupInstanceId(instances.get(i));
            subscriptions.put(ids.get(i), s);
        }
        Map<String, Assignment> assigned = assignor.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment();
        Map<String, ByteBuffer> out = new HashMap<>();
        for (Map.Entry<String, Assignment> e : assigned.entrySet())
            out.put(e.getKey(), ConsumerProtocol.serializeAssignment(e.getValue()));
        return out;
    }

    /** See {@code time} in the class comment. */
    private static String digest(Map<String, ByteBuffer> assignments) throws Exception {
        java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
        for (String member : new java.util.TreeMap<>(assignments).keySet()) {
            ByteBuffer b = assignments.get(member).duplicate();
            byte[] data = new byte[b.remaining()];
            b.get(data);
            sha.update(member.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(ByteBuffer.allocate(4).putInt(data.length).array());
            sha.update(data);
        }
        StringBuilder hex = new StringBuilder();
        for (byte x : sha.digest()) hex.append(String.format("%02x", x));
        return hex.toString();
    }

    /** A sticky member's subscription user data as Kafka reads it ({@code memberData} of the
     *  user data alone: its previous partitions and generation) and writes it again
     *  ({@code onAssignment} + {@code subscriptionUserData} of a fresh assignor); null when the
     *  member sent none or it carries no generation. */
    private static ByteBuffer userDataAgain(String name, ByteBuffer metadata) {
        Subscription raw = ConsumerProtocol.deserializeSubscription(metadata);
        if (raw.userData() == null) return null;
        // without the v2+ generation field, CooperativeStickyAssignor reads the user data too
        Subscription userOnly = new Subscription(raw.topics(), raw.userData(), raw.ownedPartitions());
        AbstractStickyAssignor.MemberData data = ((AbstractStickyAssignor) assignor(name)).memberData(userOnly);
        if (!data.generation.isPresent()) return null;
        ConsumerPartitionAssignor fresh = assignor(name);
        fresh.onAssignment(new Assignment(data.partitions),
                new ConsumerGroupMetadata("groupsim", data.generation.get(), "member", Optional.empty()));
        return fresh.subscriptionUserData(new java.util.HashSet<>(raw.topics()));
    }

    private static Cluster cluster(JsonNode topics) {
        List<Node> nodes = new ArrayList<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        topics.fields().forEachRemaining(e -> {
            int p = 0;
            for (JsonNode replicas : e.getValue()) {
                Node[] rs = new Node[replicas.size()];
                for (int i = 0; i < rs.length; i++) {
                    JsonNode rack = replicas.get(i);
                    rs[i] = new Node(nodes.size(), "broker" + nodes.size(), 9092, rack.isNull() ? null : rack.asText());
                    nodes.add(rs[i]);
                }
                partitions.add(new PartitionInfo(e.getKey(), p++, rs.length > 0 ? rs[0] : null, rs, rs));
            }
        });
        return new Cluster("groupsim", nodes, partitions, Collections.emptySet(), Collections.emptySet());
    }

    private static JsonNode assign(JsonNode request) {
        Map<String, Subscription> subscriptions = new HashMap<>();
        for (JsonNode m : request.get("members")) {
            Subscription s = subscription(m);
            JsonNode instance = m.get("instance");
            s.setGroupInstanceId(instance == null || instance.isNull() ? Optional.empty() : Optional.of(instance.asText()));
            subscriptions.put(m.get("id").asText(), s);
        }
        Map<String, Assignment> result = assignor(request.get("assignor").asText())
                .assign(cluster(request.get("topics")), new GroupSubscription(subscriptions)).groupAssignment();
        ObjectNode out = JSON.createObjectNode();
        result.forEach((member, a) -> out.set(member, partitionsJson(a.partitions())));
        return out;
    }

    private static Subscription subscription(JsonNode r) {
        List<String> topics = new ArrayList<>();
        r.get("topics").forEach(t -> topics.add(t.asText()));
        JsonNode rack = r.get("rack_id");
        JsonNode gen = r.get("generation_id");
        return new Subscription(topics, bytes(r.get("user_data")), partitions(r.get("owned")),
                gen == null ? -1 : gen.asInt(),
                rack == null || rack.isNull() ? Optional.empty() : Optional.of(rack.asText()));
    }

    private static JsonNode subscriptionJson(ByteBuffer buffer) {
        short version = ConsumerProtocol.deserializeVersion(buffer);
        ConsumerProtocolSubscription data = ConsumerProtocol.deserializeConsumerProtocolSubscription(buffer, version);
        ObjectNode out = JSON.createObjectNode();
        out.put("version", version);
        ArrayNode topics = out.putArray("topics");
        data.topics().forEach(topics::add);
        out.put("user_data", data.userData() == null ? null : b64(data.userData()));
        List<TopicPartition> owned = new ArrayList<>();
        for (ConsumerProtocolSubscription.TopicPartition tp : data.ownedPartitions())
            for (Integer p : tp.partitions()) owned.add(new TopicPartition(tp.topic(), p));
        out.set("owned", partitionsJson(owned));
        out.put("generation_id", data.generationId());
        out.put("rack_id", data.rackId());
        return out;
    }

    private static JsonNode assignmentJson(ByteBuffer buffer) {
        short version = ConsumerProtocol.deserializeVersion(buffer);
        ConsumerProtocolAssignment data = ConsumerProtocol.deserializeConsumerProtocolAssignment(buffer, version);
        ObjectNode out = JSON.createObjectNode();
        out.put("version", version);
        List<TopicPartition> parts = new ArrayList<>();
        for (ConsumerProtocolAssignment.TopicPartition tp : data.assignedPartitions())
            for (Integer p : tp.partitions()) parts.add(new TopicPartition(tp.topic(), p));
        out.set("partitions", partitionsJson(parts));
        out.put("user_data", data.userData() == null ? null : b64(data.userData()));
        return out;
    }

    private static List<TopicPartition> partitions(JsonNode list) {
        List<TopicPartition> out = new ArrayList<>();
        if (list != null)
            for (JsonNode tp : list) out.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        return out;
    }

    private static ArrayNode partitionsJson(List<TopicPartition> parts) {
        ArrayNode out = JSON.createArrayNode();
        for (TopicPartition tp : parts) out.addArray().add(tp.topic()).add(tp.partition());
        return out;
    }

    private static ByteBuffer bytes(JsonNode b64) {
        return b64 == null || b64.isNull() ? null : ByteBuffer.wrap(Base64.getDecoder().decode(b64.asText()));
    }

    private static ByteBuffer unb64(String text) {
        return ByteBuffer.wrap(Base64.getDecoder().decode(text));
    }

    private static String b64(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return Base64.getEncoder().encodeToString(out);
    }
}
