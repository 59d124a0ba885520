package org.apache.kafka.streams.processor.internals.assignment;

import static org.mockito.ArgumentMatchers.anySet;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import groupsim.oracle.Driver;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.InternalTopicManager;
import org.apache.kafka.streams.processor.internals.TopologyMetadata.Subtopology;
import org.apache.kafka.streams.state.HostInfo;

/**
 * The oracle's Kafka Streams area: Kafka's own task assignors and user-data codecs.
 *
 * <p>It lives in Kafka's package to reach the package-private classes
 * ({@code DefaultStandbyTaskAssignor}, {@code StandbyTaskAssignorFactory}, the cost functions of
 * {@code RackAwareTaskAssignor}).
 *
 * <p>Verbs:
 * <ul>
 *   <li>{@code assign}: {@code {"input": <groupsim assign document for a Streams assignor>}}
 *       (docs/cli-contracts.md) → {@code {"clients": {id: {"active": [...], "standby": [...]}},
 *       "probing_rebalance_needed": bool, "cost": {"before", "after"}}} — the shape of
 *       {@code groupsim assign}'s output, {@code cost} only when rack-aware optimisation ran.
 *   <li>{@code encode_subscription} / {@code decode_subscription}: {@code SubscriptionInfo}.
 *   <li>{@code encode_assignment} / {@code decode_assignment}: {@code AssignmentInfo}.
 *   <li>{@code time}: {@code {"input", "warmup", "warmup_ms", "iterations"}} → the assignor
 *       call of {@code assign} timed inside the JVM ({@link #time}).
 * </ul>
 *
 * <p>How the groupsim input becomes Kafka's: client ids {@code PID_n} are {@code new UUID(0, n)},
 * other ids are UUID strings; each client has one consumer whose {@code client.rack} is the
 * client's {@code rack}. Partition racks become a {@link Cluster} with one node per rack (task
 * {@code a_b}'s k-th source partition is partition k of topic {@code src-a_b}, its replicas the
 * nodes of the listed racks) and an {@link InternalTopicManager} stand-in that describes the
 * changelog topics {@code chg-a_b} the same way. A task without source racks reads a partition
 * missing from the cluster, a stateful task without changelog racks a changelog no describe
 * answers: Kafka then declines rack awareness, as groupsim does.
 */
