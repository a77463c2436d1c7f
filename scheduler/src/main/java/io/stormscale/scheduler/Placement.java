package io.stormscale.scheduler;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The operator's placement of a topology (format version 1, docs/scheduler.md): pods in order (one
 * Supervisor each, optionally pinned to a host), each with its workers in order (one slot each), each
 * worker a map component id -> executors of it. Immutable; {@link #parse} checks what the Python side
 * ({@code stormscale.storm.placement}) checks, in the same order, with the same one-line messages.
 */
public final class Placement {
    /** The topology conf key that carries the placement, a JSON string. */
    public static final String KEY = "stormscale.placement";
    /** The format version this class reads. */
    public static final int VERSION = 1;
    /** Storm adds one executor of this component to every worker: a placement never lists it. */
    public static final String UNPLACED = "__system";

    private static final Set<String> TOP_KEYS = Set.of("version", "pods");
    private static final Set<String> POD_KEYS = Set.of("workers", "supervisor");

    /** One pod: its workers (component -> executors, sorted by component) and its pin, or null. */
    public static final class Pod {
        private final List<SortedMap<String, Integer>> workers;
        private final String supervisor;

        Pod(List<SortedMap<String, Integer>> workers, String supervisor) {
            List<SortedMap<String, Integer>> copy = new ArrayList<>();
            for (SortedMap<String, Integer> worker : workers) {
                copy.add(Collections.unmodifiableSortedMap(new TreeMap<>(worker)));
            }
            this.workers = Collections.unmodifiableList(copy);
            this.supervisor = supervisor;
        }

        public List<SortedMap<String, Integer>> workers() {
            return workers;
        }

        /** The host this pod is pinned to, or null. */
        public String supervisor() {
            return supervisor;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Pod && workers.equals(((Pod) o).workers)
                && Objects.equals(supervisor, ((Pod) o).supervisor);
        }

        @Override
        public int hashCode() {
            return Objects.hash(workers, supervisor);
        }
    }

    private final List<Pod> pods;

    Placement(List<Pod> pods) {
        this.pods = Collections.unmodifiableList(new ArrayList<>(pods));
    }

    public List<Pod> pods() {
        return pods;
    }

    /** How many workers (slots) the placement uses. */
    public int workers() {
        return pods.stream().mapToInt(p -> p.workers.size()).sum();
    }

    /** Executors placed per component, sorted by component. */
    public SortedMap<String, Integer> executors() {
        SortedMap<String, Integer> total = new TreeMap<>();
        for (Pod pod : pods) {
            for (Map<String, Integer> worker : pod.workers) {
                worker.forEach((component, n) -> total.merge(component, n, Integer::sum));
            }
        }
        return total;
    }

    /**
     * Why this placement does not place a topology with {@code executors} per component (system
     * components included, {@code __system} ignored) exactly once each; empty if it does.
     */
    public List<String> coverageProblems(Map<String, Integer> executors) {
        Map<String, Integer> placed = executors();
        Map<String, Integer> wanted = new HashMap<>(executors);
        wanted.remove(UNPLACED);
        Set<String> all = new TreeSet<>(placed.keySet());
        all.addAll(wanted.keySet());
        List<String> problems = new ArrayList<>();
        for (String component : all) {
            int have = placed.getOrDefault(component, 0);
            int want = wanted.getOrDefault(component, 0);
            if (want == 0) {
                problems.add("component '" + component + "' is not in the topology");
            } else if (have != want) {
                problems.add("component '" + component + "': " + have + " executors placed, the topology has " + want);
            }
        }
        return problems;
    }

    /** Throw naming every coverage problem (see {@link #coverageProblems}). */
    public void checkCovers(Map<String, Integer> executors) throws PlacementException {
        List<String> problems = coverageProblems(executors);
        if (!problems.isEmpty()) {
            throw new PlacementException(KEY + " does not cover the topology: " + String.join("; ", problems));
        }
    }

    /**
     * Which executors each worker runs (workers in order: pods, then their workers): each component's
     * executors, given in ascending start-task order, fill the workers that list it in order. The
     * placement must cover them ({@link #checkCovers}).
     */
    public <E> List<List<E>> fill(Map<String, List<E>> inTaskOrder) {
        Map<String, Integer> next = new HashMap<>();
        List<List<E>> out = new ArrayList<>();
        for (Pod pod : pods) {
            for (Map<String, Integer> worker : pod.workers) {
                List<E> mine = new ArrayList<>();
                worker.forEach((component, n) -> {
                    int from = next.getOrDefault(component, 0);
                    mine.addAll(inTaskOrder.get(component).subList(from, from + n));
                    next.put(component, from + n);
                });
                out.add(mine);
            }
        }
        return out;
    }

    /** The placement in a topology conf's value: a JSON string, read by {@link #parse}. */
    public static Placement fromConf(Object value) throws PlacementException {
        if (!(value instanceof String)) {
            throw new PlacementException(KEY + " must be a JSON string, got " + show(value));
        }
        return parse((String) value);
    }

    /** The placement in {@code text}, or the first problem in document order. */
    public static Placement parse(String text) throws PlacementException {
        Object doc;
        try {
            doc = Json.parse(text);
        } catch (Json.JsonException err) {
            throw new PlacementException(KEY + " is not JSON: " + err.getMessage());
        }
        Map<String, Object> top = object(doc, "the placement", TOP_KEYS);
        Object version = top.get("version");
        if (!(version instanceof Long) || (Long) version != VERSION) {
            throw problem("version must be " + VERSION + ", got " + show(version));
        }
        List<Pod> pods = new ArrayList<>();
        Map<String, Integer> pinned = new HashMap<>();
        List<Object> rawPods = list(top.get("pods"), "pods");
        for (int i = 0; i < rawPods.size(); i++) {
            String where = "pods[" + i + "]";
            Map<String, Object> pod = object(rawPods.get(i), where, POD_KEYS);
            Object supervisor = pod.get("supervisor");
            if (supervisor != null && (!(supervisor instanceof String) || ((String) supervisor).isEmpty())) {
                throw problem(where + ".supervisor must be a hostname, got " + show(supervisor));
            }
            List<SortedMap<String, Integer>> workers = new ArrayList<>();
            List<Object> rawWorkers = list(pod.get("workers"), where + ".workers");
            for (int j = 0; j < rawWorkers.size(); j++) {
                String at = where + ".workers[" + j + "]";
                workers.add(worker(object(rawWorkers.get(j), at, null), at));
            }
            if (supervisor != null) {
                Integer other = pinned.putIfAbsent((String) supervisor, i);
                if (other != null) {
                    throw problem("pods[" + other + "] and pods[" + i + "] are both pinned to '" + supervisor
                        + "' (pods are distinct Supervisors)");
                }
            }
            pods.add(new Pod(workers, (String) supervisor));
        }
        return new Placement(pods);
    }

    private static SortedMap<String, Integer> worker(Map<String, Object> raw, String where) throws PlacementException {
        if (raw.isEmpty()) {
            throw problem(where + " must not be empty");
        }
        SortedMap<String, Integer> counts = new TreeMap<>();
        for (Map.Entry<String, Object> entry : new TreeMap<>(raw).entrySet()) {
            String component = entry.getKey();
            Object count = entry.getValue();
            if (component.isEmpty()) {
                throw problem(where + ": component ids must be non-empty strings");
            }
            if (component.equals(UNPLACED)) {
                throw problem(where + ": '" + component + "' is never placed (Storm adds it to every worker)");
            }
            if (!(count instanceof Long) || (Long) count < 1 || (Long) count > Integer.MAX_VALUE) {
                throw problem(where + ": '" + component + "' needs a whole number of executors >= 1, got "
                    + show(count));
            }
            counts.put(component, ((Long) count).intValue());
        }
        return counts;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(Object value, String where, Set<String> keys) throws PlacementException {
        if (!(value instanceof Map)) {
            throw problem(where + " must be a JSON object, got " + show(value));
        }
        Map<String, Object> map = (Map<String, Object>) value;
        if (keys != null) {
            for (String key : new TreeSet<>(map.keySet())) {
                if (!keys.contains(key)) {
                    throw problem(where + ": unknown key '" + key + "' (known: " + String.join(", ", new TreeSet<>(keys))
                        + ")");
                }
            }
        }
        return map;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object value, String where) throws PlacementException {
        if (!(value instanceof List) || ((List<Object>) value).isEmpty()) {
            throw problem(where + " must be a non-empty JSON list, got " + show(value));
        }
        return (List<Object>) value;
    }

    private static PlacementException problem(String what) {
        return new PlacementException(KEY + ": " + what);
    }

    /** A short rendering of a JSON value for a message. */
    static String show(Object value) {
        String text;
        if (value == null) {
            return "nothing";
        } else if (value instanceof String) {
            text = '"' + ((String) value) + '"';
        } else if (value instanceof Long || value instanceof BigInteger || value instanceof Double
            || value instanceof Boolean) {
            text = value.toString();
        } else if (value instanceof Map) {
            text = "an object";
        } else if (value instanceof List) {
            text = "a list";
        } else {
            text = "a " + value.getClass().getSimpleName();
        }
        return text.length() <= 40 ? text : text.substring(0, 39) + "…";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Placement && pods.equals(((Placement) o).pods);
    }

    @Override
    public int hashCode() {
        return pods.hashCode();
    }
}
