"""The benchmark scenarios the end-to-end test and the demo run (shared so that both show the same)."""

from __future__ import annotations

import dataclasses

from tests.harness.bed.stack import Scenario

#: The thesis's linear shape (its Table 6.1: 1 → 2 → 3 → 4) under a load that congests it.
#: One unit = a 200m pod; ``cost_us`` is CPU time per tuple, so a unit of 2 processes
#: 0.2 s / 8000 µs = 25 tuples/s, of 3 16/s and of 4 66/s, less the multilang and worker overhead
#: (kept small by costly tuples; the profile measures it). The spout offers 48/s and stays at one
#: unit (a source's rate is set outside the topology), so 3 is the bottleneck and three more units
#: have room to show. Storm's stats arrive every 5 s per executor, so 20 s steps hold four of them.
#: 2 KiB tuples keep each multilang pipe (64 KiB) to about 30 tuples, so bolts show their pace within
#: seconds of a (re)start. (16 KiB tuples starved a 200m pod: Nimbus timed out its heartbeats.)
CONGESTED_LINEAR = Scenario(
    shape="linear",
    name="e2e-linear",
    unit_cpu="200m",
    properties={
        "max.tasks": 4,
        "c1.tasks": 1,
        "c1.rate": 48,
        "c1.payload_bytes": 2048,
        # One tuple per nextTuple: a batch of 100 overshoots backpressure into the unbounded overflow
        # queue of a remote bolt, whose backlog then hides the spout for minutes after a rebalance.
        "c1.batch": 1,
        # Tuples carry message ids: see topology.max.spout.pending below.
        "c1.reliable": 1,
        "c2.cost_us": 8000,
        "c3.cost_us": 12500,
        "c4.cost_us": 3000,
    },
    storm_conf={
        # Flow control. Measured on this test bed (3 min per variant, 4 pods of 200m): Storm 2.8's
        # backpressure between workers did not hold the spout back: it emitted its 48/s while bolt
        # 2 executed 16-18/s, with load-aware shuffle or not and with one task per executor alike;
        # the excess piled up in the receiving worker's unbounded overflow queue (thousands of
        # tuples), which after a rebalance stalled the new spout for many minutes. Acked tuples and
        # a bound on those in flight hold every component to the bottleneck's pace (measured: 10.8-
        # 11.0/s everywhere) and keep queues to 50 tuples; ackers: one per initial worker.
        "topology.acker.executors": 4,
        "topology.max.spout.pending": 50,
        # Backpressure within seconds, not minutes (Storm's default queue holds 32768 tuples).
        "topology.executor.receive.buffer.size": 64,
        # Idle executors spin before they sleep; in a 200m pod that costs the bolt a share of its unit.
        "topology.bolt.wait.progressive.level2.count": 0,
        "topology.backpressure.wait.progressive.level2.count": 0,
        # A worker JVM (re)started in a 200m pod boots at a fifth of a core: C1 alone compiles what
        # a router of tuples needs at a fraction of C2's CPU. Supervisor and Nimbus wait longer for its
        # start (Storm's 120 s) and heartbeats (30 s) before they kill and relaunch or reassign it:
        # the topology's timeout overrides supervisor.worker.{start.,}timeout.secs and
        # nimbus.task.{timeout,launch}.secs (Storm 2 Config.TOPOLOGY_WORKER_TIMEOUT_SECS, ≤ 600).
        "worker.childopts": "-Xmx%HEAP-MEM%m -XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        "topology.worker.timeout.secs": 300,
        "supervisor.worker.start.timeout.secs": 300,
    },
    overrides=({"name": "1", "maxUnits": 1},),
    window="3m",
    step="20s",
    settle="60s",
)


#: The same congested linear shape with the project's JVM components (the common case: JVM bolts).
#: Costs per tuple are CPU time of the bolt's thread, so a 200m unit executes 0.2 s / cost tuples/s
#: less the worker's own overhead: 2 → 25/s, 3 → 16/s, 4 → 66/s per unit; the spout offers 48/s.
#: Expected course (backpressure model, ~85 % of a unit for the bolt): 3 is the bottleneck at ~13/s;
#: +1 unit on 3 makes 2 the bottleneck (~21/s); then 2, then 3 again. Storm settings as above, and:
#: At most 200 tuples in flight (not 50): JVM bolts keep up with backpressure without the unbounded
#: backlog the multilang ones built, and with 50 the pending bound, not the bottleneck, set the pace
#: at budget 3 (measured: 25.9/s with every bolt pod idle part of the time).
#: Idle and blocked executors sleep 10 ms between polls, not 1 ms: in a 200m pod the millisecond
#: polling of idle queues and of downstream backpressure cost ~25 % of the unit, more the more a
#: bolt waited (measured: bolt 2 used 174m at 12.7/s held back by bolt 3, 200m at 20.1/s saturated).
#: 12 tasks per bolt, so that 1, 2, 3 and 4 executors each get the same number of tasks: a shuffle
#: picks a *task*, so an executor's share of a component's input is its tasks' share (with 4 tasks
#: over 3 executors, one got 2/4 of the input and the component ran at 2 executors' pace; measured
#: budget 3: 6.0, 6.2 and 12.0 tuples/s, the sinks 24.8/s where 37 were planned). docs/planner.md.
#: Load-aware messaging off (``topology.disable.loadaware.messaging``): Storm's load-aware shuffle
#: (the default) split bolt 3's input 59/41 between its two equally fast executors, the one with
#: more input saturated and the other idle a fifth of its time (measured at budget 2: 18.6 tuples/s
#: against 23.0 with plain shuffle, which splits evenly). The model assumes an even split;
#: :data:`JVM_LINEAR_LOADAWARE` measures the default for the accuracy benchmark.
JVM_CONF = {
    **CONGESTED_LINEAR.storm_conf,
    "topology.max.spout.pending": 200,
    "topology.bolt.wait.progressive.level3.sleep.millis": 10,
    "topology.backpressure.wait.progressive.level3.sleep.millis": 10,
    "topology.spout.wait.progressive.level3.sleep.millis": 10,
    "topology.disable.loadaware.messaging": True,
}
JVM_PROPERTIES = {**CONGESTED_LINEAR.properties, "max.tasks": 12}
JVM_LINEAR = dataclasses.replace(
    CONGESTED_LINEAR, name="e2e-jvm-linear", language="jvm", storm_conf=JVM_CONF, properties=JVM_PROPERTIES
)
#: :data:`JVM_LINEAR` with Storm's default load-aware shuffle (for ``make accuracy``).
JVM_LINEAR_LOADAWARE = dataclasses.replace(
    JVM_LINEAR,
    name="e2e-jvm-linear-loadaware",
    storm_conf={**JVM_CONF, "topology.disable.loadaware.messaging": False},
)

