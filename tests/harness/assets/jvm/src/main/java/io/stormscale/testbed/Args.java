package io.stormscale.testbed;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * The components' command-line style parameters ({@code --rate 50 --reliable 1}), the same names and
 * values the multilang scripts take, so one Flux properties file serves both languages.
 */
final class Args implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String[] args;

    Args(String[] args, Set<String> known) {
        if (args.length % 2 != 0) {
            throw new IllegalArgumentException("expected --name value pairs: " + Arrays.toString(args));
        }
        for (int i = 0; i < args.length; i += 2) {
            if (!known.contains(args[i])) {
                throw new IllegalArgumentException("unknown option " + args[i] + "; known: " + known);
            }
        }
        this.args = args.clone();
    }

    String string(String name, String fallback) {
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return fallback;
    }

    double number(String name, double fallback) {
        return Double.parseDouble(string(name, Double.toString(fallback)));
    }

    /** {@code "to2=0.5,to3=0.5"} as streams and weights; empty: the default stream alone. */
    static List<WeightedStreams.Stream> streams(String spec) {
        List<WeightedStreams.Stream> streams = new ArrayList<>();
        for (String part : spec.split(",")) {
            if (!part.isBlank()) {
                String[] kv = part.split("=", 2);
                streams.add(new WeightedStreams.Stream(kv[0].trim(), Double.parseDouble(kv[1].trim())));
            }
        }
        if (streams.isEmpty()) {
            streams.add(new WeightedStreams.Stream("default", 1.0));
        }
        return streams;
    }
}
