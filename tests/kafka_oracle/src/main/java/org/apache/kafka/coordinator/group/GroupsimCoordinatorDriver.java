package org.apache.kafka.coordinator.group;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import groupsim.oracle.Driver;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.HeartbeatResponseData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupResponseData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorExecutor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorResult;
import org.apache.kafka.coordinator.common.runtime.CoordinatorTimer;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetricsShard;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.mockito.MockedStatic;
import org.mockito.Mockito;

/**
 * Drives Kafka's classic group coordinator ({@link GroupMetadataManager}) for groupsim's
 * differential tests (tests/kafka_oracle/coordinator_replay.py is the Python end).
 *
 * <p>One {@code GroupMetadataManager} per session name, each with its own virtual clock
 * ({@link VirtualTime}, a {@link Time}) and timer table ({@link VirtualTimer}, a
 * {@code CoordinatorTimer} built as a {@link Proxy} because the interface's type parameters
 * differ between Kafka 4.0 and 4.4). The executor, metrics shard and group-config manager are
 * Mockito stand-ins: the classic group paths never use them. The manager is built with its
 * package-private {@code Builder} (this class lives in Kafka's package for that) by reflection,
 * since the builder's parameter types also differ between releases.
 *
 * <h2>Requests ({@code op} = {@code coordinator.<verb>})</h2>
 * <ul>
 *   <li>{@code reset}: drop every session. Result {@code {}}.</li>
 *   <li>{@code open}: {@code {"session", "config": {"initial_rebalance_delay_ms",
 *       "min_session_timeout_ms", "max_session_timeout_ms", "max_size"}, "start_ms"}} (all
 *       config keys optional, Kafka's defaults otherwise; {@code start_ms} default 0) builds a
 *       fresh manager for {@code session} (replacing one of that name). Result
 *       {@code {"now_ms"}}.</li>
 *   <li>{@code step}: {@code {"session", "step": STEP}} runs one step, result STEP_RESULT.</li>
 *   <li>{@code run}: {@code {"session", "steps": [STEP, ...]}} runs steps in order, result
 *       {@code [STEP_RESULT, ...]}.</li>
 *   <li>{@code close}: {@code {"session"}} drops one session.</li>
 * </ul>
 *
 * <p>A STEP is one of
 * <ul>
 *   <li>{@code {"advance_ms": n, "mode": "each"|"poll"}}: move the clock by n ms firing due
 *       timers by (deadline, arming order). {@code "each"} (default) sets the clock to each
 *       timer's deadline before it fires (the runtime's timer wheel, and groupsim's harness);
 *       {@code "poll"} moves the clock to the end first and fires everything due there, as
 *       Kafka's {@code MockTime.sleep} + {@code MockCoordinatorTimer.poll} do in its tests.
 *       Timers armed while firing fire in the same step when due. {@code "before"} fires
 *       only the timers due strictly before the end, then moves the clock there: a request
 *       that follows is handled before the timers due at its own millisecond (one of the two
 *       orders Kafka's timer wheel allows; the chaos referee replays the order groupsim's
 *       run took).</li>
 *   <li>{@code {"unload": true}}: the coordinator gives the group's partition up
 *       ({@code GroupMetadataManager#onUnloaded}: parked JoinGroups and SyncGroups are
 *       answered NOT_COORDINATOR, in {@code completions}); its timers are dropped.</li>
 *   <li>{@code {"load": {"group": id}}}: a new coordinator (fresh manager and timer table,
 *       same clock) loads the partition: every record the session's managers wrote, in
 *       order, through {@code GroupMetadataManager#replay}, then {@code onLoaded()}. The
 *       result adds {@code "replayed"} (records replayed) and {@code "loaded"}: null (no such
 *       group) or {@code {generation, state, protocol, leader_id, member_ids}}, the members in
 *       the group's iteration order.</li>
 *   <li>{@code {"handle": h, "api": API, "version": v, "client_id": s, "body": {...}}}: one
 *       request; {@code h} is any integer naming it in completions. An optional
 *       {@code "member_uuids": [uuid, ...]} hands {@code UUID.randomUUID()} these values, in
 *       order, while the request is handled (a Mockito static mock on this thread), so that
 *       {@code ClassicGroup#generateMemberId} names new members as the replayed run did; the
 *       part before the UUID is still Kafka's. APIs and bodies
 *       (snake_case of Kafka's message fields; bytes base64; absent = Kafka's default):
 *     <ul>
 *       <li>{@code join}: group_id, member_id, group_instance_id, protocol_type,
 *           protocols [{name, metadata}], session_timeout_ms, rebalance_timeout_ms, reason</li>
 *       <li>{@code sync}: group_id, member_id, generation_id, group_instance_id,
 *           protocol_type, protocol_name, assignments [{member_id, assignment}]</li>
 *       <li>{@code heartbeat}: group_id, member_id, generation_id, group_instance_id</li>
 *       <li>{@code leave}: group_id, members [{member_id, group_instance_id, reason}] (a
 *           v0-2 member id travels as a one-element list, as the broker converts it)</li>
 *       <li>{@code describe}: groups [ids] (answered at once from the latest state)</li>
 *       <li>{@code list}: states_filter [..], types_filter [..]</li>
 *     </ul>
 *   Before the manager, the checks {@code GroupCoordinatorService} makes are applied (empty
 *   group id: INVALID_GROUP_ID; JoinGroup session timeout outside the bounds:
 *   INVALID_SESSION_TIMEOUT), and an exception the manager throws becomes the response the
 *   service would send ({@code CoordinatorOperationExceptionHelper} mapping; a LeaveGroup of
 *   an unknown group answers every member UNKNOWN_MEMBER_ID).</li>
 * </ul>
 *
 * <p>A STEP_RESULT is {@code {"now_ms", "completions", "records", "scheduled", "cancelled",
 * "fired", "armed", "exception"}} (a step with {@code "brief": true} gets only
 * {@code now_ms}, {@code completions} and {@code exception}, and {@code armed} after an
 * advance in mode {@code "before"}: what the chaos referee reads):
 * <ul>
 *   <li>{@code completions}: [{handle, api, at_ms, response}] in completion order: the
 *       step's own request if answered at once, and any parked JoinGroup/SyncGroup completed
 *       by it (or by a timer). RESPONSE fields: join {error_code, generation_id,
 *       protocol_type, protocol_name, leader, member_id, skip_assignment, members
 *       [{member_id, group_instance_id, metadata}]}; sync {error_code, protocol_type,
 *       protocol_name, assignment}; heartbeat {error_code}; leave {error_code, members
 *       [{member_id, group_instance_id, error_code}]}; describe {groups [{group_id,
 *       error_code, group_state, protocol_type, protocol_data, members [{member_id,
 *       group_instance_id, client_id, client_host, member_metadata, member_assignment}]}]};
 *       list {groups [{group_id, protocol_type, group_state, group_type}]}.</li>
 *   <li>{@code records}: [{type, at_ms, key, value}] each record the manager wrote, with
 *       {@code type} the key class less "Key" (e.g. GroupMetadata), key and value as Kafka's
 *       generated JSON converters write them (camelCase; value null for a tombstone).
 *       Append futures complete at once (writes never fail).</li>
 *   <li>{@code scheduled}: [{key, deadline_ms}], {@code cancelled}: [key] (only keys that
 *       were armed), {@code fired}: [{key, at_ms}]: timer table traffic, in order.</li>
 *   <li>{@code armed}: [{key, deadline_ms}] the timer table after the step, by key.</li>
 *   <li>{@code exception}: null, or {@code "<class>: <message>"} of a non-API exception the
 *       manager threw (e.g. IllegalStateException, answered UNKNOWN_SERVER_ERROR).</li>
 * </ul>
 * Timer keys are Kafka's: {@code heartbeat-<group>-<member>}, {@code join-<group>},
 * {@code sync-<group>}.
 */
