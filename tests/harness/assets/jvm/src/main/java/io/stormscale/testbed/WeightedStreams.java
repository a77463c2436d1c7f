package io.stormscale.testbed;

import java.io.Serializable;
import java.util.List;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.tuple.Fields;

/**
 * Output streams chosen by smooth weighted round robin: over any window of emits each stream's share
 * follows its weight (as StreamChooser of the multilang scripts). Every stream has one field, "n".
 */
final class WeightedStreams implements Serializable {
    private static final long serialVersionUID = 1L;

    /** One output stream and its weight. */
    record Stream(String name, double weight) implements Serializable { }

    private final List<Stream> streams;
    private final double total;
    private final double[] credit;

    WeightedStreams(List<Stream> streams) {
        this.streams = List.copyOf(streams);
        this.total = streams.stream().mapToDouble(Stream::weight).sum();
        this.credit = new double[streams.size()];
    }

    /** The stream of the next tuple. */
    String next() {
        int best = 0;
        for (int i = 0; i < credit.length; i++) {
            credit[i] += streams.get(i).weight();
            if (credit[i] > credit[best]) {
                best = i;
            }
        }
        credit[best] -= total;
        return streams.get(best).name();
    }

    void declare(OutputFieldsDeclarer declarer) {
        for (Stream stream : streams) {
            declarer.declareStream(stream.name(), new Fields("n"));
        }
    }
}
