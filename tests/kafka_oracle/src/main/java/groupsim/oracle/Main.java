package groupsim.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The oracle's process: JSON lines in on stdin, one JSON line out on stdout per request.
 *
 * <p>Answers are {@code {"id": n, "ok": true, "result": ...}} or {@code {"id": n, "ok": false,
 * "error": "<exception class>: <message>", "trace": "..."}}. Kafka's own logging goes to stderr
 * (or nowhere), never to stdout. Drivers are loaded by name on first use, so a driver that does
 * not link against one Kafka version leaves the others usable.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    /** Area → driver class. Each area's driver lives in its own file. */
    private static final Map<String, String> DRIVER_CLASSES = Map.of(
            "connect", "org.apache.kafka.connect.runtime.distributed.GroupsimConnectDriver",
            "streams", "org.apache.kafka.streams.processor.internals.assignment.GroupsimStreamsDriver",
            "coordinator", "org.apache.kafka.coordinator.group.GroupsimCoordinatorDriver",
            "consumer", "org.apache.kafka.clients.consumer.internals.GroupsimConsumerDriver");

    private final Map<String, Driver> drivers = new HashMap<>();

    public static void main(String[] args) throws Exception {
        // Anything Kafka prints must not corrupt the answer stream.
        PrintStream answers = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        new Main().serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), answers);
    }

    void serve(BufferedReader in, PrintStream out) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode answer = JSON.createObjectNode();
            try {
                JsonNode request = JSON.readTree(line);
                answer.set("id", request.get("id"));
                answer.set("result", dispatch(request));
                answer.put("ok", true);
            } catch (Throwable e) {
                answer.put("ok", false);
                answer.put("error", e.getClass().getName() + ": " + e.getMessage());
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                answer.put("trace", trace.toString());
                answer.remove("result");
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    private JsonNode dispatch(JsonNode request) throws Exception {
        String op = request.path("op").asText();
        if (op.equals("version")) {
            ObjectNode v = JSON.createObjectNode();
            v.put("kafka", appInfo("getVersion"));
            v.put("commit", appInfo("getCommitId"));
            v.put("java", System.getProperty("java.version"));
            return v;
        }
        int dot = op.indexOf('.');
        if (dot <= 0) throw new IllegalArgumentException("op must be <area>.<verb>, got '" + op + "'");
        return driver(op.substring(0, dot)).handle(op.substring(dot + 1), request);
    }

    /** {@code AppInfoParser.<getter>()}: the class is in common.utils up to 4.0 and in
     *  common.utils.internals from 4.4 on. */
    private static String appInfo(String getter) throws Exception {
        for (String pkg : new String[] {"org.apache.kafka.common.utils.", "org.apache.kafka.common.utils.internals."}) {
            try {
                return (String) Class.forName(pkg + "AppInfoParser").getMethod(getter).invoke(null);
            } catch (ClassNotFoundException e) {
                // try the next package
            }
        }
        throw new ClassNotFoundException("AppInfoParser");
    }

    private Driver driver(String area) throws Exception {
        Driver d = drivers.get(area);
        if (d == null) {
            String name = DRIVER_CLASSES.get(area);
            if (name == null) throw new IllegalArgumentException("unknown area '" + area + "' (known: " + DRIVER_CLASSES.keySet() + ")");
            d = (Driver) Class.forName(name).getDeclaredConstructor().newInstance();
            drivers.put(area, d);
        }
        return d;
    }
}
