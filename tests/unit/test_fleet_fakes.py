"""The fleet benchmark's parts without a control plane, in seconds: the fake Nimbus decoded by the
real ``NimbusClient``, the fake Prometheus read by the real ``SampleReader``, the operator's real
profiler building a profile from both, the hanging server timing both clients out, and the
benchmark's own arithmetic and rendering (bench/fleet.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from bench import fleet as bench
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.adapters.profiler import prometheus_profiler
from stormscale.operator.ports import UnavailableError
from stormscale.planner import load_profile
from stormscale.storm import Endpoint, NimbusClient, NimbusUnavailableError, TopologyNotFoundError
from stormscale.storm.errors import RequestRejectedError
from stormscale.storm.model import RebalanceRequest
from stormscale.storm.placement import PLACEMENT_KEY, Placement, layout_problems, rebalance_request
from stormscale.storm.samples import Pod, PrometheusError, PrometheusUnavailableError, SampleReader, Window
from stormscale.storm.samples.queries import QUERIES
from tests.harness.fakes import nimbus as fake_nimbus
from tests.harness.fakes.hanging import HangingServer
from tests.harness.fakes.prometheus import FakePrometheus, parse_query
from tests.synthetic import samples as synthetic

LINEAR = load_profile(Path(__file__).parents[2] / "examples" / "profiles" / "thesis-linear.json")
NOW = 1_800_000_000.0
ORIGIN = NOW - 1200.0
SCENARIO = bench.scenario_of(0, 1, 1800.0)


@dataclass
class Clock:
    now: float = NOW

    def __call__(self) -> float:
        return self.now


@dataclass
class Fakes:
    clock: Clock
    fleet: fake_nimbus.Fleet
    client: NimbusClient
    prometheus_url: str


@pytest.fixture
def fakes() -> Iterator[Fakes]:
    clock = Clock()
    prometheus = FakePrometheus(clock)
    prometheus.add("t-000", synthetic.steady_series(LINEAR, SCENARIO), ORIGIN)
    with (
        fake_nimbus.serving(lambda port: fake_nimbus.Fleet("127.0.0.1", port, clock=clock)) as fleet,
        prometheus.serving() as url,
    ):
        fleet.submit("t-000", LINEAR, synthetic.tasks_of(LINEAR, SCENARIO), submitted_s=ORIGIN)
        yield Fakes(clock, fleet, NimbusClient(Endpoint("127.0.0.1", fleet.port), timeout_s=5), url)


def test_steady_series_are_the_rows_generate_writes() -> None:
    matrix = synthetic.steady_series(LINEAR, SCENARIO)
    table = synthetic.generate(LINEAR, SCENARIO)
    assert np.array_equal(matrix.values.reshape(-1), np.asarray(table.column("value")))
    assert list(table.column("metric").to_pylist()[:: len(matrix.times_s)]) == list(matrix.metric)


def test_nimbus_task_ranges_are_the_executor_labels_prometheus_serves() -> None:
    for tasks, executors in [(8, 1), (8, 3), (12, 5), (1, 1)]:
        ranges = fake_nimbus.task_ranges(3, tasks, executors)
        assert [f"[{a}-{b}]" for a, b in ranges] == synthetic.executor_ids(3, tasks, executors)


def test_the_fake_nimbus_answers_decode_with_the_real_client(fakes: Fakes) -> None:
    port = NimbusPort(fakes.client)
    state = port.describe("t-000")
    assert (state.status, dict(state.executors), dict(state.tasks)) == (
        "ACTIVE",
        {"1": 1, "2": 1, "3": 1, "4": 1},
        {"1": 8, "2": 8, "3": 8, "4": 8},
    )
    assert (state.workers, state.free_slots) == (4, 100 * 24 - 4)
    summary = fakes.client.topology("t-000")
    assert summary is not None
    structure = fakes.client.structure(summary.id)
    assert {cid: structure.children(cid) for cid in structure.components} == {
        "1": ("2",),
        "2": ("3",),
        "3": ("4",),
        "4": (),
    }
    page = fakes.client.topology_page(summary.id, "600")
    assert page.components["3"].executed == 250 * 600  # bolt 3 saturated at 250/s for 10 min
    info = fakes.client.topology_info("t-000")
    assert {e.host for e in info.executors} <= {fakes.fleet.host_of(i) for i in range(100)}
    assert {e.component for e in info.executors} == {"1", "2", "3", "4", "__acker", "__system"}
    with pytest.raises(TopologyNotFoundError):
        fakes.client.topology_info("t-999")


def test_a_rebalance_runs_the_new_executors_after_its_wait(fakes: Fakes) -> None:
    port = NimbusPort(fakes.client)
    port.rebalance("t-000", {"1": 1, "2": 1, "3": 3, "4": 1}, 6, 5)
    assert port.describe("t-000").status == "REBALANCING"
    assert fakes.fleet.requests == [
        fake_nimbus.Rebalanced(NOW, "t-000", {"1": 1, "2": 1, "3": 3, "4": 1}, 6)
    ]  # kept with its arrival on the fake's clock (bench/reaction.py)
    fakes.clock.now += 5
    state = port.describe("t-000")
    assert (state.status, dict(state.executors), state.workers) == (
        "ACTIVE",
        {"1": 1, "2": 1, "3": 3, "4": 1},
        6,
    )
    request = RebalanceRequest(wait_secs=0, workers=4, executors={"3": 9})  # 9 executors, 8 tasks
    with pytest.raises(RequestRejectedError, match="refused by Nimbus"):
        fakes.client.rebalance("t-000", request, validate=False)
    assert len(fakes.fleet.requests) == 1  # a refused request is not kept
    fakes.fleet.restart("t-000")
    assert dict(port.describe("t-000").executors) == {"1": 1, "2": 1, "3": 1, "4": 1}


def test_a_placement_rebalance_is_kept_and_run_as_placed(fakes: Fakes) -> None:
    placement = Placement.of([[{"1": 1, "__acker": 1}, {"2": 2}], [{"3": 3}], [{"4": 1}]], ["10.9.9.9"])
    fakes.client.rebalance("t-000", rebalance_request(placement, wait_secs=5))
    (request,) = fakes.fleet.requests
    assert request.conf_overrides == {PLACEMENT_KEY: placement.to_json()}
    assert (request.executors, request.workers) == ({"1": 1, "2": 2, "3": 3, "4": 1}, 4)
    fakes.clock.now += 5
    info = fakes.client.topology_info("t-000")
    assert layout_problems(placement, info) == []
    assert info.sched_status == f"placed as {PLACEMENT_KEY} says"
    assert {e.host for e in info.executors if e.component == "1"} == {"10.9.9.9"}
    short = Placement.of([[{"1": 1, "__acker": 1}, {"2": 1}], [{"3": 3}], [{"4": 1}]])
    with pytest.raises(RequestRejectedError, match="component '2': 1 executors placed, the topology has 2"):
        fakes.client.rebalance(
            "t-000", RebalanceRequest(workers=3, conf_overrides={PLACEMENT_KEY: short.to_json()})
        )
    fakes.client.rebalance(
        "t-000", RebalanceRequest(workers=3, conf_overrides={PLACEMENT_KEY: short.to_json()}), validate=False
    )
    info = fakes.client.topology_info("t-000")
    assert layout_problems(short, info) == ["component '2': 1 executors placed, the topology has 2"]
    assert info.sched_status.endswith("scheduled by DefaultScheduler")


def test_a_restarting_nimbus_is_unavailable_and_forgets_the_rebalances_in_their_wait(fakes: Fakes) -> None:
    port = NimbusPort(fakes.client)
    port.rebalance("t-000", {"1": 1, "2": 2, "3": 2, "4": 1}, 6, 5)
    fakes.fleet.down = True
    with pytest.raises(UnavailableError):
        port.describe("t-000")
    assert fakes.fleet.lose_in_flight() == ["t-000"]
    fakes.fleet.down = False
    fakes.clock.now += 10  # long past the wait: nothing runs it
    state = port.describe("t-000")
    assert (state.status, dict(state.executors), state.workers) == (
        "ACTIVE",
        {"1": 1, "2": 1, "3": 1, "4": 1},
        4,
    )
    assert [r.lost for r in fakes.fleet.requests] == [True]
    assert fakes.fleet.lose_in_flight() == []  # nothing in flight now


def test_a_nimbus_that_loses_rebalances_accepts_them_and_runs_what_it_ran(fakes: Fakes) -> None:
    port = NimbusPort(fakes.client)
    fakes.fleet.lose_next = 1
    port.rebalance("t-000", {"1": 1, "2": 2, "3": 2, "4": 1}, 6, 5)
    assert port.describe("t-000").status == "ACTIVE"
    port.rebalance("t-000", {"1": 1, "2": 2, "3": 2, "4": 1}, 6, 5)  # the next one runs
    fakes.clock.now += 5
    assert dict(port.describe("t-000").executors) == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert [r.lost for r in fakes.fleet.requests] == [True, False]


def test_the_fake_prometheus_answers_parse_with_the_real_reader(fakes: Fakes) -> None:
    reader = SampleReader(fakes.prometheus_url)
    window = Window(int(NOW) - 300, int(NOW), 10)
    rows = reader.read("t-000", window)
    matrix = synthetic.steady_series(LINEAR, SCENARIO)
    assert len(rows) == len(matrix.metric) * 31  # every series, 31 steps
    executed = sorted(r.value for r in rows if r.metric == "executed_total" and r.component == "3")
    k = round((NOW - ORIGIN) / 10)
    rows_3 = [i for i, m in enumerate(matrix.metric) if m == "executed_total" and matrix.component[i] == "3"]
    assert executed[-1] == matrix.values[rows_3[0], k]
    assert reader.newest("t-000") == NOW
    assert reader.read("t-999", window) == []
    assert reader.newest("t-999") is None
    pod = Pod("w-0", "10.0.0.1", "supervisor", 0.5)
    with pytest.raises(PrometheusError, match="answered 400"):  # cAdvisor's series are not served
        reader.pod_cpu("fleet", [pod], window)


def test_every_query_of_the_reader_is_understood() -> None:
    for query in QUERIES:
        parsed = parse_query(query.promql('a "quoted" name'))
        assert (parsed.series, parsed.topology) == (query.series, 'a "quoted" name')


def test_the_operator_s_profiler_builds_the_profile_from_the_fakes(fakes: Fakes) -> None:
    profiler = prometheus_profiler(fakes.prometheus_url, fakes.client, 10, 120)
    profiler = type(profiler)(profiler.samples, profiler.graphs, 10, 120, clock=fakes.clock)
    measured = profiler.profile("t-000", 300)
    capacities = {c.id: c.capacity_per_unit for c in measured.topology.components if c.capacity_per_unit}
    truth = {c.id: c.capacity_per_unit for c in LINEAR.components if c.capacity_per_unit}
    assert capacities == pytest.approx(truth, rel=0.02)
    offered = 500 * SCENARIO.offered_scale
    assert measured.throughput == pytest.approx(min(offered, 250), rel=0.02)  # bolt 3's capacity


def test_the_hanging_server_times_both_clients_out() -> None:
    with HangingServer() as hanging:
        started = time.monotonic()
        with pytest.raises(NimbusUnavailableError, match="timed out"):
            NimbusClient(Endpoint("127.0.0.1", hanging.port), timeout_s=0.3).topologies()
        with pytest.raises(PrometheusUnavailableError):
            SampleReader(f"http://127.0.0.1:{hanging.port}", timeout_s=0.3, retries=0).newest("t")
        assert time.monotonic() - started < 3
        assert hanging.accepted == 2


# --- the benchmark's arithmetic and rendering ------------------------------------------------------


def test_hanging_members_are_spread_and_alternate() -> None:
    members = bench.fleet(200, 10)
    hanging = [(i, m.hangs) for i, m in enumerate(members) if m.hangs]
    assert [i for i, _ in hanging] == list(range(0, 200, 20))
    assert [k for _, k in hanging] == ["nimbus", "prometheus"] * 5
    assert not any(m.hangs for m in bench.fleet(5, 0))


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (bench.percentile(values, 50), bench.percentile(values, 99), bench.percentile(values, 100)) == (
        50.0,
        99.0,
        100.0,
    )
    assert bench.percentile([3.0], 99) == 3.0


LOG = """\
[2026-01-01 00:00:00,000] kopf.objects         [INFO    ] [f/a] Handler 'on_spec' succeeded.
[2026-01-01 00:00:00,500] stormscale.operator  [INFO    ] [f/a] spec pass took 0.500 s: Ready True Applied
[2026-01-01 00:00:31,000] stormscale.operator  [INFO    ] [f/a] timer pass took 0.100 s: Ready True Applied
[2026-01-01 00:00:31,500] stormscale.operator  [INFO    ] [g/a] timer pass took 9.000 s: Ready True Applied
[2026-01-01 00:00:32,000] stormscale.operator  [INFO    ] [f/b] timer pass took 10.012 s: Ready False Nimbus
[2026-01-01 00:01:01,600] stormscale.operator  [INFO    ] [f/a] timer pass took 0.200 s: Ready True Applied
"""


def test_passes_are_read_from_the_operator_s_log_and_timer_lateness_from_their_gaps() -> None:
    passes = bench.parse_passes(LOG.splitlines(), "f")
    assert [(p.name, p.cause, p.took, p.end) for p in passes] == [
        ("a", "spec", 0.5, "Ready True Applied"),
        ("a", "timer", 0.1, "Ready True Applied"),
        ("b", "timer", 10.012, "Ready False Nimbus"),
        ("a", "timer", 0.2, "Ready True Applied"),
    ]
    assert passes[1].at - passes[0].at == pytest.approx(30.5)
    # timer passes of a only (the spec pass runs on its own schedule): 61.6 − 31.0 − 30 − 0.2
    assert bench.timer_lateness(passes, 30.0) == [pytest.approx(0.4)]


def test_time_to_ready_is_taken_from_the_status_and_only_when_applied() -> None:
    ready = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Applied",
                    "lastTransitionTime": "2026-01-01T00:00:17Z",
                }
            ]
        },
    }
    assert bench.time_to_ready(ready) == 17.0
    waiting = {
        "metadata": ready["metadata"],
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "RebalanceRequested",
                    "lastTransitionTime": "2026-01-01T00:00:01Z",
                }
            ]
        },
    }
    assert bench.time_to_ready(waiting) is None
    assert bench.time_to_ready({"metadata": ready["metadata"]}) is None


def test_the_table_the_comparison_and_the_plot_render(tmp_path: Path) -> None:
    a, b = bench.parse_passes(LOG.splitlines(), "f"), bench.Member("b", "nimbus")
    baseline = bench.Phase("baseline", [bench.Member("a")], 30.0, {"a": 20.0}, [a[0], a[1], a[3]])
    hanging = bench.Phase("hanging", [bench.Member("a"), b], 30.0, {"a": 40.0}, a, {"b": "NimbusUnavailable"})
    baseline.peak_rss_mib = hanging.peak_rss_mib = baseline.cpu_s = hanging.cpu_s = 1.0
    text = bench.table([baseline, hanging])
    assert "| baseline | 1 | 0 | 1/1 | 20.0 | 3 | 0.200 | 0.500 | 0.400 | 1 | 1 |" in text
    assert "| hanging | 2 | 1 | 1/1 | 40.0 | 3 | 0.200 | 0.500 | 0.400 | 1 | 1 |" in text
    comparison = bench.comparison(baseline, hanging)
    assert "time to all Ready 2.00×" in comparison
    assert "timer lateness p50/p99 0.400/0.400 s against 0.400/0.400 s" in comparison
    assert "starved (never Ready): none of 1" in comparison
    assert "1 passes, p50 10.0 s" in comparison
    assert "1 NimbusUnavailable" in comparison
    assert bench.plot([baseline, hanging], tmp_path).stat().st_size > 10_000
