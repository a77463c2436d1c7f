package io.stormscale.testbed;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Values;

/**
 * A rate-controlled spout, the JVM twin of rate_spout.py: each task offers {@code --rate / tasks}
 * tuples per second from a token bucket that fills on the clock and holds at most {@code --backlog-s}
 * seconds of tuples; each {@code nextTuple} emits what the bucket holds, up to {@code --batch}. While
 * Storm does not call {@code nextTuple} (backpressure, max spout pending, deactivation) tokens keep
 * coming: they are offered all the same ({@code stormscale_spout_offered_total}), and what overflows
 * the bucket is dropped and counted, as a source without a buffer would. With {@code --reliable 1}
 * tuples carry message ids, so ackers track them and {@code topology.max.spout.pending} bounds them;
 * failed tuples are counted, not replayed. Tuples have one field, "n": the sequence number, or a
 * string of it and {@code --payload-bytes} of padding. {@code --streams to2=0.5,to3=0.5} spreads them
 * over named streams by weight.
 */
public class RateSpout extends BaseRichSpout {
    private static final long serialVersionUID = 1L;
    private static final Set<String> OPTIONS =
            Set.of("--rate", "--payload-bytes", "--batch", "--reliable", "--backlog-s", "--streams");

    private final double totalRate;
    private final int payloadBytes;
    private final int batch;
    private final boolean reliable;
    private final double backlogSeconds;
    private final WeightedStreams streams;

    private transient SpoutOutputCollector collector;
    private transient MetricsEndpoint metrics;
    private transient AtomicLong dropped;
    private transient AtomicLong acked;
    private transient AtomicLong failed;
    private transient Map<String, AtomicLong> emitted;
    private transient double rate;
    private transient long backlogMax;
    private transient long started;
    private transient long sent;
    private transient long seq;
    private transient String padding;

    /** Flux: {@code constructorArgs: [["--rate", "50", "--reliable", "1", ...]]}. */
    public RateSpout(String[] args) {
        Args a = new Args(args, OPTIONS);
        totalRate = a.number("--rate", 10);
        payloadBytes = (int) a.number("--payload-bytes", 0);
        batch = (int) a.number("--batch", 100);
        reliable = a.string("--reliable", "0").equals("1");
        backlogSeconds = a.number("--backlog-s", 1);
        streams = new WeightedStreams(Args.streams(a.string("--streams", "")));
    }

    @Override
    public void open(Map<String, Object> conf, TopologyContext context, SpoutOutputCollector collector) {
        this.collector = collector;
        rate = totalRate / context.getComponentTasks(context.getThisComponentId()).size();
        backlogMax = Math.max(1, (long) (rate * backlogSeconds));
        padding = payloadBytes > 0 ? ":" + "x".repeat(payloadBytes) : null;
        started = System.nanoTime();
        metrics = new MetricsEndpoint(conf, context);
        metrics.gauge("stormscale_spout_offered_rate", rate);
        // read at each scrape, so it keeps counting while Storm does not call nextTuple
        metrics.liveCounter("stormscale_spout_offered_total", this::offered);
        dropped = metrics.counter("stormscale_spout_dropped_total", null);
        acked = metrics.counter("stormscale_spout_acked_total", null);
        failed = metrics.counter("stormscale_spout_failed_total", null);
        emitted = new HashMap<>();
    }

    /** Tuples offered since {@code open}: every token the bucket was given. */
    private long offered() {
        return (long) (rate * (System.nanoTime() - started) / 1e9);
    }

    /** Tuples due now: the bucket's content (after dropping its overflow), at most one batch. */
    private long due() {
        long backlog = offered() - sent - dropped.get();
        if (backlog > backlogMax) {
            dropped.addAndGet(backlog - backlogMax);
            backlog = backlogMax;
        }
        return Math.min(backlog, batch);
    }

    @Override
    public void nextTuple() {
        long count = due();
        for (long i = 0; i < count; i++) {
            String stream = streams.next();
            seq++;
            Values values = new Values(padding == null ? (Object) seq : seq + padding);
            if (reliable) {
                collector.emit(stream, values, seq);
            } else {
                collector.emit(stream, values);
            }
            emitted.computeIfAbsent(stream, s -> metrics.counter("stormscale_tuples_emitted_total", s))
                    .incrementAndGet();
        }
        sent += count;
    }

    @Override
    public void ack(Object msgId) {
        acked.incrementAndGet();
    }

    @Override
    public void fail(Object msgId) {
        failed.incrementAndGet();
    }

    @Override
    public void close() {
        if (metrics != null) {
            metrics.close();
        }
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        streams.declare(declarer);
    }
}
