package groupsim.oracle.release;

import java.time.Duration;
import java.util.Collections;
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
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.TaskMetadata;
import org.apache.kafka.streams.processor.ThreadMetadata;

/**
 * The harness's {@code groupsim.oracle.streams.StatefulApp} for an older Kafka Streams release
 * (2.7.x: before {@code metadataForLocalThreads}, {@code StandbyUpdateListener} and
 * {@code statestore.cache.max.bytes}): the same application ({@code application.id}
 * {@code stateful}, one stream thread, {@code input} → groupByKey → count into {@code counts},
 * changelog {@code stateful-counts-changelog}) and the same stdout lines
 * ({@code STATE <new> <old>}, {@code ASSIGNMENT active=[..] standby=[..]}, {@code PRODUCED n}),
 * so one instance can be restarted on the newer release with the same state directory
 * (a rolling upgrade). Arguments: {@code key=value} Streams settings, plus {@code produce=N} and
 * {@code partitions=N} as the newer app reads them. SIGTERM closes it (no LeaveGroup: Streams
 * turns the consumer's leave-on-close off).
 */
public final class StatefulApp {
    private StatefulApp() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "stateful");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.CACHE_MAX_BYTES_BUFFERING_CONFIG, "0");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        int produce = 0;
        int partitions = 6;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("not key=value: " + arg);
            String key = arg.substring(0, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("produce")) produce = Integer.parseInt(value);
            else if (key.equals("partitions")) partitions = Integer.parseInt(value);
            else props.put(key, value);
        }
        String bootstrap = props.getProperty(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG);
        createInput(bootstrap, partitions);
        if (produce > 0) produce(bootstrap, produce);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("input", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .count(Materialized.as("counts"));
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> say("STATE " + now + " " + before));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            stopped.countDown();
        }));
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

    private static String assignment(KafkaStreams streams) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        try {
            for (ThreadMetadata thread : streams.localThreadsMetadata()) {
                for (TaskMetadata task : thread.activeTasks()) active.add(task.taskId());
                for (TaskMetadata task : thread.standbyTasks()) standby.add(task.taskId());
            }
        } catch (RuntimeException closing) {
            return "";
        }
        return "ASSIGNMENT active=" + active + " standby=" + standby;
    }

    private static void createInput(String bootstrap, int partitions) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            admin.createTopics(Collections.singletonList(new NewTopic("input", partitions, (short) 1)))
                .all().get();
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
                producer.send(new ProducerRecord<>("input", "k" + (i % 60), Integer.toString(i)));
            }
        }
        say("PRODUCED " + count);
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
