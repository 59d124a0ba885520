// Writes tests/vectors/java_hashmap_orders.json: iteration orders of real java.util.HashSet
// instances after scripted add/remove histories, with keys chosen to crowd bins (resize
// instead of treeify below 64 slots, tree bins at 64+).
//
//   javac -d /tmp/gen tests/vectors/gen/JavaHashMapOrders.java
//   java -cp /tmp/gen JavaHashMapOrders > tests/vectors/java_hashmap_orders.json
//
// Run with JDK 17 (the vectors record `java.version`).
import java.util.*;

public class JavaHashMapOrders {
    static final StringBuilder out = new StringBuilder();

    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static int spread(String s) {
        int h = s.hashCode();
        return h ^ (h >>> 16);
    }

    /** Strings made of "Aa"/"BB" blocks: all 2^blocks of them share one hashCode. */
    static List<String> sameHash(int blocks, String suffix) {
        List<String> r = new ArrayList<>();
        for (int m = 0; m < (1 << blocks); m++) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < blocks; i++) b.append(((m >> i) & 1) == 0 ? "Aa" : "BB");
            r.add(b + suffix);
        }
        return r;
    }

    /** Distinct-hash strings whose spread hash has the given low bits under mask. */
    static List<String> sameBucket(Random rnd, int count, int mask, int bits) {
        List<String> r = new ArrayList<>();
        Set<Integer> hashes = new HashSet<>();
        while (r.size() < count) {
            String s = "w" + Integer.toString(rnd.nextInt(1 << 30), 36);
            if ((spread(s) & mask) == bits && hashes.add(s.hashCode())) r.add(s);
        }
        return r;
    }

    public static void main(String[] args) {
        Random rnd = new Random(20261123L);
        out.append("{\"about\": \"Iteration orders of java.util.HashSet<String> after scripted histories, ");
        out.append("written by tests/vectors/gen/JavaHashMapOrders.java\", \"java_version\": ");
        out.append(q(System.getProperty("java.version"))).append(", \"cases\": [\n");
        int n = 0;
        for (int c = 0; c < 300; c++) {
            // key pool: a crowded bucket (distinct hashes), a same-hash family, and random keys
            List<String> pool = new ArrayList<>();
            int mask = new int[] {15, 31, 63, 127}[rnd.nextInt(4)];
            pool.addAll(sameBucket(rnd, 4 + rnd.nextInt(20), mask, rnd.nextInt(mask + 1)));
            if (rnd.nextInt(3) > 0) {
                List<String> fam = sameHash(2 + rnd.nextInt(4), rnd.nextBoolean() ? "" : "x");
                pool.addAll(fam.subList(0, Math.min(fam.size(), 2 + rnd.nextInt(14))));
            }
            for (int i = rnd.nextInt(60); i > 0; i--) pool.add("k" + rnd.nextInt(1000));
            Collections.shuffle(pool, rnd);

            String init;
            Set<String> set;
            List<String> ops = new ArrayList<>();
            int kind = rnd.nextInt(4);
            List<String> initial = new ArrayList<>();
            if (kind == 0) {
                init = "\"default\"";
                set = new HashSet<>();
            } else if (kind == 1) {
                int cap = new int[] {0, 1, 2, 4, 16, 64, 128}[rnd.nextInt(7)];
                init = Integer.toString(cap);
                set = new HashSet<>(cap);
            } else if (kind == 2) {
                initial = pool.subList(0, rnd.nextInt(pool.size() + 1));
                init = "\"copy_of\"";
                set = new HashSet<>(initial);
            } else {
                initial = pool.subList(0, rnd.nextInt(pool.size() + 1));
                init = "\"copy_of_map\"";
                Map<String, Integer> src = new LinkedHashMap<>();
                for (String k : initial) src.put(k, 0);
                set = new HashMap<>(src).keySet();
            }
            int steps = rnd.nextInt(2 * pool.size() + 1);
            for (int s = 0; s < steps; s++) {
                String k = pool.get(rnd.nextInt(pool.size()));
                int r = rnd.nextInt(10);
                if (r < 7) {
                    if (kind == 3) {
                        // a HashMap keySet cannot add: put through the map
                        continue;
                    }
                    set.add(k);
                    ops.add("[\"add\", " + q(k) + "]");
                } else if (r < 9) {
                    set.remove(k);
                    ops.add("[\"remove\", " + q(k) + "]");
                } else {
                    for (Iterator<String> it = set.iterator(); it.hasNext();) {
                        if (it.next().equals(k)) {
                            it.remove();
                            break;
                        }
                    }
                    ops.add("[\"iterator_remove\", " + q(k) + "]");
                }
            }
            StringBuilder ini = new StringBuilder("[");
            for (int i = 0; i < initial.size(); i++) ini.append(i > 0 ? ", " : "").append(q(initial.get(i)));
            ini.append("]");
            StringBuilder ord = new StringBuilder("[");
            int i = 0;
            for (String k : set) ord.append(i++ > 0 ? ", " : "").append(q(k));
            ord.append("]");
            out.append(n++ > 0 ? ",\n" : "").append("{\"init\": ").append(init)
               .append(", \"initial\": ").append(ini).append(", \"ops\": [")
               .append(String.join(", ", ops)).append("], \"order\": ").append(ord).append("}");
        }
        out.append("\n]}\n");
        System.out.print(out);
    }
}
