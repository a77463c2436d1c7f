"""The planner from the command line.

``stormscale plan PROFILE --budget N [--plot FILE.png]``, ``stormscale size PROFILE --target-rate R``,
``stormscale place PLAN_OR_PROFILE --slots-per-pod K`` and ``stormscale graph PROFILE --out FILE.svg``.
Exit status 0 for an answer, 2 for invalid input (one line on stderr naming the problem). Input files
must be regular files of at most 16 MiB (``profile.MAX_FILE_BYTES``): a FIFO or a device is refused
before it is opened for reading.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from stormscale.planner.flow import FlowModel
from stormscale.planner.model import Topology
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.placement.model import PlacementError
from stormscale.planner.placement.pdeployer import InfeasibleTaskError
from stormscale.planner.placement.shukla import MappingError
from stormscale.planner.placement.strategies import PlacementStrategy, place, place_all
from stormscale.planner.planning import DEFAULT_STRATEGY, Strategy, compare_strategies, make_plan
from stormscale.planner.plots import draw
from stormscale.planner.plots.curves import plot_budgets, throughput_curves
from stormscale.planner.plots.graph import graph_view
from stormscale.planner.plots.inputs import (
    MeasuredPoint,
    PlotInputError,
    output_format,
    parse_measured,
    parse_plan,
)
from stormscale.planner.profile import (
    MAX_RATE,
    ProfileError,
    load_profile,
    parse_profile,
    profile_document,
    read_json,
)
from stormscale.planner.render import plan_report
from stormscale.planner.render_sizing import place_report, size_report
from stormscale.planner.sizing.exact import TargetRateError, offered_rate
from stormscale.planner.sizing.performance import Allocator
from stormscale.planner.sizing.strategies import (
    MAX_SLOTS_PER_POD,
    ONE_SLOT_PER_POD,
    SizingError,
    SizingStrategy,
    feasible_rates,
    parse_sizing_plan,
    size,
    size_all,
    sizing_plan,
)

EXIT_INVALID = 2
#: The flow model without ``--flow-model``: the CRD's default (``spec.scaling.flowModel: Backpressure``), so
#: that a profile plans the same on the command line as in the cluster.
DEFAULT_FLOW_MODEL = FlowModel.BACKPRESSURE
#: The largest |budget| (the CRD's bound on spec.scaling.budget): docs/planner.md, "Limits".
MAX_BUDGET = 1000


class UsageError(Exception):
    """Bad flags: reported in one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _rate(text: str) -> float:
    """A target rate, at most the profile's own bound on rates (no float overflows)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a rate in tuples/s: {text!r}") from None
    if math.isfinite(value) and abs(value) > MAX_RATE:  # NaN and ∞ get the sizing's own error
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RATE:g} tuples/s, got {text}")
    return value


def _budget(text: str) -> int:
    """A budget in [-MAX_BUDGET, MAX_BUDGET] (the CRD's bound): every strategy's time grows with it."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text[:40]!r}") from None
    if abs(value) > MAX_BUDGET:
        raise argparse.ArgumentTypeError(f"must be within ±{MAX_BUDGET:,}, got {text}")
    return value