#: A diamond (1 → {2, 3} → 4, the spout alternating its two streams) whose next budget depends on a
#: branch that is not saturated at the start: 3 (10 ms/tuple, ~17/s per unit) holds the spout, and
#: so branch 2, to its pace; 2 (6 ms/tuple, ~28/s per unit) runs at about 60 % busy; with one more
#: unit on 3, 2 becomes the bottleneck. The sink (2 ms/tuple) has room for both branches.
JVM_DIAMOND = dataclasses.replace(
    CONGESTED_LINEAR,
    shape="diamond",
    name="e2e-jvm-diamond",
    language="jvm",
    storm_conf=JVM_CONF,
    properties={
        **JVM_PROPERTIES,
        "c1.rate": 120,
        "c2.cost_us": 6000,
        "c3.cost_us": 10000,
        "c4.cost_us": 2000,
    },
)

#: How one bottleneck's throughput grows with its units: the linear shape with bolt 3 (12.5 ms per
#: tuple, ~12/s per unit measured) the only component that may scale (the spec caps 1, 2 and 4 at one
#: unit), bolt 2 and the sink cheap (2 and 1.5 ms: 3 stays the bottleneck at 4 units, ~50/s) and the
#: spout offering 80/s. Budgets 0 → 3 run bolt 3 at 1, 2, 3 and 4 units (12 tasks: each divides).
JVM_SCALING = dataclasses.replace(
    JVM_LINEAR,
    name="e2e-jvm-scaling",
    properties={**JVM_PROPERTIES, "c1.rate": 80, "c2.cost_us": 2000, "c4.cost_us": 1500},
    overrides=tuple({"name": c, "maxUnits": 1} for c in ("1", "2", "4")),
)

#: :data:`JVM_LINEAR` with a real source: spout "1" is Storm's KafkaSpout (at-least-once, offsets
#: committed to Kafka) reading a topic of 4 partitions from the stack's broker, as the group
#: ``e2e-jvm-kafka-linear``; "2".."4" are the same JVM CpuBolts at the same costs, 12 tasks each, and the
#: sink records every key it acks (:meth:`Stack.seen_keys`). The offered rate is no topology property:
#: it is what :meth:`Stack.load` produces (48/s congests it as the RateSpout's 48/s does). The spout
#: stays at one unit (one executor, one task: one consumer reads every partition); Storm settings are
#: :data:`JVM_CONF`'s (its ackers serve the KafkaSpout's at-least-once tracking too).
JVM_KAFKA_LINEAR = dataclasses.replace(
    JVM_LINEAR,
    shape="kafka-linear",
    name="e2e-jvm-kafka-linear",
    properties={k: v for k, v in JVM_PROPERTIES.items() if not k.startswith("c1.") or k == "c1.tasks"},
    source="kafka",
    topic="e2e-jvm-kafka-linear",
    partitions=4,
    load="48@60m",
)

#: Auto mode on a moving load (tests/harness/bed/moving_load.py): :data:`JVM_KAFKA_LINEAR` on a topic
#: of its own, profiled over 60 s windows at 10 s (the load changes within minutes; a rebalance's first
#: 30 s are dropped, which leaves the 5 steady steps a profile needs), so that Auto sees a step about
#: a window after it. Bolt 2 costs 5 ms a tuple here
#: (8 ms on the linear runs, where it read 19.5-23/s per unit: on the edge of the high load's planned
#: demand, so that whether Auto took one step or two depended on how busy bolt 2 read); bolt 3 reads
#: 12-13.6/s per unit, the sink ~55/s; spout "1" stays at one unit.
JVM_KAFKA_AUTO = dataclasses.replace(
    JVM_KAFKA_LINEAR,
    properties={**JVM_KAFKA_LINEAR.properties, "c2.cost_us": 5000},
    name="e2e-jvm-kafka-auto",
    topic="e2e-jvm-kafka-auto",
    window="60s",
    step="10s",
    settle="30s",
    max_age="30s",
    load="",  # the moving load's own schedule
)

#: By name, for the accuracy report's ``--scenario``.
SCENARIOS = {
    "multilang-linear": CONGESTED_LINEAR,
    "jvm-linear": JVM_LINEAR,
    "jvm-linear-loadaware": JVM_LINEAR_LOADAWARE,
    "jvm-diamond": JVM_DIAMOND,
    "jvm-scaling": JVM_SCALING,
    "jvm-kafka-linear": JVM_KAFKA_LINEAR,
}
