package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.storm.Config;
import org.apache.storm.metric.StormMetricsRegistry;
import org.apache.storm.scheduler.Cluster;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.INimbus;
import org.apache.storm.scheduler.IScheduler;
import org.apache.storm.scheduler.SchedulerAssignment;
import org.apache.storm.scheduler.SupervisorDetails;
import org.apache.storm.scheduler.Topologies;
import org.apache.storm.scheduler.TopologyDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.apache.storm.scheduler.resource.normalization.ResourceMetrics;
import org.apache.storm.testing.TestWordCounter;
import org.apache.storm.testing.TestWordSpout;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.utils.Utils;
import org.junit.jupiter.api.Test;

/** The scheduler on Storm's own Cluster: placed topologies exactly, the others by DefaultScheduler. */
class PlacementSchedulerTest {

    /** What Nimbus's INimbus does for the scheduler: hostnames from the Supervisors. */
    static final class Nimbus implements INimbus {
        @Override
        public void prepare(Map<String, Object> topoConf, String schedulerLocalDir) {
        }

        @Override
        public Collection<WorkerSlot> allSlotsAvailableForScheduling(Collection<SupervisorDetails> supervisors,
                                                                     Topologies topologies, Set<String> missing) {
            return new ArrayList<>();
        }

        @Override
        public void assignSlots(Topologies topologies, Map<String, Collection<WorkerSlot>> newSlots) {
        }

        @Override
        public String getHostName(Map<String, SupervisorDetails> supervisors, String nodeId) {
            return supervisors.get(nodeId).getHost();
        }

        @Override
        public IScheduler getForcedScheduler() {
            return null;
        }
    }

