package io.stormscale.scheduler;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler's HTTP endpoint in Nimbus, through which the operator delivers placements without
 * touching the topology's conf (docs/scheduler.md, "Delivering a placement"):
 *
 * <pre>
 * PUT    /v1/placements/{topology id}   body: the placement's JSON   -> 204, 400 (why), 404 (not running)
 * GET    /v1/placements/{topology id}                                -> 200 the newest placement, 404
 * DELETE /v1/placements/{topology id}                                -> 204, 404
 * GET    /healthz                                                    -> 200
 * </pre>
 *
 * <p>With a token file, every call but {@code /healthz} needs {@code Authorization: Bearer <token>}
 * (the file is read at each call, so a rotated Secret takes effect at once). Bodies past {@link #MAX_BODY}
 * are refused (413). Every answer's body is one line of text.
 */
final class PlacementEndpoint {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementEndpoint.class);
    static final String PREFIX = "/v1/placements/";
    /** The largest placement accepted: 4 MiB holds 4,000 executors in 1,000 workers many times over. */
    static final int MAX_BODY = 4 << 20;

    private final HttpServer server;
    private final ExecutorService threads;

    private PlacementEndpoint(HttpServer server, ExecutorService threads) {
        this.server = server;
        this.threads = threads;
    }

    /**
     * Serve {@code store} on {@code host:port} (port 0: any free port); {@code running}: the topology ids
     * of the last scheduling round, or null before the first; {@code tokenFile}: null for no token.
     */
    static PlacementEndpoint start(String host, int port, PlacementStore store, Supplier<Set<String>> running,
                                   Path tokenFile) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 16);
        ExecutorService threads = Executors.newFixedThreadPool(2, r -> {
            Thread thread = new Thread(r, "stormscale-placement-endpoint");
            thread.setDaemon(true);
            return thread;
        });
        server.setExecutor(threads);
        server.createContext("/healthz", exchange -> answer(exchange, 200, "ok"));
        server.createContext(PREFIX, exchange -> {
            try {
                handle(exchange, store, running, tokenFile);
            } catch (RuntimeException err) {
                LOG.warn("Stormscale scheduler: placement endpoint: {}", err.toString());
                answer(exchange, 500, "internal error: " + err.getClass().getSimpleName());
            }
        });
        server.start();
        LOG.info("Stormscale scheduler: placement endpoint on {}:{} ({})", host, server.getAddress().getPort(),
            tokenFile == null ? "no token" : "token from " + tokenFile);
        return new PlacementEndpoint(server, threads);
    }

    /** The port it listens on. */
    int port() {
        return server.getAddress().getPort();
    }

    void stop() {
        server.stop(0);
        threads.shutdownNow();
    }

    private static void handle(HttpExchange exchange, PlacementStore store, Supplier<Set<String>> running,
                               Path tokenFile) throws IOException {
        if (!authorized(exchange, tokenFile)) {
            answer(exchange, 401, "a bearer token is required");
            return;
        }
        String id = exchange.getRequestURI().getPath().substring(PREFIX.length());
        try {
            PlacementStore.checkId(id);
        } catch (PlacementException err) {
            answer(exchange, 400, err.getMessage());
            return;
        }
        switch (exchange.getRequestMethod()) {
            case "GET": {
                String text = store.newest(id);
                answer(exchange, text == null ? 404 : 200, text == null ? "no placement for " + id : text);
                return;
            }
            case "DELETE":
                answer(exchange, store.remove(id) ? 204 : 404, "");
                return;
            case "PUT":
                put(exchange, store, running.get(), id);
                return;
            default:
                answer(exchange, 405, "PUT, GET or DELETE");
        }
    }

    private static void put(HttpExchange exchange, PlacementStore store, Set<String> running, String id)
        throws IOException {
        if (running == null) {
            answer(exchange, 503, "the scheduler has not run yet: try again in a few seconds");
            return;
        }
        if (!running.contains(id)) {
            answer(exchange, 404, "topology " + id + " is not running");
            return;
        }
        String body = readBody(exchange);
        if (body == null) {
            answer(exchange, 413, "a placement is at most " + MAX_BODY + " bytes");
            return;
        }
        try {
            store.put(id, body);
        } catch (PlacementException err) {
            answer(exchange, 400, err.getMessage());
            return;
        }
        LOG.info("Stormscale scheduler: placement of {} delivered ({} bytes)", id, body.length());
        answer(exchange, 204, "");
    }

    /** The request's body as UTF-8, or null past {@link #MAX_BODY}. */
    private static String readBody(HttpExchange exchange) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] chunk = new byte[65536];
        try (InputStream in = exchange.getRequestBody()) {
            int n;
            while ((n = in.read(chunk)) >= 0) {
                if (out.size() + n > MAX_BODY) {
                    return null;
                }
                out.write(chunk, 0, n);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** True without a token file, or when the request's bearer token equals the file's (trimmed). */
    static boolean authorized(HttpExchange exchange, Path tokenFile) throws IOException {
        if (tokenFile == null) {
            return true;
        }
        String header = exchange.getRequestHeaders().getFirst("Authorization");
        if (header == null || !header.startsWith("Bearer ")) {
            return false;
        }
        byte[] expected = Files.readString(tokenFile, StandardCharsets.UTF_8).trim().getBytes(StandardCharsets.UTF_8);
        byte[] given = header.substring("Bearer ".length()).trim().getBytes(StandardCharsets.UTF_8);
        return expected.length > 0 && MessageDigest.isEqual(expected, given);
    }

    private static void answer(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        if (status == 204) {
            exchange.sendResponseHeaders(204, -1);
        } else {
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
        exchange.close();
    }
}
