"""End to end on the whole test bed: budgets rise step by step; throughput follows as predicted.

Everything is real: the API server, the operator (``kopf run`` in its own process, default ports),
Storm with one Supervisor per worker pod in a cgroup whose CPU quota is the pod's CPU limit, the pods'
CPU scraped from the pod runner's ``/metrics/cadvisor`` as from a kubelet, the exporter, Prometheus,
the in-operator profiler, Kafka and PySpark, on one stack. Two runs with JVM bolts (the common case)
follow each other: budget steps on the shapes in :data:`SHAPES` (a diamond whose next budget depends
on a branch that is not saturated at the start, budget 0 → 1), then the Kafka-fed linear shape in
Auto mode on a moving load (below). Each budget is applied from a steady state; at each the test
records the measured sink throughput next to what every strategy predicted under both flow models
(the model accuracy report, also written to ``<run dir>/e2e-report-<shape>.json``) and asserts:

* at every budget step, the throughput the operator predicted for it (from the previous steady
  state's profile, under the flow model it ran) within the shape's ``prediction_tolerance`` of the
  measured one (:data:`PREDICTION_TOLERANCE`, wider where the step's new bottleneck was read while not
  saturated), and every state's fit within :data:`FIT_TOLERANCE`;
* every saturated worker pod received ≥ 90 % of its CPU quota while it was measured (else the bed,
  not the model, would be under test);
* throughput never falls by more than 10 % and ends at least ``min_gain`` times budget 0's;
* on the diamond's last state, the aggregation job (PySpark, and the local engine on the same files)
  fits the measured rate from the same rows the operator aggregated (the fleet path on real parts).

The scenarios give each bolt 12 tasks and turn Storm's load-aware shuffle off, so that a
component's executors share its input evenly, as the model assumes (docs/planner.md, Model): with 4
tasks and load-aware messaging, budgets 2 and 3 ran into a ceiling near 21 tuples/s (predictions +7 %
to +59 %); with 12 and plain shuffle the linear runs predicted every step within 9.2 % and fitted
every state within 6.1 %; the diamond's budget 1, whose new bottleneck is read at about 60 % busy,
between −21.4 % and +10.1 % (docs/evaluation.md).

Last, sizing and placement on real Storm (``make bench-target``'s path, asserted; marked ``sizing_bed``:
run by ``make e2e-sizing``, not by ``make test``, whose time budget its 5.5 minutes passed): the Kafka-fed
linear shape on pods of two slots under a load above its capacity; Auto with ``targetRate`` sizes it
(Exact) and SAM lays it out: the Deployment has the placement's pods, Nimbus runs exactly its layout
(per pod its workers, per worker each component's executors) and the sinks reach the target within
:data:`TARGET_TOLERANCE`; then one unit more with MultiLevel, at the level the status names, again
exactly as Nimbus runs it.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench import target as target_bench
from bench.accuracy_steps import Report, run_budget_steps
from stormscale.planner import FlowModel, parse_profile, throughput
from stormscale.storm.model import TopologyInfo
from tests.harness.bed.moving_load import LOAD, SCALING, TICK_S, AutoReport, run_moving_load
from tests.harness.bed.scenarios import JVM_DIAMOND, JVM_KAFKA_AUTO
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.bed.steady import aggregate_offline, sink_rate, wait_running
from tests.harness.process import new_run_dir
from tests.harness.prometheus import dashboard
from tests.harness.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.storm]

PREDICTION_TOLERANCE = 0.15
#: A prediction whose new bottleneck was not saturated when the plan was profiled rests on a capacity
#: read from a partly idle pod's CPU, which reads low on this bed: the diamond's budget 1 was predicted
#: −19.7 % (CI) and −21.4 % (the test alone) off the measured rate, its branch 2 read at 17.9 tuples/s
#: per unit at 60 % busy and 24.2 once saturated (docs/evaluation.md, "What still errs").
UNSATURATED_PREDICTION_TOLERANCE = 0.30
FIT_TOLERANCE = 0.10


@dataclass(frozen=True)
class Shape:
    """A scenario, the budgets it runs through and the least gain its last budget must show."""

    scenario: Scenario
    budgets: tuple[int, ...]
    min_gain: float
    prediction_tolerance: float = PREDICTION_TOLERANCE


#: The diamond: the unit goes to the saturated branch 3, and what it gains is set by branch 2, which
#: was not saturated when the plan was made (measured with the spout's tuples tracked, as the
#: scenario asks: 30.7 → 49.0 tuples/s, 1.60×, predicted 46.9; before the spout honoured
#: ``c1.reliable``, 31.2 → 53.1, and a second unit, to 2, reached 69.1). CI runs this one shape's
#: budget 0 → 1 (a step costs about 4.5 minutes, the Auto run below 13): the Kafka-fed linear shape,
#: budget 0 → 3 (measured: predictions −6.0 %, 0.0 %, −2.9 %, fits within 2.4 %), and the others run
#: in ``make accuracy``. Add a shape here (:data:`~tests.harness.bed.scenarios.SCENARIOS`) to run it
#: on the one stack.
SHAPES = {
    "diamond": Shape(
        JVM_DIAMOND, (0, 1), min_gain=1.4, prediction_tolerance=UNSATURATED_PREDICTION_TOLERANCE
    ),
}


@dataclass(frozen=True)
class Run:
    shape: Shape
    report: Report


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with Stack(new_run_dir("e2e-")) as s:
        s.start_operator()
        yield s


@pytest.fixture(scope="module", params=list(SHAPES))
def run(request: pytest.FixtureRequest, stack: Stack) -> Iterator[Run]:
    """One shape's budget steps on the shared stack; the bed is freed for the next shape after."""
    shape = SHAPES[request.param]
    scenario = shape.scenario
    stack.deploy(scenario)
    try:
        result = run_budget_steps(stack, scenario, shape.budgets)
        report_file = stack.run_dir / f"e2e-report-{request.param}.json"
        report_file.write_text(json.dumps(result.to_json(), indent=2, default=str))
        print("\n" + result.table())
        yield Run(shape, result)
    finally:
        stack.undeploy(scenario)


