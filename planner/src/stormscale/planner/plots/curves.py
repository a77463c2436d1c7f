"""The data of ``stormscale plan --plot``: predicted throughput against budget, one curve per strategy.

For every budget ``b`` between 0 and ``N`` (both included; ``N < 0`` is a scale-in), each strategy plans
``b`` units exactly as ``stormscale plan --budget b`` does, and the curve's point is the plan's
predicted Θ after it, under the chosen flow model::

    curve_s(b) = make_plan(topology, b, s, model).after          b = 0, 1, …, N

The exact program's curve is the ceiling of the others. Where it cannot plan (more spout combinations
than its limit) its curve is empty and says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stormscale.planner.flow import FlowModel
from stormscale.planner.model import Topology
from stormscale.planner.optimal import OptimalLimitError
from stormscale.planner.planning import Strategy, make_plan
from stormscale.planner.plots.inputs import MAX_PLOT_BUDGET, PlotInputError


@dataclass(frozen=True)
class Curve:
    """One strategy's predicted Θ per budget.

    ``missing`` says why the strategy could not plan (the curve is then empty); ``unproven`` lists the
    budgets where a time limit stopped the exact program before it proved its plan optimal.
    """

    strategy: Strategy
    budgets: tuple[int, ...]
    throughput: tuple[float, ...]
    missing: str | None = None
    unproven: tuple[int, ...] = ()


def plot_budgets(budget: int) -> tuple[int, ...]:
    """The budgets of the x axis: ``0 … N`` in ascending order (``N … 0`` for a scale-in)."""
    if abs(budget) > MAX_PLOT_BUDGET:
        raise PlotInputError(f"--plot: at most ±{MAX_PLOT_BUDGET} budget steps, got --budget {budget}")
    return tuple(range(min(0, budget), max(0, budget) + 1))


def strategy_curve(
    topology: Topology, budgets: Sequence[int], strategy: Strategy, model: FlowModel, time_limit: float
) -> Curve:
    """``strategy``'s Θ after its plan for each budget (empty, with the reason, if it cannot plan)."""
    throughput: list[float] = []
    unproven: list[int] = []
    for b in budgets:
        try:
            plan = make_plan(topology, b, strategy, model, time_limit)
        except OptimalLimitError as err:
            return Curve(strategy, (), (), missing=str(err))
        throughput.append(plan.after)
        if plan.optimality is not None and not plan.optimality.proven:
            unproven.append(b)
    return Curve(strategy, tuple(budgets), tuple(throughput), unproven=tuple(unproven))


def throughput_curves(
    topology: Topology, budget: int, model: FlowModel, time_limit: float = 30.0
) -> tuple[Curve, ...]:
    """Every strategy's curve over ``0 … budget``, in :class:`Strategy` order."""
    budgets = plot_budgets(budget)
    return tuple(strategy_curve(topology, budgets, s, model, time_limit) for s in Strategy)