public final class GroupsimCoordinatorDriver implements Driver {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private final Map<String, Session> sessions = new HashMap<>();
    /** UUIDs {@code UUID.randomUUID()} hands out next (a request's {@code member_uuids}). */
    private final ArrayDeque<UUID> nextUuids = new ArrayDeque<>();
    /** The static mock of {@link UUID}, opened on first use and kept (it is per thread). */
    private MockedStatic<UUID> uuidMock;

    /** Opens the {@link UUID} static mock: {@code randomUUID} answers from
     *  {@link #nextUuids} while it has values, every other call is the real method. */
    private void mockUuids() {
        if (uuidMock != null) return;
        uuidMock = Mockito.mockStatic(UUID.class, invocation -> {
            if (invocation.getMethod().getName().equals("randomUUID") && !nextUuids.isEmpty()) {
                return nextUuids.poll();
            }
            return invocation.callRealMethod();
        });
    }

    @Override
    public JsonNode handle(String verb, JsonNode request) throws Exception {
        switch (verb) {
            case "reset":
                sessions.clear();
                return NODES.objectNode();
            case "open": {
                Session s = new Session(request.path("config"), request.path("start_ms").asLong(0));
                sessions.put(request.path("session").asText(), s);
                return NODES.objectNode().put("now_ms", s.time.now);
            }
            case "close":
                sessions.remove(request.path("session").asText());
                return NODES.objectNode();
            case "step":
                return session(request).step(request.path("step"));
            case "run": {
                Session s = session(request);
                ArrayNode out = NODES.arrayNode();
                for (JsonNode step : request.path("steps")) out.add(s.step(step));
                return out;
            }
            default:
                throw new IllegalArgumentException("unknown coordinator verb '" + verb + "'");
        }
    }

