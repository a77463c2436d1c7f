package io.stormscale.scheduler;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The placements the operator delivered through the scheduler's endpoint, per topology id: the newest
 * and the one before it (a placement for the executors a rebalance is about to create arrives before
 * the rebalance; until Storm runs those executors the previous placement still describes the topology).
 *
 * <p>A placement delivered here changes nothing in the topology's conf, so no Supervisor updates the
 * topology's blobs and only the workers whose executors change restart. Each placement is kept in a
 * file of the store's folder ({@code <id>.json}, the one before it {@code <id>.previous.json}), written
 * to a temporary file first and moved into place, so a Nimbus restart finds what was last delivered.
 */
final class PlacementStore {
    private static final Logger LOG = LoggerFactory.getLogger(PlacementStore.class);
    /** A Storm topology id ({@code name-counter-timestamp}): letters, digits, {@code - _ .}, no leading dot. */
    static final Pattern TOPOLOGY_ID = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}");
    private static final String NEWEST = ".json";
    private static final String PREVIOUS = ".previous.json";

    /** Topology id -> its placements' texts, newest first (one or two). */
    private final Map<String, List<String>> texts = new HashMap<>();
    private final Path folder;

    /** A store kept in {@code folder} (created if missing), or in memory only when it is null. */
    PlacementStore(Path folder) {
        this.folder = folder;
        if (folder != null) {
            load();
        }
    }

    /**
     * Keep {@code text} as topology {@code id}'s newest placement (the newest until now becomes the
     * previous one, unless it is the same text).
     *
     * @throws PlacementException the id or the placement is invalid: nothing changes
     */
    synchronized void put(String id, String text) throws PlacementException, IOException {
        checkId(id);
        Placement.parse(text);
        List<String> now = texts.getOrDefault(id, Collections.emptyList());
        List<String> next = new ArrayList<>();
        next.add(text);
        if (!now.isEmpty() && !now.get(0).equals(text)) {
            next.add(now.get(0));
        } else if (now.size() > 1) {
            next.add(now.get(1));
        }
        if (folder != null) {
            write(folder.resolve(id + NEWEST), next.get(0));
            if (next.size() > 1) {
                write(folder.resolve(id + PREVIOUS), next.get(1));
            }
        }
        texts.put(id, next);
    }

    /** Topology {@code id}'s placements, newest first (empty: none delivered). */
    synchronized List<Placement> placements(String id) {
        List<Placement> out = new ArrayList<>();
        for (String text : texts.getOrDefault(id, Collections.emptyList())) {
            try {
                out.add(Placement.parse(text));
            } catch (PlacementException err) {
                LOG.warn("Stormscale scheduler: stored placement of {} no longer parses: {}", id, err.getMessage());
            }
        }
        return out;
    }

    /** The newest placement's text of topology {@code id}, or null. */
    synchronized String newest(String id) {
        List<String> mine = texts.get(id);
        return mine == null ? null : mine.get(0);
    }

    /** Forget topology {@code id}'s placements; true if there were any. */
    synchronized boolean remove(String id) {
        if (!TOPOLOGY_ID.matcher(id).matches()) {
            return false;
        }
        deleteFiles(id);
        return texts.remove(id) != null;
    }

    /** Forget the placements of every topology not in {@code running} (killed topologies). */
    synchronized void retain(Set<String> running) {
        for (String id : new ArrayList<>(texts.keySet())) {
            if (!running.contains(id)) {
                remove(id);
            }
        }
    }

    static void checkId(String id) throws PlacementException {
        if (id == null || !TOPOLOGY_ID.matcher(id).matches()) {
            throw new PlacementException("not a topology id: " + Placement.show(id));
        }
    }

    private void load() {
        try {
            Files.createDirectories(folder);
            try (DirectoryStream<Path> files = Files.newDirectoryStream(folder, "*" + NEWEST)) {
                for (Path file : files) {
                    String name = file.getFileName().toString();
                    if (name.endsWith(PREVIOUS)) {
                        continue;
                    }
                    String id = name.substring(0, name.length() - NEWEST.length());
                    if (!TOPOLOGY_ID.matcher(id).matches()) {
                        continue;
                    }
                    List<String> mine = new ArrayList<>();
                    mine.add(Files.readString(file, StandardCharsets.UTF_8));
                    Path previous = folder.resolve(id + PREVIOUS);
                    if (Files.exists(previous)) {
                        mine.add(Files.readString(previous, StandardCharsets.UTF_8));
                    }
                    texts.put(id, mine);
                }
            }
            LOG.info("Stormscale scheduler: {} delivered placement(s) read from {}", texts.size(), folder);
        } catch (IOException err) {
            LOG.warn("Stormscale scheduler: could not read the placements in {}: {}", folder, err.toString());
        }
    }

    private void deleteFiles(String id) {
        if (folder == null) {
            return;
        }
        for (String suffix : List.of(NEWEST, PREVIOUS)) {
            try {
                Files.deleteIfExists(folder.resolve(id + suffix));
            } catch (IOException err) {
                LOG.warn("Stormscale scheduler: could not delete {}{}: {}", id, suffix, err.toString());
            }
        }
    }

    private static void write(Path target, String text) throws IOException {
        Path partial = target.resolveSibling(target.getFileName() + ".partial");
        Files.writeString(partial, text, StandardCharsets.UTF_8);
        try {
            Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException err) {
            Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
