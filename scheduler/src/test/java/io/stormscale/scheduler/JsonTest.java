package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The strict JSON reader: every value kind, escapes, numbers by kind, and what it refuses. */
class JsonTest {

    @Test
    void readsEveryKindOfValue() throws Exception {
        Object doc = Json.parse(" {\"a\\u0062\": [1, -0, 2.5e1, true, false, null, \"x\\\"y\\n\"], \"c\": {}} ");
        assertEquals(Map.of("ab", Arrays.asList(1L, 0L, 25.0, true, false, null, "x\"y\n"), "c", Map.of()), doc);
        assertEquals(new BigInteger("92233720368547758070"), Json.parse("92233720368547758070"));
        assertEquals(List.of(), Json.parse("[]"));
    }

    @Test
    void refusesWhatJsonDoesNotAllowAndSaysWhere() {
        for (String bad : List.of("", "01", "[1,]", "{\"a\":1,}", "{'a':1}", "NaN", "[1] 2", "\"a\tb\"", "-", "1.",
            "{\"a\" 1}", "[\"\\x\"]", "tru")) {
            Json.JsonException err = assertThrows(Json.JsonException.class, () -> Json.parse(bad), bad);
            assertTrue(err.getMessage().contains("(char "), err.getMessage());
        }
        Json.JsonException duplicate = assertThrows(Json.JsonException.class, () -> Json.parse("{\"a\":1, \"a\":2}"));
        assertEquals("duplicate key 'a' (char 8)", duplicate.getMessage());
        String deep = "[".repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1);
        assertTrue(assertThrows(Json.JsonException.class, () -> Json.parse(deep)).getMessage().contains("nested"));
    }
}
