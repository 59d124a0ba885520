package groupsim.oracle;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's own {@link KafkaConsumer} (classic group protocol, {@code group.protocol=classic}) as a
 * client of {@code groupsim serve}, driven by a test through stdin and reporting on stdout.
 *
 * <p>Arguments are {@code key=value}: {@code bootstrap} (host:port), {@code group},
 * {@code topics} (comma separated), {@code client.id}, {@code assignor} ({@code range},
 * {@code roundrobin}, {@code sticky} or {@code cooperative-sticky}, or several, comma
 * separated, in preference order), optional
 * {@code group.instance.id} (KIP-345 static membership), {@code session.timeout.ms},
 * {@code heartbeat.interval.ms}, {@code max.poll.interval.ms} (real ms), {@code client.rack}
 * (KIP-881: the rack a rack-aware assignor matches partitions' replicas against),
 * {@code metadata.max.age.ms} (how soon the leader sees partitions added) and {@code life.ms}, the
 * longest the process lives (default 120000; it halts after that, so a forgotten client cannot
 * outlive its test).
 *
 * <p>Stdout carries one JSON object per line: {@code {"event": "started"}}; one per rebalance
 * callback, {@code {"event": "revoked"|"assigned"|"lost", "partitions": ["orders-0", ...],
 * "generation": n, "member_id": "..."}} (the consumer's group metadata when the callback runs:
 * for an eager revoke that is the generation being left); {@code {"event": "stalled", "ms": n}}
 * after a stall; {@code {"event": "closed"}} after {@code close}. Kafka's own logging goes to
 * stderr.
 *
 * <p>Stdin commands, one a line, run between two polls on the polling thread (KafkaConsumer is
 * single-threaded): {@code close} ({@code KafkaConsumer#close}: a dynamic member sends
 * LeaveGroup, a static one does not) then exit 0; {@code stall <ms>} (no poll for that long; the
 * heartbeat thread keeps heartbeating until {@code max.poll.interval.ms}); {@code
 * exit-without-leave} (halt at once, no LeaveGroup, no commit: a crash); {@code subscribe
 * <topics>} ({@code KafkaConsumer#subscribe} with the new comma-separated topics: the consumer
 * rejoins with its new subscription); {@code assign-delay <ms>} (from now on, when this consumer
 * leads a rebalance, its assignor first prints {@code {"event": "assigning"}} and sleeps that
 * long on the polling thread, between its JoinGroup answer and its SyncGroup: the group stays in
 * CompletingRebalance meanwhile). End of stdin is {@code close}.
 */
public final class JavaConsumerClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, String> ASSIGNORS = Map.of(
            "range", DelayedRange.class.getName(),
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", DelayedCooperativeSticky.class.getName());

    private final PrintStream out;
    private KafkaConsumer<byte[], byte[]> consumer;
    /** Milliseconds a leading assignor sleeps before assigning ({@code assign-delay}). */
    private static volatile long assignDelayMs = 0;
    private static volatile JavaConsumerClient instance;

    private JavaConsumerClient(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream events = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);  // whatever Kafka prints must not mix with the events
        Map<String, String> opts = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("arguments are key=value, got '" + arg + "'");
            opts.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        long lifeMs = Long.parseLong(opts.getOrDefault("life.ms", "120000"));
        Thread reaper = new Thread(() -> {
            try {
                Thread.sleep(lifeMs);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("JavaConsumerClient: life.ms elapsed, halting");
            Runtime.getRuntime().halt(3);
        }, "life-limit");
        reaper.setDaemon(true);
        reaper.start();
        new JavaConsumerClient(events).run(opts);
    }

    private void run(Map<String, String> opts) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, required(opts, "bootstrap"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, required(opts, "group"));
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, opts.getOrDefault("client.id", "java"));
        instance = this;
        List<String> assignorClasses = new ArrayList<>();
        for (String assignor : opts.getOrDefault("assignor", "range").split(",")) {
            String assignorClass = ASSIGNORS.get(assignor);
            if (assignorClass == null) throw new IllegalArgumentException("unknown assignor '" + assignor + "'");
            assignorClasses.add(assignorClass);
        }
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, String.join(",", assignorClasses));
        if (opts.containsKey("group.instance.id")) {
            props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, opts.get("group.instance.id"));
        }
        for (String key : List.of(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG,
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
                ConsumerConfig.CLIENT_RACK_CONFIG, ConsumerConfig.METADATA_MAX_AGE_CONFIG)) {
            if (opts.containsKey(key)) props.put(key, opts.get(key));
        }
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        props.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        LinkedBlockingQueue<String> commands = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isBlank()) commands.add(line.trim());
                }
            } catch (Exception e) {
                System.err.println("JavaConsumerClient: stdin: " + e);
            }
            commands.add("close");
        }, "stdin");
        reader.setDaemon(true);

        consumer = new KafkaConsumer<>(props);
        List<String> topics = Arrays.asList(required(opts, "topics").split(","));
        Listener listener = new Listener();
        consumer.subscribe(topics, listener);
        emit(JSON.createObjectNode().put("event", "started"));
        reader.start();
        while (true) {
            String command = commands.poll();
            if (command == null) {
                consumer.poll(Duration.ofMillis(100));
                continue;
            }
            String[] words = command.split("\\s+");
            switch (words[0]) {
                case "close":
                    consumer.close();
                    emit(JSON.createObjectNode().put("event", "closed"));
                    out.flush();
                    System.exit(0);
                    return;
                case "exit-without-leave":
                    out.flush();
                    Runtime.getRuntime().halt(0);
                    return;
                case "stall":
                    long ms = Long.parseLong(words[1]);
                    Thread.sleep(ms);
                    emit(JSON.createObjectNode().put("event", "stalled").put("ms", ms));
                    break;
                case "assign-delay":
                    assignDelayMs = Long.parseLong(words[1]);
                    break;
                case "subscribe":
                    consumer.subscribe(Arrays.asList(words[1].split(",")), listener);
                    emit(JSON.createObjectNode().put("event", "subscribed").put("topics", words[1]));
                    break;
                default:
                    System.err.println("JavaConsumerClient: unknown command '" + command + "'");
            }
        }
    }

    private static String required(Map<String, String> opts, String key) {
        String value = opts.get(key);
        if (value == null) throw new IllegalArgumentException("missing argument " + key + "=...");
        return value;
    }

    synchronized void emit(ObjectNode event) {
        try {
            out.println(JSON.writeValueAsString(event));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        out.flush();
    }

    /** The leader's pause before assigning ({@code assign-delay}); none by default. */
    static void delayAssignment() {
        long ms = assignDelayMs;
        if (ms <= 0) return;
        instance.emit(JSON.createObjectNode().put("event", "assigning").put("ms", ms));
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Kafka's {@code RangeAssignor}, unchanged but for {@link #delayAssignment} first. */
    public static final class DelayedRange extends org.apache.kafka.clients.consumer.RangeAssignor {
        @Override
        public GroupAssignment assign(Cluster metadata, GroupSubscription subscriptions) {
            delayAssignment();
            return super.assign(metadata, subscriptions);
        }
    }

    /** Kafka's {@code CooperativeStickyAssignor}, unchanged but for {@link #delayAssignment} first. */
    public static final class DelayedCooperativeSticky
            extends org.apache.kafka.clients.consumer.CooperativeStickyAssignor {
        @Override
        public GroupAssignment assign(Cluster metadata, GroupSubscription subscriptions) {
            delayAssignment();
            return super.assign(metadata, subscriptions);
        }
    }

    /** Reports each callback with the consumer's group metadata at that moment. */
    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            report("revoked", partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            report("assigned", partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            report("lost", partitions);
        }

        private void report(String kind, Collection<TopicPartition> partitions) {
            ObjectNode event = JSON.createObjectNode().put("event", kind);
            List<TopicPartition> sorted = new ArrayList<>(partitions);
            sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            ArrayNode list = event.putArray("partitions");
            for (TopicPartition tp : sorted) list.add(tp.toString());
            ConsumerGroupMetadata meta = consumer.groupMetadata();
            event.put("generation", meta.generationId());
            event.put("member_id", meta.memberId());
            emit(event);
        }
    }
}
