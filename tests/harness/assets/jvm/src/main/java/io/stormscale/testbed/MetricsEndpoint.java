package io.stormscale.testbed;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import org.apache.storm.task.TopologyContext;

/**
 * One task's counters in Prometheus text format on 127.0.0.1:(free port), exactly as the multilang
 * scripts serve theirs (stormscale_multilang.py): labels topology, component and task, and, when the
 * topology conf names {@code stormscale.metrics.sd.dir}, a file_sd target file
 * {@code <topology>-<component>-<task>.json} there, so the test bed's Prometheus scrapes it and the
 * sample reader finds {@code stormscale_spout_offered_total} for JVM spouts too.
 */
final class MetricsEndpoint implements AutoCloseable {
    static final String SD_DIR_KEY = "stormscale.metrics.sd.dir";

    private record Series(String name, String type, String labels, DoubleSupplier value) { }

    private final Map<String, Series> series = new ConcurrentSkipListMap<>();
    private final Map<String, String> labels = new TreeMap<>();
    private final HttpServer server;
    private final Path target;

    MetricsEndpoint(Map<String, Object> conf, TopologyContext context) {
        labels.put("topology", String.valueOf(conf.getOrDefault("topology.name", "")));
        labels.put("component", context.getThisComponentId());
        labels.put("task", Integer.toString(context.getThisTaskId()));
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.createContext("/metrics", exchange -> {
            byte[] body = render().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        target = register(conf.get(SD_DIR_KEY));
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** A counter {@code name} with the task's labels (plus {@code stream} if not null). */
    AtomicLong counter(String name, String stream) {
        AtomicLong value = new AtomicLong();
        add(name, "counter", stream, value::get);
        return value;
    }

    /** A counter {@code name} whose value is read from {@code value} at each scrape. */
    void liveCounter(String name, LongSupplier value) {
        add(name, "counter", null, value::getAsLong);
    }

    void gauge(String name, double value) {
        add(name, "gauge", null, () -> value);
    }

    private void add(String name, String type, String stream, DoubleSupplier value) {
        Map<String, String> all = new TreeMap<>(labels);
        if (stream != null) {
            all.put("stream", stream);
        }
        StringBuilder text = new StringBuilder();
        all.forEach((k, v) -> text.append(text.length() == 0 ? "" : ",").append(k).append("=\"")
                .append(v.replace("\\", "\\\\").replace("\"", "\\\"")).append('"'));
        series.put(name + "{" + text + "}", new Series(name, type, text.toString(), value));
    }

    String render() {
        StringBuilder out = new StringBuilder();
        String typed = null;
        for (Series s : series.values()) {
            if (!s.name().equals(typed)) {
                out.append("# TYPE ").append(s.name()).append(' ').append(s.type()).append('\n');
                typed = s.name();
            }
            out.append(s.name()).append('{').append(s.labels()).append("} ")
                    .append(s.value().getAsDouble()).append('\n');
        }
        return out.toString();
    }

    private Path register(Object sdDir) {
        if (sdDir == null || sdDir.toString().isEmpty()) {
            return null;
        }
        String stem = labels.get("topology") + "-" + labels.get("component") + "-" + labels.get("task");
        Path dir = Path.of(sdDir.toString());
        Path file = dir.resolve(stem + ".json");
        Path tmp = dir.resolve("." + stem + ".tmp");
        String json = "[{\"targets\": [\"127.0.0.1:" + port() + "\"], \"labels\": {}}]";
        try {
            Files.createDirectories(dir);
            Files.writeString(tmp, json);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    @Override
    public void close() {
        server.stop(0);
        if (target != null) {
            try {
                Files.deleteIfExists(target);
            } catch (IOException e) {
                // a stale target only makes Prometheus report one dead endpoint
            }
        }
    }
}
