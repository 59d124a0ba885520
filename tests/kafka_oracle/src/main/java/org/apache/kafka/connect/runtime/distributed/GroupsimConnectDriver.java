package org.apache.kafka.connect.runtime.distributed;

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.withSettings;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import groupsim.oracle.Driver;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.kafka.common.message.JoinGroupResponseData.JoinGroupResponseMember;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.runtime.TargetState;
import org.apache.kafka.connect.storage.AppliedConnectorConfig;
import org.apache.kafka.connect.storage.ClusterConfigState;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * Drives Kafka Connect's leader assignors and group-protocol codecs for groupsim's differential
 * tests (area {@code connect}).
 *
 * <p>Verbs:
 * <ul>
 *   <li>{@code assign}: one leader assignment through the full path,
 *       {@code performAssignment(leaderId, protocol, List<JoinGroupResponseMember>,
 *       WorkerCoordinator)} of {@link EagerAssignor} (protocol {@code default}) or
 *       {@link IncrementalCooperativeAssignor} ({@code compatible}, {@code sessioned}). Fields:
 *       {@code session}, {@code leader}, {@code protocol} (JoinGroup name),
 *       {@code max_delay_ms}, {@code members} ({@code [[id, base64 metadata], ...]} in
 *       JoinGroup order), {@code snapshot} and optional {@code fresh_snapshot}
 *       ({@code {"offset": n, "connectors": {name: task count}}}),
 *       {@code last_completed_generation}, {@code generation}, {@code now_ms}, and optional
 *       {@code assignor_key} (whose assignors: default the leader id). Answers
 *       {@code {"assignments": {id: base64}, "snapshot_offset": n}} (the offset of the snapshot
 *       the stand-in coordinator holds afterwards: a fresh one when the assignor took it).</li>
 *   <li>{@code reset}: drops every assignor (or only those of {@code session}).</li>
 *   <li>{@code time}: times {@code performAssignment} inside the JVM, for
 *       {@code benchmarks/bench_vs_kafka.py}. Fields: {@code protocol}, {@code max_delay_ms},
 *       {@code rounds} (each with the fields of {@code assign}, without {@code session} and
 *       {@code protocol}), {@code warmup} and {@code iterations}. Every iteration builds fresh
 *       assignors (one pair per leader, as {@code assign} does), replays all rounds but the last
 *       untimed, then times the last one: CPU time of this thread
 *       ({@code ThreadMXBean.getCurrentThreadCpuTime}) and wall time ({@code System.nanoTime})
 *       around the {@code performAssignment} call alone; inputs (members, snapshots, the
 *       stand-in coordinator) are built before the clock starts, so neither JSON nor the pipe
 *       is counted. Before them, untimed warm-up iterations run (JIT warm-up, as JMH's): at
 *       least {@code warmup} of them and for at least {@code warmup_ms} of wall time.
 *       Answers {@code {"cpu_ns": [...], "wall_ns": [...], "digest": hex}}: one figure per
 *       timed iteration, and the SHA-256 of the last timed round's output (for each member id
 *       in sorted order: its UTF-8 bytes, a zero byte, the assignment's length as 4 bytes big
 *       endian, the assignment's bytes), which the benchmark compares with groupsim's.</li>
 *   <li>{@code serialize_metadata} / {@code deserialize_metadata}: {@code ConnectProtocol}
 *       (v0) and {@code IncrementalCooperativeConnectProtocol} (v1, v2) worker metadata.</li>
 *   <li>{@code serialize_assignment} / {@code deserialize_assignment}: the same for
 *       assignments.</li>
 * </ul>
 *
 * <p><b>One assignor per leader.</b> Each Kafka worker's {@code WorkerCoordinator} builds one
 * {@code EagerAssignor} and one {@code IncrementalCooperativeAssignor} (shared by
 * {@code compatible} and {@code sessioned}) in its constructor and keeps them for its lifetime.
 * This driver keeps the same pair per (session, leader id), built on that leader's first
 * {@code assign} with the request's {@code max_delay_ms}; a leader never seen before starts
 * clean, one that leads again resumes its assignor's state.
 *
 * <p><b>The stand-in for {@code WorkerCoordinator}.</b> A real one needs a
 * {@code ConsumerNetworkClient}, metrics and a config backing store. It is replaced by a Mockito
 * mock that answers exactly the calls the two assignors' {@code performAssignment} make in
 * 4.0.2: {@code configSnapshot()} (the request's {@code snapshot}, or the one installed since),
 * {@code configFreshSnapshot()} (the request's {@code fresh_snapshot}, default the same as
 * {@code snapshot}), {@code configSnapshot(ClusterConfigState)} (installs it),
 * {@code lastCompletedGenerationId()}, {@code generationId()}, {@code memberId()} (the leader
 * id; read only for a log line) and {@code leaderState(LeaderState)} (ignored: the herder reads
 * it, the assignors never do). Any other call fails the request, so an assignor that starts to
 * depend on more of the coordinator is noticed instead of answered with a default.
 *
 * <p><b>Time.</b> {@code IncrementalCooperativeAssignor} reads its {@link Time} for the
 * scheduled-rebalance countdown. Each leader's assignor gets a {@link SettableTime} set to the
 * request's {@code now_ms} before every call.
 *
 * <p>The config snapshot is a real {@link ClusterConfigState} with one empty config per
 * connector and the given task counts (no task configs, nothing inconsistent): the assignors
 * read only {@code offset()}, {@code connectors()} and {@code tasks(connector)}.
 *
 * <p>API differences between Kafka releases (the {@code LogContext} package, the type of
 * {@code performAssignment}'s protocol argument: {@code String} in 4.0,
 * {@code ConnectProtocolCompatibility} in 4.4) are bridged by reflection.
 */
public final class GroupsimConnectDriver implements Driver {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A clock the driver sets: {@code milliseconds()} is the last request's {@code now_ms}. */
    static final class SettableTime implements Time {
        private long nowMs;

        void set(long nowMs) {
            this.nowMs = nowMs;
        }

        @Override
        public long milliseconds() {
            return nowMs;
        }

        @Override
        public long nanoseconds() {
            return nowMs * 1_000_000L;
        }

        @Override
        public void sleep(long ms) {
            nowMs += ms;
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException("the assignors do not wait");
        }
    }

    /** The assignors of one leader worker (as its WorkerCoordinator builds them). */
    private static final class Leader {
        final SettableTime time = new SettableTime();
        final Object eager;
        final Object incremental;
        final int maxDelayMs;

        Leader(int maxDelayMs) throws Exception {
            this.maxDelayMs = maxDelayMs;
            this.eager = newWithLogContext(EagerAssignor.class);
            this.incremental = newWithLogContext(IncrementalCooperativeAssignor.class, time, maxDelayMs);
        }
    }

    private final Map<String, Leader> leaders = new HashMap<>();

    @Override
    public JsonNode handle(String verb, JsonNode request) throws Exception {
        switch (verb) {
            case "assign":
                return assign(request);
            case "reset":
                return reset(request);
            case "time":
                return time(request);
            case "serialize_metadata":
                return serializeMetadata(request);
            case "deserialize_metadata":
                return deserializeMetadata(request);
            case "serialize_assignment":
                return serializeAssignment(request);
            case "deserialize_assignment":
                return deserializeAssignment(request);
            default:
                throw new IllegalArgumentException("unknown connect verb '" + verb + "'");
        }
    }

    // ------------------------------------------------------------------------------ assign

    private JsonNode assign(JsonNode req) throws Exception {
        String session = req.path("session").asText("");
        String leaderId = req.get("leader").asText();
        String protocol = req.get("protocol").asText();
        int maxDelay = req.path("max_delay_ms").asInt(300_000);
        // assignor_key (optional) names the worker whose assignors these are when its member id
        // changes while its WorkerCoordinator lives on (the chaos referee); default the leader id
        String key = session + "\u0000" + req.path("assignor_key").asText(leaderId);
        Leader leader = leaders.get(key);
        if (leader == null) {
            leader = new Leader(maxDelay);
            leaders.put(key, leader);
        } else if (leader.maxDelayMs != maxDelay) {
            throw new IllegalArgumentException("leader " + leaderId + " of session " + session
                    + " was built with max_delay_ms " + leader.maxDelayMs + ", not " + maxDelay);
        }
        leader.time.set(req.path("now_ms").asLong(0));

        List<JoinGroupResponseMember> members = new ArrayList<>();
        for (JsonNode m : req.get("members")) {
            members.add(new JoinGroupResponseMember()
                    .setMemberId(m.get(0).asText())
                    .setMetadata(Base64.getDecoder().decode(m.get(1).asText())));
        }
        ClusterConfigState snapshot = snapshot(req.get("snapshot"));
        ClusterConfigState fresh = req.hasNonNull("fresh_snapshot") ? snapshot(req.get("fresh_snapshot")) : snapshot;
        ClusterConfigState[] held = {snapshot};
        WorkerCoordinator coordinator = standInCoordinator(held, fresh, leaderId,
                req.get("last_completed_generation").asInt(), req.get("generation").asInt());

        boolean eager = ConnectProtocolCompatibility.fromProtocol(protocol) == ConnectProtocolCompatibility.EAGER;
        Map<String, ByteBuffer> out = performAssignment(eager ? leader.eager : leader.incremental,
                leaderId, protocol, members, coordinator);

        ObjectNode result = JSON.createObjectNode();
        ObjectNode assignments = result.putObject("assignments");
        for (Map.Entry<String, ByteBuffer> e : out.entrySet()) {
            assignments.put(e.getKey(), Base64.getEncoder().encodeToString(bytes(e.getValue())));
        }
        result.put("snapshot_offset", held[0].offset());
        return result;
    }

    /** One round of a {@code time} request, decoded before any clock starts. */
    private static final class TimedRound {
        final String leaderId;
        final List<JoinGroupResponseMember> members = new ArrayList<>();
        final ClusterConfigState snapshot;
        final ClusterConfigState fresh;
        final int lastCompleted;
        final int generation;
        final long nowMs;

        TimedRound(JsonNode r) {
            leaderId = r.get("leader").asText();
            for (JsonNode m : r.get("members")) {
                members.add(new JoinGroupResponseMember()
                        .setMemberId(m.get(0).asText())
                        .setMetadata(Base64.getDecoder().decode(m.get(1).asText())));
            }
            snapshot = snapshot(r.get("snapshot"));
            fresh = r.hasNonNull("fresh_snapshot") ? snapshot(r.get("fresh_snapshot")) : snapshot;
            lastCompleted = r.get("last_completed_generation").asInt();
            generation = r.get("generation").asInt();
            nowMs = r.path("now_ms").asLong(0);
        }
    }

    private JsonNode time(JsonNode req) throws Exception {
        String protocol = req.get("protocol").asText();
        int maxDelay = req.path("max_delay_ms").asInt(300_000);
        int warmup = req.path("warmup").asInt(5);
        long warmupNs = req.path("warmup_ms").asLong(0) * 1_000_000L;
        int iterations = req.path("iterations").asInt(5);
        boolean eager = ConnectProtocolCompatibility.fromProtocol(protocol) == ConnectProtocolCompatibility.EAGER;
        List<TimedRound> rounds = new ArrayList<>();
        for (JsonNode r : req.get("rounds")) rounds.add(new TimedRound(r));
        if (rounds.isEmpty()) throw new IllegalArgumentException("time needs at least one round");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        ObjectNode result = JSON.createObjectNode();
        ArrayNode cpu = result.putArray("cpu_ns");
        ArrayNode wall = result.putArray("wall_ns");
        Map<String, ByteBuffer> last = null;
        long warmStart = System.nanoTime();
        for (int w = 0; w < warmup || System.nanoTime() - warmStart < warmupNs; w++) {
            runOnce(rounds, maxDelay, protocol, eager);
        }
        for (int i = 0; i < iterations; i++) {
            Map<String, Leader> fresh = new HashMap<>();
            for (int r = 0; r < rounds.size(); r++) {
                TimedRound round = rounds.get(r);
                Leader leader = fresh.get(round.leaderId);
                if (leader == null) {
                    leader = new Leader(maxDelay);
                    fresh.put(round.leaderId, leader);
                }
                leader.time.set(round.nowMs);
                ClusterConfigState[] held = {round.snapshot};
                WorkerCoordinator coordinator = standInCoordinator(held, round.fresh, round.leaderId,
                        round.lastCompleted, round.generation);
                Object assignor = eager ? leader.eager : leader.incremental;
                Method method = performAssignmentMethod(assignor);
                Object proto = protocolArgument(method, protocol);
                boolean timed = r == rounds.size() - 1;
                long c0 = timed ? threads.getCurrentThreadCpuTime() : 0;
                long w0 = timed ? System.nanoTime() : 0;
                Map<String, ByteBuffer> out = invokePerformAssignment(method, assignor, round.leaderId, proto,
                        round.members, coordinator);
                if (!timed) continue;
                long w1 = System.nanoTime();
                long c1 = threads.getCurrentThreadCpuTime();
                last = out;
                cpu.add(c1 - c0);
                wall.add(w1 - w0);
            }
        }
        result.put("digest", digest(last));
        return result;
    }

    /** One untimed warm-up iteration of {@code time}: fresh assignors, every round. */
    private static void runOnce(List<TimedRound> rounds, int maxDelay, String protocol, boolean eager)
            throws Exception {
        Map<String, Leader> fresh = new HashMap<>();
        for (TimedRound round : rounds) {
            Leader leader = fresh.get(round.leaderId);
            if (leader == null) {
                leader = new Leader(maxDelay);
                fresh.put(round.leaderId, leader);
            }
            leader.time.set(round.nowMs);
            ClusterConfigState[] held = {round.snapshot};
            performAssignment(eager ? leader.eager : leader.incremental, round.leaderId, protocol, round.members, standInCoordinator(held, round.fresh, round.leaderId, round.lastCompleted, round.generation));
        }
    }

    /** See {@code time} in the class comment. */
    private static String digest(Map<String, ByteBuffer> assignments) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (String member : new TreeMap<>(assignments).keySet()) {
            byte[] data = bytes(assignments.get(member));
            sha.update(member.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(ByteBuffer.allocate(4).putInt(data.length).array());
            sha.update(data);
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha.digest()) hex.append(String.format("%02x", b));
        return hex.toString();
    }

    private JsonNode reset(JsonNode req) {
        int before = leaders.size();
        if (req.hasNonNull("session")) {
            String prefix = req.get("session").asText() + "\u0000";
            leaders.keySet().removeIf(k -> k.startsWith(prefix));
        } else {
            leaders.clear();
        }
        return JSON.getNodeFactory().numberNode(before - leaders.size());
    }

    /** The WorkerCoordinator stand-in (see the class comment for the calls it answers). */
    private static WorkerCoordinator standInCoordinator(ClusterConfigState[] held, ClusterConfigState fresh,
                                                        String leaderId, int lastCompleted, int generation) {
        return mock(WorkerCoordinator.class, withSettings().defaultAnswer(invocation -> {
            Method m = invocation.getMethod();
            Object[] args = invocation.getArguments();
            switch (m.getName() + "/" + args.length) {
                case "configSnapshot/0":
                    return held[0];
                case "configSnapshot/1":
                    held[0] = (ClusterConfigState) args[0];
                    return null;
                case "configFreshSnapshot/0":
                    return fresh;
                case "lastCompletedGenerationId/0":
                    return lastCompleted;
                case "generationId/0":
                    return generation;
                case "memberId/0":
                    return leaderId;
                case "leaderState/1":
                    return null;
                case "toString/0":
                    return "stand-in WorkerCoordinator of " + leaderId;
                case "hashCode/0":
                    return System.identityHashCode(invocation.getMock());
                case "equals/1":
                    return invocation.getMock() == args[0];
                default:
                    throw new UnsupportedOperationException("the WorkerCoordinator stand-in does not answer "
                            + m.getName() + " with " + args.length + " argument(s)");
            }
        }));
    }

    private static ClusterConfigState snapshot(JsonNode node) {
        long offset = node.get("offset").asLong();
        Map<String, Integer> taskCounts = new HashMap<>();
        Map<String, Map<String, String>> configs = new HashMap<>();
        Map<String, TargetState> targetStates = new HashMap<>();
        Iterator<Map.Entry<String, JsonNode>> it = node.path("connectors").fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            taskCounts.put(e.getKey(), e.getValue().asInt());
            configs.put(e.getKey(), Collections.emptyMap());
            targetStates.put(e.getKey(), TargetState.STARTED);
        }
        return new ClusterConfigState(offset, null, taskCounts, configs, targetStates,
                Collections.<ConnectorTaskId, Map<String, String>>emptyMap(),
                Collections.<String, Integer>emptyMap(), Collections.<String, Integer>emptyMap(),
                Collections.<String, AppliedConnectorConfig>emptyMap(),
                Collections.<String>emptySet(), Collections.<String>emptySet());
    }

    // ----------------------------------------------------------------------------- codecs

    private JsonNode serializeMetadata(JsonNode req) {
        int version = req.get("version").asInt();
        String url = req.get("url").asText();
        long offset = req.get("offset").asLong();
        ByteBuffer out;
        if (version == 0) {
            out = ConnectProtocol.serializeMetadata(new ConnectProtocol.WorkerState(url, offset));
        } else {
            ExtendedAssignment allocation = req.hasNonNull("allocation") ? extended(req.get("allocation"), (short) version) : null;
            out = IncrementalCooperativeConnectProtocol.serializeMetadata(
                    new ExtendedWorkerState(url, offset, allocation), version >= 2);
        }
        return JSON.getNodeFactory().textNode(Base64.getEncoder().encodeToString(bytes(out)));
    }

    private JsonNode deserializeMetadata(JsonNode req) {
        ByteBuffer in = ByteBuffer.wrap(Base64.getDecoder().decode(req.get("bytes").asText()));
        ObjectNode out = JSON.createObjectNode();
        if (req.get("reader").asText().equals("v0")) {
            ConnectProtocol.WorkerState s = ConnectProtocol.deserializeMetadata(in);
            out.put("url", s.url());
            out.put("offset", s.offset());
        } else {
            ExtendedWorkerState s = IncrementalCooperativeConnectProtocol.deserializeMetadata(in);
            out.put("url", s.url());
            out.put("offset", s.offset());
            // ExtendedWorkerState turns a null allocation into the ExtendedAssignment.empty()
            // singleton; it is answered as null (what groupsim's reader gives for it).
            if (s.assignment() == null || s.assignment() == ExtendedAssignment.empty()) out.putNull("allocation");
            else out.set("allocation", assignmentJson(s.assignment()));
        }
        return out;
    }

    private JsonNode serializeAssignment(JsonNode req) {
        int version = req.get("version").asInt();
        ByteBuffer out;
        if (version == 0) {
            out = ConnectProtocol.serializeAssignment(new ConnectProtocol.Assignment(
                    (short) req.get("error").asInt(), text(req, "leader"), text(req, "leader_url"),
                    req.get("offset").asLong(), strings(req.get("connectors")), tasks(req.get("tasks"))));
        } else {
            out = IncrementalCooperativeConnectProtocol.serializeAssignment(extended(req, (short) version), version >= 2);
        }
        return JSON.getNodeFactory().textNode(Base64.getEncoder().encodeToString(bytes(out)));
    }

    private JsonNode deserializeAssignment(JsonNode req) {
        ByteBuffer in = ByteBuffer.wrap(Base64.getDecoder().decode(req.get("bytes").asText()));
        if (req.get("reader").asText().equals("v0")) {
            ConnectProtocol.Assignment a = ConnectProtocol.deserializeAssignment(in);
            ObjectNode out = JSON.createObjectNode();
            out.put("error", a.error());
            out.put("leader", a.leader());
            out.put("leader_url", a.leaderUrl());
            out.put("offset", a.offset());
            out.set("connectors", stringsJson(a.connectors()));
            out.set("tasks", tasksJson(a.tasks()));
            return out;
        }
        return assignmentJson(IncrementalCooperativeConnectProtocol.deserializeAssignment(in));
    }

    private static ExtendedAssignment extended(JsonNode a, short version) {
        return new ExtendedAssignment(version, (short) a.get("error").asInt(), text(a, "leader"),
                text(a, "leader_url"), a.get("offset").asLong(), strings(a.get("connectors")),
                tasks(a.get("tasks")), strings(a.get("revoked_connectors")), tasks(a.get("revoked_tasks")),
                a.path("delay").asInt(0));
    }

    private static ObjectNode assignmentJson(ExtendedAssignment a) {
        ObjectNode out = JSON.createObjectNode();
        out.put("version", a.version());
        out.put("error", a.error());
        out.put("leader", a.leader());
        out.put("leader_url", a.leaderUrl());
        out.put("offset", a.offset());
        out.set("connectors", stringsJson(a.connectors()));
        out.set("tasks", tasksJson(a.tasks()));
        out.set("revoked_connectors", stringsJson(a.revokedConnectors()));
        out.set("revoked_tasks", tasksJson(a.revokedTasks()));
        out.put("delay", a.delay());
        return out;
    }

    // ---------------------------------------------------------------------------- helpers

    private static String text(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null) for (JsonNode n : node) out.add(n.asText());
        return out;
    }

    /** Tasks as {@code [[connector, n], ...]}. */
    private static List<ConnectorTaskId> tasks(JsonNode node) {
        List<ConnectorTaskId> out = new ArrayList<>();
        if (node != null) for (JsonNode n : node) out.add(new ConnectorTaskId(n.get(0).asText(), n.get(1).asInt()));
        return out;
    }

    private static ArrayNode stringsJson(Collection<String> items) {
        ArrayNode out = JSON.createArrayNode();
        for (String s : items) out.add(s);
        return out;
    }

    private static ArrayNode tasksJson(Collection<ConnectorTaskId> items) {
        ArrayNode out = JSON.createArrayNode();
        for (ConnectorTaskId t : items) out.addArray().add(t.connector()).add(t.task());
        return out;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) return null;
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }

    /**
     * {@code new C(new LogContext(), rest...)} whichever package holds {@code LogContext} in this
     * Kafka release ({@code common.utils} in 4.0, {@code common.utils.internals} in 4.4).
     */
    private static Object newWithLogContext(Class<?> cls, Object... rest) throws Exception {
        for (Constructor<?> c : cls.getConstructors()) {
            Class<?>[] types = c.getParameterTypes();
            if (types.length == rest.length + 1 && types[0].getSimpleName().equals("LogContext")) {
                Object[] args = new Object[types.length];
                args[0] = types[0].getDeclaredConstructor().newInstance();
                System.arraycopy(rest, 0, args, 1, rest.length);
                return c.newInstance(args);
            }
        }
        throw new IllegalStateException(cls.getName() + " has no (LogContext, ...) constructor of " + (rest.length + 1) + " arguments");
    }

    /**
     * {@code assignor.performAssignment(leaderId, protocol, members, coordinator)}: the protocol
     * goes as its JoinGroup name (4.0) or as {@code ConnectProtocolCompatibility.fromProtocol}
     * of it (4.4). Kafka's own exceptions are rethrown unwrapped.
     */
    private static Map<String, ByteBuffer> performAssignment(Object assignor, String leaderId, String protocol,
                                                             List<JoinGroupResponseMember> members,
                                                             WorkerCoordinator coordinator) throws Exception {
        Method m = performAssignmentMethod(assignor);
        return invokePerformAssignment(m, assignor, leaderId, protocolArgument(m, protocol), members, coordinator);
    }

    /** The assignor's 4-argument {@code performAssignment} (its protocol type differs by release). */
    private static Method performAssignmentMethod(Object assignor) {
        for (Method m : assignor.getClass().getMethods()) {
            if (m.getName().equals("performAssignment") && m.getParameterCount() == 4) return m;
        }
        throw new IllegalStateException(assignor.getClass().getName() + " has no performAssignment of 4 arguments");
    }

    /** The JoinGroup protocol name (4.0) or {@code ConnectProtocolCompatibility} of it (4.4). */
    private static Object protocolArgument(Method m, String protocol) {
        return m.getParameterTypes()[1] == String.class ? protocol : ConnectProtocolCompatibility.fromProtocol(protocol);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, ByteBuffer> invokePerformAssignment(Method m, Object assignor, String leaderId,
                                                                   Object protocol,
                                                                   List<JoinGroupResponseMember> members,
                                                                   WorkerCoordinator coordinator) throws Exception {
        try {
            return (Map<String, ByteBuffer>) m.invoke(assignor, leaderId, protocol, members, coordinator);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) throw (Exception) cause;
            throw (Error) cause;
        }
    }
}
