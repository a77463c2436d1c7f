"""Rate-controlled multilang spout: each task offers ``--rate / tasks`` tuples per second.

Offered tuples are due on a fixed clock; each ``next`` emits the due ones (up to ``--batch``). When
Storm stops calling ``next`` (backpressure, deactivation) the backlog grows; beyond ``--backlog-s``
seconds of it the excess is dropped and counted, as a real source without a buffer would. Emits ask
for no task ids (one message per tuple, no round trip) and are unanchored, unless ``--reliable 1``:
then each carries a message id, so Storm's ackers track it and ``topology.max.spout.pending`` bounds
the tuples in flight (acked and failed ones are counted; a failed tuple is not replayed).

With ``--payload-bytes N`` each tuple's one value is the sequence number followed by N bytes of
padding (bolts pass values on): a multilang process's stdin pipe then holds a few tuples, not
hundreds, so a bolt's ``execute`` blocks on its real pace from the start.

Usage (Flux command): python3 rate_spout.py --rate 100 [--streams to2=0.5,to3=0.5] [--payload-bytes 0]
    [--batch 100] [--reliable 0]
"""

import sys
import time

import storm
from stormscale_multilang import Metrics, StreamChooser, option, parse_streams, serve, task_count, task_labels


class RateSpout(storm.Spout):
    def initialize(self, conf, context):
        argv = sys.argv[1:]
        self.rate = float(option(argv, "--rate", "10")) / task_count(context)
        self.batch = int(option(argv, "--batch", "100"))
        self.padding = ":" + "x" * int(option(argv, "--payload-bytes", "0"))
        self.reliable = option(argv, "--reliable", "0") == "1"
        self.backlog_max = max(1, int(self.rate * float(option(argv, "--backlog-s", "1"))))
        self.chooser = StreamChooser(parse_streams(option(argv, "--streams", "")))
        self.metrics = Metrics(task_labels(conf, context))
        self.metrics.set("stormscale_spout_offered_rate", self.rate)
        self.started = time.monotonic()
        self.sent = 0
        self.dropped = 0
        self.seq = 0
        labels = self.metrics.labels
        serve(self.metrics, conf, "{}-{}-{}".format(labels["topology"], labels["component"], labels["task"]))

    def due(self):
        offered = int(self.rate * (time.monotonic() - self.started))
        self.metrics.set("stormscale_spout_offered_total", offered, kind="counter")
        backlog = offered - self.sent - self.dropped
        if backlog > self.backlog_max:
            self.metrics.inc("stormscale_spout_dropped_total", backlog - self.backlog_max)
            self.dropped += backlog - self.backlog_max
            backlog = self.backlog_max
        return min(backlog, self.batch)

    def value(self):
        return self.seq if len(self.padding) == 1 else str(self.seq) + self.padding

    def nextTuple(self):  # noqa: N802 (storm.py's name)
        count = self.due()
        for _ in range(count):
            stream = self.chooser.next()
            self.seq += 1
            message = {"command": "emit", "stream": stream, "tuple": [self.value()], "need_task_ids": False}
            if self.reliable:
                message["id"] = str(self.seq)
            storm.sendMsgToParent(message)
            self.metrics.inc("stormscale_tuples_emitted_total", stream=stream)
        self.sent += count
        if count == 0:
            time.sleep(min(0.002, 1.0 / self.rate) if self.rate > 0 else 0.002)

    def ack(self, id):
        self.metrics.inc("stormscale_spout_acked_total")

    def fail(self, id):
        self.metrics.inc("stormscale_spout_failed_total")


RateSpout().run()
