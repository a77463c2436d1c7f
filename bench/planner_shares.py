"""Each strategy's share of the exact optimum's gain, under both flow models.

Run: ``make bench-planner`` (or ``.venv/bin/python -m bench.planner_shares [--dags N]``). Prints two
tables: random DAGs of 10–25 components (seeded; budgets 1 … 8 on each), and the thesis's
topology 17 at budgets 2, 3, 4, 6 and 8.

A share is ``max(0, ΔΘ_s) / ΔΘ_optimal`` for one (topology, budget, flow model) where the proven
optimum gains something; instances where the exact program did not prove its optimum within the
time limit are left out and counted. ``units`` is the mean of the units each strategy spends
(``Σ allocation``), after the trimming of units that add nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stormscale.planner import FlowModel, Strategy, Topology, compare_strategies, load_profile, parse_profile
from tests.synthetic.profiles import random_profile

PROFILES = Path(__file__).parents[1] / "examples" / "profiles"
LOAD = (0.6, 1.4)
SIZES = (10, 25)
BUDGETS = tuple(range(1, 9))
T17_BUDGETS = (2, 3, 4, 6, 8)
SHOWN = (Strategy.STELA, Strategy.PREDICTIVE, Strategy.COMBINED, Strategy.BEST, Strategy.OPTIMAL)


@dataclass(frozen=True)
class Outcome:
    """One instance: each strategy's share of the optimum's gain and the units it spends."""

    model: FlowModel
    budget: int
    shares: dict[Strategy, float]
    units: dict[Strategy, int]


def random_dag(seed: int) -> Topology:
    rng = random.Random(seed)
    size = rng.randint(*SIZES)
    document = random_profile(rng, size, min_units=1, load=LOAD, scalable_spout=rng.random() < 0.5)
    return parse_profile(document)


def outcome(topology: Topology, budget: int, model: FlowModel, time_limit: float) -> Outcome | str:
    """Every strategy's share at one budget, or why there is none (``"no gain"``, ``"unproven"``)."""
    plans = compare_strategies(topology, budget, model, time_limit)
    exact = plans.get(Strategy.OPTIMAL)
    if exact is None or exact.optimality is None or not exact.optimality.proven:
        return "unproven"
    if exact.gain <= 1e-9:
        return "no gain"
    shares = {s: max(0.0, plans[s].gain) / exact.gain for s in SHOWN}
    units = {s: sum(plans[s].allocation.values()) for s in SHOWN}
    return Outcome(model, budget, shares, units)


def p10(values: Sequence[float]) -> float:
    """The 10th percentile (inclusive method: within the values' range)."""
    return statistics.quantiles(values, n=10, method="inclusive")[0] if len(values) > 1 else values[0]


def random_table(dags: int, time_limit: float) -> list[Outcome]:
    outcomes: list[Outcome] = []
    skipped: Counter[str] = Counter()
    for model in FlowModel:
        for i in range(dags):
            topology = random_dag(20_000 + i)
            for budget in BUDGETS:
                found = outcome(topology, budget, model, time_limit)
                if isinstance(found, str):
                    skipped[found] += 1
                else:
                    outcomes.append(found)
    print(
        f"Share of the optimum's gain: {dags} random DAGs of {SIZES[0]}–{SIZES[1]} components "
        f"(seeds 20000…{20_000 + dags - 1}), budgets {BUDGETS[0]}…{BUDGETS[-1]}; "
        f"left out: {skipped['no gain']} where the optimum gains nothing, {skipped['unproven']} unproven "
        f"within {time_limit:g} s"
    )
    print(f"{'model':<14}{'strategy':<12}{'n':>6}{'mean':>8}{'p10':>8}{'min':>8}{'=opt':>8}{'units':>7}")
    for model in FlowModel:
        rows = [o for o in outcomes if o.model is model]
        for strategy in SHOWN:
            values = [o.shares[strategy] for o in rows]
            units = statistics.fmean(o.units[strategy] for o in rows)
            hits = sum(v >= 1 - 1e-6 for v in values) / len(values)
            print(
                f"{model.value:<14}{strategy.value:<12}{len(values):>6}{statistics.fmean(values):>8.3f}"
                f"{p10(values):>8.3f}{min(values):>8.3f}{hits:>8.1%}{units:>7.2f}"
            )
    return outcomes


def topology_17_table(time_limit: float) -> None:
    t17 = load_profile(PROFILES / "thesis-topology-17.json")
    print("\nShare of the optimum's gain on the thesis's topology 17")
    print(f"{'model':<14}{'strategy':<12}" + "".join(f"{'b=' + str(b):>8}" for b in T17_BUDGETS))
    for model in FlowModel:
        found = {b: outcome(t17, b, model, time_limit) for b in T17_BUDGETS}
        for strategy in SHOWN:
            cells = "".join(
                f"{'—':>8}" if isinstance(o := found[b], str) else f"{o.shares[strategy]:>8.3f}"
                for b in T17_BUDGETS
            )
            print(f"{model.value:<14}{strategy.value:<12}{cells}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dags", type=int, default=200, help="random DAGs (default 200)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds for each exact solve")
    args = parser.parse_args(argv)
    random_table(args.dags, args.time_limit)
    topology_17_table(args.time_limit)


if __name__ == "__main__":
    main()
