"""The demo (``make demo``): the whole test bed, the operator, a congested topology, a budget raised.

Steps, each printed as it starts: build or reuse the test bed's binaries; start Kubernetes, Storm,
Prometheus, the exporter and the pod runner; submit the thesis's linear topology (JVM bolts) on its
worker pods under a load that congests it; start the operator; apply a StormTopology with budget 0,
measure; show the plan the operator will apply for the new budget (every strategy side by side);
raise the budget; measure again; print before and after. Everything stops at the end (or on Ctrl-C).
Then it draws two figures into its run directory and prints their paths: every strategy's predicted
throughput for budgets 0 … N with the two measured points over it, and the topology with the applied
plan's units, utilization and bottleneck (the profile and the measured points are written beside them,
so that ``stormscale plan … --plot`` and ``stormscale graph`` can draw them again).

    python -m tests.harness.demo [--budget 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stormscale.operator.decision.planning import planning_model
from stormscale.operator.policy import parse_spec
from stormscale.planner import FlowModel, Strategy, Topology, compare_strategies
from stormscale.planner.plots.curves import throughput_curves
from stormscale.planner.plots.draw import draw_graph, draw_throughput
from stormscale.planner.plots.graph import graph_view
from stormscale.planner.plots.inputs import MeasuredPoint
from stormscale.planner.profile import profile_document
from stormscale.planner.render import plan_report
from tests.harness.bed.scenarios import JVM_LINEAR
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.bed.steady import profile_now, sink_rate, wait_running
from tests.harness.process import new_run_dir


def measure(stack: Stack, scenario: Scenario, budget: int) -> tuple[dict[str, Any], float]:
    """Apply ``budget``, wait until it runs and settles; the status and the sinks' tuples/s."""
    stack.apply_budget(scenario, budget)
    status = stack.wait_applied(scenario, budget)
    wait_running(stack, scenario, len(scenario.components) + budget)
    print(
        f"[demo] budget {budget} runs; letting it settle for {scenario.settle_s:.0f} s, then measuring 90 s"
    )
    time.sleep(scenario.settle_s)
    summary = stack.nimbus().topology(scenario.name)
    assert summary is not None
    measured, _ = sink_rate(stack, scenario, summary.id)
    return status, measured.rate


def show_plan(
    stack: Stack, scenario: Scenario, running: dict[str, int], budget: int
) -> tuple[Topology, float]:
    """Profile the topology as the operator does and print the plan for ``budget`` under the operator's
    default strategy (Best: the best predicted plan of every strategy); the planning model and that
    plan's predicted Θ."""
    measured = profile_now(stack, scenario)
    spec = storm_topology(scenario, 6627, stack.prometheus.url, budget)["spec"]
    info = stack.nimbus().topology_info(scenario.name)
    tasks: dict[str, int] = {}
    for e in info.user_executors():
        tasks[e.component] = tasks.get(e.component, 0) + e.tasks
    topology = planning_model(measured.topology, running, tasks, parse_spec(spec))
    plans = compare_strategies(topology, budget, FlowModel.BACKPRESSURE, time_limit=10.0)
    print()
    print(plan_report(topology, plans, Strategy.BEST))
    print()
    return topology, plans[Strategy.BEST].after


def write_figures(
    run_dir: Path,
    topology: Topology,
    budget: int,
    allocation: Mapping[str, int],
    measured: Sequence[MeasuredPoint],
) -> tuple[Path, Path]:
    """The demo's two figures, under the backpressure model the operator plans with: every strategy's
    predicted Θ for budgets 0 … ``budget`` with the measured points, and the topology after the applied
    ``allocation``. The profile and the points go beside them (``stormscale plan … --plot`` redraws)."""
    (run_dir / "demo-profile.json").write_text(json.dumps(profile_document(topology), indent=1) + "\n")
    (run_dir / "demo-measured.json").write_text(json.dumps([asdict(p) for p in measured], indent=1) + "\n")
    model = FlowModel.BACKPRESSURE
    throughput_png, topology_png = run_dir / "demo-throughput.png", run_dir / "demo-topology.png"
    curves = throughput_curves(topology, budget, model, time_limit=10.0)
    draw_throughput(
        curves,
        measured,
        topology=topology.name,
        model=model,
        path=str(throughput_png),
        chosen=Strategy.BEST,
    )
    draw_graph(graph_view(topology, model, allocation), str(topology_png))
    return throughput_png, topology_png


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=3, help="units to add (1-3 fit the demo's tasks)")
    args = parser.parse_args(argv)
    if not 1 <= args.budget <= 3:
        print(f"demo: error: --budget must be 1, 2 or 3, got {args.budget}", file=sys.stderr)
        return 2
    scenario = JVM_LINEAR
    run_dir = new_run_dir("demo-")
    print(f"[demo] run directory (all logs): {run_dir}")
    with Stack(run_dir, namespace="demo") as stack:
        stack.deploy(scenario)
        stack.start_operator()
        before_status, before = measure(stack, scenario, 0)
        running = {k: int(v) for k, v in dict(before_status.get("units") or {}).items()}
        # from budget 0: the plan's delta is the budget
        topology, predicted = show_plan(stack, scenario, running, args.budget)
        after_status, after = measure(stack, scenario, args.budget)
        plan = dict(after_status.get("lastPlan") or {})
        print()
        chosen = f"{plan.get('strategy')}: {plan.get('chosen')}"
        print(f"StormTopology {scenario.name}: budget 0 → {args.budget} (strategy {chosen})")
        print(f"  allocation          {plan.get('allocation')}")
        print(f"  measured before     {before:8.1f} tuples/s at the sinks")
        print(f"  predicted after     {predicted:8.1f} tuples/s (best plan, backpressure model)")
        print(f"  measured after      {after:8.1f} tuples/s  ({after / before:.2f}x)")
        print(f"  status.lastPlan     {plan.get('alternatives')}")
    allocation = {str(k): int(v) for k, v in dict(plan.get("allocation") or {}).items()}
    measured = (MeasuredPoint(0, before), MeasuredPoint(args.budget, after))
    figures = write_figures(run_dir, topology, args.budget, allocation, measured)
    print()
    for figure in figures:
        print(f"[demo] figure: {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
