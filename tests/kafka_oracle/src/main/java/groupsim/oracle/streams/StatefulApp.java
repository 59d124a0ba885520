package groupsim.oracle.streams;

import java.time.Duration;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;

/**
 * A real Kafka Streams application for the real-cluster tests: one stateful sub-topology,
 * {@code input} (6 partitions unless {@code partitions=N} says otherwise) → groupByKey → count
 * into the store {@code counts}, whose
 * changelog is {@code stateful-counts-changelog}. Six stateful tasks 0_0..0_5 for the
 * StreamsPartitionAssignor / HighAvailabilityTaskAssignor to place, with standbys (KIP-441
 * warm-ups, client tags and rack-aware standbys, KIP-708) as the arguments say.
 *
 * <p>Arguments are {@code key=value} Streams settings given to the application as they are
 * ({@code num.standby.replicas=1}, {@code client.tag.zone=z1},
 * {@code rack.aware.assignment.tags=zone}, {@code acceptable.recovery.lag=10},
 * {@code max.warmup.replicas=2}, {@code probing.rebalance.interval.ms=60000},
 * {@code session.timeout.ms=6000}, ...); {@code bootstrap.servers}, {@code client.id} and
 * {@code state.dir} are required. One more, {@code produce=N}, writes N records (keys k0..k59)
 * to {@code input} before the application starts, so the changelog has something to restore;
 * {@code partitions=N} creates {@code input} with N partitions (N tasks) instead of 6;
 * {@code leave.on.close=true} makes its close send LeaveGroup (see {@link #closeLeaving});
 * {@code restore.control=PATH} lets a file pause or slow its restoration (see
 * {@link RestoreControl}); {@code stateless.partitions=N} adds a second, stateless
 * sub-topology ({@code stateless-input}, N partitions → foreach: tasks 1_0..1_N-1);
 * {@code start.after=PATH} starts the application (joins the group) only once that file
 * exists, so that several instances, their JVMs started beforehand, join together;
 * {@code open.after=PATH} builds the application (opens its state directory) only once that
 * file exists, so a restarted instance's JVM can start while the old process still holds the
 * directory, and join within a second or two of its close.
 *
 * <p>It prints one line per event on stdout, flushed at once:
 * {@code STATE <new> <old>} for each KafkaStreams state transition and
 * {@code ASSIGNMENT active=[0_0, ...] standby=[0_1, ...]} each time the tasks of its stream
 * threads change (a warm-up is a standby task to its client). It runs until killed; SIGTERM
 * closes it ({@code KafkaStreams.close}; its consumers do not send LeaveGroup on close, as
 * Streams configures them, so the group notices the departure by the session timeout, unless
 * {@code leave.on.close=true}).
 */
public final class StatefulApp {
    public static final String INPUT = "input";
    /** The stateless sub-topology's source topic ({@code stateless.partitions=N}). */
    public static final String STATELESS_INPUT = "stateless-input";
    /** Partitions of {@code input} (so tasks) unless {@code partitions=N} is given. */
    public static final int PARTITIONS = 6;

