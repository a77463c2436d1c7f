"""The exporter's families from value objects: names, labels, types, what is left out."""

from __future__ import annotations

from prometheus_client.core import Metric

from stormscale.operator.exporter import names as n
from stormscale.operator.exporter.families import TopologyReport, storm_families
from stormscale.operator.storm.model import (
    ALL_TIME,
    TEN_MINUTES,
    Executor,
    Kind,
    StreamId,
    TopologyInfo,
    TopologySummary,
    WindowStats,
)

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
    for name in (n.EMITTED, n.TRANSFERRED, n.EXECUTED, n.ACKED, n.FAILED):
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
