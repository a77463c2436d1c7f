"""Planner benchmark: time per strategy, and each heuristic's share of the exact optimum.

Run: ``make bench`` (or ``.venv/bin/python -m bench.planner [--quick]``). Prints tables and writes
``bench/out/planner.png`` (time against size) and ``bench/out/planner-shares.png``.

Times are CPU seconds of this process (``time.process_time``; HiGHS runs single-threaded): on a
shared 2-core machine wall time mostly measures the neighbours, CPU time measures the planner.

Topologies are random DAGs from :mod:`tests.synthetic.profiles` with capacities calibrated so
that demand/capacity is uniform in [0.6, 1.4] (about half of the bolts congested, as in the
thesis's tables). Every cell runs the strategies on the same topology in the same process, so the
ratios between strategies are meaningful even on a noisy machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stormscale.planner import FlowModel, Strategy, Topology, load_profile, make_plan, parse_profile
from tests.synthetic.profiles import random_profile

OUT = Path(__file__).parent / "out"
PROFILES = Path(__file__).parents[1] / "examples" / "profiles"
LOAD = (0.6, 1.4)
HEURISTICS = (Strategy.STELA, Strategy.PREDICTIVE, Strategy.COMBINED)


@dataclass(frozen=True)
class Timing:
    size: int
    budget: int
    model: FlowModel
    seconds: dict[Strategy, float]
    proven: bool


def synthetic(size: int, seed: int, *, scalable_spout: bool = False) -> Topology:
    rng = random.Random(seed)
    return parse_profile(random_profile(rng, size, min_units=1, load=LOAD, scalable_spout=scalable_spout))


def time_cell(topology: Topology, budget: int, model: FlowModel, time_limit: float) -> Timing:
    seconds = {}
    proven = True
    for strategy in Strategy:
        start = time.process_time()
        plan = make_plan(topology, budget, strategy, model, time_limit)
        seconds[strategy] = time.process_time() - start
        if plan.optimality is not None:
            proven = plan.optimality.proven
    return Timing(len(topology.components), budget, model, seconds, proven)


def timing_table(
    sizes: Sequence[int], budgets: Sequence[int], models: Sequence[FlowModel], time_limit: float
) -> list[Timing]:
    rows = []
    header = (
        f"{'model':<13}{'size':>6}{'budget':>8}"
        + "".join(f"{s.value:>12}" for s in Strategy)
        + "  optimal/combined"
    )
    print("\nTime per plan (CPU seconds)\n" + header)
    for model in models:
        for size in sizes:
            topology = synthetic(size, seed=size)
            for budget in budgets:
                row = time_cell(topology, budget, model, time_limit)
                rows.append(row)
                ratio = row.seconds[Strategy.OPTIMAL] / max(row.seconds[Strategy.COMBINED], 1e-9)
                cells = "".join(f"{row.seconds[s]:>12.3f}" for s in Strategy)
                flag = "" if row.proven else "  (time limit, not proven)"
                print(f"{model.value:<13}{size:>6}{budget:>8}{cells}  {ratio:>8.2f}x{flag}", flush=True)
    return rows


@dataclass(frozen=True)
class Share:
    """Heuristic gain over optimal gain for one instance (1.0 = optimal)."""

    source: str
    model: FlowModel
    strategy: Strategy
    share: float


def shares_for(source: str, topology: Topology, budgets: Sequence[int], model: FlowModel) -> list[Share]:
    out = []
    for budget in budgets:
        best = make_plan(topology, budget, Strategy.OPTIMAL, model).gain
        if best <= 1e-9:
            continue  # nothing to gain: every strategy is trivially optimal
        for strategy in HEURISTICS:
            gain = make_plan(topology, budget, strategy, model).gain
            out.append(Share(source, model, strategy, max(0.0, gain) / best))
    return out


def share_values(shares: Sequence[Share], source: str, model: FlowModel, strategy: Strategy) -> list[float]:
    return [s.share for s in shares if (s.source, s.model, s.strategy) == (source, model, strategy)]


def share_tables(random_count: int, models: Sequence[FlowModel]) -> list[Share]:
    shares: list[Share] = []
    thesis = {p.stem: load_profile(p) for p in sorted(PROFILES.glob("*.json"))}
    rng = random.Random(2018)
    for model in models:
        for topology in thesis.values():
            shares += shares_for("thesis", topology, range(1, 11), model)
        for i in range(random_count):
            topology = synthetic(rng.randint(4, 30), seed=10_000 + i, scalable_spout=rng.random() < 0.5)
            shares += shares_for("random", topology, [rng.randint(1, 10)], model)
    print("\nShare of the optimum's gain (heuristic ΔΘ / optimal ΔΘ; instances where the optimum gains > 0)")
    print(
        f"{'source':<8}{'model':<14}{'strategy':<12}{'n':>6}{'mean':>8}{'median':>8}{'min':>8}{'optimal':>9}"
    )
    for source in ("thesis", "random"):
        for model in models:
            for strategy in HEURISTICS:
                values = [
                    s.share for s in shares if (s.source, s.model, s.strategy) == (source, model, strategy)
                ]
                if not values:
                    continue
                hits = sum(v >= 1 - 1e-6 for v in values) / len(values)
                print(
                    f"{source:<8}{model.value:<14}{strategy.value:<12}{len(values):>6}{statistics.fmean(values):>8.3f}"
                    f"{statistics.median(values):>8.3f}{min(values):>8.3f}{hits:>8.1%}"
                )
    return shares


def plot(rows: list[Timing], shares: list[Share]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(parents=True, exist_ok=True)
    budgets = sorted({r.budget for r in rows})
    fig, axes = plt.subplots(1, len(budgets), figsize=(4.2 * len(budgets), 3.8), sharey=True, squeeze=False)
    for ax, budget in zip(axes[0], budgets, strict=True):
        for strategy in Strategy:
            for model, style in ((FlowModel.DROP, "-"), (FlowModel.BACKPRESSURE, ":")):
                pts = sorted(
                    (r.size, r.seconds[strategy]) for r in rows if r.budget == budget and r.model is model
                )
                if pts:
                    ax.plot(
                        *zip(*pts, strict=True), style, marker="o", label=f"{strategy.value} ({model.value})"
                    )
        ax.set(xscale="log", yscale="log", title=f"budget {budget}", xlabel="components")
    axes[0][0].set_ylabel("CPU seconds per plan")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "planner.png", dpi=110)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    labels, data = [], []
    for source in ("thesis", "random"):
        for model in FlowModel:
            for strategy in HEURISTICS:
                values = [
                    s.share for s in shares if (s.source, s.model, s.strategy) == (source, model, strategy)
                ]
                if values:
                    labels.append(f"{source}\n{model.value[:4]}\n{strategy.value[:4]}")
                    data.append(values)
    ax.boxplot(data)
    ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7)
    ax.set_ylabel("share of optimal ΔΘ")
    fig.tight_layout()
    fig.savefig(OUT / "planner-shares.png", dpi=110)
    print(f"\nplots: {OUT / 'planner.png'}, {OUT / 'planner-shares.png'}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small grid (smoke run)")
    parser.add_argument("--time-limit", type=float, default=60.0, help="seconds for each optimal solve")
    args = parser.parse_args(argv)
    if args.quick:
        sizes, budgets, random_count = [10, 50], [1, 10], 20
    else:
        sizes, budgets, random_count = [10, 100, 500, 1000, 2000], [1, 10, 100, 500], 1000
    rows = timing_table(sizes, budgets, list(FlowModel), args.time_limit)
    shares = share_tables(random_count, list(FlowModel))
    plot(rows, shares)


if __name__ == "__main__":
    main()
