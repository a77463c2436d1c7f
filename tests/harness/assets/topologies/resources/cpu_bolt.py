"""CPU-bound multilang bolt: ``--cost-us`` microseconds of CPU per input tuple, then ``--selectivity``
output tuples per input (fractions carry over), spread over ``--streams`` by weight. A sink is this
bolt with selectivity 0. Outputs are anchored to the input and ask for no task ids.

Usage (Flux command): python3 cpu_bolt.py --cost-us 2000 --selectivity 1 [--streams to5=0.6,to6=0.4]
"""

import sys
import time

import storm
from stormscale_multilang import (
    Metrics,
    Selectivity,
    StreamChooser,
    burn_cpu,
    option,
    parse_streams,
    serve,
    task_labels,
)


class CpuBolt(storm.Bolt):
    def initialize(self, conf, context):
        argv = sys.argv[1:]
        self.cost_us = float(option(argv, "--cost-us", "0"))
        self.selectivity = Selectivity(float(option(argv, "--selectivity", "1")))
        self.chooser = StreamChooser(parse_streams(option(argv, "--streams", "")))
        self.metrics = Metrics(task_labels(conf, context))
        self.metrics.set("stormscale_bolt_cost_seconds", self.cost_us / 1e6)
        labels = self.metrics.labels
        serve(self.metrics, conf, "{}-{}-{}".format(labels["topology"], labels["component"], labels["task"]))

    def process(self, tup):
        started = time.thread_time()
        burn_cpu(self.cost_us)
        for _ in range(self.selectivity.outputs()):
            stream = self.chooser.next()
            storm.sendMsgToParent(
                {
                    "command": "emit",
                    "stream": stream,
                    "anchors": [tup.id],
                    "tuple": tup.values,
                    "need_task_ids": False,
                }
            )
            self.metrics.inc("stormscale_tuples_emitted_total", stream=stream)
        storm.ack(tup)
        self.metrics.inc("stormscale_tuples_received_total")
        self.metrics.inc("stormscale_busy_cpu_seconds_total", time.thread_time() - started)


CpuBolt().run()
