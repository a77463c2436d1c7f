package io.stormscale.testbed;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;

/**
 * A CPU-bound bolt, the JVM twin of cpu_bolt.py: each input costs {@code --cost-us} microseconds of
 * this thread's CPU time (a busy spin on the thread CPU clock, so a CPU limit slows it down), then
 * {@code --selectivity} outputs follow on average: the fraction is carried over from input to input,
 * so 0.5 emits on every second input. Outputs are anchored to the input and spread over
 * {@code --streams} by weight; every input is acked (a no-op for unreliable tuples). A sink is this
 * bolt with selectivity 0.
 *
 * <p>With {@code --seen-dir DIR} each task appends every input's first value (a Kafka record's key,
 * say) as one line to {@code DIR/seen-<taskId>.txt}: one unbuffered write per tuple, made before the
 * tuple is acked, so a worker killed at any moment (a rebalance) has written every key it acked, and
 * a test can check that every produced key reached the sink (at least once: duplicates allowed).
 */
public class CpuBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private static final Set<String> OPTIONS =
        Set.of("--cost-us", "--selectivity", "--streams", "--seen-dir");

    private final long costNanos;
    private final double selectivity;
    private final WeightedStreams streams;
    private final String seenDir;

    private transient OutputCollector collector;
    private transient FileOutputStream seen;
    private transient ThreadMXBean threads;
    private transient double carry;

    /** Flux: {@code constructorArgs: [["--cost-us", "2500", "--selectivity", "1"]]}. */
    public CpuBolt(String[] args) {
        Args a = new Args(args, OPTIONS);
        costNanos = Math.round(a.number("--cost-us", 0) * 1000);
        selectivity = a.number("--selectivity", 1);
        streams = new WeightedStreams(Args.streams(a.string("--streams", "")));
        seenDir = a.string("--seen-dir", "");
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        threads = ManagementFactory.getThreadMXBean();
        if (!threads.isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("this JVM cannot read a thread's CPU time");
        }
        threads.setThreadCpuTimeEnabled(true);
        if (!seenDir.isEmpty()) {
            seen = openSeen(Path.of(seenDir), context.getThisTaskId());
        }
    }

    /** {@code dir/seen-<task>.txt}, opened for appending (the folder is created if missing). */
    private static FileOutputStream openSeen(Path dir, int task) {
        try {
            Files.createDirectories(dir);
            return new FileOutputStream(dir.resolve("seen-" + task + ".txt").toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the seen file in " + dir, e);
        }
    }

    /** Append the input's first value as one line, in one write (no buffer in between). */
    private void record(Tuple input) {
        byte[] line = (input.getValue(0) + "\n").getBytes(StandardCharsets.UTF_8);
        try {
            seen.write(line);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot record a seen key", e);
        }
    }

    /** Spin until this thread has used {@code nanos} more nanoseconds of CPU time. */
    private void burn(long nanos) {
        if (nanos <= 0) {
            return;
        }
        long end = threads.getCurrentThreadCpuTime() + nanos;
        while (threads.getCurrentThreadCpuTime() < end) {
            Thread.onSpinWait();
        }
    }

    @Override
    public void execute(Tuple input) {
        burn(costNanos);
        carry += selectivity;
        int outputs = (int) carry;
        carry -= outputs;
        for (int i = 0; i < outputs; i++) {
            collector.emit(streams.next(), input, input.getValues());
        }
        if (seen != null) {
            record(input);
        }
        collector.ack(input);
    }

    @Override
    public void cleanup() {
        if (seen != null) {
            try {
                seen.close();
            } catch (IOException e) {
                // the worker is going away; every line was written when its tuple was
            }
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        streams.declare(declarer);
    }
}
