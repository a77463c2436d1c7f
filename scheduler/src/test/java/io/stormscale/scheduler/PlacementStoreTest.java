package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Delivered placements: newest first, the one before kept, on disk across a restart, ids checked. */
class PlacementStoreTest {
    static final String ONE = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1, \"b\": 1}]}]}";
    static final String TWO = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}, {\"b\": 2}]}]}";
    static final String THREE = "{\"version\": 1, \"pods\": [{\"workers\": [{\"s\": 1}, {\"b\": 3}]}]}";

    static int workersOfNewest(PlacementStore store, String id) {
        return store.placements(id).get(0).workers();
    }

    @Test
    void theNewestComesFirstAndTheOneBeforeItIsKept(@TempDir Path dir) throws Exception {
        PlacementStore store = new PlacementStore(dir);
        store.put("t-1-100", ONE);
        store.put("t-1-100", TWO);
        assertEquals(List.of(2, 1), List.of(workersOfNewest(store, "t-1-100"), store.placements("t-1-100").get(1).workers()));
        store.put("t-1-100", TWO);  // the same again: the one before it stays
        assertEquals(2, store.placements("t-1-100").size());
        assertEquals(1, store.placements("t-1-100").get(1).workers());
        store.put("t-1-100", THREE);
        assertEquals(TWO, Files.readString(dir.resolve("t-1-100.previous.json")));
        assertEquals(THREE, store.newest("t-1-100"));

        PlacementStore restarted = new PlacementStore(dir);
        assertEquals(THREE, restarted.newest("t-1-100"));
        assertEquals(2, restarted.placements("t-1-100").size());
    }

    @Test
    void anInvalidIdOrPlacementChangesNothing(@TempDir Path dir) throws Exception {
        PlacementStore store = new PlacementStore(dir);
        store.put("t-1-100", ONE);
        assertThrows(PlacementException.class, () -> store.put("../etc", ONE));
        assertThrows(PlacementException.class, () -> store.put(".hidden", ONE));
        assertThrows(PlacementException.class, () -> store.put("t-1-100", "{\"version\": 1}"));
        assertEquals(ONE, store.newest("t-1-100"));
        assertEquals(1, store.placements("t-1-100").size());
        try (var files = Files.list(dir)) {
            assertEquals(1, files.count());
        }
    }

    @Test
    void theTopologiesNoLongerRunningAreForgottenOnDiskToo(@TempDir Path dir) throws Exception {
        PlacementStore store = new PlacementStore(dir);
        store.put("a-1-1", ONE);
        store.put("b-2-2", ONE);
        store.put("b-2-2", TWO);
        store.retain(Set.of("a-1-1"));
        assertNull(store.newest("b-2-2"));
        assertFalse(Files.exists(dir.resolve("b-2-2.json")));
        assertFalse(Files.exists(dir.resolve("b-2-2.previous.json")));
        assertTrue(store.remove("a-1-1"));
        assertFalse(store.remove("a-1-1"));
        assertTrue(new PlacementStore(dir).placements("a-1-1").isEmpty());
    }
}