public final class GroupsimStreamsDriver implements Driver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern PID = Pattern.compile("PID_(0|[1-9][0-9]*)");

    @Override
    public JsonNode handle(final String verb, final JsonNode request) throws Exception {
        switch (verb) {
            case "reset":
                return JSON.nullNode();
            case "assign":
                return assign(request.get("input"));
            case "encode_subscription":
                return JSON.getNodeFactory().textNode(b64(encodeSubscription(request)));
            case "decode_subscription":
                return decodeSubscription(unb64(request.get("bytes").asText()));
            case "encode_assignment":
                return JSON.getNodeFactory().textNode(b64(encodeAssignment(request)));
            case "decode_assignment":
                return decodeAssignment(unb64(request.get("bytes").asText()));
            case "time":
                return time(request);
            default:
                throw new IllegalArgumentException("unknown streams verb '" + verb + "'");
        }
    }

    // ---------------------------------------------------------------------------------------
    // assign

    static ProcessId processId(final String label) {
        final Matcher m = PID.matcher(label);
        if (m.matches()) return new ProcessId(new UUID(0L, Long.parseLong(m.group(1))));
        return new ProcessId(UUID.fromString(label));
    }

    static TaskId task(final String text) {
        return TaskId.parse(text);
    }

    static List<TaskId> tasks(final JsonNode list) {
        final List<TaskId> out = new ArrayList<>();
        if (list != null) for (final JsonNode t : list) out.add(task(t.asText()));
        return out;
    }

    static AssignmentConfigs configs(final JsonNode config, final boolean atLeastOneStandby) {
        final JsonNode c = config == null ? JSON.createObjectNode() : config;
        final List<String> tags = new ArrayList<>();
        for (final JsonNode t : c.path("rack.aware.assignment.tags")) {
            if (!tags.contains(t.asText())) tags.add(t.asText());
        }
        final int standbys = c.path("num.standby.replicas").asInt(0);
        return new AssignmentConfigs(
            c.path("acceptable.recovery.lag").asLong(10_000L),
            c.path("max.warmup.replicas").asInt(2),
            atLeastOneStandby ? Math.max(1, standbys) : standbys,
            c.path("probing.rebalance.interval.ms").asLong(600_000L),
            tags,
            optionalInt(c.get("rack.aware.assignment.traffic_cost")),
            optionalInt(c.get("rack.aware.assignment.non_overlap_cost")),
            c.path("rack.aware.assignment.strategy").asText("none"));
    }

    private static OptionalInt optionalInt(final JsonNode n) {
        return n == null || n.isNull() ? OptionalInt.empty() : OptionalInt.of(n.asInt());
    }

    /** One rack list per partition: a list of lists, or one flat list for one partition. */
    static List<List<String>> partitionRacks(final JsonNode racks) {
        final List<List<String>> out = new ArrayList<>();
        boolean nested = racks.size() > 0;
        for (final JsonNode r : racks) nested &= r.isArray();
        if (nested) {
            for (final JsonNode part : racks) {
                final List<String> one = new ArrayList<>();
                for (final JsonNode r : part) one.add(r.asText());
                out.add(one);
            }
        } else {
            final List<String> one = new ArrayList<>();
            for (final JsonNode r : racks) one.add(r.asText());
            out.add(one);
        }
        return out;
    }

    /** The rack-aware assignor over the input's racks, recording the cost of each call. */
    static final class RecordingRackAwareTaskAssignor extends RackAwareTaskAssignor {
        long before = 0;
        long after = 0;
        boolean ran = false;

        RecordingRackAwareTaskAssignor(final Cluster cluster,
                                       final Map<TaskId, Set<TopicPartition>> partitionsForTask,
                                       final Map<TaskId, Set<TopicPartition>> changelogPartitionsForTask,
                                       final Map<Subtopology, Set<TaskId>> tasksForTopicGroup,
                                       final Map<ProcessId, Map<String, Optional<String>>> racksForProcessConsumer,
                                       final InternalTopicManager internalTopicManager,
                                       final AssignmentConfigs configs) {
            super(cluster, partitionsForTask, changelogPartitionsForTask, tasksForTopicGroup,
                racksForProcessConsumer, internalTopicManager, configs, Time.SYSTEM);
        }

        @Override
        public long optimizeActiveTasks(final SortedSet<TaskId> activeTasks,
                                        final SortedMap<ProcessId, ClientState> clientStates,
                                        final int trafficCost,
                                        final int nonOverlapCost) {
            if (activeTasks.isEmpty()) return 0;
            before += activeTasksCost(activeTasks, clientStates, trafficCost, nonOverlapCost);
            final long cost = super.optimizeActiveTasks(activeTasks, clientStates, trafficCost, nonOverlapCost);
            after += cost;
            ran = true;
            return cost;
        }

        @Override
        public long optimizeStandbyTasks(final SortedMap<ProcessId, ClientState> clientStates,
                                         final int trafficCost,
                                         final int nonOverlapCost,
                                         final MoveStandbyTaskPredicate moveStandbyTask) {
            final SortedSet<TaskId> standbys = new TreeSet<>();
            clientStates.values().forEach(c -> standbys.addAll(c.standbyTasks()));
            before += standByTasksCost(standbys, clientStates, trafficCost, nonOverlapCost);
            final long cost = super.optimizeStandbyTasks(clientStates, trafficCost, nonOverlapCost, moveStandbyTask);
            after += cost;
            ran = true;
            return cost;
        }
    }

    static RecordingRackAwareTaskAssignor rackAware(final JsonNode tasksNode,
                                                   final List<TaskId> stateful,
                                                   final List<TaskId> all,
                                                   final Map<ProcessId, String> rackOf,
                                                   final AssignmentConfigs configs) {
        final Map<String, Node> nodes = new TreeMap<>();
        final JsonNode source = tasksNode.path("task_source_partition_racks");
        final JsonNode changelog = tasksNode.path("task_changelog_partition_racks");
        final Map<TaskId, List<List<String>>> sourceRacks = new HashMap<>();
        final Map<TaskId, List<List<String>>> changelogRacks = new HashMap<>();
        source.fields().forEachRemaining(e -> sourceRacks.put(task(e.getKey()), partitionRacks(e.getValue())));
        changelog.fields().forEachRemaining(e -> changelogRacks.put(task(e.getKey()), partitionRacks(e.getValue())));
        for (final Map<TaskId, List<List<String>>> m : List.of(sourceRacks, changelogRacks)) {
            for (final List<List<String>> parts : m.values()) {
                for (final List<String> racks : parts) {
                    for (final String r : racks) nodes.computeIfAbsent(r, k -> new Node(nodes.size(), "broker-" + k, 9092, k));
                }
            }
        }
        final List<PartitionInfo> partitionInfos = new ArrayList<>();
        final Map<TaskId, Set<TopicPartition>> partitionsForTask = new HashMap<>();
        for (final TaskId t : all) {
            final String topic = "src-" + t;
            final Set<TopicPartition> tps = new HashSet<>();
            final List<List<String>> parts = sourceRacks.get(t);
            if (parts == null) {
                tps.add(new TopicPartition(topic, 0)); // not in the cluster: rack awareness declined
            } else {
                for (int k = 0; k < parts.size(); k++) {
                    tps.add(new TopicPartition(topic, k));
                    final Node[] replicas = parts.get(k).stream().map(nodes::get).toArray(Node[]::new);
                    partitionInfos.add(new PartitionInfo(topic, k, replicas.length > 0 ? replicas[0] : null, replicas, replicas));
                }
            }
            partitionsForTask.put(t, tps);
        }
        final Map<TaskId, Set<TopicPartition>> changelogPartitionsForTask = new HashMap<>();
        final Map<String, List<TopicPartitionInfo>> described = new HashMap<>();
        for (final TaskId t : stateful) {
            final String topic = "chg-" + t;
            final Set<TopicPartition> tps = new HashSet<>();
            final List<List<String>> parts = changelogRacks.get(t);
            if (parts == null) {
                tps.add(new TopicPartition(topic, 0)); // nobody describes it: declined
            } else {
                final List<TopicPartitionInfo> infos = new ArrayList<>();
                for (int k = 0; k < parts.size(); k++) {
                    tps.add(new TopicPartition(topic, k));
                    final List<Node> replicas = new ArrayList<>();
                    for (final String r : parts.get(k)) replicas.add(nodes.get(r));
                    infos.add(new TopicPartitionInfo(k, replicas.isEmpty() ? null : replicas.get(0), replicas, replicas));
                }
                described.put(topic, infos);
            }
            changelogPartitionsForTask.put(t, tps);
        }
        final Cluster cluster = new Cluster("groupsim", new ArrayList<>(nodes.values()), partitionInfos,
            Collections.emptySet(), Collections.emptySet());
        final InternalTopicManager topics = mock(InternalTopicManager.class);
        when(topics.getTopicPartitionInfo(anySet())).thenAnswer(inv -> {
            final Set<?> asked = inv.getArgument(0);
            final Map<String, List<TopicPartitionInfo>> out = new HashMap<>();
            for (final Object name : asked) {
                final List<TopicPartitionInfo> infos = described.get((String) name);
                if (infos != null) out.put((String) name, infos);
            }
            return out;
        });

        final Map<Subtopology, Set<TaskId>> tasksForTopicGroup = new HashMap<>();
        final Set<TaskId> listed = new HashSet<>();
        final JsonNode subs = tasksNode.get("subtopologies");
        if (subs != null) {
            subs.fields().forEachRemaining(e -> {
                final Set<TaskId> ts = tasksForTopicGroup.computeIfAbsent(
                    new Subtopology(Integer.parseInt(e.getKey()), null), k -> new HashSet<>());
                for (final TaskId t : tasks(e.getValue())) {
                    ts.add(t);
                    listed.add(t);
                }
            });
        }
        for (final TaskId t : all) {
            if (!listed.contains(t)) {
                tasksForTopicGroup.computeIfAbsent(new Subtopology(t.subtopology(), null), k -> new HashSet<>()).add(t);
            }
        }
        final Map<ProcessId, Map<String, Optional<String>>> racksForProcessConsumer = new HashMap<>();
        rackOf.forEach((pid, rack) -> racksForProcessConsumer.put(pid, Map.of("consumer-" + pid, Optional.ofNullable(rack))));
        return new RecordingRackAwareTaskAssignor(cluster, partitionsForTask, changelogPartitionsForTask,
            tasksForTopicGroup, racksForProcessConsumer, topics, configs);
    }

    /** One {@code assign} input turned into Kafka's objects: what the assignor call needs. */
    static final class Prepared {
        String assignor;
        String optimize;
        boolean standbyCheck;
        AssignmentConfigs configs;
        JsonNode input;
        JsonNode tasksNode;
        List<TaskId> stateful;
        List<TaskId> stateless;
        Set<TaskId> statefulSet;
        Set<TaskId> all;
        TreeMap<ProcessId, ClientState> clients;
        Map<ProcessId, String> labels;
        Map<ProcessId, String> rackOf;
        boolean probing;
        RecordingRackAwareTaskAssignor rack;
    }

    static JsonNode assign(final JsonNode input) {
        final Prepared p = prepare(input);
        run(p);
        return output(p);
    }

    /** Parses {@code input} into fresh client states (each call gives new, unassigned ones). */
    static Prepared prepare(final JsonNode input) {
        final Prepared p = new Prepared();
        p.input = input;
        p.assignor = input.path("assignor").asText();
        p.optimize = input.path("optimize").asText(null);
        p.standbyCheck = "rack_aware".equals(p.assignor) && "standby_tasks".equals(p.optimize);
        p.configs = configs(input.get("config"), false);
        p.tasksNode = input.path("tasks");
        p.stateful = tasks(p.tasksNode.get("stateful"));
        p.stateless = tasks(p.tasksNode.get("stateless"));
        p.statefulSet = new TreeSet<>(p.stateful);
        p.all = new TreeSet<>(p.stateful);
        p.all.addAll(p.stateless);

        p.clients = new TreeMap<>();
        p.labels = new HashMap<>();
        p.rackOf = new HashMap<>();
        for (final JsonNode c : input.path("clients")) {
            final String label = c.path("id").asText();
            final ProcessId pid = processId(label);
            final Map<TaskId, Long> lags = new HashMap<>();
            c.path("task_lags").fields().forEachRemaining(e -> lags.put(task(e.getKey()), e.getValue().asLong()));
            final Map<String, String> tags = new HashMap<>();
            c.path("tags").fields().forEachRemaining(e -> tags.put(e.getKey(), e.getValue().asText()));
            final ClientState state = new ClientState(
                new HashSet<>(tasks(c.get("prev_active"))),
                new HashSet<>(tasks(c.get("prev_standby"))),
                lags, tags, c.path("capacity").asInt(1), pid);
            for (final TaskId t : tasks(c.get("current_active"))) state.assignActive(t);
            for (final TaskId t : tasks(c.get("current_standby"))) state.assignStandby(t);
            p.clients.put(pid, state);
            p.labels.put(pid, label);
            p.rackOf.put(pid, c.hasNonNull("rack") ? c.get("rack").asText() : null);
        }
        return p;
    }

    /**
     * The assignor call itself, on {@code p}'s client states: the rack-aware stand-in is built
     * here (the cluster and topic descriptions it reads), then Kafka's assignor runs.
     */
    static void run(final Prepared p) {
        final AssignmentConfigs configs = p.configs;
        switch (p.assignor) {
            case "high_availability":
                p.rack = rackAware(p.tasksNode, p.stateful, new ArrayList<>(p.all), p.rackOf, configs);
                p.probing = new HighAvailabilityTaskAssignor().assign(p.clients, p.all, p.statefulSet, p.rack, configs);
                break;
            case "default_standby":
                if (configs.numStandbyReplicas() > 0) {
                    new DefaultStandbyTaskAssignor().assign(p.clients, p.all, p.statefulSet, configs);
                }
                break;
            case "client_tag_standby":
                if (configs.numStandbyReplicas() > 0) {
                    new ClientTagAwareStandbyTaskAssignor().assign(p.clients, p.all, p.statefulSet, configs);
                }
                break;
            case "rack_aware": {
                final RecordingRackAwareTaskAssignor rack = rackAware(p.tasksNode, p.stateful, new ArrayList<>(p.all),
                    p.rackOf, p.standbyCheck ? configs(p.input.get("config"), true) : configs);
                p.rack = rack;
                if (!rack.canEnableRackAwareAssignor()) break;
                final int traffic = configs.rackAwareTrafficCost().orElse(HighAvailabilityTaskAssignor.DEFAULT_HIGH_AVAILABILITY_TRAFFIC_COST);
                final int nonOverlap = configs.rackAwareNonOverlapCost().orElse(HighAvailabilityTaskAssignor.DEFAULT_HIGH_AVAILABILITY_NON_OVERLAP_COST);
                if ("active_tasks".equals(p.optimize)) {
                    rack.optimizeActiveTasks(new TreeSet<>(p.stateful), p.clients, traffic, nonOverlap);
                    rack.optimizeActiveTasks(new TreeSet<>(p.stateless), p.clients,
                        RackAwareTaskAssignor.STATELESS_TRAFFIC_COST, RackAwareTaskAssignor.STATELESS_NON_OVERLAP_COST);
                } else if ("standby_tasks".equals(p.optimize)) {
                    final StandbyTaskAssignor standby = StandbyTaskAssignorFactory.create(configs, null);
                    rack.optimizeStandbyTasks(p.clients, traffic, nonOverlap, standby::isAllowedTaskMovement);
                    rack.ran = true;
                } else {
                    throw new IllegalArgumentException("optimize must be active_tasks or standby_tasks");
                }
                rack.ran = true;
                break;
            }
            default:
                throw new IllegalArgumentException("unknown Streams assignor '" + p.assignor + "'");
        }
    }

    /** {@code assign}'s answer for {@code p} after {@link #run}. */
    static JsonNode output(final Prepared p) {
        final ObjectNode out = JSON.createObjectNode();
        final ObjectNode outClients = out.putObject("clients");
        for (final Map.Entry<ProcessId, ClientState> e : p.clients.entrySet()) {
            final ObjectNode one = outClients.putObject(p.labels.get(e.getKey()));
            final ArrayNode active = one.putArray("active");
            for (final TaskId t : new TreeSet<>(e.getValue().activeTasks())) active.add(t.toString());
            final ArrayNode standby = one.putArray("standby");
            for (final TaskId t : new TreeSet<>(e.getValue().standbyTasks())) standby.add(t.toString());
        }
        out.put("probing_rebalance_needed", p.probing);
        if (p.rack != null && p.rack.ran) {
            final ObjectNode cost = out.putObject("cost");
            cost.put("before", p.rack.before);
            cost.put("after", p.rack.after);
        }
        return out;
    }

    /**
     * {@code time}: {@link #run} timed inside the JVM (benchmarks/bench_vs_kafka.py). Every
     * iteration parses {@code input} into fresh client states untimed, then times the assignor
     * call alone: CPU time of this thread ({@code ThreadMXBean.getCurrentThreadCpuTime}) and
     * wall time ({@code System.nanoTime}). Untimed warm-up iterations run first (JIT warm-up,
     * as JMH's): at least {@code warmup} and for at least {@code warmup_ms}. Answers
     * {@code {"cpu_ns": [...], "wall_ns": [...], "output": <assign's answer of the last>}}.
     */
    static JsonNode time(final JsonNode req) {
        final JsonNode input = req.get("input");
        final int warmup = req.path("warmup").asInt(5);
        final long warmupNs = req.path("warmup_ms").asLong(0) * 1_000_000L;
        final int iterations = req.path("iterations").asInt(5);
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        final long warmStart = System.nanoTime();
        for (int w = 0; w < warmup || System.nanoTime() - warmStart < warmupNs; w++) {
            run(prepare(input));
        }
        final ObjectNode result = JSON.createObjectNode();
        final ArrayNode cpu = result.putArray("cpu_ns");
        final ArrayNode wall = result.putArray("wall_ns");
        Prepared last = null;
        for (int i = 0; i < iterations; i++) {
            final Prepared p = prepare(input);
            final long c0 = threads.getCurrentThreadCpuTime();
            final long w0 = System.nanoTime();
            run(p);
            final long w1 = System.nanoTime();
            final long c1 = threads.getCurrentThreadCpuTime();
            cpu.add(c1 - c0);
            wall.add(w1 - w0);
            last = p;
        }
        result.set("output", last == null ? JSON.nullNode() : output(last));
        return result;
    }

    // ---------------------------------------------------------------------------------------
    // codecs

    static String b64(final ByteBuffer buf) {
        final ByteBuffer b = buf.duplicate();
        b.rewind();
        final byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    static ByteBuffer unb64(final String text) {
        return ByteBuffer.wrap(Base64.getDecoder().decode(text));
    }

    /** {@code [subtopology, partition, topology-or-null]} → TaskId. */
    static TaskId wireTask(final JsonNode t) {
        final JsonNode topology = t.get(2);
        return topology == null || topology.isNull()
            ? new TaskId(t.get(0).asInt(), t.get(1).asInt())
            : new TaskId(t.get(0).asInt(), t.get(1).asInt(), topology.asText());
    }

    static ArrayNode wireTask(final TaskId t) {
        final ArrayNode a = JSON.createArrayNode();
        a.add(t.subtopology());
        a.add(t.partition());
        if (t.topologyName() == null) a.addNull(); else a.add(t.topologyName());
        return a;
    }

    /**
     * {@code {"version", "latest_supported_version", "process_id": uuid, "user_endpoint",
     * "task_offset_sums": [[sub, part, topology, sum], ...], "unique_field", "error_code",
     * "client_tags": [[key, value], ...]}}; the maps are HashMaps filled in the listed order, as
     * a member fills them.
     */
    static ByteBuffer encodeSubscription(final JsonNode r) {
        final Map<TaskId, Long> sums = new HashMap<>();
        for (final JsonNode e : r.path("task_offset_sums")) sums.put(wireTask(e), e.get(3).asLong());
        final Map<String, String> tags = new HashMap<>();
        for (final JsonNode e : r.path("client_tags")) tags.put(e.get(0).asText(), e.get(1).asText());
        final JsonNode endpoint = r.get("user_endpoint");
        return new SubscriptionInfo(
            r.path("version").asInt(),
            r.path("latest_supported_version").asInt(),
            new ProcessId(UUID.fromString(r.path("process_id").asText())),
            endpoint == null || endpoint.isNull() ? null : endpoint.asText(),
            sums,
            (byte) r.path("unique_field").asInt(0),
            r.path("error_code").asInt(0),
            tags).encode();
    }

    static JsonNode decodeSubscription(final ByteBuffer bytes) {
        final SubscriptionInfo s = SubscriptionInfo.decode(bytes);
        final ObjectNode out = JSON.createObjectNode();
        out.put("version", s.version());
        out.put("latest_supported_version", s.latestSupportedVersion());
        if (s.version() > StreamsAssignmentProtocolVersions.LATEST_SUPPORTED_VERSION) return out;
        out.put("process_id", s.processId().id().toString());
        final ArrayNode prev = out.putArray("prev_tasks");
        for (final TaskId t : s.prevTasks()) prev.add(wireTask(t));
        final ArrayNode standby = out.putArray("standby_tasks");
        for (final TaskId t : s.standbyTasks()) standby.add(wireTask(t));
        final ArrayNode sums = out.putArray("task_offset_sums");
        for (final Map.Entry<TaskId, Long> e : s.taskOffsetSums().entrySet()) {
            final ArrayNode one = wireTask(e.getKey());
            one.add(e.getValue());
            sums.add(one);
        }
        out.put("user_endpoint", s.userEndPoint());
        if (s.version() >= 9) out.put("error_code", s.errorCode());
        final ObjectNode tags = out.putObject("client_tags");
        new TreeMap<>(s.clientTags()).forEach(tags::put);
        return out;
    }

    private static Set<TopicPartition> partitions(final JsonNode list) {
        final Set<TopicPartition> out = new LinkedHashSet<>();
        for (final JsonNode p : list) out.add(new TopicPartition(p.get(0).asText(), p.get(1).asInt()));
        return out;
    }

    private static Map<HostInfo, Set<TopicPartition>> hostMap(final JsonNode list) {
        final Map<HostInfo, Set<TopicPartition>> out = new LinkedHashMap<>();
        for (final JsonNode h : list) out.put(new HostInfo(h.get(0).asText(), h.get(1).asInt()), partitions(h.get(2)));
        return out;
    }

    /**
     * {@code {"version", "commonly_supported_version", "active_tasks": [task...], "standby_tasks":
     * [[task, [[topic, p]...]]...], "partitions_by_host": [[host, port, [[topic, p]...]]...],
     * "standby_partitions_by_host": [...], "error_code", "next_rebalance_ms"}}; tasks are
     * {@code [sub, part, topology]}; collections keep the listed order (the leader's).
     */
    static ByteBuffer encodeAssignment(final JsonNode r) {
        final List<TaskId> active = new ArrayList<>();
        for (final JsonNode t : r.path("active_tasks")) active.add(wireTask(t));
        final Map<TaskId, Set<TopicPartition>> standby = new LinkedHashMap<>();
        for (final JsonNode e : r.path("standby_tasks")) standby.put(wireTask(e.get(0)), partitions(e.get(1)));
        final AssignmentInfo info = new AssignmentInfo(
            r.path("version").asInt(),
            r.path("commonly_supported_version").asInt(),
            active, standby,
            hostMap(r.path("partitions_by_host")),
            hostMap(r.path("standby_partitions_by_host")),
            r.path("error_code").asInt(0));
        if (r.has("next_rebalance_ms")) info.setNextRebalanceTime(r.get("next_rebalance_ms").asLong());
        return info.encode();
    }

    private static ArrayNode partitionsJson(final Set<TopicPartition> tps) {
        final ArrayNode a = JSON.createArrayNode();
        for (final TopicPartition tp : tps) {
            final ArrayNode one = a.addArray();
            one.add(tp.topic());
            one.add(tp.partition());
        }
        return a;
    }

    private static ArrayNode hostMapJson(final Map<HostInfo, Set<TopicPartition>> m) {
        final ArrayNode a = JSON.createArrayNode();
        if (m == null) return a;
        for (final Map.Entry<HostInfo, Set<TopicPartition>> e : m.entrySet()) {
            final ArrayNode one = a.addArray();
            one.add(e.getKey().host());
            one.add(e.getKey().port());
            one.add(partitionsJson(e.getValue()));
        }
        return a;
    }

    /** Decoded fields; sets and maps as Kafka's decoder iterates them (compare them as sets). */
    static JsonNode decodeAssignment(final ByteBuffer bytes) {
        final AssignmentInfo a = AssignmentInfo.decode(bytes);
        final ObjectNode out = JSON.createObjectNode();
        out.put("version", a.version());
        out.put("commonly_supported_version", a.commonlySupportedVersion());
        final ArrayNode active = out.putArray("active_tasks");
        for (final TaskId t : a.activeTasks()) active.add(wireTask(t));
        final ArrayNode standby = out.putArray("standby_tasks");
        for (final Map.Entry<TaskId, Set<TopicPartition>> e : a.standbyTasks().entrySet()) {
            final ArrayNode one = standby.addArray();
            one.add(wireTask(e.getKey()));
            one.add(partitionsJson(e.getValue()));
        }
        out.set("partitions_by_host", hostMapJson(a.partitionsByHost()));
        out.set("standby_partitions_by_host", hostMapJson(a.standbyPartitionByHost()));
        out.put("error_code", a.errCode());
        out.put("next_rebalance_ms", a.nextRebalanceMs());
        return out;
    }

}
