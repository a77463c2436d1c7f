"""The model accuracy report: budget steps on a live stack, predicted against measured throughput.

For each budget: apply it through the StormTopology, wait for the operator to report it applied and
for Storm to run it, let it settle, then measure the sinks' executed tuples/s from Nimbus's own
counters (independent of Prometheus and of the profile). At that steady state the profile is taken
again with the operator's own profiler; from it come (a) the *fit*: the throughput each flow model
gives for the allocation that runs now, and (b) the *prediction* for the next budget: every strategy's
plan under each flow model, before it is applied.

The end-to-end test runs it (``tests/e2e/``); people run it on a stack of its own::

    python -m bench.accuracy_steps [--budgets 0 1 2 3]    # tables on stdout, JSON in the run dir
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from stormscale.operator.decision.planning import planning_model
from stormscale.operator.policy import parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.planner import (
    FlowModel,
    Strategy,
    Topology,
    add_allocation,
    compare_strategies,
    evaluate,
    throughput,
)
from tests.harness.bed.scenarios import SCENARIOS
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.bed.steady import applied_events, profile_taken, sink_rate, wait_running
from tests.harness.kubernetes.cgroups import QuotaUse
from tests.harness.process import new_run_dir

BUDGETS = (0, 1, 2, 3)
#: A saturated pod must have received at least this share of its quota for a measurement to count.
MIN_QUOTA_SHARE = 0.9
REPORT_FILE = "accuracy-report.json"
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
    #: bolt → its executed tuples/s over the same window as ``measured`` (Nimbus's counts).
    component_measured: dict[str, float] = field(default_factory=dict)
    #: flow model → bolt → tuples/s it processes in the plan of the operator's strategy for this
    #: budget, from the previous steady state's profile.
    component_predicted: dict[str, dict[str, float]] = field(default_factory=dict)
    #: flow model → bolt → tuples/s it processes by this step's own profile at the units that run.
    component_fitted: dict[str, dict[str, float]] = field(default_factory=dict)
    #: worker pod → its use of its CPU quota while ``measured`` was measured.
    pods: dict[str, QuotaUse] = field(default_factory=dict)
    seconds: float = 0.0
    #: Unix times of the two Nimbus heartbeats ``measured`` was taken between.
    window_start: float = 0.0
    window_end: float = 0.0
    #: Unix time the window of this step's profile (``fitted``, the next step's predictions) ended at,
    #: and its length (it starts no earlier than ``window_start``).
    profiled_at: float = 0.0
    profile_window_s: float = 0.0

    def starved(self) -> dict[str, QuotaUse]:
        """Saturated pods that received less than 90 % of their quota (the bed failed them)."""
        return {n: u for n, u in self.pods.items() if u.saturated and u.received_share < MIN_QUOTA_SHARE}


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

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Report:
        """The report :meth:`to_json` wrote (unknown keys left out; older reports have no pods)."""
        known = {f.name for f in fields(Step)}
        steps = [
            Step(
                **{k: v for k, v in step.items() if k in known and k != "pods"},
                pods={n: QuotaUse(**u) for n, u in (step.get("pods") or {}).items()},
            )
            for step in document["steps"]
        ]
        return cls(document["scenario"], steps, document.get("strategy", Strategy.COMBINED.value))

    def table(self) -> str:
        """The tables of the model accuracy report, one after the other."""
        return self.prediction_table() + "\n\n" + self.fit_table() + "\n\n" + self.component_table()

    def component_table(self, model: FlowModel = FlowModel.BACKPRESSURE) -> str:
        """Per budget and bolt, under ``model``: its executed tuples/s as measured, as the operator's
        strategy predicted it before the budget (from the previous state's profile), and as this
        state's own profile fits it; each with its relative error."""
        head = "| budget | bolt | measured/s | predicted/s | error | fit/s | error |"
        lines = [head, "|" + "---|" * 7]
        for s in self.steps:
            predicted = s.component_predicted.get(model.value, {})
            fit = s.component_fitted.get(model.value, {})
            for c, rate in sorted(s.component_measured.items()):
                p, f = predicted.get(c), fit.get(c)
                lines.append(
                    f"| {s.budget} | {c} | {rate:.1f} | {number_cell(p)} | {error_cell(p, rate)} "
                    f"| {number_cell(f)} | {error_cell(f, rate)} |"
                )
        return "\n".join(lines)

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
                cells = " | ".join(number_cell(pred.get(name)) for name in strategies)
                err = error_cell(pred.get(self.strategy), s.measured)
                lines.append(f"| {s.budget} | {alloc} | {s.measured:.1f} | {m.value} | {cells} | {err} |")
        return "\n".join(lines)

    def fit_table(self) -> str:
        """Per budget: Θ of that steady state's own profile at the units that run, per flow model,
        against the measured rate (how well each model describes what Storm does)."""
        head = "| budget | measured/s | " + " | ".join(f"{m.value} fit/s | error" for m in MODELS) + " |"
        lines = [head, "|" + "---|" * (2 + 2 * len(MODELS))]
        for s in self.steps:
            cells = " | ".join(
                f"{number_cell(s.fitted.get(m.value))} | {error_cell(s.fitted.get(m.value), s.measured)}"
                for m in MODELS
            )
            lines.append(f"| {s.budget} | {s.measured:.1f} | {cells} |")
        return "\n".join(lines)


def _quota_line(pods: Mapping[str, QuotaUse]) -> str:
    """``index:components received/quota / throttled share`` per pod, saturated ones marked ``*``."""
    return ", ".join(
        f"{n} {u.received_share:.0%}/{u.throttled_share:.0%}{'*' if u.saturated else ''}"
        for n, u in sorted(pods.items())
    )


def relative_error(predicted: float | None, measured: float) -> float | None:
    """(predicted − measured) / measured; ``None`` where either is missing (nothing measured)."""
    if predicted is None or not measured:
        return None
    return (predicted - measured) / measured


def error_cell(predicted: float | None, measured: float) -> str:
    """Relative error of ``predicted`` against ``measured`` (``–`` where either is missing)."""
    error = relative_error(predicted, measured)
    return "–" if error is None else f"{error:+.1%}"


def number_cell(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


@dataclass(frozen=True)
class Prediction:
    """What one measured profile predicts for a budget, per flow model: every strategy's Θ, and
    what each bolt processes in the plan of the operator's strategy."""

    throughput: dict[str, dict[str, float]]
    components: dict[str, dict[str, float]]


def predictions(
    measured: MeasuredProfile,
    scenario: Scenario,
    running: Mapping[str, int],
    tasks: Mapping[str, int],
    delta: int,
) -> Prediction:
    """Every strategy's predicted Θ under each flow model, from one measured profile, for ``delta``
    more units than the ``running`` ones (where the operator's next plan starts), and the bolts'
    rates in the operator's plan."""
    totals: dict[str, dict[str, float]] = {}
    components: dict[str, dict[str, float]] = {}
    for model in MODELS:
        spec = storm_topology(scenario, 6627, "http://unused", delta)["spec"]
        spec["scaling"]["flowModel"] = model.value.capitalize()
        topology = planning_model(measured.topology, running, tasks, parse_spec(spec))
        plans = compare_strategies(topology, delta, model, time_limit=10.0)
        totals[model.value] = {s.value: round(p.after, 3) for s, p in plans.items()}
        chosen = plans[Strategy(scenario.strategy.lower())].allocation
        components[model.value] = bolt_rates(
            topology, add_allocation(topology, topology.units, chosen), model
        )
    return Prediction(totals, components)


def bolt_rates(topology: Topology, units: tuple[int, ...], model: FlowModel) -> dict[str, float]:
    """Tuples/s each bolt of ``topology`` processes at ``units`` under ``model``."""
    state = evaluate(topology, units, model)
    return {
        flow.id: round(flow.processed, 3)
        for flow, c in zip(state.components, topology.components, strict=True)
        if not c.is_spout
    }


def fitted(measured: MeasuredProfile) -> dict[str, float]:
    """Θ of the measured profile at the units it was measured with, per flow model."""
    units = measured.topology.units
    return {m.value: round(throughput(measured.topology, units, m), 3) for m in MODELS}


def fitted_components(measured: MeasuredProfile) -> dict[str, dict[str, float]]:
    """Each bolt's rate by the measured profile at the units it was measured with, per flow model."""
    return {m.value: bolt_rates(measured.topology, measured.topology.units, m) for m in MODELS}


def _keep(stack: Stack, name: str, document: Mapping[str, Any]) -> None:
    """Write ``document`` into the run directory (what the operator saw and did, for the record)."""
    (stack.run_dir / name).write_text(json.dumps(document, indent=2, default=str))


def run_budget_steps(stack: Stack, scenario: Scenario, budgets: Sequence[int]) -> Report:
    """Apply each budget from a steady state; measure, profile and predict the next one."""
    steps: list[Step] = []
    previous: dict[str, Prediction] = {}
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
        window, pods = sink_rate(stack, scenario, summary.id)
        measured = window.rate
        taken = profile_taken(stack, scenario, since=window.start.at)
        profile = taken.profile
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
            predicted=previous[str(budget)].throughput if str(budget) in previous else {},
            fitted=fitted(profile),
            component_measured={c: round(r, 3) for c, r in window.component_rates().items() if r > 0},
            component_predicted=previous[str(budget)].components if str(budget) in previous else {},
            component_fitted=fitted_components(profile),
            pods=pods,
            seconds=round(time.monotonic() - started, 1),
            window_start=window.start.at,
            window_end=window.end.at,
            profiled_at=taken.end,
            profile_window_s=taken.window_s,
        )
        steps.append(step)
        _keep(stack, f"budget-{budget}.json", {"status": status, "profile": asdict(profile.topology)})
        stack.log(
            f"[e2e] budget {budget}: measured {measured:.1f}/s, fit {step.fitted} ({step.seconds:.0f} s); "
            f"pods' CPU/quota {_quota_line(pods)}"
        )
        running = {c: int(n) for c, n in dict(status.get("units") or {}).items()}
        following = [b for b in budgets if b > budget][:1]  # the operator plans each step from the last
        previous = {str(b): predictions(profile, scenario, running, tasks, b - budget) for b in following}
    return Report(scenario.name, steps, scenario.strategy.lower())


def main(argv: Sequence[str] | None = None) -> int:
    """Start a stack, run the congested scenario through ``--budgets``, print and write the report."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.accuracy_steps", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS), help="ascending, from 0")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="jvm-linear")
    args = parser.parse_args(argv)
    scenario = SCENARIOS[args.scenario]
    run_dir = new_run_dir("accuracy-")
    print(f"[accuracy] run directory (all logs): {run_dir}")
    with Stack(run_dir, namespace="accuracy") as stack:
        stack.deploy(scenario)
        stack.start_operator()
        report = run_budget_steps(stack, scenario, args.budgets)
    (run_dir / REPORT_FILE).write_text(json.dumps(report.to_json(), indent=2))
    print("\n" + report.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