def test_each_budget_is_applied_to_pods_and_storm(run: Run) -> None:
    assert [step.budget for step in run.report.steps] == list(run.shape.budgets)
    for step in run.report.steps:
        assert step.status_units == step.storm_executors, f"budget {step.budget}"
        assert sum(step.storm_executors.values()) == len(run.shape.scenario.components) + step.budget
        assert step.replicas == sum(step.storm_executors.values())  # one slot per pod
        assert step.storm_workers == step.replicas
        assert step.events == 1  # exactly one Normal ScalingApplied event per applied budget


def test_every_saturated_pod_received_its_quota(run: Run) -> None:
    for step in run.report.steps:
        assert len(step.pods) == step.replicas, f"budget {step.budget}: not every pod was measured"
        assert not step.starved(), f"budget {step.budget}: saturated pods short of their quota"
    assert any(u.saturated for u in run.report.steps[0].pods.values())  # budget 0 has a bottleneck


def shown(run: Run) -> str:
    """The run's accuracy tables and its pods' CPU, for a failure's message: CI shows only that."""
    pods = "\n".join(
        f"budget {s.budget} pod {name}: {use}" for s in run.report.steps for name, use in s.pods.items()
    )
    return f"\n{run.report.table()}\n{pods}"


def test_measured_throughput_rises_with_the_budget(run: Run) -> None:
    measured = [step.measured for step in run.report.steps]
    assert all(m > 0 for m in measured)
    for before, after in itertools.pairwise(measured):
        assert after >= 0.9 * before, shown(run)  # never a real loss
    assert measured[-1] >= run.shape.min_gain * measured[0], shown(run)  # the units did much more


def test_the_operators_own_metrics_reach_prometheus(run: Run, stack: Stack) -> None:
    """The operator's metrics, scraped like any target (job ``stormscale-operator``), say what its
    status says: the last budget applied and the units per component."""
    scenario, last = run.shape.scenario, run.report.steps[-1]
    resource = f'stormtopology="{scenario.name}"'

    def value(promql: str) -> float | None:
        result = stack.prometheus.query(promql)
        return float(result[0]["value"][1]) if result else None

    wait_for(
        lambda: value(f"stormscale_topology_applied_budget{{{resource}}}") == last.budget,
        30,  # a scrape every 2 s, a timer pass every 5 s
        f"stormscale_topology_applied_budget{{{resource}}} == {last.budget}",
        every_s=2.0,
    )
    assert value(f"sum(stormscale_topology_units{{{resource}}})") == sum(last.status_units.values())
    assert value(f"stormscale_topology_ready{{{resource}}}") == 1
    assert (value('sum(stormscale_operator_passes_total{job="stormscale-operator"})') or 0) > 0


