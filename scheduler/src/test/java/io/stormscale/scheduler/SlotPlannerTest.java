package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.storm.scheduler.ExecutorDetails;
import org.apache.storm.scheduler.WorkerSlot;
import org.junit.jupiter.api.Test;

/** Pods to Supervisors, workers to ports: pins, the greedy order, reuse, stability, waiting. */
class SlotPlannerTest {

    /** Worker w of the placement runs executor [w, w]. */
    static List<List<ExecutorDetails>> oneEach(Placement placement) {
        List<List<ExecutorDetails>> workers = new ArrayList<>();
        for (int w = 0; w < placement.workers(); w++) {
            workers.add(List.of(new ExecutorDetails(w, w)));
        }
        return workers;
    }

    static Placement pods(int... sizes) throws PlacementException {
        StringBuilder json = new StringBuilder("{\"version\": 1, \"pods\": [");
        for (int i = 0; i < sizes.length; i++) {
            json.append(i > 0 ? ", " : "").append("{\"workers\": [");
            for (int w = 0; w < sizes[i]; w++) {
                json.append(w > 0 ? ", " : "").append("{\"c\": 1}");
            }
            json.append("]}");
        }
        return Placement.parse(json.append("]}").toString());
    }

    static SlotPlanner.Node node(String id, Integer... ports) {
        return new SlotPlanner.Node(id, "host-" + id, List.of(ports));
    }

    /** slot "id:port" -> executor start tasks, in the plan's order. */
    static Map<String, List<Integer>> layout(SlotPlanner.Plan plan) {
        Map<String, List<Integer>> out = new LinkedHashMap<>();
        plan.slots.forEach((slot, executors) -> {
            List<Integer> tasks = new ArrayList<>();
            executors.forEach(e -> tasks.add(e.getStartTask()));
            out.put(slot.getNodeId() + ":" + slot.getPort(), tasks);
        });
        return out;
    }

    static final Map<WorkerSlot, Collection<ExecutorDetails>> NOTHING = Map.of();

    @Test
    void biggerPodsChooseFirstSoEveryPodFits() throws Exception {
        Placement placement = pods(1, 2);  // in listed order, pod 0 could take a's two slots and leave pod 1 nowhere
        List<SlotPlanner.Node> nodes = List.of(node("a", 6700, 6701), node("b", 6700));
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, oneEach(placement), nodes, NOTHING, Map.of());
        assertNull(plan.waiting);
        assertEquals(Map.of("b:6700", List.of(0), "a:6700", List.of(1), "a:6701", List.of(2)), layout(plan));
        assertEquals(List.of("b", "a"), List.of(plan.podNodes.get(0).id, plan.podNodes.get(1).id));
    }

    @Test
    void pinnedPodsGoToTheirHostAndWaitWhenItIsMissingOrFull() throws Exception {
        Placement placement = Placement.parse("{\"version\": 1, \"pods\": [{\"workers\": [{\"c\": 1}]},"
            + " {\"workers\": [{\"c\": 1}], \"supervisor\": \"host-a\"}]}");
        List<List<ExecutorDetails>> workers = oneEach(placement);
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, workers, List.of(node("a", 6700), node("b", 6700)),
            NOTHING, Map.of());
        assertEquals(Map.of("b:6700", List.of(0), "a:6700", List.of(1)), layout(plan));
        SlotPlanner.Plan full = SlotPlanner.plan(placement, workers, List.of(node("a"), node("b", 6700, 6701)),
            NOTHING, Map.of());
        assertEquals("pods[1] needs 1 free slot on the Supervisor on host-a; free slots: host-a 0", full.waiting);
        assertTrue(full.slots.isEmpty());
        SlotPlanner.Plan missing = SlotPlanner.plan(placement, workers, List.of(node("b", 6700, 6701)), NOTHING,
            Map.of());
        assertEquals("pods[1] needs 1 free slot on the Supervisor on host-a; no Supervisor runs there",
            missing.waiting);
    }

    @Test
    void withoutEnoughFreeSlotsNothingIsPlannedAndTheReasonNamesThePod() throws Exception {
        Placement placement = pods(2, 2, 2);
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, oneEach(placement),
            List.of(node("a", 6700, 6701), node("b", 6700, 6701), node("c", 6700)), NOTHING, Map.of());
        assertEquals("pods[2] needs 2 free slots on one Supervisor of its own; free slots: host-c 1", plan.waiting);
        assertTrue(plan.slots.isEmpty());
    }

    @Test
    void aPlacementThatRunsAlreadyIsPlannedAsItRuns() throws Exception {
        Placement placement = pods(2, 1);
        List<List<ExecutorDetails>> workers = oneEach(placement);
        Map<WorkerSlot, Collection<ExecutorDetails>> current = new HashMap<>();
        current.put(new WorkerSlot("b", 6703), workers.get(1));
        current.put(new WorkerSlot("b", 6709), workers.get(0));
        current.put(new WorkerSlot("a", 6705), workers.get(2));
        List<SlotPlanner.Node> nodes = List.of(node("a", 6700, 6705), node("b", 6700, 6701, 6703, 6709));
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, workers, nodes, current, Map.of());
        assertEquals(Map.of("b:6709", List.of(0), "b:6703", List.of(1), "a:6705", List.of(2)), layout(plan));
    }

    @Test
    void aPodStaysWithMostOfItsExecutorsElseWhereItWasLastElseTheLowestHost() throws Exception {
        Placement placement = pods(2);
        List<List<ExecutorDetails>> workers = oneEach(placement);
        List<SlotPlanner.Node> nodes = List.of(node("a", 6700, 6701), node("b", 6700, 6701), node("c", 6700, 6701));
        Map<WorkerSlot, Collection<ExecutorDetails>> current = Map.of(new WorkerSlot("c", 6701), workers.get(1));
        SlotPlanner.Plan plan = SlotPlanner.plan(placement, workers, nodes, current, Map.of(0, "b"));
        assertEquals(Map.of("c:6700", List.of(0), "c:6701", List.of(1)), layout(plan));  // worker 1 keeps its slot
        assertEquals("b", SlotPlanner.plan(placement, workers, nodes, NOTHING, Map.of(0, "b")).podNodes.get(0).id);
        assertEquals("a", SlotPlanner.plan(placement, workers, nodes, NOTHING, Map.of()).podNodes.get(0).id);
    }
}
