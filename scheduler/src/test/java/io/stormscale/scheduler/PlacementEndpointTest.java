package io.stormscale.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The endpoint on loopback: token, running topologies only, invalid placements, size cap. */
class PlacementEndpointTest {
    static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    static HttpResponse<String> call(int port, String method, String path, String token, String body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void onlyATokenHolderDeliversAndOnlyForARunningTopology(@TempDir Path dir) throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "s3cret\n");
        PlacementStore store = new PlacementStore(dir.resolve("store"));
        AtomicReference<Set<String>> running = new AtomicReference<>(null);
        PlacementEndpoint endpoint = PlacementEndpoint.start("127.0.0.1", 0, store, running::get, token);
        try {
            int port = endpoint.port();
            String path = PlacementEndpoint.PREFIX + "t-1-100";
            assertEquals(200, call(port, "GET", "/healthz", null, null).statusCode());
            assertEquals(503, call(port, "PUT", path, "s3cret", PlacementStoreTest.ONE).statusCode());
            running.set(Set.of("t-1-100"));
            assertEquals(401, call(port, "PUT", path, null, PlacementStoreTest.ONE).statusCode());
            assertEquals(401, call(port, "PUT", path, "wrong", PlacementStoreTest.ONE).statusCode());
            assertNull(store.newest("t-1-100"));
            assertEquals(404, call(port, "PUT", PlacementEndpoint.PREFIX + "other-2-2", "s3cret",
                PlacementStoreTest.ONE).statusCode());

            HttpResponse<String> bad = call(port, "PUT", path, "s3cret", "{\"version\": 2, \"pods\": []}");
            assertEquals(400, bad.statusCode());
            assertTrue(bad.body().startsWith(Placement.KEY), bad.body());
            assertEquals(413, call(port, "PUT", path, "s3cret", " ".repeat(PlacementEndpoint.MAX_BODY + 1)).statusCode());
            assertNull(store.newest("t-1-100"));

            assertEquals(204, call(port, "PUT", path, "s3cret", PlacementStoreTest.TWO).statusCode());
            assertEquals(PlacementStoreTest.TWO, store.newest("t-1-100"));
            HttpResponse<String> got = call(port, "GET", path, "s3cret", null);
            assertEquals(PlacementStoreTest.TWO, got.body());
            assertEquals(204, call(port, "DELETE", path, "s3cret", null).statusCode());
            assertEquals(404, call(port, "GET", path, "s3cret", null).statusCode());
            assertEquals(400, call(port, "GET", PlacementEndpoint.PREFIX + "..", "s3cret", null).statusCode());
        } finally {
            endpoint.stop();
        }
    }
}
