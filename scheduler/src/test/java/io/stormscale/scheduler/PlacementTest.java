package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** The placement format: the cases the Python side reads too (placement-cases.json), coverage, the fill. */
class PlacementTest {

    @SuppressWarnings("unchecked")
    static Map<String, Object> cases() throws IOException, Json.JsonException {
        try (InputStream in = PlacementTest.class.getResourceAsStream("/placement-cases.json")) {
            return (Map<String, Object>) Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    /** A parsed placement as the cases write it: pods with workers and supervisor (null if none). */
    static List<Object> podsOf(Placement placement) {
        List<Object> out = new ArrayList<>();
        for (Placement.Pod pod : placement.pods()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            List<Object> workers = new ArrayList<>();
            for (Map<String, Integer> worker : pod.workers()) {
                Map<String, Object> counts = new LinkedHashMap<>();
                worker.forEach((c, n) -> counts.put(c, (long) n));
                workers.add(counts);
            }
            entry.put("workers", workers);
            entry.put("supervisor", pod.supervisor());
            out.add(entry);
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    @TestFactory
    Stream<DynamicTest> validCasesParseToTheirPodsCountsAndWorkers() throws Exception {
        List<Object> valid = (List<Object>) cases().get("valid");
        return valid.stream().map(o -> (Map<String, Object>) o).map(c -> DynamicTest.dynamicTest(
            (String) c.get("name"), () -> {
                Placement placement = Placement.parse((String) c.get("text"));
                assertEquals(c.get("pods"), podsOf(placement));
                Map<String, Object> executors = new LinkedHashMap<>();
                placement.executors().forEach((k, v) -> executors.put(k, (long) v));
                assertEquals(c.get("executors"), executors);
                assertEquals(((Long) c.get("workers")).intValue(), placement.workers());
                assertEquals(placement, Placement.fromConf(c.get("text")));
            }));
    }

    @SuppressWarnings("unchecked")
    @TestFactory
    Stream<DynamicTest> invalidCasesFailWithOneLineNamingTheProblem() throws Exception {
        List<Object> invalid = (List<Object>) cases().get("invalid");
        return invalid.stream().map(o -> (Map<String, Object>) o).map(c -> DynamicTest.dynamicTest(
            "text «" + c.get("text") + "»", () -> {
                PlacementException err = assertThrows(PlacementException.class,
                    () -> Placement.parse((String) c.get("text")));
                String message = err.getMessage();
                assertFalse(message.contains("\n"), message);
                assertTrue(message.startsWith(Placement.KEY), message);
                for (Object fragment : (List<Object>) c.get("fragments")) {
                    assertTrue(message.contains((String) fragment), message + " lacks " + fragment);
                }
            }));
    }

    @Test
    void aConfValueThatIsNoStringIsRefused() {
        PlacementException err = assertThrows(PlacementException.class,
            () -> Placement.fromConf(Map.of("version", 1L)));
        assertEquals(Placement.KEY + " must be a JSON string, got an object", err.getMessage());
    }

    @Test
    void controlCharactersNeverBreakTheMessageLine() {
        PlacementException err = assertThrows(PlacementException.class,
            () -> Placement.parse("{\"version\": 1, \"pods\": [{\"workers\": [{\"a\\nb\": 0}]}]}"));
        assertFalse(err.getMessage().contains("\n"), err.getMessage());
    }

    @Test
    void coverageNamesEveryMissingExtraAndMiscountedComponent() throws Exception {
        Placement placement = Placement.parse("{\"version\": 1, \"pods\": [{\"workers\": [{\"spout\": 1, \"__acker\": 1},"
            + " {\"bolt\": 2}]}, {\"workers\": [{\"ghost\": 1}]}]}");
        assertEquals(List.of(), placement.coverageProblems(
            Map.of("spout", 1, "bolt", 2, "__acker", 1, "__system", 2, "ghost", 1)));
        assertEquals(List.of(
            "component 'bolt': 2 executors placed, the topology has 3",
            "component 'ghost' is not in the topology",
            "component 'sink': 0 executors placed, the topology has 1"),
            placement.coverageProblems(Map.of("spout", 1, "bolt", 3, "sink", 1, "__system", 1, "__acker", 1)));
        PlacementException err = assertThrows(PlacementException.class,
            () -> placement.checkCovers(Map.of("spout", 1, "bolt", 3, "__acker", 1, "ghost", 1)));
        assertTrue(err.getMessage().startsWith(Placement.KEY + " does not cover the topology: component 'bolt'"));
    }

    @Test
    void executorsFillTheWorkersThatListThemInTaskOrder() throws Exception {
        Placement placement = Placement.parse(
            "{\"version\": 1, \"pods\": [{\"workers\": [{\"b\": 2}, {\"a\": 1, \"b\": 1}]}, {\"workers\": [{\"a\": 2}]}]}");
        Map<String, List<String>> inOrder = Map.of("a", List.of("a1", "a3", "a5"), "b", List.of("b2", "b3", "b9"));
        assertEquals(List.of(List.of("b2", "b3"), List.of("a1", "b9"), List.of("a3", "a5")), placement.fill(inOrder));
    }
}
