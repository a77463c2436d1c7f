package io.stormscale.scheduler;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeMap;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.DefaultScheduler;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stormscale's scheduler for Nimbus ({@code storm.scheduler: io.stormscale.scheduler.PlacementScheduler}).
 *
 * <p>A topology whose conf has a valid {@code stormscale.placement} (docs/scheduler.md) that covers its
 * executors exactly runs exactly that: executor -> worker slot -> Supervisor, nothing else in those
 * workers. When the cluster lacks the slots, nothing of it is assigned (what already runs is left
 * alone) and it waits, Nimbus trying again each round; the reason is logged once and is the topology's
 * scheduler status. Topologies without the key go to Storm's DefaultScheduler, after the workers whose
 * executors a rebalance did not change are put back on their slots (only the changed workers restart); a key that is
 * malformed or does not cover the executors is logged in one line and the topology goes to
 * DefaultScheduler too. Placed topologies are scheduled first, so they have the first pick of free slots.
 * Nothing here throws into Nimbus (an exception in a scheduling round stops Nimbus).
 */
public final class PlacementScheduler implements IScheduler {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementScheduler.class);
    static final String PLACED = "placed as " + Placement.KEY + " says";
    static final String FALLBACK = "; scheduled by DefaultScheduler";
    static final String NO_PLACEMENT = "no " + Placement.KEY + "; scheduled by DefaultScheduler";
    static final String KEPT = "; the topology keeps its assignment until Storm runs the executors it places";
    /** storm.yaml: the placement endpoint's port (absent or 0: no endpoint). */
    static final String PORT_KEY = "stormscale.scheduler.port";
    /** storm.yaml: the address the endpoint listens on (default all). */
    static final String HOST_KEY = "stormscale.scheduler.host";
    /** storm.yaml: a file holding the bearer token the endpoint requires (absent: none). */
    static final String TOKEN_KEY = "stormscale.scheduler.token.file";
    /** Topology conf: {@code false} leaves a topology without a placement to DefaultScheduler alone (not sticky). */
    static final String STICKY_KEY = "stormscale.sticky";
    /** The folder under storm.local.dir where delivered placements are kept. */
    static final String STORE_FOLDER = "stormscale-placements";

    /** The last message logged per topology id: each is logged once, not every round. */
    private final Map<String, String> said = new HashMap<>();
    /** The Supervisor id each pod of a topology last ran on (pod index -> id): stability across rebalances. */
    private final Map<String, Map<Integer, String>> lastNodes = new HashMap<>();
    /**
     * The slots each placed topology last ran on, with their executors. A rebalance hands the scheduler
     * the topology with no assignment at all (Nimbus schedules it "from scratch"); these keep every worker
     * whose executors do not change on its slot, so its Supervisor leaves it running.
     */
    private final Map<String, Map<WorkerSlot, List<ExecutorDetails>>> lastSlots = new HashMap<>();
    /**
     * The slots each topology without a placement last ran on, with their executors: after a rebalance
     * the workers whose executors do not change are put back on their slots before DefaultScheduler
     * spreads the rest, so only the workers of the scaled components restart.
     */
    private final Map<String, Map<WorkerSlot, List<ExecutorDetails>>> defaultSlots = new HashMap<>();
    /** Placements delivered through the endpoint (empty, in memory, until {@link #prepare} sets it up). */
    private PlacementStore store = new PlacementStore(null);
    private PlacementEndpoint endpoint;
    /** The topology ids of the last round (null before the first): the endpoint accepts only these. */
    private volatile Set<String> running;

    @Override
    public void prepare(Map<String, Object> conf, StormMetricsRegistry metricsRegistry) {
        LOG.info("Stormscale scheduler: topologies with a delivered placement or {} are placed as it says; "
            + "the others go to DefaultScheduler", Placement.KEY);
        int port = conf.get(PORT_KEY) instanceof Number ? ((Number) conf.get(PORT_KEY)).intValue() : 0;
        if (port <= 0) {
            return;
        }
        Object localDir = conf.get("storm.local.dir");
        store = new PlacementStore(localDir == null ? null : Paths.get(localDir.toString(), STORE_FOLDER));
        Object host = conf.getOrDefault(HOST_KEY, "0.0.0.0");
        Object token = conf.get(TOKEN_KEY);
        try {
            endpoint = PlacementEndpoint.start(host.toString(), port, store, () -> running,
                token == null ? null : Path.of(token.toString()));
        } catch (IOException | RuntimeException err) {
            LOG.error("Stormscale scheduler: the placement endpoint could not start on {}:{}: {}", host, port,
                err.toString());
        }
    }

    /** The delivered placements (the endpoint's store). */
    PlacementStore store() {
        return store;
    }

    @Override
    public void cleanup() {
        if (endpoint != null) {
            endpoint.stop();
        }
    }

    @Override
    public Map<String, Map<String, Double>> config() {
        return Collections.emptyMap();
    }

    @Override
    public void schedule(Topologies topologies, Cluster cluster) {
        List<TopologyDetails> all = new ArrayList<>(topologies.getTopologies());
        all.sort(Comparator.comparing(TopologyDetails::getId));
        List<TopologyDetails> byDefault = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        for (TopologyDetails topology : all) {
            ids.add(topology.getId());
            List<Placement> delivered = store.placements(topology.getId());
            Object raw = topology.getConf().get(Placement.KEY);
            if (!delivered.isEmpty()) {
                Placement covering = firstCovering(delivered, executorCounts(topology));
                if (covering != null) {
                    placeSafely(topology, covering, cluster);
                    continue;
                }
                if (!cluster.needsScheduling(topology)) {
                    report(cluster, topology, "the delivered placement does not cover the topology ("
                        + String.join("; ", delivered.get(0).coverageProblems(executorCounts(topology))) + ")"
                        + KEPT, false);
                    continue;
                }
            }
            if (raw == null) {
                byDefault.add(topology);
                String before = said.put(topology.getId(), NO_PLACEMENT);
                if (!NO_PLACEMENT.equals(before)) {
                    LOG.info("Stormscale scheduler: topology {} ({}): {}", topology.getName(), topology.getId(),
                        NO_PLACEMENT);
                    if (before != null) {
                        cluster.setStatus(topology.getId(), "");  // no word of ours left from a placement
                    }
                }
                continue;
            }
            Placement placement;
            try {
                placement = Placement.fromConf(raw);
                placement.checkCovers(executorCounts(topology));
            } catch (PlacementException err) {
                byDefault.add(topology);
                report(cluster, topology, err.getMessage() + FALLBACK, true);
                continue;
            }
            placeSafely(topology, placement, cluster);
        }
        said.keySet().retainAll(ids);
        lastNodes.keySet().retainAll(ids);
        lastSlots.keySet().retainAll(ids);
        defaultSlots.keySet().retainAll(ids);
        store.retain(ids);
        running = Set.copyOf(ids);
        for (TopologyDetails topology : byDefault) {
            keepUnchangedWorkers(cluster, topology, defaultSlots.getOrDefault(topology.getId(), Map.of()));
        }
        scheduleByDefault(cluster, byDefault);
        for (TopologyDetails topology : byDefault) {
            SchedulerAssignment assignment = cluster.getAssignmentById(topology.getId());
            if (assignment != null && !assignment.getSlotToExecutors().isEmpty()) {
                Map<WorkerSlot, List<ExecutorDetails>> slots = new HashMap<>();
                assignment.getSlotToExecutors().forEach((slot, executors) -> slots.put(slot, new ArrayList<>(executors)));
                defaultSlots.put(topology.getId(), slots);
            }
        }
    }

    /**
     * Before DefaultScheduler, a topology that Nimbus hands over with no assignment (a rebalance) gets back
     * each slot it last ran on whose executors all still exist (the same task ranges) while the slot is
     * free, up to its number of workers: Storm's Slot keeps such a worker's JVM running. What changed is
     * left to DefaultScheduler, which keeps what is assigned and spreads the rest over other slots
     * (Stela's point: keep the current scheduling, give the new executors new slots).
     */
    static void keepUnchangedWorkers(Cluster cluster, TopologyDetails topology,
                                     Map<WorkerSlot, List<ExecutorDetails>> last) {
        SchedulerAssignment assignment = cluster.getAssignmentById(topology.getId());
        Object sticky = topology.getConf().get(STICKY_KEY);
        if (last.isEmpty() || (assignment != null && !assignment.getSlotToExecutors().isEmpty())
            || Boolean.FALSE.equals(sticky) || "false".equals(sticky)) {
            return;
        }
        Set<ExecutorDetails> executors = topology.getExecutors();
        List<WorkerSlot> slots = new ArrayList<>(last.keySet());
        slots.sort(Comparator.comparing(WorkerSlot::getNodeId).thenComparingInt(WorkerSlot::getPort));
        int kept = 0;
        for (WorkerSlot slot : slots) {
            List<ExecutorDetails> worker = last.get(slot);
            SupervisorDetails supervisor = cluster.getSupervisorById(slot.getNodeId());
            if (kept >= topology.getNumWorkers() || supervisor == null || cluster.isBlackListed(slot.getNodeId())
                || !executors.containsAll(worker) || cluster.isSlotOccupied(slot)
                || !cluster.getAssignablePorts(supervisor).contains(slot.getPort())) {
                continue;
            }
            cluster.assign(slot, topology.getId(), worker);
            kept++;
        }
    }

    /** The first of {@code placements} (newest first) that covers {@code executors} exactly, or null. */
    static Placement firstCovering(List<Placement> placements, Map<String, Integer> executors) {
        for (Placement placement : placements) {
            if (placement.coverageProblems(executors).isEmpty()) {
                return placement;
            }
        }
        return null;
    }

    private void placeSafely(TopologyDetails topology, Placement placement, Cluster cluster) {
        try {
            place(topology, placement, cluster);
        } catch (RuntimeException err) {
            report(cluster, topology, "could not be placed (" + err + "); left as it was", true);
        }
    }

    /**
     * Assign {@code placement} unless the topology runs it already or the slots are missing. The slots
     * the planner keeps are the topology's current ones, or, when Nimbus hands it over with none (a
     * rebalance), the ones it ran on last: a worker whose executors do not change keeps its slot.
     */
    private void place(TopologyDetails topology, Placement placement, Cluster cluster) {
        String id = topology.getId();
        List<List<ExecutorDetails>> workers = placement.fill(executorsInTaskOrder(topology));
        Map<WorkerSlot, Collection<ExecutorDetails>> current = new HashMap<>();
        SchedulerAssignment assignment = cluster.getAssignmentById(id);
        if (assignment != null) {
            current.putAll(assignment.getSlotToExecutors());
        }
        Map<WorkerSlot, Collection<ExecutorDetails>> kept = new HashMap<>(current);
        if (kept.isEmpty()) {
            kept.putAll(lastSlots.getOrDefault(id, Collections.emptyMap()));
        }
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, workers, nodes(cluster, current.keySet()), kept,
            lastNodes.getOrDefault(id, Collections.emptyMap()));
        if (plan.waiting != null) {
            report(cluster, topology, "waiting for slots: " + plan.waiting + " (" + placement.workers()
                + " workers on " + placement.pods().size() + " Supervisors; nothing assigned)", true);
            return;
        }
        if (!sameSlots(plan.slots, current)) {
            cluster.freeSlots(new ArrayList<>(current.keySet()));
            try {
                plan.slots.forEach((slot, executors) -> cluster.assign(slot, id, executors));
            } catch (RuntimeException err) {
                cluster.freeSlots(new ArrayList<>(cluster.getUsedSlotsByTopologyId(id)));
                throw err;
            }
            LOG.info("Stormscale scheduler: topology {} ({}): assigned {}", topology.getName(), id, describe(plan));
        }
        Map<Integer, String> nodes = new HashMap<>();
        StringJoiner hosts = new StringJoiner(", ");
        for (int i = 0; i < plan.podNodes.size(); i++) {
            nodes.put(i, plan.podNodes.get(i).id);
            hosts.add(plan.podNodes.get(i).host);
        }
        lastNodes.put(id, nodes);
        lastSlots.put(id, new HashMap<>(plan.slots));
        report(cluster, topology, PLACED + " (" + placement.workers() + " workers on " + hosts + ")", false);
    }

    /** The Supervisors a placement may use, each with its free ports and those the topology holds. */
    private static List<SlotPlanner.Node> nodes(Cluster cluster, Collection<WorkerSlot> own) {
        List<SlotPlanner.Node> nodes = new ArrayList<>();
        for (SupervisorDetails supervisor : cluster.getSupervisors().values()) {
            if (cluster.isBlackListed(supervisor.getId())) {
                continue;
            }
            Set<Integer> usable = new HashSet<>(cluster.getAvailablePorts(supervisor));
            Set<Integer> assignable = cluster.getAssignablePorts(supervisor);
            for (WorkerSlot slot : own) {
                if (slot.getNodeId().equals(supervisor.getId()) && assignable.contains(slot.getPort())) {
                    usable.add(slot.getPort());
                }
            }
            nodes.add(new SlotPlanner.Node(supervisor.getId(), supervisor.getHost(), usable));
        }
        return nodes;
    }

    private static boolean sameSlots(Map<WorkerSlot, List<ExecutorDetails>> planned,
                                     Map<WorkerSlot, Collection<ExecutorDetails>> current) {
        if (!planned.keySet().equals(current.keySet())) {
            return false;
        }
        for (Map.Entry<WorkerSlot, List<ExecutorDetails>> entry : planned.entrySet()) {
            if (!new HashSet<>(entry.getValue()).equals(new HashSet<>(current.get(entry.getKey())))) {
                return false;
            }
        }
        return true;
    }

    private static String describe(SlotPlanner.Plan plan) {
        Map<String, String> hostOf = new HashMap<>();
        plan.podNodes.forEach(n -> hostOf.put(n.id, n.host));
        StringJoiner out = new StringJoiner(", ");
        plan.slots.forEach((slot, executors) -> out.add(hostOf.get(slot.getNodeId()) + ":" + slot.getPort() + " "
            + executors));
        return out.toString();
    }

    /** Executors per component as a placement counts them: every component but {@code __system}. */
    static Map<String, Integer> executorCounts(TopologyDetails topology) {
        Map<String, Integer> counts = new TreeMap<>();
        executorsInTaskOrder(topology).forEach((component, executors) -> counts.put(component, executors.size()));
        return counts;
    }

    /** Each component's executors (but {@code __system}'s) in ascending start-task order. */
    static Map<String, List<ExecutorDetails>> executorsInTaskOrder(TopologyDetails topology) {
        Map<String, List<ExecutorDetails>> byComponent = new TreeMap<>();
        topology.getExecutorToComponent().forEach((executor, component) -> {
            if (!Placement.UNPLACED.equals(component)) {
                byComponent.computeIfAbsent(component, c -> new ArrayList<>()).add(executor);
            }
        });
        byComponent.values().forEach(list -> list.sort(Comparator.comparingInt(ExecutorDetails::getStartTask)));
        return byComponent;
    }

    /** Set the topology's scheduler status and log the message, each once (warn: a problem). */
    private void report(Cluster cluster, TopologyDetails topology, String message, boolean warn) {
        if (!message.equals(cluster.getStatus(topology.getId()))) {
            cluster.setStatus(topology.getId(), message);  // Cluster logs each call: only on a change
        }
        if (message.equals(said.put(topology.getId(), message))) {
            return;
        }
        if (warn) {
            LOG.warn("Stormscale scheduler: topology {} ({}): {}", topology.getName(), topology.getId(), message);
        } else {
            LOG.info("Stormscale scheduler: topology {} ({}): {}", topology.getName(), topology.getId(), message);
        }
    }

    /** DefaultScheduler for {@code topologies}, on a view of the cluster in which only they need scheduling. */
    private static void scheduleByDefault(Cluster cluster, List<TopologyDetails> topologies) {
        if (topologies.stream().noneMatch(cluster::needsScheduling)) {
            return;
        }
        Set<String> ids = new HashSet<>();
        topologies.forEach(t -> ids.add(t.getId()));
        Cluster view = new DefaultOnly(cluster, ids);
        DefaultScheduler.defaultSchedule(new Topologies(topologies.toArray(new TopologyDetails[0])), view);
        cluster.updateFrom(view);
    }

    /**
     * The cluster as DefaultScheduler sees it: every Supervisor, assignment and free slot, but only the
     * topologies without a placement need scheduling (DefaultScheduler and EvenScheduler take the
     * topologies to schedule from the cluster, not from their argument).
     */
    private static final class DefaultOnly extends Cluster {
        private final Set<String> ids;

        DefaultOnly(Cluster src, Set<String> ids) {
            super(src);
            this.ids = ids;
        }

        @Override
        public List<TopologyDetails> needsSchedulingTopologies() {
            List<TopologyDetails> out = new ArrayList<>();
            for (TopologyDetails topology : super.needsSchedulingTopologies()) {
                if (ids.contains(topology.getId())) {
                    out.add(topology);
                }
            }
            return out;
        }
    }
}