def errors(run: Run) -> tuple[dict[int, float], dict[int, float]]:
    """Per budget: the operator's predicted / measured − 1 (budgets > 0), the fit / measured − 1."""
    model = run.shape.scenario.flow_model.lower()
    steps, strategy = run.report.steps, run.report.strategy
    predicted = {s.budget: s.operator_predicted[strategy] / s.measured - 1 for s in steps[1:]}
    fitted = {s.budget: s.fitted[model] / s.measured - 1 for s in steps}
    return predicted, fitted


def test_every_step_is_predicted_and_fitted_within_the_tolerance(run: Run) -> None:
    predicted, fitted = errors(run)
    print(f"operator's prediction / measured - 1: { {b: f'{e:+.1%}' for b, e in predicted.items()} }")
    print(f"profile's fit / measured - 1: { {b: f'{e:+.1%}' for b, e in fitted.items()} }")
    tolerance = run.shape.prediction_tolerance
    assert all(abs(e) <= tolerance for e in predicted.values()), f"{predicted}{shown(run)}"
    assert all(abs(e) <= FIT_TOLERANCE for e in fitted.values()), f"{fitted}{shown(run)}"


def test_operator_predictions_are_recorded_for_every_strategy(run: Run) -> None:
    assert run.report.steps[1:], "no budget after the first: nothing was predicted"
    for step in run.report.steps[1:]:
        predicted = step.operator_predicted
        assert set(predicted) == {"stela", "predictive", "combined", "optimal", "best"}
        assert predicted["combined"] > 0
        assert predicted["best"] >= max(v for k, v in predicted.items() if k != "best") - 1e-6


def busy_sources(profile: dict[str, Any]) -> set[str]:
    """Where the bolts' busy time came from (``confidence.capacityPerUnit.source``)."""
    return {
        c["confidence"]["capacityPerUnit"]["source"] for c in profile["components"] if c["kind"] == "bolt"
    }


def estimates(profile: dict[str, Any]) -> dict[str, float]:
    """Every number the planner reads from a profile, keyed ``component.field[.child]``."""
    out: dict[str, float] = {}
    for c in profile["components"]:
        for key in ("units", "tasks", "outputPerUnit", "capacityPerUnit", "selectivity"):
            if key in c:
                out[f"{c['id']}.{key}"] = float(c[key])
        for child, fraction in c.get("children", {}).items():
            out[f"{c['id']}.children.{child}"] = float(fraction)
    return out


@pytest.mark.spark
@pytest.mark.parametrize("run", ["diamond"], indirect=True)
def test_the_spark_job_profiles_the_last_state_as_the_operator_does(
    stack: Stack, run: Run, tmp_path: Path
) -> None:
    """The fleet path on the same bed: the rows the operator's profiler aggregated over the window it
    found steady at the last step (the exporter's and the worker pods' CPU), in Parquet, through
    ``python -m stormscale.aggregation`` with PySpark and with the local engine: the profile fits the
    measured sink rate as the operator's did, busy time from the pods' CPU, task counts from Nimbus,
    and the two engines agree to 1e-4."""
    last = run.report.steps[-1]
    profiles = aggregate_offline(stack, run.shape.scenario, last.profiled_at, tmp_path, last.profile_window_s)
    spark, local = profiles["spark"], profiles["local"]
    model = parse_profile(spark)
    theta = throughput(model, model.units, FlowModel[run.shape.scenario.flow_model.upper()])
    print(f"spark: Θ {theta:.2f}/s at the running units; measured {last.measured:.2f}/s")
    assert abs(theta / last.measured - 1) <= FIT_TOLERANCE, (theta, last.measured)
    assert busy_sources(spark) == busy_sources(local) == {"pod-cpu"}
    assert {c["id"]: c.get("tasks") for c in spark["components"] if c["kind"] == "bolt"} == dict.fromkeys(
        ("2", "3", "4"), run.shape.scenario.properties["max.tasks"]
    )
    expected, got = estimates(spark), estimates(local)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-4), key