def _slots_per_pod(text: str) -> int:
    """Worker slots per pod, in 1 … :data:`MAX_SLOTS_PER_POD` (the CRD's bound)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text[:40]!r}") from None
    if value > MAX_SLOTS_PER_POD:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SLOTS_PER_POD}, got {text[:40]}")
    return value  # below 1: the sizing's own check names it


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="stormscale", description="Stormscale: scale-out planning for Apache Storm.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    plan = commands.add_parser(
        "plan",
        help="plan extra resource units for a topology profile",
        description="Plan where BUDGET extra resource units go (negative: which to remove).",
    )
    plan.add_argument("profile", help="topology profile (JSON, docs/formats/profile.md)")
    plan.add_argument(
        "--budget",
        type=_budget,
        required=True,
        help=f"units beyond the current ones (negative: scale-in), at most ±{MAX_BUDGET:,}",
    )
    plan.add_argument(
        "--strategy",
        choices=[s.value for s in Strategy],
        default=DEFAULT_STRATEGY.value,
        help=f"default: {DEFAULT_STRATEGY.value} (every strategy's plan, the highest predicted throughput)",
    )
    plan.add_argument(
        "--flow-model",
        choices=[m.value for m in FlowModel],
        default=DEFAULT_FLOW_MODEL.value,
        help=f"default: {DEFAULT_FLOW_MODEL.value} (the CRD's default)",
    )
    plan.add_argument("--output", choices=["table", "json"], default="table", help="default: table")
    plan.add_argument(
        "--time-limit",
        type=_positive_seconds,
        default=30.0,
        help="seconds for the exact optimum (default 30)",
    )
    plan.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw every strategy's predicted throughput for budgets 0 … N into FILE (.png or .svg)",
    )
    plan.add_argument(
        "--measured",
        metavar="FILE",
        help="with --plot: measured points, a JSON list of {budget, throughput} (or a report's steps)",
    )
    sizer = commands.add_parser(
        "size",
        help="size a topology for a target input rate (units, CPU, memory, pods)",
        description="Units per component, CPU, memory and pods that sustain a target input rate.",
    )
    sizer.add_argument("profile", help="topology profile (JSON, docs/formats/profile.md)")
    sizer.add_argument("--target-rate", type=_rate, required=True, help="tuples/s the sources offer")
    sizer.add_argument(
        "--strategy",
        choices=[s.value for s in SizingStrategy],
        default=SizingStrategy.EXACT.value,
        help="default: exact",
    )
    sizer.add_argument(
        "--slots-per-pod",
        type=_slots_per_pod,
        default=1,
        help=f"worker slots per pod, at most {MAX_SLOTS_PER_POD} (default 1)",
    )
    sizer.add_argument("--output", choices=["table", "json"], default="table", help="default: table")
    placer = commands.add_parser(
        "place",
        help="place executors on worker slots and pods",
        description="Which executors share a worker slot and a pod, for a sizing plan or a profile.",
    )
    placer.add_argument("source", help="a sizing plan (stormscale size --output json) or a profile")
    placer.add_argument(
        "--slots-per-pod",
        type=_slots_per_pod,
        required=True,
        help=f"worker slots per pod, at most {MAX_SLOTS_PER_POD}",
    )
    placer.add_argument(
        "--strategy",
        choices=[s.value for s in PlacementStrategy],
        default=PlacementStrategy.SAM.value,
        help="default: sam",
    )
    placer.add_argument(
        "--target-rate", type=_rate, help="tuples/s the sources offer (a profile only; default: today's)"
    )
    placer.add_argument("--output", choices=["table", "json"], default="table", help="default: table")
    grapher = commands.add_parser(
        "graph",
        help="draw the topology: units, utilization and bottlenecks (PNG or SVG)",
        description="Draw the topology left to right: units and utilization per component, the "
        "bottlenecks marked; with --plan, before and after the plan.",
    )
    grapher.add_argument("profile", help="topology profile (JSON, docs/formats/profile.md)")
    grapher.add_argument(
        "--plan", metavar="PLAN", help="a plan (stormscale plan --output json) to draw after"
    )
    grapher.add_argument(
        "--flow-model",
        choices=[m.value for m in FlowModel],
        help=f"default: the plan's, else {DEFAULT_FLOW_MODEL.value}",
    )
    grapher.add_argument("--out", metavar="FILE", required=True, help="the file to write: .svg or .png")
    return parser


def run(argv: Sequence[str]) -> str:
    """Run the CLI and return what it prints; raises one of :data:`INVALID` for bad input."""
    args = build_parser().parse_args(argv)
    if args.command == "size":
        return run_size(args)
    if args.command == "place":
        return run_place(args)
    if args.command == "graph":
        return run_graph(args)
    if args.measured is not None and args.plot is None:
        raise UsageError("argument --measured: needs --plot")
    topology = load_profile(args.profile)
    strategy = Strategy(args.strategy)
    model = FlowModel(args.flow_model)
    measured = _plot_inputs(args)  # checked before any planning: a bad file fails at once
    if args.output == "json":
        plan = make_plan(topology, args.budget, strategy, model, args.time_limit)
        text = json.dumps(plan.to_json(), indent=2)
    else:
        plans = compare_strategies(topology, args.budget, model, args.time_limit)
        if strategy not in plans:  # the exact program past its size limit, asked for by name: its error
            make_plan(topology, args.budget, strategy, model, args.time_limit)
        text = plan_report(topology, plans, strategy)
    if args.plot is not None:
        curves = throughput_curves(topology, args.budget, model, args.time_limit)
        draw.draw_throughput(
            curves, measured, topology=topology.name, model=model, path=args.plot, chosen=strategy
        )
    return text


def _plot_inputs(args: argparse.Namespace) -> tuple[MeasuredPoint, ...]:
    """Check ``--plot`` (file, matplotlib, budget steps) and read ``--measured``; nothing to plot: ()."""
    if args.plot is None:
        return ()
    output_format(args.plot, "--plot")
    draw.require_matplotlib()
    plot_budgets(args.budget)
    if args.measured is None:
        return ()
    return parse_measured(read_json(args.measured, "measured points"), args.measured)


def run_graph(args: argparse.Namespace) -> str:
    """Draw the topology (after ``--plan``'s allocation, if any) into ``--out``; say where."""
    topology = load_profile(args.profile)
    overlay = None if args.plan is None else parse_plan(read_json(args.plan, "plan"), topology, args.plan)
    output_format(args.out, "--out")
    draw.require_matplotlib()
    model = FlowModel(args.flow_model or (overlay and overlay.flow_model) or DEFAULT_FLOW_MODEL)
    view = graph_view(topology, model, None if overlay is None else overlay.allocation)
    draw.draw_graph(view, args.out)
    marked = ", ".join(n.id for n in view.nodes if n.bottleneck) or "none"
    return f"{args.out}: {topology.name or 'topology'} under the {model.value} model, bottleneck {marked}"


def run_size(args: argparse.Namespace) -> str:
    topology = load_profile(args.profile)
    strategy = SizingStrategy(args.strategy)
    if strategy is SizingStrategy.PDEPLOYER and args.slots_per_pod != 1:
        raise SizingError(ONE_SLOT_PER_POD)
    if args.output == "json":
        chosen = size(topology, args.target_rate, strategy, args.slots_per_pod)
        exact = size(topology, args.target_rate, SizingStrategy.EXACT, args.slots_per_pod)
        return json.dumps(sizing_plan(chosen, topology, profile_document(topology), exact), indent=2)
    sizings = size_all(topology, args.target_rate, args.slots_per_pod)
    demands = feasible_rates(topology, args.target_rate).arrivals
    return size_report(topology, sizings, strategy, demands)


def placement_input(document: Any, target_rate: float | None) -> tuple[Topology, float, Allocator]:
    """A sizing plan (``formatVersion`` 2) or a profile: the topology, Ω and the allocator to map."""
    if not (isinstance(document, dict) and "formatVersion" in document):
        topology = parse_profile(document)
        return topology, offered_rate(topology) if target_rate is None else target_rate, Allocator.MBA
    plan = parse_sizing_plan(document)
    if target_rate is not None and target_rate != plan.target_rate:
        raise SizingError(
            f"--target-rate: the plan is sized for {plan.target_rate:g} tuples/s; size it again"
        )
    sized = size(plan.topology, plan.target_rate, plan.strategy).units
    if sized != plan.units:
        raise SizingError(
            f"units: differ from a {plan.strategy.value} sizing of the plan's profile; size it again"
        )
    allocator = Allocator.LSA if plan.strategy is SizingStrategy.LSA else Allocator.MBA
    return plan.topology, plan.target_rate, allocator


def run_place(args: argparse.Namespace) -> str:
    topology, target_rate, allocator = placement_input(read_json(args.source), args.target_rate)
    strategy = PlacementStrategy(args.strategy)
    result = place(topology, target_rate, strategy, args.slots_per_pod, allocator)
    if args.output == "json":
        return json.dumps(result.to_json(), indent=2)
    results = place_all(topology, target_rate, args.slots_per_pod, allocator)
    results[strategy] = result
    exact_pods = size(topology, target_rate, SizingStrategy.EXACT, args.slots_per_pod).pods
    assert exact_pods is not None
    return place_report(topology, target_rate, results, strategy, exact_pods)


INVALID = (
    ProfileError,
    OptimalLimitError,
    SizingError,
    TargetRateError,
    PlacementError,
    MappingError,
    InfeasibleTaskError,
    PlotInputError,
)

#: What may still escape a command on hostile input that every specific check let through.
LAST_RESORT = (RecursionError, OverflowError, ValueError, MemoryError)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # e.g. `stormscale plan … | head`: the reader left, nothing is wrong
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except INVALID as err:
        print(f"stormscale: {err}", file=sys.stderr)
        return EXIT_INVALID
    except UsageError as err:
        print(f"stormscale: {err} (see stormscale --help)", file=sys.stderr)
        return EXIT_INVALID
    except LAST_RESORT as err:  # past every specific check: still one line, never a traceback
        print(
            f"stormscale: input beyond what the planner computes ({type(err).__name__}: {err})"[:300],
            file=sys.stderr,
        )
        return EXIT_INVALID
    return 0


if __name__ == "__main__":
    sys.exit(main())
