"""Budget steps on a live stack, and the model accuracy report: predicted against measured throughput.

For each budget: apply it through the StormTopology, wait for the operator to report it applied and
for Storm to run it, let it settle, then measure the sinks' executed tuples/s from Nimbus's own
counters (independent of Prometheus and of the profile). At that steady state the profile is taken
again with the operator's own profiler; from it come (a) the *fit*: the throughput each flow model
gives for the allocation that runs now, and (b) the *prediction* for the next budget: every strategy's
plan under each flow model, before it is applied.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stormscale.operator.adapters.profiler import NimbusGraphs, PrometheusProfiler
from stormscale.operator.policy import parse_spec
from stormscale.operator.ports import MeasuredProfile, StaleMetricsError
from stormscale.operator.reconcile import planning_model
from stormscale.planner import FlowModel, Strategy, compare_strategies, throughput
from stormscale.storm.model import ALL_TIME
from stormscale.storm.samples.reader import SampleReader
from tests.harness.measure import SinkCounter, rate_over
from tests.harness.stack import Scenario, Stack, storm_topology, wait_for

MEASURE_S = 90.0
PROFILE_TIMEOUT_S = 300.0
MODELS = (FlowModel.BACKPRESSURE, FlowModel.DROP)


@dataclass
class Step:
    """One applied budget: what runs, what was measured, what was predicted for it."""

    budget: int
    status_units: dict[str, int]
    storm_executors: dict[str, int]
    storm_workers: int
    replicas: int
    events: int
    measured: float
    allocation: dict[str, int]
    operator_predicted: dict[str, float]
    #: flow model → strategy → Θ predicted for this budget from the previous steady state's profile.
    predicted: dict[str, dict[str, float]] = field(default_factory=dict)
    #: flow model → Θ of this step's own profile at the allocation that runs (how well the model fits).
    fitted: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Report:
    scenario: str
    steps: list[Step]
    #: the strategy the operator ran (its predictions are the ones the measured rate can check).
    strategy: str = Strategy.COMBINED.value

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "strategy": self.strategy,
            "steps": [asdict(s) for s in self.steps],
        }

    def table(self) -> str:
        """Both tables of the model accuracy report, one after the other."""
        return self.prediction_table() + "\n\n" + self.fit_table()

    def prediction_table(self) -> str:
        """Per budget and flow model: Θ each strategy predicted before the budget was applied (from
        the previous steady state's profile), the sinks' measured rate once it ran, and the error of
        the strategy that ran (``scenario.strategy``: the operator's choice)."""
        strategies = [s.value for s in Strategy]
        head = "| budget | units added | measured/s | flow model | " + " | ".join(strategies) + " | error |"
        lines = [head, "|" + "---|" * (5 + len(strategies))]
        for s in self.steps:
            alloc = ", ".join(f"{c}+{n}" for c, n in sorted(s.allocation.items()) if n) or "–"
            for m in MODELS:
                pred = s.predicted.get(m.value, {})
                cells = " | ".join(_num(pred.get(name)) for name in strategies)
                err = _error(pred.get(self.strategy), s.measured)
                lines.append(f"| {s.budget} | {alloc} | {s.measured:.1f} | {m.value} | {cells} | {err} |")
        return "\n".join(lines)

    def fit_table(self) -> str:
        """Per budget: Θ of that steady state's own profile at the units that run, per flow model,
        against the measured rate (how well each model describes what Storm does)."""
        head = "| budget | measured/s | " + " | ".join(f"{m.value} fit/s | error" for m in MODELS) + " |"
        lines = [head, "|" + "---|" * (2 + 2 * len(MODELS))]
        for s in self.steps:
            cells = " | ".join(
                f"{_num(s.fitted.get(m.value))} | {_error(s.fitted.get(m.value), s.measured)}" for m in MODELS
            )
            lines.append(f"| {s.budget} | {s.measured:.1f} | {cells} |")
        return "\n".join(lines)


def _error(predicted: float | None, measured: float) -> str:
    """Relative error of ``predicted`` against ``measured`` (``–`` where either is missing)."""
    if predicted is None or not measured:
        return "–"
    return f"{(predicted - measured) / measured:+.1%}"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def sink_rate(stack: Stack, topology_id: str, sinks: Sequence[str], window_s: float = MEASURE_S) -> float:
    """Σ sinks' executed tuples/s over ``window_s``, between two of Nimbus's stats updates."""
    return rate_over(SinkCounter(stack.nimbus(), topology_id, tuple(sinks)), window_s).rate


def profile_now(stack: Stack, scenario: Scenario) -> MeasuredProfile:
    """The profile exactly as the operator takes it (same profiler, same window, step and settle)."""
    policy = parse_spec(storm_topology(scenario, 6627, stack.prometheus.url, 0)["spec"])
    profiler = PrometheusProfiler(
        SampleReader(stack.prometheus.url), NimbusGraphs(stack.nimbus()), policy.step_s, policy.settle_s
    )

    def attempt() -> MeasuredProfile | None:
        try:
            return profiler.profile(scenario.name, policy.window_s)
        except StaleMetricsError as err:
            stack.log(f"[profile] not yet: {err}")
            return None

    result: MeasuredProfile = wait_for(attempt, PROFILE_TIMEOUT_S, "a steady profile", every_s=10.0)
    return result


def predictions(
    measured: MeasuredProfile,
    scenario: Scenario,
    running: Mapping[str, int],
    tasks: Mapping[str, int],
    delta: int,
) -> dict[str, dict[str, float]]:
    """Every strategy's predicted Θ under each flow model, from one measured profile, for ``delta``
    more units than the ``running`` ones (where the operator's next plan starts)."""
    out: dict[str, dict[str, float]] = {}
    for model in MODELS:
        spec = storm_topology(scenario, 6627, "http://unused", delta)["spec"]
        spec["scaling"]["flowModel"] = model.value.capitalize()
        topology = planning_model(measured.topology, running, tasks, parse_spec(spec))
        plans = compare_strategies(topology, delta, model, time_limit=10.0)
        out[model.value] = {s.value: round(p.after, 3) for s, p in plans.items()}
    return out


def fitted(measured: MeasuredProfile) -> dict[str, float]:
    """Θ of the measured profile at the units it was measured with, per flow model."""
    units = measured.topology.units
    return {m.value: round(throughput(measured.topology, units, m), 3) for m in MODELS}


def wait_running(stack: Stack, scenario: Scenario, total_units: int) -> None:
    """Storm runs ``total_units`` workers for the topology and every executor reports."""

    def running() -> bool:
        summary = stack.nimbus().topology(scenario.name)
        if summary is None or summary.status != "ACTIVE" or summary.workers != total_units:
            return False
        page = stack.nimbus().topology_page(summary.id, ALL_TIME).components
        return all(page[c].executors >= 1 for c in scenario.components if c in page)

    wait_for(running, 300, f"{total_units} workers running", every_s=2.0)


def applied_events(stack: Stack, scenario: Scenario, budget: int) -> int:
    """How many Normal ScalingApplied events announce ``budget``."""
    text = stack.plane.kubectl("get", "events", "-n", stack.namespace, "-o", "json")
    items = json.loads(text)["items"]
    return sum(
        int(e.get("count") or 1)
        for e in items
        if e.get("reason") == "ScalingApplied"
        and e["involvedObject"].get("name") == scenario.name
        and e.get("message", "").startswith(f"Applied budget {budget}:")
    )


def _keep(stack: Stack, name: str, document: Mapping[str, Any]) -> None:
    """Write ``document`` into the run directory (what the operator saw and did, for the record)."""
    (stack.run_dir / name).write_text(json.dumps(document, indent=2, default=str))


def run_budget_steps(stack: Stack, scenario: Scenario, budgets: Sequence[int]) -> Report:
    """Apply each budget from a steady state; measure, profile and predict the next one."""
    steps: list[Step] = []
    previous: dict[str, dict[str, dict[str, float]]] = {}
    for budget in budgets:
        started = time.monotonic()
        stack.log(f"[e2e] budget {budget}: applying")
        stack.apply_budget(scenario, budget)
        status = stack.wait_applied(scenario, budget)
        total = len(scenario.components) + budget
        wait_running(stack, scenario, total)
        stack.log(f"[e2e] budget {budget}: {total} workers run; settling {scenario.settle_s:.0f} s")
        time.sleep(scenario.settle_s)
        summary = stack.nimbus().topology(scenario.name)
        assert summary is not None
        measured = sink_rate(stack, summary.id, scenario.sinks)
        profile = profile_now(stack, scenario)
        info = stack.nimbus().topology_info(scenario.name)
        executors = {
            c: sum(1 for e in info.user_executors() if e.component == c) for c in scenario.components
        }
        tasks = {
            c: sum(e.tasks for e in info.user_executors() if e.component == c) for c in scenario.components
        }
        deployment = stack.plane.kubectl(
            "get", "deployment", scenario.deployment, "-n", stack.namespace, "-o", "json"
        )
        plan = status.get("lastPlan") or {}
        step = Step(
            budget=budget,
            status_units=dict(status.get("units") or {}),
            storm_executors=executors,
            storm_workers=summary.workers,
            replicas=int(json.loads(deployment)["spec"]["replicas"]),
            events=applied_events(stack, scenario, budget),
            measured=round(measured, 3),
            allocation=dict(plan.get("allocation") or {}),
            operator_predicted=dict(plan.get("alternatives") or {}),
            predicted=previous.get(str(budget), {}),
            fitted=fitted(profile),
            seconds=round(time.monotonic() - started, 1),
        )
        steps.append(step)
        _keep(stack, f"budget-{budget}.json", {"status": status, "profile": asdict(profile.topology)})
        stack.log(
            f"[e2e] budget {budget}: measured {measured:.1f}/s, fit {step.fitted} ({step.seconds:.0f} s)"
        )
        running = {c: int(n) for c, n in dict(status.get("units") or {}).items()}
        following = [b for b in budgets if b > budget][:1]  # the operator plans each step from the last
        previous = {str(b): predictions(profile, scenario, running, tasks, b - budget) for b in following}
    return Report(scenario.name, steps, scenario.strategy.lower())
