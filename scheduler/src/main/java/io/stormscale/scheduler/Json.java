package io.stormscale.scheduler;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) for the placement: objects become {@link LinkedHashMap}s (a key given
 * twice is an error), arrays {@link List}s, integers without fraction or exponent {@link Long} (or
 * {@link BigInteger} past its range), other numbers {@link Double}, and strings, booleans and null as
 * Java's. Our own few lines rather than one of the JSON libraries Nimbus happens to ship: those differ
 * between Storm releases and accept what the format refuses (duplicate keys, NaN).
 */
final class Json {
    /** How deep arrays and objects may nest: the placement needs 4 levels. */
    static final int MAX_DEPTH = 64;

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** The value {@code text} holds (and nothing after it but whitespace). */
    static Object parse(String text) throws JsonException {
        Json reader = new Json(text);
        reader.skipSpace();
        Object value = reader.value(0);
        reader.skipSpace();
        if (reader.at < text.length()) {
            throw reader.error("extra data after the value");
        }
        return value;
    }

    /** Why a text is not JSON, with the offset where reading stopped. */
    static final class JsonException extends Exception {
        private static final long serialVersionUID = 1L;

        JsonException(String message) {
            super(message);
        }
    }

    private JsonException error(String what) {
        return new JsonException(what + " (char " + at + ")");
    }

    private void skipSpace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            at++;
        }
    }

    private Object value(int depth) throws JsonException {
        if (at >= text.length()) {
            throw error("expecting a value");
        }
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object(depth + 1);
            case '[':
                return array(depth + 1);
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("expecting a value");
        }
    }

    private Object literal(String word, Object value) throws JsonException {
        if (!text.startsWith(word, at)) {
            throw error("expecting a value");
        }
        at += word.length();
        return value;
    }

    private Map<String, Object> object(int depth) throws JsonException {
        if (depth > MAX_DEPTH) {
            throw error("nested more than " + MAX_DEPTH + " levels");
        }
        Map<String, Object> map = new LinkedHashMap<>();
        at++;
        skipSpace();
        if (at < text.length() && text.charAt(at) == '}') {
            at++;
            return map;
        }
        while (true) {
            skipSpace();
            if (at >= text.length() || text.charAt(at) != '"') {
                throw error("expecting a key in double quotes");
            }
            int keyAt = at;
            String key = string();
            if (map.containsKey(key)) {
                at = keyAt;
                throw error("duplicate key '" + key + "'");
            }
            skipSpace();
            expect(':');
            skipSpace();
            map.put(key, value(depth));
            skipSpace();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect('}');
            return map;
        }
    }

    private List<Object> array(int depth) throws JsonException {
        if (depth > MAX_DEPTH) {
            throw error("nested more than " + MAX_DEPTH + " levels");
        }
        List<Object> list = new ArrayList<>();
        at++;
        skipSpace();
        if (at < text.length() && text.charAt(at) == ']') {
            at++;
            return list;
        }
        while (true) {
            skipSpace();
            list.add(value(depth));
            skipSpace();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect(']');
            return list;
        }
    }

    private void expect(char c) throws JsonException {
        if (at >= text.length() || text.charAt(at) != c) {
            throw error("expecting '" + c + "'");
        }
        at++;
    }

    private String string() throws JsonException {
        StringBuilder out = new StringBuilder();
        at++;
        while (true) {
            if (at >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(at++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                at--;
                throw error("control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (at >= text.length()) {
                throw error("unterminated string");
            }
            char e = text.charAt(at++);
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    if (at + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    } catch (NumberFormatException err) {
                        throw error("bad \\u escape");
                    }
                    at += 4;
                    break;
                default:
                    at--;
                    throw error("bad escape");
            }
        }
    }

    /** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    private Object number() throws JsonException {
        int start = at;
        if (text.charAt(at) == '-') {
            at++;
        }
        if (at < text.length() && text.charAt(at) == '0') {
            at++;
        } else if (!digits()) {
            throw error("expecting digits");
        }
        boolean integral = true;
        if (at < text.length() && text.charAt(at) == '.') {
            at++;
            integral = false;
            if (!digits()) {
                throw error("expecting digits after '.'");
            }
        }
        if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
            at++;
            integral = false;
            if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) {
                at++;
            }
            if (!digits()) {
                throw error("expecting digits in the exponent");
            }
        }
        String number = text.substring(start, at);
        if (!integral) {
            return Double.parseDouble(number);
        }
        BigInteger big = new BigInteger(number);
        return big.bitLength() < 64 ? (Object) big.longValue() : big;
    }

    private boolean digits() {
        int start = at;
        while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
            at++;
        }
        return at > start;
    }
}