    /** Topology {@code id}: spout "s" and bolt "b" with one task per executor (s first), {@code workers}. */
    static TopologyDetails topology(String id, int spouts, int bolts, int workers, String placement) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("s", new TestWordSpout(), spouts);
        builder.setBolt("b", new TestWordCounter(), bolts).shuffleGrouping("s");
        Map<String, Object> conf = new HashMap<>(Utils.readDefaultConfig());
        conf.put(Config.TOPOLOGY_NAME, id);
        if (placement != null) {
            conf.put(Placement.KEY, placement);
        }
        Map<ExecutorDetails, String> executors = new HashMap<>();
        for (int t = 1; t <= spouts + bolts; t++) {
            executors.put(new ExecutorDetails(t, t), t <= spouts ? "s" : "b");
        }
        return new TopologyDetails(id, conf, builder.createTopology(), workers, executors, 0, "user");
    }

    static Map<String, SupervisorDetails> supervisors(int count) {
        Map<String, SupervisorDetails> out = new HashMap<>();
        for (int i = 1; i <= count; i++) {
            out.put("sup-" + i, new SupervisorDetails("sup-" + i, "host-" + i, null, List.of(6700, 6701)));
        }
        return out;
    }

    static Cluster cluster(Map<String, SupervisorDetails> supervisors, Map<String, SchedulerAssignment> assignments,
                           TopologyDetails... topologies) {
        return new Cluster(new Nimbus(), new ResourceMetrics(new StormMetricsRegistry()), supervisors, assignments,
            new Topologies(topologies), new HashMap<>(Utils.readDefaultConfig()));
    }

    /** "host:port" -> start tasks of the topology's executors there, sorted. */
    static Map<String, Set<Integer>> layout(Cluster cluster, String id) {
        Map<String, Set<Integer>> out = new TreeMap<>();
        SchedulerAssignment assignment = cluster.getAssignmentById(id);
        if (assignment != null) {
            assignment.getSlotToExecutors().forEach((slot, executors) -> {
                Set<Integer> tasks = new TreeSet<>();
                executors.forEach(e -> tasks.add(e.getStartTask()));
                out.put(cluster.getSupervisorById(slot.getNodeId()).getHost() + ":" + slot.getPort(), tasks);
            });
        }
        return out;
    }

    static final String SPLIT = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}, {\"b\": 1}],"
        + " \"supervisor\": \"host-3\"}, {\"workers\": [{\"s\": 1, \"b\": 2}]}]}";

    @Test
    void aPlacedTopologyRunsExactlyItsPlacementAndTheOthersGoToDefaultScheduler() {
        TopologyDetails placed = topology("placed", 2, 3, 9, SPLIT);
        TopologyDetails plain = topology("plain", 1, 1, 2, null);
        TopologyDetails broken = topology("broken", 1, 1, 1, "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}]}]}");
        Cluster cluster = cluster(supervisors(3), new HashMap<>(), placed, plain, broken);
        new PlacementScheduler().schedule(new Topologies(placed, plain, broken), cluster);

        // pod 0 pinned to host-3: s[1] then b[3]; pod 1 on the lowest other host: s[2] with b[4], b[5]
        assertEquals(Map.of("host-3:6700", Set.of(1), "host-3:6701", Set.of(3), "host-1:6700", Set.of(2, 4, 5)),
            layout(cluster, "placed"));
        assertTrue(cluster.getStatus("placed").startsWith(PlacementScheduler.PLACED), cluster.getStatus("placed"));
        for (TopologyDetails byDefault : List.of(plain, broken)) {
            assertFalse(cluster.needsScheduling(byDefault), byDefault.getId());
            assertEquals(byDefault.getNumWorkers(), layout(cluster, byDefault.getId()).size(), byDefault.getId());
        }
        assertEquals(Placement.KEY + " does not cover the topology: component 'b': 0 executors placed, the topology"
            + " has 1" + PlacementScheduler.FALLBACK, cluster.getStatus("broken"));
        assertNull(cluster.getStatus("plain"));
        Set<String> used = new HashSet<>();
        for (String id : List.of("placed", "plain", "broken")) {
            for (String slot : layout(cluster, id).keySet()) {
                assertTrue(used.add(slot), "slot " + slot + " used twice");
            }
        }
    }

    @Test
    void withoutTheSlotsNothingIsAssignedUntilASupervisorComes() {
        String three = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}]}, {\"workers\": [{\"s\": 1}]},"
            + " {\"workers\": [{\"b\": 1}, {\"b\": 1}]}]}";
        TopologyDetails placed = topology("placed", 2, 2, 4, three);
        TopologyDetails plain = topology("plain", 1, 1, 1, null);
        PlacementScheduler scheduler = new PlacementScheduler();
        Cluster cluster = cluster(supervisors(2), new HashMap<>(), placed, plain);
        scheduler.schedule(new Topologies(placed, plain), cluster);
        assertEquals(Map.of(), layout(cluster, "placed"));
        assertTrue(cluster.getStatus("placed").startsWith("waiting for slots: pods[1] needs 1 free slot"),
            cluster.getStatus("placed"));
        assertEquals(1, layout(cluster, "plain").size());

        Cluster grown = cluster(supervisors(4), cluster.getAssignments(), placed, plain);
        scheduler.schedule(new Topologies(placed, plain), grown);
        Map<String, Set<Integer>> layout = layout(grown, "placed");
        assertEquals(4, layout.size(), layout.toString());
        assertEquals(Set.of(Set.of(1), Set.of(2), Set.of(3), Set.of(4)), new HashSet<>(layout.values()));
        assertTrue(grown.getStatus("placed").startsWith(PlacementScheduler.PLACED), grown.getStatus("placed"));
    }

    @Test
    void aPlacedTopologyIsLeftAsItRunsAndMovesWhenItsPlacementChanges() {
        PlacementScheduler scheduler = new PlacementScheduler();
        TopologyDetails placed = topology("placed", 2, 3, 2, SPLIT);
        Cluster first = cluster(supervisors(3), new HashMap<>(), placed);
        scheduler.schedule(new Topologies(placed), first);
        Map<String, SchedulerAssignment> assignments = first.getAssignments();
        Cluster again = cluster(supervisors(3), assignments, placed);
        scheduler.schedule(new Topologies(placed), again);
        assertEquals(layout(first, "placed"), layout(again, "placed"));

        String moved = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 2, \"b\": 3}]}]}";
        TopologyDetails rebalanced = topology("placed", 2, 3, 1, moved);
        Cluster next = cluster(supervisors(3), assignments, rebalanced);
        scheduler.schedule(new Topologies(rebalanced), next);
        assertEquals(Map.of("host-1:6700", Set.of(1, 2, 3, 4, 5)), layout(next, "placed"));  // most of its executors ran on host-1
    }

    /** Topology {@code id} with the given executors (start task, end task -> component), no placement in its conf. */
    static TopologyDetails topologyOf(String id, Map<ExecutorDetails, String> executors, int workers) {
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("s", new TestWordSpout(), 1);
        builder.setBolt("b", new TestWordCounter(), 1).shuffleGrouping("s");
        Map<String, Object> conf = new HashMap<>(Utils.readDefaultConfig());
        conf.put(Config.TOPOLOGY_NAME, id);
        return new TopologyDetails(id, conf, builder.createTopology(), workers, executors, 0, "user");
    }

    @Test
    void afterARebalanceAWorkerWhoseExecutorsDidNotChangeKeepsItsSlot() throws Exception {
        PlacementScheduler scheduler = new PlacementScheduler();
        Map<ExecutorDetails, String> before = Map.of(new ExecutorDetails(1, 2), "s",
            new ExecutorDetails(3, 3), "b", new ExecutorDetails(4, 4), "b");
        TopologyDetails running = topologyOf("t-1-1", before, 2);
        scheduler.store().put("t-1-1", "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}, {\"b\": 2}]}]}");
        Cluster first = cluster(supervisors(1), new HashMap<>(), running);
        scheduler.schedule(new Topologies(running), first);
        assertEquals(Map.of("host-1:6700", Set.of(1), "host-1:6701", Set.of(3, 4)), layout(first, "t-1-1"));

        // the spout split in two; the placement lists the bolt's worker first now. Nimbus hands a
        // rebalanced topology over with no assignment: the bolt's worker must keep its slot all the same
        Map<ExecutorDetails, String> after = Map.of(new ExecutorDetails(1, 1), "s", new ExecutorDetails(2, 2), "s",
            new ExecutorDetails(3, 3), "b", new ExecutorDetails(4, 4), "b");
        TopologyDetails rebalanced = topologyOf("t-1-1", after, 2);
        scheduler.store().put("t-1-1", "{\"version\": 1, \"pods\": [{\"workers\": [{\"b\": 2}, {\"s\": 2}]}]}");
        Cluster scratch = cluster(supervisors(1), new HashMap<>(), rebalanced);
        scheduler.schedule(new Topologies(rebalanced), scratch);
        assertEquals(Map.of("host-1:6700", Set.of(1, 2), "host-1:6701", Set.of(3, 4)), layout(scratch, "t-1-1"));
        assertTrue(scratch.getStatus("t-1-1").startsWith(PlacementScheduler.PLACED), scratch.getStatus("t-1-1"));
    }

    @Test
    void aPlacementDeliveredBeforeItsRebalanceLeavesTheTopologyAsItRuns() throws Exception {
        PlacementScheduler scheduler = new PlacementScheduler();
        TopologyDetails running = topology("t-2-2", 1, 2, 1, SPLIT);  // its conf's placement covers 2 spouts: ignored
        scheduler.store().put("t-2-2", "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1, \"b\": 2}]}]}");
        Cluster first = cluster(supervisors(2), new HashMap<>(), running);
        scheduler.schedule(new Topologies(running), first);
        Map<String, Set<Integer>> placed = layout(first, "t-2-2");
        assertEquals(Map.of("host-1:6700", Set.of(1, 2, 3)), placed);

        // the next placement (4 bolts) arrives before the rebalance: the previous one still describes it
        scheduler.store().put("t-2-2", "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1, \"b\": 4}]}]}");
        Cluster pending = cluster(supervisors(2), first.getAssignments(), running);
        scheduler.schedule(new Topologies(running), pending);
        assertEquals(placed, layout(pending, "t-2-2"));
        assertTrue(pending.getStatus("t-2-2").startsWith(PlacementScheduler.PLACED), pending.getStatus("t-2-2"));

        // placed by its conf, then a placement for other counts delivered: left as it runs, and said
        TopologyDetails byConf = topology("u-3-3", 2, 3, 2, SPLIT);
        Cluster before = cluster(supervisors(3), new HashMap<>(), byConf);
        scheduler.schedule(new Topologies(byConf), before);
        Map<String, Set<Integer>> split = layout(before, "u-3-3");
        scheduler.store().put("u-3-3", "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 3, \"b\": 3}]}]}");
        Cluster kept = cluster(supervisors(3), before.getAssignments(), byConf);
        scheduler.schedule(new Topologies(byConf), kept);
        assertEquals(split, layout(kept, "u-3-3"));
        assertTrue(kept.getStatus("u-3-3").endsWith(PlacementScheduler.KEPT), kept.getStatus("u-3-3"));

        scheduler.schedule(new Topologies(), cluster(supervisors(2), new HashMap<>()));
        assertTrue(scheduler.store().placements("t-2-2").isEmpty(), "a killed topology's placements are forgotten");
    }
    /** The slot ("host:port") that runs the executor starting at {@code task}, or null. */
    static String slotOf(Cluster cluster, String id, int task) {
        for (Map.Entry<String, Set<Integer>> worker : layout(cluster, id).entrySet()) {
            if (worker.getValue().contains(task)) {
                return worker.getKey();
            }
        }
        return null;
    }

    static Map<String, SupervisorDetails> withNewcomer(Map<String, SupervisorDetails> supervisors) {
        Map<String, SupervisorDetails> out = new HashMap<>(supervisors);
        out.put("sup-0", new SupervisorDetails("sup-0", "host-0", null, List.of(6700, 6701)));
        return out;
    }

    @Test
    void withoutAPlacementARebalanceKeepsTheWorkersWhoseExecutorsDidNotChange() {
        // spout [1], bolt [2-3] [4-5] on three workers; then the bolt goes to four executors on five
        // workers, and the new worker pod's Supervisor (sup-0) joins. Nimbus hands the rebalanced topology
        // over with no assignment at all.
        Map<ExecutorDetails, String> before = Map.of(new ExecutorDetails(1, 1), "s",
            new ExecutorDetails(2, 3), "b", new ExecutorDetails(4, 5), "b");
        Map<ExecutorDetails, String> after = Map.of(new ExecutorDetails(1, 1), "s",
            new ExecutorDetails(2, 2), "b", new ExecutorDetails(3, 3), "b", new ExecutorDetails(4, 4), "b",
            new ExecutorDetails(5, 5), "b");
        TopologyDetails running = topologyOf("plain-1-1", before, 3);
        TopologyDetails rebalanced = topologyOf("plain-1-1", after, 5);
        PlacementScheduler scheduler = new PlacementScheduler();
        Cluster first = cluster(supervisors(3), new HashMap<>(), running);
        scheduler.schedule(new Topologies(running), first);
        String spoutSlot = slotOf(first, "plain-1-1", 1);
        assertEquals(3, layout(first, "plain-1-1").size());
        assertEquals(Set.of(1), layout(first, "plain-1-1").get(spoutSlot));

        Cluster scratch = cluster(withNewcomer(supervisors(3)), new HashMap<>(), rebalanced);
        scheduler.schedule(new Topologies(rebalanced), scratch);
        assertEquals(spoutSlot, slotOf(scratch, "plain-1-1", 1), "the spout's worker keeps its slot");
        assertFalse(scratch.needsScheduling(rebalanced));
        assertEquals(5, layout(scratch, "plain-1-1").size());
        assertNull(scratch.getStatus("plain-1-1"));

        // the same round without the scheduler's memory: DefaultScheduler alone moves the spout
        Cluster alone = cluster(withNewcomer(supervisors(3)), new HashMap<>(), rebalanced);
        new PlacementScheduler().schedule(new Topologies(rebalanced), alone);
        assertFalse(spoutSlot.equals(slotOf(alone, "plain-1-1", 1)), layout(alone, "plain-1-1").toString());

        // and so does a topology that opts out with stormscale.sticky: false in its conf
        PlacementScheduler optedOut = new PlacementScheduler();
        TopologyDetails plainBefore = topologyOf("plain-1-1", before, 3);
        plainBefore.getConf().put(PlacementScheduler.STICKY_KEY, false);
        optedOut.schedule(new Topologies(plainBefore), cluster(supervisors(3), new HashMap<>(), plainBefore));
        TopologyDetails plainAfter = topologyOf("plain-1-1", after, 5);
        plainAfter.getConf().put(PlacementScheduler.STICKY_KEY, false);
        Cluster notSticky = cluster(withNewcomer(supervisors(3)), new HashMap<>(), plainAfter);
        optedOut.schedule(new Topologies(plainAfter), notSticky);
        assertEquals(layout(alone, "plain-1-1"), layout(notSticky, "plain-1-1"));
    }

    @Test
    void aWorkerIsNotKeptOnASlotAnotherTopologyTookOrAGoneSupervisor() {
        Map<ExecutorDetails, String> executors = Map.of(new ExecutorDetails(1, 1), "s", new ExecutorDetails(2, 2), "b");
        TopologyDetails running = topologyOf("plain-2-2", executors, 2);
        PlacementScheduler scheduler = new PlacementScheduler();
        Cluster first = cluster(supervisors(1), new HashMap<>(), running);
        scheduler.schedule(new Topologies(running), first);
        assertEquals(Set.of("host-1:6700", "host-1:6701"), layout(first, "plain-2-2").keySet());

        // host-1 is gone: both workers go elsewhere, nothing is assigned to a Supervisor that is not there
        Map<String, SupervisorDetails> others = new HashMap<>(supervisors(3));
        others.remove("sup-1");
        Cluster moved = cluster(others, new HashMap<>(), running);
        scheduler.schedule(new Topologies(running), moved);
        assertEquals(2, layout(moved, "plain-2-2").size());
        assertTrue(layout(moved, "plain-2-2").keySet().stream().noneMatch(slot -> slot.startsWith("host-1:")));
    }
}
