// Writes tests/vectors/constrained_priority_set.json: scripted histories of a Kafka-Streams-style
// ConstrainedPrioritySet built on real java.util.PriorityQueue / HashSet (JDK 17), with client
// weights changed while the clients sit in the heap. Written for groupsim from the behaviour of
// Kafka's ConstrainedPrioritySet (commit 1eb7644349cb): a PriorityQueue<UUID> ordered by
// (live weight, id); offer of a present client = remove(Object) + offer; poll removes clients
// until one passes the constraint, then re-offers the rejected ones from a HashSet.
//
//   javac -d /tmp/gen tests/vectors/gen/ConstrainedPrioritySetReplay.java
//   java -cp /tmp/gen ConstrainedPrioritySetReplay > tests/vectors/constrained_priority_set.json
import java.util.*;

public class ConstrainedPrioritySetReplay {
    static Map<UUID, Double> weight = new HashMap<>();
    static PriorityQueue<UUID> heap;
    static Set<UUID> present;

    static void offer(UUID c) {
        if (present.contains(c)) heap.remove(c); else present.add(c);
        heap.offer(c);
    }

    static UUID poll(Set<UUID> allowed) {
        Set<UUID> rejected = new HashSet<>();
        UUID found = null;
        while (!heap.isEmpty()) {
            UUID c = heap.remove();
            present.remove(c);
            if (allowed.contains(c)) { found = c; break; }
            rejected.add(c);
        }
        for (UUID r : rejected) offer(r);
        return found;
    }

    static String q(UUID u) { return "\"" + u + "\""; }

    public static void main(String[] args) {
        Random rnd = new Random(1123L);
        StringBuilder out = new StringBuilder("{\"about\": \"ConstrainedPrioritySet histories on JDK ");
        out.append(System.getProperty("java.version")).append(", written by tests/vectors/gen/ConstrainedPrioritySetReplay.java\", \"cases\": [\n");
        for (int c = 0; c < 100; c++) {
            weight.clear();
            heap = new PriorityQueue<>(Comparator.comparing((UUID u) -> weight.get(u)).thenComparing(u -> u));
            present = new HashSet<>();
            int n = 1 + rnd.nextInt(12);
            List<UUID> clients = new ArrayList<>();
            boolean small = rnd.nextBoolean();
            while (clients.size() < n) {
                UUID u = small ? new UUID(0, 1 + rnd.nextInt(40)) : new UUID(rnd.nextLong(), rnd.nextLong());
                if (!clients.contains(u)) clients.add(u);
            }
            StringBuilder ops = new StringBuilder();
            int k = 0;
            for (int s = 0; s < 30; s++) {
                UUID u = clients.get(rnd.nextInt(n));
                int r = rnd.nextInt(10);
                String op;
                if (r < 4) {
                    double w = rnd.nextInt(7) / (double) (1 + rnd.nextInt(3));
                    weight.put(u, w);
                    op = "[\"weight\", " + q(u) + ", " + w + "]";
                } else if (r < 7 || heap.isEmpty()) {
                    if (!weight.containsKey(u)) weight.put(u, 0.0);
                    offer(u);
                    op = "[\"offer\", " + q(u) + ", " + weight.get(u) + "]";
                } else {
                    Set<UUID> allowed = new HashSet<>();
                    for (UUID x : clients) if (rnd.nextInt(3) > 0) allowed.add(x);
                    UUID got = poll(allowed);
                    StringBuilder al = new StringBuilder("[");
                    int i = 0;
                    for (UUID x : clients) if (allowed.contains(x)) al.append(i++ > 0 ? ", " : "").append(q(x));
                    al.append("]");
                    op = "[\"poll\", " + al + ", " + (got == null ? "null" : q(got)) + "]";
                }
                ops.append(k++ > 0 ? ", " : "").append(op);
            }
            StringBuilder hp = new StringBuilder("[");
            int i = 0;
            for (Object o : heap.toArray()) hp.append(i++ > 0 ? ", " : "").append(q((UUID) o));
            hp.append("]");
            out.append(c > 0 ? ",\n" : "").append("{\"ops\": [").append(ops).append("], \"heap\": ").append(hp).append("}");
        }
        out.append("\n]}\n");
        System.out.print(out);
    }
}
