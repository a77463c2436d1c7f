package io.stormscale.testbed;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
 */
public class CpuBolt extends BaseRichBolt {
    private static final long serialVersionUID = 1L;
    private static final Set<String> OPTIONS = Set.of("--cost-us", "--selectivity", "--streams");

    private final long costNanos;
    private final double selectivity;
    private final WeightedStreams streams;

    private transient OutputCollector collector;
    private transient ThreadMXBean threads;
    private transient double carry;

    /** Flux: {@code constructorArgs: [["--cost-us", "2500", "--selectivity", "1"]]}. */
    public CpuBolt(String[] args) {
        Args a = new Args(args, OPTIONS);
        costNanos = Math.round(a.number("--cost-us", 0) * 1000);
        selectivity = a.number("--selectivity", 1);
        streams = new WeightedStreams(Args.streams(a.string("--streams", "")));
    }

    @Override
    public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
        this.collector = collector;
        threads = ManagementFactory.getThreadMXBean();
        if (!threads.isCurrentThreadCpuTimeSupported()) {
            throw new IllegalStateException("this JVM cannot read a thread's CPU time");
        }
        threads.setThreadCpuTimeEnabled(true);
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
        collector.ack(input);
    }

    @Override
    public void declareOutputFields(OutputFieldsDeclarer declarer) {
        streams.declare(declarer);
    }
}
