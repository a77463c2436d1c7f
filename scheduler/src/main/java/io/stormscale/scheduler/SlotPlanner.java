package io.stormscale.scheduler;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeSet;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.WorkerSlot;

/**
 * Where each worker of a placement goes: a pure function of the placement's workers, the Supervisors
 * (each with the ports this topology may use: its free ones and those the topology holds) and the
 * topology's current slots.
 *
 * <p>Pods to Supervisors: a pod of n workers needs a Supervisor of its own with at least n usable ports.
 * Pinned pods take their host's Supervisor; the others go in descending order of n. Once the pinned
 * pods are placed, a pod of n workers fits any free Supervisor with at least n ports, so the Supervisors
 * that fit a pod also fit every later (smaller or equal) pod: whichever one a pod takes, each later pod
 * loses exactly one candidate, so this greedy order places every pod whenever any assignment does. Among
 * the candidates a pod prefers the Supervisor holding most of its executors now, then the one it had
 * last time ({@code previous}), then the lowest host and id (deterministic).
 *
 * <p>Workers to ports: a worker whose executors are exactly those of one of the topology's slots on that
 * Supervisor keeps the slot (its worker keeps running); the others take the lowest usable ports.
 */
final class SlotPlanner {
    private SlotPlanner() {
    }

    /** A Supervisor as the planner sees it: its id, host, and the ports this topology may use. */
    static final class Node {
        final String id;
        final String host;
        final TreeSet<Integer> usable;

        Node(String id, String host, Collection<Integer> usable) {
            this.id = id;
            this.host = host;
            this.usable = new TreeSet<>(usable);
        }
    }

    /** The outcome: each slot with its executors and the Supervisor of each pod, or why it must wait. */
    static final class Plan {
        final Map<WorkerSlot, List<ExecutorDetails>> slots;
        final List<Node> podNodes;
        final String waiting;

        private Plan(Map<WorkerSlot, List<ExecutorDetails>> slots, List<Node> podNodes, String waiting) {
            this.slots = slots;
            this.podNodes = podNodes;
            this.waiting = waiting;
        }

        static Plan waiting(String why) {
            return new Plan(Collections.emptyMap(), Collections.emptyList(), why);
        }
    }

    /**
     * Plan {@code placement} whose workers (in order: pods, then their workers) run {@code workers};
     * {@code current}: the topology's slots now with their executors; {@code previous}: the Supervisor id
     * each pod had when last placed (may be empty).
     */
    static Plan plan(Placement placement, List<List<ExecutorDetails>> workers, List<Node> nodes,
                     Map<WorkerSlot, ? extends Collection<ExecutorDetails>> current, Map<Integer, String> previous) {
        List<Placement.Pod> pods = placement.pods();
        int[] first = new int[pods.size()];
        for (int i = 1; i < pods.size(); i++) {
            first[i] = first[i - 1] + pods.get(i - 1).workers().size();
        }
        Map<ExecutorDetails, String> nodeOf = new java.util.HashMap<>();
        current.forEach((slot, executors) -> executors.forEach(e -> nodeOf.put(e, slot.getNodeId())));

        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < pods.size(); i++) {
            order.add(i);
        }
        order.sort(Comparator.comparing((Integer i) -> pods.get(i).supervisor() == null)
            .thenComparing(i -> -pods.get(i).workers().size())
            .thenComparing(i -> i));

        Node[] chosen = new Node[pods.size()];
        Set<String> taken = new HashSet<>();
        for (int i : order) {
            Placement.Pod pod = pods.get(i);
            int need = pod.workers().size();
            List<ExecutorDetails> mine = new ArrayList<>();
            for (int w = first[i]; w < first[i] + need; w++) {
                mine.addAll(workers.get(w));
            }
            Node best = null;
            Comparator<Node> preference = Comparator
                .comparing((Node n) -> -mine.stream().filter(e -> n.id.equals(nodeOf.get(e))).count())
                .thenComparing(n -> n.id.equals(previous.get(i)) ? 0 : 1)
                .thenComparing(n -> n.host)
                .thenComparing(n -> n.id);
            for (Node node : nodes) {
                boolean fits = !taken.contains(node.id) && node.usable.size() >= need
                    && (pod.supervisor() == null || pod.supervisor().equals(node.host));
                if (fits && (best == null || preference.compare(node, best) < 0)) {
                    best = node;
                }
            }
            if (best == null) {
                return Plan.waiting(why(i, pod, nodes, taken));
            }
            chosen[i] = best;
            taken.add(best.id);
        }

        Map<WorkerSlot, List<ExecutorDetails>> slots = new LinkedHashMap<>();
        for (int i = 0; i < pods.size(); i++) {
            Node node = chosen[i];
            TreeSet<Integer> ports = new TreeSet<>(node.usable);
            Integer[] port = new Integer[pods.get(i).workers().size()];
            for (int w = 0; w < port.length; w++) {
                Set<ExecutorDetails> wanted = new HashSet<>(workers.get(first[i] + w));
                for (int p : ports) {
                    Collection<ExecutorDetails> there = current.get(new WorkerSlot(node.id, p));
                    if (there != null && there.size() == wanted.size() && wanted.containsAll(there)) {
                        port[w] = p;
                        ports.remove(p);
                        break;
                    }
                }
            }
            for (int w = 0; w < port.length; w++) {
                if (port[w] == null) {
                    port[w] = ports.pollFirst();
                }
                slots.put(new WorkerSlot(node.id, port[w]), workers.get(first[i] + w));
            }
        }
        return new Plan(slots, List.of(chosen), null);
    }

    /** Why pod {@code i} finds no Supervisor: one line naming its need and what there is. */
    private static String why(int i, Placement.Pod pod, List<Node> nodes, Set<String> taken) {
        int need = pod.workers().size();
        StringJoiner free = new StringJoiner(", ");
        List<Node> sorted = new ArrayList<>(nodes);
        sorted.sort(Comparator.comparing((Node n) -> n.host).thenComparing(n -> n.id));
        int shown = 0;
        for (Node n : sorted) {
            if (!taken.contains(n.id) && (pod.supervisor() == null || pod.supervisor().equals(n.host))) {
                if (++shown > 10) {
                    free.add("…");
                    break;
                }
                free.add(n.host + " " + n.usable.size());
            }
        }
        String where = pod.supervisor() == null
            ? "one Supervisor of its own" : "the Supervisor on " + pod.supervisor();
        String have = shown == 0
            ? (pod.supervisor() == null ? "no Supervisor is left" : "no Supervisor runs there")
            : "free slots: " + free;
        return "pods[" + i + "] needs " + need + " free slot" + (need == 1 ? "" : "s") + " on " + where + "; " + have;
    }
}
