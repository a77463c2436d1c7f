"""The exporter's families from value objects: names, labels, types, what is left out."""

from __future__ import annotations

from prometheus_client.core import Metric

from stormscale.storm import decode
from stormscale.storm.exporter import names as n
from stormscale.storm.exporter.families import TopologyReport, storm_families
from stormscale.storm.idl import NIMBUS
from stormscale.storm.model import (
    ALL_TIME,
    TEN_MINUTES,
    Executor,
    Kind,
    StreamId,
    TopologyInfo,
    TopologySummary,
    WindowStats,
)
from stormscale.storm.stats import busy_seconds
from tests.unit.operator.test_storm_pure import wire

IN = StreamId("s", "default")
SPOUT = Executor(
    "s",
    1,
    2,
    "h",
    6700,
    60,
    Kind.SPOUT,
    {ALL_TIME: WindowStats({"default": 10, "__metrics": 3}, {"default": 10}, 2, 1)},
)
BOLT = Executor(
    "b",
    3,
    3,
    "h",
    6700,
    100,
    Kind.BOLT,
    {
        ALL_TIME: WindowStats({}, {}, 0, 0, executed={IN: 9, StreamId("__system", "__tick"): 4}),
        TEN_MINUTES: WindowStats(executed={IN: 5000}, execute_ms_avg={IN: 4.0}, process_ms_avg={IN: 6.0}),
    },
)
NEW = Executor("b", 4, 5, "h", 6700, 0)  # not reported yet
ACKER = Executor("__acker", 6, 6, "h", 6700, 60, Kind.BOLT, {ALL_TIME: WindowStats({"default": 1})})
REPORT = TopologyReport(
    TopologySummary("t-1-1", "t", "ACTIVE", 2, 4, 6, 100),
    TopologyInfo("t-1-1", "t", "ACTIVE", 100, (SPOUT, BOLT, NEW, ACKER)),
)


def samples(families: list[Metric], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Samples of the family whose exposed sample name is ``name``."""
    return {tuple(sorted(s.labels.items())): s.value for f in families for s in f.samples if s.name == name}


def test_counters_are_counters_with_total_names() -> None:
    families = storm_families((REPORT,))
    kinds = {f.name: f.type for f in families}
    for name in (n.EMITTED, n.TRANSFERRED, n.EXECUTED, n.ACKED, n.FAILED, n.BUSY):
        assert kinds[name.removesuffix("_total")] == "counter"
    for name in (n.CAPACITY, n.EXECUTE_LATENCY, n.PROCESS_LATENCY, n.EXECUTORS, n.TASKS, n.WORKERS):
        assert kinds[name] == "gauge"


def test_per_stream_counters_leave_out_system_streams_and_components() -> None:
    families = storm_families((REPORT,))
    assert samples(families, n.EMITTED) == {
        (("component", "s"), ("executor", "[1-2]"), ("stream", "default"), ("topology", "t")): 10.0
    }
    assert samples(families, n.EXECUTED) == {
        (
            ("component", "b"),
            ("executor", "[3-3]"),
            ("source", "s"),
            ("stream", "default"),
            ("topology", "t"),
        ): 9.0
    }
    assert samples(families, n.ACKED) == {
        (("component", "s"), ("executor", "[1-2]"), ("topology", "t")): 2.0,
        (("component", "b"), ("executor", "[3-3]"), ("topology", "t")): 0.0,
    }


def test_gauges_per_bolt_executor_component_and_topology() -> None:
    families = storm_families((REPORT,))
    bolt = (("component", "b"), ("executor", "[3-3]"), ("topology", "t"))
    assert samples(families, n.CAPACITY) == {bolt: 5000 * 4.0 / 100_000}
    assert samples(families, n.PROCESS_LATENCY) == {bolt: 6.0}
    assert samples(families, n.EXECUTORS) == {
        (("component", "b"), ("topology", "t")): 2.0,
        (("component", "s"), ("topology", "t")): 1.0,
    }
    assert samples(families, n.TASKS) == {
        (("component", "b"), ("topology", "t")): 3.0,
        (("component", "s"), ("topology", "t")): 2.0,
    }
    assert samples(families, n.WORKERS) == {(("topology", "t"),): 2.0}


def test_no_topologies_gives_empty_families() -> None:
    assert all(not f.samples for f in storm_families(()))


def decoded_report(executed: int, latency_ms: float, uptime_s: int = 100) -> TopologyReport:
    """A report whose bolt executor went through the Thrift wire and the decoder, as from Nimbus.

    The bolt executed ``executed`` tuples from "s" (mean latency ``latency_ms``) and 40 tick tuples
    (0.25 ms) over all time; its 10-minute window says something else on purpose.
    """
    data = NIMBUS.GlobalStreamId(componentId="s", streamId="default")
    tick = NIMBUS.GlobalStreamId(componentId="__system", streamId="__tick")
    stats = NIMBUS.BoltStats(
        acked={ALL_TIME: {data: executed}},
        failed={ALL_TIME: {data: 0}},
        process_ms_avg={ALL_TIME: {data: latency_ms}, TEN_MINUTES: {data: 1.0}},
        executed={ALL_TIME: {data: executed, tick: 40}, TEN_MINUTES: {data: 20}},
        execute_ms_avg={ALL_TIME: {data: latency_ms, tick: 0.25}, TEN_MINUTES: {data: 1.0}},
    )
    executor_stats = NIMBUS.ExecutorStats(
        emitted={ALL_TIME: {}},
        transferred={ALL_TIME: {}},
        specific=NIMBUS.ExecutorSpecificStats(bolt=stats),
        rate=20.0,
    )
    summary = NIMBUS.ExecutorSummary(NIMBUS.ExecutorInfo(3, 3), "b", "h", 6700, uptime_s, executor_stats)
    raw = NIMBUS.TopologyInfo(
        id="t-1-1", name="t", uptime_secs=uptime_s, executors=[summary], status="ACTIVE"
    )
    return TopologyReport(
        TopologySummary("t-1-1", "t", "ACTIVE", 1, 1, 1, uptime_s), decode.topology_info(wire(raw))
    )


def test_busy_seconds_are_all_time_executed_times_latency_over_every_input_stream() -> None:
    # 1 000 tuples at 7.3 ms and 40 ticks at 0.25 ms: 7 300 + 10 ms = 7.31 s (the 10-minute window differs)
    families = storm_families((decoded_report(1_000, 7.3),))
    bolt = (("component", "b"), ("executor", "[3-3]"), ("topology", "t"))
    assert samples(families, n.BUSY) == {bolt: 7.31}
    assert samples(families, n.CAPACITY) == {bolt: 20 * 1.0 / 100_000}  # the gauge reads the "600" window
    assert samples(storm_families((REPORT,)), n.BUSY) == {bolt: 0.0}  # no all-time latency: no busy time


def test_busy_seconds_do_not_step_back_on_floating_point_noise() -> None:
    # 10 sampled tuples (×20) took 3 ms in all; then one more took 0 ms. The busy time is 60 ms both
    # times, but the raw products are 60.0 and 59.999…: a counter reader would see a reset.
    before = WindowStats(executed={IN: 200}, execute_ms_avg={IN: 3 / 10})
    after = WindowStats(executed={IN: 220}, execute_ms_avg={IN: 3 / 11})
    assert 220 * (3 / 11) < 200 * (3 / 10)
    assert busy_seconds(before) == busy_seconds(after) == 0.06


def test_spouts_have_no_busy_seconds() -> None:
    families = storm_families((REPORT,))
    assert {dict(k)["component"] for k in samples(families, n.BUSY)} == {"b"}
