package groupsim.oracle.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A source connector that produces nothing: {@code tasks.max} tasks that sleep in poll. The
 * real-cluster tests use it to give real Connect workers work to rebalance, so the group
 * protocol, not the data, is what is exercised.
 */
public class IdleSourceConnector extends SourceConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return IdleTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) configs.add(props);
        return configs;
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public String version() {
        return "1";
    }

    /** A task that waits in poll and returns no records. */
    public static class IdleTask extends SourceTask {
        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {}

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            Thread.sleep(200);
            return null;
        }

        @Override
        public void stop() {}
    }
}