    private StatefulApp() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "stateful");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        int produce = 0;
        int partitions = PARTITIONS;
        boolean leaveOnClose = false;
        Path control = null;
        Path startAfter = null;
        Path openAfter = null;
        int statelessPartitions = 0;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("not key=value: " + arg);
            String key = arg.substring(0, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("produce")) produce = Integer.parseInt(value);
            else if (key.equals("partitions")) partitions = Integer.parseInt(value);
            else if (key.equals("leave.on.close")) leaveOnClose = Boolean.parseBoolean(value);
            else if (key.equals("restore.control")) control = Paths.get(value);
            else if (key.equals("start.after")) startAfter = Paths.get(value);
            else if (key.equals("open.after")) openAfter = Paths.get(value);
            else if (key.equals("stateless.partitions")) statelessPartitions = Integer.parseInt(value);
            else props.put(key, value);
        }
        Class<?> closeOptions = streamsCloseOptions();
        if (leaveOnClose && closeOptions == null) {
            // Before Kafka 4.2 a dynamic member leaves on close only through the consumer's
            // internal setting, which Streams turns off (StreamsConfig's consumer overrides).
            props.put(StreamsConfig.MAIN_CONSUMER_PREFIX + "internal.leave.group.on.close", "true");
        }
        String bootstrap = props.getProperty(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG);
        createInput(bootstrap, INPUT, partitions);
        if (statelessPartitions > 0) createInput(bootstrap, STATELESS_INPUT, statelessPartitions);
        if (produce > 0) produce(bootstrap, produce);

        if (openAfter != null) {
            say("WAITING " + openAfter);
            while (!Files.exists(openAfter)) Thread.sleep(50);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(INPUT, Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"));
        if (statelessPartitions > 0) {
            builder.stream(STATELESS_INPUT, Consumed.with(Serdes.String(), Serdes.String()))
                .foreach((key, value) -> { });
        }
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> say("STATE " + now + " " + before));
        if (control != null) {
            RestoreControl restore = new RestoreControl(control);
            streams.setGlobalStateRestoreListener(restore);
            streams.setStandbyUpdateListener(restore);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        boolean leave = leaveOnClose;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (leave && closeOptions != null) closeLeaving(streams, closeOptions);
            else streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }));
        if (startAfter != null) {
            say("WAITING " + startAfter);
            while (!Files.exists(startAfter)) Thread.sleep(50);
        }
        streams.start();
        String last = "";
        while (stopped.getCount() > 0) {
            String now = assignment(streams);
            if (!now.equals(last)) {
                say(now);
                last = now;
            }
            Thread.sleep(200);
        }
    }

    /** {@code org.apache.kafka.streams.CloseOptions} (Kafka 4.2+, KIP-1153), or null. */
    private static Class<?> streamsCloseOptions() {
        try {
            return Class.forName("org.apache.kafka.streams.CloseOptions");
        } catch (ClassNotFoundException before42) {
            return null;
        }
    }

    /**
     * {@code streams.close(CloseOptions.groupMembershipOperation(LEAVE_GROUP).withTimeout(20 s))}
     * through reflection, so the harness compiles against releases without the class: from
     * Kafka 4.2 a dynamic member's stream threads leave the group on such a close. (4.0's
     * {@code KafkaStreams.CloseOptions.leaveGroup} removes static members only, through the
     * admin client; {@link #main} sets the consumer's internal setting there instead.)
     */
    private static void closeLeaving(KafkaStreams streams, Class<?> closeOptions) {
        try {
            Class<?> operation =
                Class.forName("org.apache.kafka.streams.CloseOptions$GroupMembershipOperation");
            Object leaveGroup = operation.getField("LEAVE_GROUP").get(null);
            Object options = closeOptions.getMethod("groupMembershipOperation", operation)
                .invoke(null, leaveGroup);
            options = closeOptions.getMethod("withTimeout", Duration.class)
                .invoke(options, Duration.ofSeconds(20));
            KafkaStreams.class.getMethod("close", closeOptions).invoke(streams, options);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot close with LEAVE_GROUP", e);
        }
    }

    private static String assignment(KafkaStreams streams) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        try {
            for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                for (TaskMetadata task : thread.activeTasks()) active.add(task.taskId().toString());
                for (TaskMetadata task : thread.standbyTasks()) standby.add(task.taskId().toString());
            }
        } catch (RuntimeException closing) {
            return "";
        }
        return "ASSIGNMENT active=" + active + " standby=" + standby;
    }

    private static void createInput(String bootstrap, String topic, int partitions) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) throw e;
        }
    }

    private static void produce(String bootstrap, int count) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(INPUT, "k" + (i % 60), Integer.toString(i)));
            }
        }
        say("PRODUCED " + count);
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /**
     * Restoration steered by a file, read after every batch a changelog reader applies (the
     * listeners run on the thread that restores: the stream thread's state updater, Kafka's
     * {@code StoreChangelogReader#restoreChangelog}). No file, or an empty one: nothing done.
     * {@code pause}: a standby's batch waits while the file says so, so the standbys stop
     * following their changelogs (active tasks go on processing and writing them: the
     * standbys fall behind by what is written meanwhile). A number R: every batch, active
     * restoration or standby update, waits until the thread has spent batch / R seconds on
     * it, so the thread restores at most R records a second (a slow disk or a loaded machine,
     * made exact). Restores a batch at a time: {@code restore.consumer.max.poll.records}
     * bounds the batch.
     */
    private static final class RestoreControl implements StateRestoreListener, StandbyUpdateListener {
        private final Path file;
        private long nextFreeNanos = System.nanoTime();

        RestoreControl(Path file) {
            this.file = file;
        }

        private String read() {
            try {
                return new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
            } catch (IOException absent) {
                return "";
            }
        }

        private void batch(long records, boolean standby) {
            try {
                String now = read();
                while (standby && now.equals("pause")) {
                    Thread.sleep(100);
                    now = read();
                }
                if (now.isEmpty() || now.equals("pause")) return;
                double rate = Double.parseDouble(now);
                long start = Math.max(System.nanoTime(), nextFreeNanos);
                nextFreeNanos = start + (long) (records * 1e9 / rate);
                long wait = nextFreeNanos - System.nanoTime();
                if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void onRestoreStart(TopicPartition partition, String store, long start, long end) {}

        @Override
        public void onBatchRestored(TopicPartition partition, String store, long offset, long records) {
            batch(records, false);
        }

        @Override
        public void onRestoreEnd(TopicPartition partition, String store, long restored) {}

        @Override
        public void onUpdateStart(TopicPartition partition, String store, long start) {}

        @Override
        public void onBatchLoaded(
            TopicPartition partition, String store, TaskId task, long offset, long records, long end
        ) {
            batch(records, true);
        }

        @Override
        public void onUpdateSuspended(
            TopicPartition partition, String store, long offset, long end, SuspendReason reason
        ) {}
    }
}