    private Session session(JsonNode request) {
        Session s = sessions.get(request.path("session").asText());
        if (s == null) throw new IllegalArgumentException("no open session '" + request.path("session").asText() + "'");
        return s;
    }

    /** A virtual clock: only {@link #now} moves it. */
    static final class VirtualTime implements Time {
        long now;

        VirtualTime(long start) {
            now = start;
        }

        @Override
        public long milliseconds() {
            return now;
        }

        @Override
        public long nanoseconds() {
            return TimeUnit.MILLISECONDS.toNanos(now);
        }

        @Override
        public void sleep(long ms) {
            now += ms;
        }

        // Abstract in Kafka 4.0's Time, gone in 4.4: no @Override so both compile.
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            if (!condition.get()) throw new IllegalStateException("waitObject on a virtual clock");
        }
    }

    /** One armed timer: due at {@code deadline}, ties broken by arming order {@code seq}. */
    record Timeout(String key, long deadline, long seq, Object operation) {}

    /**
     * The coordinator timer table, answering {@code CoordinatorTimer}'s methods (schedule
     * replaces a key, scheduleIfAbsent keeps it, cancel removes, isScheduled asks).
     */
    final class VirtualTimer {
        final Map<String, Timeout> byKey = new HashMap<>();
        final TreeSet<Timeout> queue = new TreeSet<>(
                Comparator.comparingLong(Timeout::deadline).thenComparingLong(Timeout::seq));
        long seq;
        Session owner;

        Object invoke(Object proxy, Method method, Object[] args) {
            switch (method.getName()) {
                case "schedule": {
                    String key = (String) args[0];
                    long delay = ((TimeUnit) args[2]).toMillis((Long) args[1]);
                    schedule(key, owner.time.now + delay, args[args.length - 1]);
                    return null;
                }
                case "scheduleIfAbsent": {
                    String key = (String) args[0];
                    if (!byKey.containsKey(key)) {
                        long delay = ((TimeUnit) args[2]).toMillis((Long) args[1]);
                        schedule(key, owner.time.now + delay, args[args.length - 1]);
                    }
                    return null;
                }
                case "cancel": {
                    Timeout t = byKey.remove((String) args[0]);
                    if (t != null) {
                        queue.remove(t);
                        owner.out.withArray("cancelled").add(t.key());
                    }
                    return null;
                }
                case "isScheduled":
                    return byKey.containsKey((String) args[0]);
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                case "toString":
                    return "VirtualTimer";
                default:
                    throw new UnsupportedOperationException(method.toString());
            }
        }

        void schedule(String key, long deadline, Object operation) {
            Timeout old = byKey.remove(key);
            if (old != null) queue.remove(old);
            Timeout t = new Timeout(key, deadline, seq++, operation);
            byKey.put(key, t);
            queue.add(t);
            owner.out.withArray("scheduled").addObject().put("key", key).put("deadline_ms", deadline);
        }

        Timeout pollDue(long upTo) {
            if (queue.isEmpty() || queue.first().deadline() > upTo) return null;
            Timeout t = queue.pollFirst();
            byKey.remove(t.key());
            return t;
        }
    }

    /** One coordinator: manager, clock, timers, and the result of the step in progress. */
    final class Session {
        final VirtualTime time;
        final VirtualTimer timer = new VirtualTimer();
        final GroupCoordinatorConfig cfg;
        /** The coordinator: a new one after each {@code load} step. */
        GroupMetadataManager manager;
        Method joinMethod;
        /** Every record the managers of this session wrote, in order: the group's
         *  {@code __consumer_offsets} partition, from which a {@code load} step rebuilds. */
        final List<org.apache.kafka.coordinator.common.runtime.CoordinatorRecord> log = new ArrayList<>();
        ObjectNode out = NODES.objectNode();

        Session(JsonNode config, long startMs) throws Exception {
            time = new VirtualTime(startMs);
            timer.owner = this;
            Map<String, Object> props = new HashMap<>();
            putIf(props, config, "initial_rebalance_delay_ms", GroupCoordinatorConfig.GROUP_INITIAL_REBALANCE_DELAY_MS_CONFIG);
            putIf(props, config, "min_session_timeout_ms", GroupCoordinatorConfig.GROUP_MIN_SESSION_TIMEOUT_MS_CONFIG);
            putIf(props, config, "max_session_timeout_ms", GroupCoordinatorConfig.GROUP_MAX_SESSION_TIMEOUT_MS_CONFIG);
            putIf(props, config, "max_size", GroupCoordinatorConfig.GROUP_MAX_SIZE_CONFIG);
            cfg = GroupCoordinatorConfig.fromProps(props);
            build();
        }

        /** A fresh {@code GroupMetadataManager} on this session's clock and timer table. */
        void build() throws Exception {
            Object proxy = Proxy.newProxyInstance(
                    CoordinatorTimer.class.getClassLoader(), new Class<?>[] {CoordinatorTimer.class}, timer::invoke);
            GroupMetadataManager.Builder builder = new GroupMetadataManager.Builder();
            with(builder, "withTime", time);
            with(builder, "withTimer", proxy);
            with(builder, "withConfig", cfg);
            with(builder, "withExecutor", Mockito.mock(CoordinatorExecutor.class));
            with(builder, "withGroupCoordinatorMetricsShard", Mockito.mock(GroupCoordinatorMetricsShard.class));
            with(builder, "withGroupConfigManager", Mockito.mock(GroupConfigManager.class));
            Method build = GroupMetadataManager.Builder.class.getDeclaredMethod("build");
            build.setAccessible(true);
            manager = (GroupMetadataManager) build.invoke(builder);
            Method join = null;
            for (Method m : GroupMetadataManager.class.getMethods()) {
                if (m.getName().equals("classicGroupJoin")) join = m;
            }
            if (join == null) throw new IllegalStateException("GroupMetadataManager has no public classicGroupJoin");
            joinMethod = join;
        }

        /**
         * The group's partition leaves this coordinator: {@code GroupMetadataManager
         * #onUnloaded} answers the parked JoinGroups (PreparingRebalance) and SyncGroups
         * (CompletingRebalance, Stable) NOT_COORDINATOR and turns every classic group Dead;
         * the runtime drops the shard's timers with it ({@code CoordinatorRuntime}'s unload
         * cancels the context's timer). The manager answers nothing more until {@link #load}.
         */
        void unload() {
            manager.onUnloaded();
            timer.byKey.clear();
            timer.queue.clear();
        }

        /**
         * A new coordinator takes the partition over at the current virtual time: a fresh
         * manager replays every stored record in order ({@code CoordinatorLoaderImpl} hands
         * each to {@code GroupCoordinatorShard#replay}, here {@code GroupMetadataManager
         * #replay(GroupMetadataKey, GroupMetadataValue)}: the last record of a group wins, a
         * tombstone removes it), then {@code onLoaded()} arms each member's heartbeat and
         * rebalances a group over {@code group.max.size}. Every record a step wrote counts as
         * committed (the driver completes append futures at once, as groupsim's coordinator
         * stores its record at once), so the log holds all of them.
         */
        void load(String groupId) throws Exception {
            timer.byKey.clear();
            timer.queue.clear();
            build();
            for (org.apache.kafka.coordinator.common.runtime.CoordinatorRecord rec : log) {
                Object k = rec.key();
                ApiMessage key = k instanceof ApiMessageAndVersion ? ((ApiMessageAndVersion) k).message() : (ApiMessage) k;
                if (!(key instanceof GroupMetadataKey)) {
                    throw new IllegalStateException("cannot load a " + key.getClass().getSimpleName() + " record");
                }
                ApiMessageAndVersion value = rec.value();
                manager.replay((GroupMetadataKey) key, value == null ? null : (GroupMetadataValue) value.message());
            }
            manager.onLoaded();
            out.put("replayed", log.size());
            org.apache.kafka.coordinator.group.classic.ClassicGroup group;
            try {
                group = manager.classicGroup(groupId, Long.MAX_VALUE);
            } catch (ApiException e) {
                out.putNull("loaded");
                return;
            }
            ObjectNode loaded = out.putObject("loaded");
            loaded.put("generation", group.generationId());
            loaded.put("state", group.currentState().toString());
            loaded.put("protocol", group.protocolName().orElse(null));
            loaded.put("leader_id", group.leaderOrNull());
            ArrayNode ids = loaded.putArray("member_ids");
            for (org.apache.kafka.coordinator.group.classic.ClassicGroupMember m : group.allMembers()) ids.add(m.memberId());
        }

        ObjectNode step(JsonNode step) throws Exception {
            out = NODES.objectNode();
            out.putArray("completions");
            out.putArray("records");
            out.putArray("scheduled");
            out.putArray("cancelled");
            out.putArray("fired");
            out.putNull("exception");
            if (step.has("advance_ms")) {
                advance(step.path("advance_ms").asLong(), step.path("mode").asText("each"));
            } else if (step.path("unload").asBoolean(false)) {
                unload();
            } else if (step.has("load")) {
                load(step.path("load").path("group").asText());
            } else if (step.has("member_uuids")) {
                mockUuids();
                for (JsonNode u : step.path("member_uuids")) nextUuids.add(UUID.fromString(u.asText()));
                try {
                    request(step);
                } finally {
                    nextUuids.clear();
                }
            } else {
                request(step);
            }
            out.put("now_ms", time.now);
            if (step.path("brief").asBoolean(false)) {
                // the chaos referee reads completions (and, before a request, the timers due)
                out.remove(List.of("records", "scheduled", "cancelled", "fired"));
                if (!step.path("mode").asText("").equals("before")) return out;
            }
            ArrayNode armed = out.putArray("armed");
            new java.util.TreeMap<>(timer.byKey).forEach((k, t) ->
                    armed.addObject().put("key", k).put("deadline_ms", t.deadline()));
            return out;
        }

        void advance(long ms, String mode) {
            long target = time.now + ms;
            boolean poll = mode.equals("poll");
            if (poll) time.now = target;
            long due = mode.equals("before") ? target - 1 : target;
            Timeout t;
            while ((t = timer.pollDue(due)) != null) {
                if (!poll) time.now = Math.max(time.now, t.deadline());
                out.withArray("fired").addObject().put("key", t.key()).put("at_ms", time.now);
                CoordinatorResult<?, ?> result;
                try {
                    Method gen = t.operation().getClass().getMethod("generateRecords");
                    gen.setAccessible(true);
                    result = (CoordinatorResult<?, ?>) gen.invoke(t.operation());
                } catch (InvocationTargetException e) {
                    // The runtime logs a failed timeout operation and goes on.
                    out.put("exception", e.getCause().getClass().getName() + ": " + e.getCause().getMessage());
                    continue;
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
                applyResult(result);
            }
            time.now = target;
        }

        void applyResult(CoordinatorResult<?, ?> result) {
            if (result == null) return;
            for (Object rec : result.records()) {
                writeRecord(rec, result.replayRecords());
            }
            if (result.appendFuture() != null) result.appendFuture().complete(null);
        }

        void writeRecord(Object rec, boolean replay) {
            org.apache.kafka.coordinator.common.runtime.CoordinatorRecord record =
                    (org.apache.kafka.coordinator.common.runtime.CoordinatorRecord) rec;
            Object k = record.key();
            ApiMessage key = k instanceof ApiMessageAndVersion ? ((ApiMessageAndVersion) k).message() : (ApiMessage) k;
            ApiMessageAndVersion value = record.value();
            log.add(record);
            ObjectNode r = out.withArray("records").addObject();
            String type = key.getClass().getSimpleName();
            r.put("type", type.endsWith("Key") ? type.substring(0, type.length() - 3) : type);
            r.put("at_ms", time.now);
            r.set("key", toJson(key, (short) 0));
            r.set("value", value == null ? NODES.nullNode() : toJson(value.message(), value.version()));
            if (replay) {
                if (key instanceof GroupMetadataKey) {
                    manager.replay((GroupMetadataKey) key, value == null ? null : (GroupMetadataValue) value.message());
                } else {
                    throw new IllegalStateException("cannot replay a " + type + " record");
                }
            }
        }

        // ------------------------------------------------------------- requests

        void request(JsonNode step) throws Exception {
            int handle = step.path("handle").asInt();
            String api = step.path("api").asText();
            short version = (short) step.path("version").asInt();
            String clientId = step.path("client_id").asText("client");
            JsonNode body = step.path("body");
            switch (api) {
                case "join": join(handle, version, clientId, body); break;
                case "sync": sync(handle, version, clientId, body); break;
                case "heartbeat": heartbeat(handle, version, clientId, body); break;
                case "leave": leave(handle, version, clientId, body); break;
                case "describe": describe(handle, version, clientId, body); break;
                case "list": list(handle, body); break;
                default: throw new IllegalArgumentException("unknown api '" + api + "'");
            }
        }

        RequestContext context(ApiKeys key, short version, String clientId) {
            return new RequestContext(
                    new RequestHeader(key, version, clientId, 0),
                    "1",
                    InetAddress.getLoopbackAddress(),
                    KafkaPrincipal.ANONYMOUS,
                    ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT),
                    SecurityProtocol.PLAINTEXT,
                    ClientInformation.EMPTY,
                    false);
        }

        <T> CompletableFuture<T> future(int handle, String api, java.util.function.Function<T, ObjectNode> render) {
            CompletableFuture<T> f = new CompletableFuture<>();
            f.whenComplete((resp, err) -> {
                ObjectNode c = out.withArray("completions").addObject();
                c.put("handle", handle).put("api", api).put("at_ms", time.now);
                if (err != null) {
                    c.put("exception", err.getClass().getName() + ": " + err.getMessage());
                } else {
                    c.set("response", render.apply(resp));
                }
            });
            return f;
        }

        /** The error code {@code CoordinatorOperationExceptionHelper} answers an exception with;
         *  a non-API exception is also reported in {@code exception}. */
        Errors errorOf(Throwable e) {
            if (e instanceof InvocationTargetException) e = e.getCause();
            if (!(e instanceof ApiException)) {
                out.put("exception", e.getClass().getName() + ": " + e.getMessage());
            }
            Errors error = Errors.forException(e);
            switch (error) {
                case NETWORK_EXCEPTION: return Errors.COORDINATOR_LOAD_IN_PROGRESS;
                case UNKNOWN_TOPIC_OR_PARTITION:
                case NOT_ENOUGH_REPLICAS:
                case REQUEST_TIMED_OUT: return Errors.COORDINATOR_NOT_AVAILABLE;
                case NOT_LEADER_OR_FOLLOWER:
                case KAFKA_STORAGE_ERROR: return Errors.NOT_COORDINATOR;
                case MESSAGE_TOO_LARGE:
                case RECORD_LIST_TOO_LARGE:
                case INVALID_FETCH_SIZE: return Errors.UNKNOWN_SERVER_ERROR;
                default: return error;
            }
        }

        void join(int handle, short version, String clientId, JsonNode b) {
            JoinGroupRequestData req = new JoinGroupRequestData()
                    .setGroupId(b.path("group_id").asText(""))
                    .setMemberId(b.path("member_id").asText(""))
                    .setGroupInstanceId(textOrNull(b, "group_instance_id"))
                    .setProtocolType(b.path("protocol_type").asText(""))
                    .setSessionTimeoutMs(b.path("session_timeout_ms").asInt())
                    .setRebalanceTimeoutMs(b.path("rebalance_timeout_ms").asInt(-1))
                    .setReason(textOrNull(b, "reason"));
            JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                    new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
            for (JsonNode p : b.path("protocols")) {
                protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol()
                        .setName(p.path("name").asText())
                        .setMetadata(bytes(p.path("metadata"))));
            }
            req.setProtocols(protocols);
            CompletableFuture<JoinGroupResponseData> f = future(handle, "join", GroupsimCoordinatorDriver::joinJson);
            if (req.groupId().isEmpty()) {
                f.complete(new JoinGroupResponseData().setMemberId(req.memberId()).setErrorCode(Errors.INVALID_GROUP_ID.code()));
                return;
            }
            GroupCoordinatorConfig cfg = configOf();
            if (req.sessionTimeoutMs() < cfg.classicGroupMinSessionTimeoutMs()
                    || req.sessionTimeoutMs() > cfg.classicGroupMaxSessionTimeoutMs()) {
                f.complete(new JoinGroupResponseData().setMemberId(req.memberId()).setErrorCode(Errors.INVALID_SESSION_TIMEOUT.code()));
                return;
            }
            RequestContext ctx = context(ApiKeys.JOIN_GROUP, version, clientId);
            try {
                Object result = joinMethod.getParameterCount() == 3
                        ? joinMethod.invoke(manager, ctx, req, f)
                        : joinMethod.invoke(manager, ctx, req, f, false);
                applyResult((CoordinatorResult<?, ?>) result);
            } catch (Exception e) {
                Errors error = errorOf(e);
                if (!f.isDone()) f.complete(new JoinGroupResponseData().setErrorCode(error.code()));
            }
        }

        void sync(int handle, short version, String clientId, JsonNode b) {
            SyncGroupRequestData req = new SyncGroupRequestData()
                    .setGroupId(b.path("group_id").asText(""))
                    .setMemberId(b.path("member_id").asText(""))
                    .setGenerationId(b.path("generation_id").asInt(-1))
                    .setGroupInstanceId(textOrNull(b, "group_instance_id"))
                    .setProtocolType(textOrNull(b, "protocol_type"))
                    .setProtocolName(textOrNull(b, "protocol_name"));
            List<SyncGroupRequestData.SyncGroupRequestAssignment> assignments = new ArrayList<>();
            for (JsonNode a : b.path("assignments")) {
                assignments.add(new SyncGroupRequestData.SyncGroupRequestAssignment()
                        .setMemberId(a.path("member_id").asText())
                        .setAssignment(bytes(a.path("assignment"))));
            }
            req.setAssignments(assignments);
            CompletableFuture<SyncGroupResponseData> f = future(handle, "sync", GroupsimCoordinatorDriver::syncJson);
            if (req.groupId().isEmpty()) {
                f.complete(new SyncGroupResponseData().setErrorCode(Errors.INVALID_GROUP_ID.code()));
                return;
            }
            try {
                applyResult(manager.classicGroupSync(context(ApiKeys.SYNC_GROUP, version, clientId), req, f));
            } catch (Exception e) {
                Errors error = errorOf(e);
                if (!f.isDone()) f.complete(new SyncGroupResponseData().setErrorCode(error.code()));
            }
        }

        void heartbeat(int handle, short version, String clientId, JsonNode b) {
            HeartbeatRequestData req = new HeartbeatRequestData()
                    .setGroupId(b.path("group_id").asText(""))
                    .setMemberId(b.path("member_id").asText(""))
                    .setGenerationId(b.path("generation_id").asInt(-1))
                    .setGroupInstanceId(textOrNull(b, "group_instance_id"));
            CompletableFuture<HeartbeatResponseData> f = future(handle, "heartbeat",
                    r -> NODES.objectNode().put("error_code", r.errorCode()));
            if (req.groupId().isEmpty()) {
                f.complete(new HeartbeatResponseData().setErrorCode(Errors.INVALID_GROUP_ID.code()));
                return;
            }
            try {
                CoordinatorResult<HeartbeatResponseData, ?> result =
                        manager.classicGroupHeartbeat(context(ApiKeys.HEARTBEAT, version, clientId), req);
                applyResult(result);
                f.complete(result.response());
            } catch (Exception e) {
                Errors error = errorOf(e);
                // GroupCoordinatorService#heartbeat: a group still loading counts as alive.
                if (error == Errors.COORDINATOR_LOAD_IN_PROGRESS) error = Errors.NONE;
                f.complete(new HeartbeatResponseData().setErrorCode(error.code()));
            }
        }

        void leave(int handle, short version, String clientId, JsonNode b) {
            LeaveGroupRequestData req = new LeaveGroupRequestData().setGroupId(b.path("group_id").asText(""));
            List<LeaveGroupRequestData.MemberIdentity> members = new ArrayList<>();
            for (JsonNode m : b.path("members")) {
                members.add(new LeaveGroupRequestData.MemberIdentity()
                        .setMemberId(m.path("member_id").asText(""))
                        .setGroupInstanceId(textOrNull(m, "group_instance_id"))
                        .setReason(textOrNull(m, "reason")));
            }
            req.setMembers(members);
            CompletableFuture<LeaveGroupResponseData> f = future(handle, "leave", GroupsimCoordinatorDriver::leaveJson);
            if (req.groupId().isEmpty()) {
                f.complete(new LeaveGroupResponseData().setErrorCode(Errors.INVALID_GROUP_ID.code()));
                return;
            }
            try {
                CoordinatorResult<LeaveGroupResponseData, ?> result =
                        manager.classicGroupLeave(context(ApiKeys.LEAVE_GROUP, version, clientId), req);
                applyResult(result);
                f.complete(result.response());
            } catch (Exception e) {
                Errors error = errorOf(e);
                if (error == Errors.UNKNOWN_MEMBER_ID) {
                    // GroupCoordinatorService#leaveGroup: the group was not found.
                    List<LeaveGroupResponseData.MemberResponse> answers = new ArrayList<>();
                    for (LeaveGroupRequestData.MemberIdentity m : members) {
                        answers.add(new LeaveGroupResponseData.MemberResponse()
                                .setMemberId(m.memberId())
                                .setGroupInstanceId(m.groupInstanceId())
                                .setErrorCode(Errors.UNKNOWN_MEMBER_ID.code()));
                    }
                    f.complete(new LeaveGroupResponseData().setMembers(answers));
                } else {
                    f.complete(new LeaveGroupResponseData().setErrorCode(error.code()));
                }
            }
        }

        void describe(int handle, short version, String clientId, JsonNode b) {
            List<String> ids = new ArrayList<>();
            for (JsonNode g : b.path("groups")) ids.add(g.asText());
            CompletableFuture<List<DescribeGroupsResponseData.DescribedGroup>> f =
                    future(handle, "describe", GroupsimCoordinatorDriver::describeJson);
            f.complete(manager.describeGroups(context(ApiKeys.DESCRIBE_GROUPS, version, clientId), ids, Long.MAX_VALUE));
        }

        void list(int handle, JsonNode b) {
            Set<String> states = new HashSet<>();
            for (JsonNode s : b.path("states_filter")) states.add(s.asText());
            Set<String> types = new HashSet<>();
            for (JsonNode s : b.path("types_filter")) types.add(s.asText());
            CompletableFuture<List<ListGroupsResponseData.ListedGroup>> f = future(handle, "list", listed -> {
                ObjectNode r = NODES.objectNode();
                ArrayNode groups = r.putArray("groups");
                for (ListGroupsResponseData.ListedGroup g : listed) {
                    groups.addObject().put("group_id", g.groupId()).put("protocol_type", g.protocolType())
                            .put("group_state", g.groupState()).put("group_type", g.groupType());
                }
                return r;
            });
            f.complete(manager.listGroups(states, types, Long.MAX_VALUE));
        }

        GroupCoordinatorConfig configOf() {
            try {
                java.lang.reflect.Field field = GroupMetadataManager.class.getDeclaredField("config");
                field.setAccessible(true);
                return (GroupCoordinatorConfig) field.get(manager);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    // ----------------------------------------------------------------- JSON helpers

    private static void putIf(Map<String, Object> props, JsonNode config, String field, String kafkaKey) {
        if (config.has(field) && !config.get(field).isNull()) props.put(kafkaKey, config.get(field).asText());
    }

    private static void with(Object builder, String name, Object value) throws ReflectiveOperationException {
        for (Method m : builder.getClass().getDeclaredMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 1) {
                m.setAccessible(true);
                m.invoke(builder, value);
                return;
            }
        }
        throw new NoSuchMethodException("GroupMetadataManager.Builder#" + name);
    }

    private static String textOrNull(JsonNode node, String field) {
        JsonNode v = node.get(field);
        return v == null || v.isNull() ? null : v.asText();
    }

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() || node.isMissingNode() ? new byte[0] : Base64.getDecoder().decode(node.asText());
    }

    private static String b64(byte[] data) {
        return data == null ? null : Base64.getEncoder().encodeToString(data);
    }

    private static JsonNode toJson(ApiMessage message, short version) {
        try {
            Class<?> converter = Class.forName(message.getClass().getName() + "JsonConverter");
            Method write = converter.getMethod("write", message.getClass(), short.class);
            return (JsonNode) write.invoke(null, message, version);
        } catch (ReflectiveOperationException e) {
            return NODES.textNode(message.toString());
        }
    }

    static ObjectNode joinJson(JoinGroupResponseData r) {
        ObjectNode o = NODES.objectNode();
        o.put("error_code", r.errorCode());
        o.put("generation_id", r.generationId());
        o.put("protocol_type", r.protocolType());
        o.put("protocol_name", r.protocolName());
        o.put("leader", r.leader());
        o.put("member_id", r.memberId());
        o.put("skip_assignment", r.skipAssignment());
        ArrayNode members = o.putArray("members");
        for (JoinGroupResponseData.JoinGroupResponseMember m : r.members()) {
            members.addObject().put("member_id", m.memberId()).put("group_instance_id", m.groupInstanceId())
                    .put("metadata", b64(m.metadata()));
        }
        return o;
    }

    static ObjectNode syncJson(SyncGroupResponseData r) {
        ObjectNode o = NODES.objectNode();
        o.put("error_code", r.errorCode());
        o.put("protocol_type", r.protocolType());
        o.put("protocol_name", r.protocolName());
        o.put("assignment", b64(r.assignment()));
        return o;
    }

    static ObjectNode leaveJson(LeaveGroupResponseData r) {
        ObjectNode o = NODES.objectNode();
        o.put("error_code", r.errorCode());
        ArrayNode members = o.putArray("members");
        for (LeaveGroupResponseData.MemberResponse m : r.members()) {
            members.addObject().put("member_id", m.memberId()).put("group_instance_id", m.groupInstanceId())
                    .put("error_code", m.errorCode());
        }
        return o;
    }

    static ObjectNode describeJson(List<DescribeGroupsResponseData.DescribedGroup> described) {
        ObjectNode o = NODES.objectNode();
        ArrayNode groups = o.putArray("groups");
        for (DescribeGroupsResponseData.DescribedGroup g : described) {
            ObjectNode go = groups.addObject();
            go.put("group_id", g.groupId()).put("error_code", g.errorCode()).put("group_state", g.groupState())
                    .put("protocol_type", g.protocolType()).put("protocol_data", g.protocolData());
            ArrayNode members = go.putArray("members");
            for (DescribeGroupsResponseData.DescribedGroupMember m : g.members()) {
                members.addObject().put("member_id", m.memberId()).put("group_instance_id", m.groupInstanceId())
                        .put("client_id", m.clientId()).put("client_host", m.clientHost())
                        .put("member_metadata", b64(m.memberMetadata()))
                        .put("member_assignment", b64(m.memberAssignment()));
            }
        }
        return o;
    }
}
