"""``stormscale plan PROFILE --budget N``: the planner from the command line.

Exit status 0 for a plan, 2 for invalid input (one line on stderr naming the problem).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from stormscale.planner.flow import FlowModel
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.planning import Strategy, compare_strategies, make_plan
from stormscale.planner.profile import ProfileError, load_profile
from stormscale.planner.render import plan_report

EXIT_INVALID = 2


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
        "--budget", type=int, required=True, help="units beyond the current ones (negative: scale-in)"
    )
    plan.add_argument(
        "--strategy",
        choices=[s.value for s in Strategy],
        default=Strategy.COMBINED.value,
        help="default: combined",
    )
    plan.add_argument(
        "--flow-model",
        choices=[m.value for m in FlowModel],
        default=FlowModel.DROP.value,
        help="default: drop",
    )
    plan.add_argument("--output", choices=["table", "json"], default="table", help="default: table")
    plan.add_argument(
        "--time-limit",
        type=_positive_seconds,
        default=30.0,
        help="seconds for the exact optimum (default 30)",
    )
    return parser


def run(argv: Sequence[str]) -> str:
    """Run the CLI and return what it prints; raises ProfileError, UsageError or OptimalLimitError."""
    args = build_parser().parse_args(argv)
    topology = load_profile(args.profile)
    strategy = Strategy(args.strategy)
    model = FlowModel(args.flow_model)
    if args.output == "json":
        plan = make_plan(topology, args.budget, strategy, model, args.time_limit)
        return json.dumps(plan.to_json(), indent=2)
    plans = compare_strategies(topology, args.budget, model, args.time_limit)
    return plan_report(topology, plans, strategy)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        print(run(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # e.g. `stormscale plan … | head`: the reader left, nothing is wrong
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush quiet
        return 0
    except (ProfileError, OptimalLimitError) as err:
        print(f"stormscale: {err}", file=sys.stderr)
        return EXIT_INVALID
    except UsageError as err:
        print(f"stormscale: {err} (see stormscale plan --help)", file=sys.stderr)
        return EXIT_INVALID
    return 0


if __name__ == "__main__":
    sys.exit(main())