def test_report_is_written(stack: Stack, run: Run) -> None:
    shape = next(name for name, s in SHAPES.items() if s is run.shape)
    written = json.loads(Path(stack.run_dir / f"e2e-report-{shape}.json").read_text())
    assert [s["budget"] for s in written["steps"]] == list(run.shape.budgets)


# --- Auto mode on a moving load --------------------------------------------------------------------


@pytest.fixture(scope="module")
def auto(stack: Stack) -> Iterator[AutoReport]:
    """The Kafka-fed linear topology in Auto mode while its topic's load steps up ×2 and back down
    (:data:`~tests.harness.bed.moving_load.LOAD`), on the shared stack; the load ends once Auto has
    scaled in after the fall (the last thing asserted), not at the schedule's end."""
    stack.deploy(JVM_KAFKA_AUTO)
    try:
        report = run_moving_load(stack, JVM_KAFKA_AUTO, LOAD, SCALING, until_scaled_in=True)
        (stack.run_dir / "e2e-report-auto.json").write_text(
            json.dumps(report.to_json(), indent=2, default=str)
        )
        print("\n" + report.table())
        yield report
    finally:
        stack.undeploy(JVM_KAFKA_AUTO)


def test_auto_scales_out_within_a_cooldown_of_the_rise_and_catches_up_in_two_steps(auto: AutoReport) -> None:
    figures = auto.figures()
    assert (figures["desired_before_rise"] or 0) <= 0, figures  # the low load fits the baseline
    assert figures["scale_out_decided_s"] is not None, figures
    assert figures["scale_out_decided_s"] <= SCALING.cooldown_s, figures
    assert figures["converged_s"] is not None, figures  # the sinks keep up with the produced rate
    assert 1 <= figures["steps_before_converged"] <= 2, figures
    assert figures["peak_lag_s"] is not None, figures
    assert figures["peak_lag_s"] < auto.load.high_s, figures  # the lag stopped growing under the high load
    assert figures["drained_s"] is not None, figures  # and drained, before Auto scaled in


def test_auto_scales_in_only_after_the_scale_in_delay(auto: AutoReport) -> None:
    """After the fall Auto wants fewer units, waits scaleInDelay with that wish unbroken, then scales
    in; under the high load it never wanted to (its headroom holds)."""
    figures = auto.figures()
    assert figures["scale_in_decided_s"] is not None, figures
    assert figures["scale_in_wished_s"], figures
    assert all(w >= 0 for w in figures["scale_in_wished_s"]), figures  # no wish before the fall
    assert figures["scale_in_waited_s"] >= SCALING.scale_in_delay_s - TICK_S, figures
    assert figures["budgets_down"], figures
    assert figures["budgets_down"][-1] < max(figures["budgets_up"]), figures


def test_auto_loses_no_message(auto: AutoReport) -> None:
    assert auto.seen is not None
    assert auto.produced > 0
    assert not auto.seen.missing, f"{len(auto.seen.missing)} of {auto.produced} keys never reached the sink"


def test_every_dashboard_query_returns_data_from_the_test_bed(auto: AutoReport, stack: Stack) -> None:
    """The chart's Grafana dashboard against the test bed's Prometheus: every panel's query and every
    variable, sent as Grafana sends them (each variable on All, ``$__rate_interval`` 1m) over the time
    the stack ran, returns data. So the names and labels the dashboard expects are the ones the
    operator, the exporter and the Kafka exporter serve (and each condition it shows did happen:
    every run has Degraded/StaleMetrics passes while the rates are not yet steady after a deploy or an
    apply)."""
    board = dashboard.load()
    end = time.time()
    start = end - 2 * 3600  # Prometheus started with the stack; this spans all of it
    queries = [*dashboard.panel_queries(board), *dashboard.variable_queries(board)]
    empty = [
        q.where for q in queries if not stack.prometheus.query_range(dashboard.expand(q.expr), start, end, 30)
    ]
    assert not empty, f"{len(empty)} of {len(queries)} dashboard queries returned nothing: {empty}"


# --- Sizing for a target rate, SAM on pods of two slots, then MultiLevel's one more unit -------------

