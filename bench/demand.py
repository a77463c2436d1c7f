"""A bursty source sized for each statistic of its demand: what ``scaling.demandPercentile`` changes.

The thesis's linear topology (bolt 3 the bottleneck at 250 tuples/s a unit) under a source offering
200 tuples/s, and 280 tuples/s one 10-second step in ten (a queue before the spout takes the bursts);
20 minutes of
synthetic samples (:mod:`tests.synthetic.samples`) through the single-process aggregation give the
profile with the spout's ``demandPerUnit``, and Auto's congestion rule
(:func:`stormscale.operator.autoscale.needed_budget`, Best, backpressure, θ = 0.05) gives the budget
for each statistic. Run: ``.venv/bin/python -m bench.demand``.
"""

from __future__ import annotations

from pathlib import Path

from stormscale.aggregation import Params, parse_structure, profile_table
from stormscale.operator.autoscale import needed_budget
from stormscale.planner import (
    DemandStatistic,
    FlowModel,
    Strategy,
    add_allocation,
    at_demand,
    load_profile,
    make_plan,
    read_profile,
    throughput,
)
from tests.synthetic import samples as synthetic

PROFILES = Path(__file__).parents[1] / "examples" / "profiles"
BURSTY = synthetic.Scenario(
    name="bursty",
    duration_s=1200,
    noise=0.01,
    offered_scale=0.4,
    load_wave=(1.0,) * 9 + (1.4,),
    wave_offered_only=True,
    seed=10,
)
THRESHOLD = 0.05


def rows() -> list[tuple[str, float, str, int, float]]:
    """Per statistic: the demand (tuples/s), the units per component after Auto's budget, the
    budget, and Θ at the largest step's demand with those units (backpressure)."""
    truth = load_profile(PROFILES / "thesis-linear.json")
    structure = parse_structure(synthetic.structure(truth, BURSTY))
    (document,), _ = profile_table(synthetic.generate(truth, BURSTY), [structure], Params())
    profile = read_profile(document)
    peak, _ = at_demand(profile.topology, profile.demand, DemandStatistic.MAX)
    out = []
    for statistic in DemandStatistic:
        model, used = at_demand(profile.topology, profile.demand, statistic)
        sizing = needed_budget(
            model, (0, 16), strategy=Strategy.BEST, model=FlowModel.BACKPRESSURE, threshold=THRESHOLD
        )
        plan = make_plan(model, sizing.budget, Strategy.BEST, FlowModel.BACKPRESSURE, time_limit=5.0)
        units = add_allocation(model, model.units, plan.allocation)
        shown = " ".join(f"{c.id}:{n}" for c, n in zip(model.components, units, strict=True))
        at_peak = throughput(peak, units, FlowModel.BACKPRESSURE)
        out.append((statistic.value, used.rate, shown, sizing.budget, at_peak))
    return out


def main() -> None:
    print("statistic  demand/s  units                budget  Θ at the largest step (/s)")
    for statistic, rate, units, budget, at_peak in rows():
        print(f"{statistic:<9}  {rate:>8.1f}  {units:<19}  {budget:>6}  {at_peak:.1f}")


if __name__ == "__main__":
    main()
