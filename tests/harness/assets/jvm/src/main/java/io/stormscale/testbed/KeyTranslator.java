package io.stormscale.testbed;

import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.storm.kafka.spout.RecordTranslator;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Values;

/**
 * What Storm's KafkaSpout emits for a record on the test bed: one field, "n" (the field every
 * RateSpout and CpuBolt stream carries), holding the record's key. The load generator's keys are
 * consecutive integers as decimal strings, so a sink that records its inputs' first value shows which
 * records reached it. Flux: a component {@code className: "io.stormscale.testbed.KeyTranslator"}
 * passed to {@code KafkaSpoutConfig.Builder#setRecordTranslator}.
 */
public class KeyTranslator implements RecordTranslator<String, String> {
    private static final long serialVersionUID = 1L;
    private static final Fields FIELDS = new Fields("n");

    @Override
    public List<Object> apply(ConsumerRecord<String, String> record) {
        return new Values(record.key());
    }

    @Override
    public Fields getFieldsFor(String stream) {
        return FIELDS;
    }
}