#: The Kafka-fed linear shape on worker pods of 2 slots (400m) under a fixed load above what the bed
#: can serve (as ``make bench-target`` runs it), on a topic and consumer group of its own.
SAM_TARGET = dataclasses.replace(
    JVM_KAFKA_AUTO,
    name="e2e-sam-target",
    topic="e2e-sam-target",
    window=target_bench.TARGET_WINDOW,
    load=target_bench.LOAD,
    slots_per_pod=2,
)
#: tuples/s: above the 2-slot baseline's ~26/s and within the bed's CPU for pods at the units it takes
#: (7 of 200m in 4 pods, measured 35-39/s with ``make bench-target``).
TARGET_RATE = 30.0
#: The sinks' rate must reach the target less this share (the sizing rounds units up, so it is above).
TARGET_TOLERANCE = 0.10
#: After Storm runs the sized layout: let the workers warm up, then count the sinks' executed tuples.
TARGET_SETTLE_S = 15.0
TARGET_MEASURE_S = 45.0
MULTILEVEL_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Placed:
    """One verified change: the operator's status, the Deployment's replicas and what Nimbus runs."""

    status: dict[str, Any]
    replicas: int
    info: TopologyInfo


@dataclass(frozen=True)
class TargetRun:
    sized: Placed
    rate: float
    grown: Placed


def worker_layout(info: TopologyInfo) -> list[list[dict[str, int]]]:
    """What Nimbus runs, as ``status.placement.layout`` writes a layout: per host (a worker pod) its
    workers (slots), each a component → executor count (Storm's ``__system`` aside: never placed);
    sorted, so that two layouts compare whatever their order."""
    slots: dict[str, dict[int, Counter[str]]] = {}
    for e in info.executors:
        if e.component != "__system":
            slots.setdefault(e.host, {}).setdefault(e.port, Counter())[e.component] += 1
    return canonical([[dict(c) for c in workers.values()] for workers in slots.values()])


def canonical(layout: list[list[dict[str, int]]]) -> list[list[dict[str, int]]]:
    """A layout (pods of workers of component counts) in one order."""

    def key(worker: dict[str, int]) -> list[tuple[str, int]]:
        return sorted(worker.items())

    pods = [sorted(pod, key=key) for pod in layout]
    return sorted(pods, key=lambda pod: [key(w) for w in pod])


def status_layout(status: dict[str, Any]) -> list[list[dict[str, int]]]:
    """``status.placement.layout``, as :func:`worker_layout` gives Nimbus's."""
    return canonical([[dict(w) for w in pod["workers"]] for pod in status["placement"]["layout"]])


def executors_per_component(info: TopologyInfo) -> dict[str, int]:
    return dict(Counter(e.component for e in info.user_executors()))


def placed(stack: Stack, scenario: Scenario, status: dict[str, Any]) -> Placed:
    """Once Storm runs the status's placement (as many workers, every executor reporting)."""
    workers = status["placement"]["workers"]
    wait_running(stack, scenario, workers)
    deployment = stack.plane.kubectl(
        "get", "deployment", scenario.deployment, "-n", stack.namespace, "-o", "json"
    )
    replicas = int(json.loads(deployment)["spec"]["replicas"])
    return Placed(status, replicas, stack.nimbus().topology_info(scenario.name))


def grown_by_one(budget: int) -> Callable[[dict[str, Any]], bool]:
    """The MultiLevel change to ``budget`` is applied and verified: one choice, nothing pending."""

    def done(status: dict[str, Any]) -> bool:
        placement = status.get("placement") or {}
        ready = target_bench.ready_condition(status)
        return (
            status.get("appliedBudget") == budget
            and not status.get("pending")
            and placement.get("strategy") == "MultiLevel"
            and ready.get("status") == "True"
        )

    return done


@pytest.fixture(scope="module")
def target_run(stack: Stack) -> Iterator[TargetRun]:
    """On the shared stack: the Kafka-fed linear topology at its baseline (4 pods of 2 slots, one worker
    each) under a load above its capacity; Auto with ``targetRate`` sizes it (Exact) and SAM lays it
    out (Ready/Applied); the sinks' rate is measured; then Manual one unit more with MultiLevel."""
    scenario = SAM_TARGET
    started = time.monotonic()
    stack.deploy(scenario)
    try:
        wait_running(stack, scenario, len(scenario.components))
        placement_port = stack.storm.endpoints.placement_port
        overhead = stack.pod_overhead.get(scenario.name, "0")
        resource = storm_topology(
            dataclasses.replace(scenario, placement="SAM"),
            stack.storm.endpoints.nimbus_port,
            stack.prometheus.url,
            0,
            overhead,
            placement_port=placement_port,
        )
        auto = {**resource["spec"]["scaling"], **target_bench.SCALING.spec()}
        auto.pop("budget")
        resource["spec"]["scaling"] = {**auto, "targetRate": TARGET_RATE, "sizing": "Exact"}
        stack.kubectl_apply(resource)
        strategy = target_bench.Strategy("Exact", "SAM", scenario.slots_per_pod)
        sized = placed(stack, scenario, target_bench.wait_sized(stack, scenario, strategy))
        time.sleep(TARGET_SETTLE_S)
        summary = stack.nimbus().topology(scenario.name)
        assert summary is not None
        rate = sink_rate(stack, scenario, summary.id, TARGET_MEASURE_S)[0].rate
        print(f"\nsized {sized.status['units']} on {sized.replicas} pods: sinks {rate:.1f}/s")

        budget = sized.status["appliedBudget"] + 1
        resource["spec"]["workers"]["placement"] = "MultiLevel"
        resource["spec"]["scaling"] = {
            "mode": "Manual",
            "budget": budget,
            "strategy": scenario.strategy,
            "flowModel": scenario.flow_model,
        }
        stack.kubectl_apply(resource)
        done = grown_by_one(budget)
        status = wait_for(
            lambda: s if done(s := stack.status(scenario)) else None,
            MULTILEVEL_TIMEOUT_S,
            f"MultiLevel: budget {budget} applied",
            every_s=5.0,
        )
        grown = placed(stack, scenario, status)
        print(f"grown: {grown.status['placement']['choices']} on {grown.replicas} pods")
        print(f"sized, measured and grown in {time.monotonic() - started:.0f} s (deploy included)")
        yield TargetRun(sized, rate, grown)
    finally:
        stack.undeploy(scenario)


@pytest.mark.sizing_bed
def test_auto_sizes_for_the_target_rate_and_the_sinks_reach_it(target_run: TargetRun) -> None:
    status = target_run.sized.status
    sizing = status["sizing"]
    assert (sizing["strategy"], sizing["targetRate"], sizing["applied"]) == ("exact", TARGET_RATE, True)
    assert status["units"] == sizing["units"]
    assert sizing["totalUnits"] > len(SAM_TARGET.components)  # the baseline's rate is below the target
    assert executors_per_component(target_run.sized.info) == status["units"]
    assert target_run.rate >= (1 - TARGET_TOLERANCE) * TARGET_RATE, (target_run.rate, sizing)


@pytest.mark.sizing_bed
def test_sam_lays_out_pods_of_two_slots_as_nimbus_runs_them(target_run: TargetRun) -> None:
    """The Deployment has the placement's pods, and Nimbus runs exactly its layout: per pod (a
    Supervisor's host) its workers, per worker the executors of each component (ackers included)."""
    run = target_run.sized
    placement = run.status["placement"]
    assert (placement["strategy"], placement["slotsPerPod"]) == ("SAM", 2)
    assert all(len(pod["workers"]) <= 2 for pod in placement["layout"])
    assert run.replicas == placement["pods"] == len(target_bench.hosting(run.info))
    assert worker_layout(run.info) == status_layout(run.status)


@pytest.mark.sizing_bed
def test_multilevel_adds_one_unit_at_its_level_as_nimbus_runs_it(target_run: TargetRun) -> None:
    """One unit more: the component the plan chose gets one executor (in a pod with headroom, a new
    worker or a new pod: the level the status names); Nimbus runs the new layout exactly."""
    before, after = target_run.sized, target_run.grown
    (choice,) = after.status["placement"]["choices"]
    component, level = choice["component"], choice["level"]
    expected = dict(before.status["units"])
    expected[component] += 1
    assert after.status["units"] == expected
    assert executors_per_component(after.info) == expected
    assert after.replicas == after.status["placement"]["pods"] == len(target_bench.hosting(after.info))
    assert after.replicas == before.replicas + (1 if level == "Pod" else 0), choice
    assert worker_layout(after.info) == status_layout(after.status)
