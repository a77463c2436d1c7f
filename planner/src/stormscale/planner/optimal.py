"""The exact optimum: a mixed-integer program over the same model, solved by HiGHS.

Variables are the extra units ``x_v`` (integers within ``maxUnits`` and the budget; negative for
scale-in) and continuous rates; a bolt with a task count has a step-function capacity, written with
one binary per value of ``x_v`` (:func:`_capacities`), and ``c_v (n_v + x_v)`` below stands for it.
Because Θ is non-decreasing in every rate, the program's rates settle on the flow model's own values
at the optimum, so its objective is exactly the model's Θ.

``drop``::

    max  Σ_{sinks} ρ_v p_v
    s.t. p_v ≤ c_v (n_v + x_v)                                   (capacity)
         p_v ≤ ext_v + Σ_{bolt p} f ρ_p p_p + Σ_{spout p} f s_p (n_p + x_p)   (input)
         Σ x_v ≤ N          (scale-out)     Σ x_v = N   (scale-in, N < 0)

``backpressure`` with one source (a spout emitting λ, ``d_v`` = v's input per spout tuple)::

    max  g λ      s.t.  λ ≤ s (n_s + x_s),   d_v λ ≤ c_v (n_v + x_v)

``backpressure`` with several sources: each source i has a throttle ``α_i ∈ [0, 1]`` bounded by every
component it reaches, ``α_i D_v ≤ c_v (n_v + x_v)``; demands ``D_v`` depend on the spouts' units, so
the program is solved once per combination of scalable spouts' units (at most ``MAX_SPOUT_COMBINATIONS``).

HiGHS runs with zero relative gap, so a finished solve is a proven optimum; a time limit returns the
best allocation found with the proven upper bound on Θ.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import highspy
import numpy as np

from stormscale.planner.flow import FlowModel, throughput
from stormscale.planner.model import Topology, Units, add_allocation

MAX_SPOUT_COMBINATIONS = 4096


class OptimalLimitError(ValueError):
    """The exact program cannot be built within the planner's limits (too many spout combinations)."""


@dataclass(frozen=True, slots=True)
class OptimalResult:
    """The allocation, its Θ under the model, the proven upper bound on Θ, and whether it is proven.

    ``found`` is false when a time limit stopped the solver before it had any allocation.
    """

    extra: dict[int, int]
    throughput: float
    bound: float
    proven: bool
    found: bool = True

    @property
    def gap(self) -> float:
        return max(0.0, self.bound - self.throughput)


@dataclass
class _Program:
    """A sparse MILP in row form, built up column by column, then handed to HiGHS in one call."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    integer: list[int] = field(default_factory=list)
    rows: list[tuple[float, float, dict[int, float]]] = field(default_factory=list)

    def column(self, lower: float, upper: float, cost: float = 0.0, *, integer: bool = False) -> int:
        self.lower.append(lower)
        self.upper.append(upper)
        self.cost.append(cost)
        if integer:
            self.integer.append(len(self.lower) - 1)
        return len(self.lower) - 1

    def row(
        self,
        coefficients: dict[int, float],
        lower: float = -highspy.kHighsInf,
        upper: float = highspy.kHighsInf,
    ) -> None:
        self.rows.append((lower, upper, coefficients))

    def solve(self, time_limit: float) -> tuple[list[float], float, bool, bool]:
        """Maximize; returns (values, upper bound, proven optimal, has a solution)."""
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.silent()
        h.setOptionValue("mip_rel_gap", 0.0)
        h.setOptionValue("mip_abs_gap", 1e-7)
        h.setOptionValue("time_limit", float(time_limit))
        h.setOptionValue("threads", 1)
        n = len(self.lower)
        h.addVars(n, np.array(self.lower), np.array(self.upper))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(self.cost))
        if self.integer:
            idx = np.array(self.integer, dtype=np.int32)
            h.changeColsIntegrality(len(idx), idx, np.array([highspy.HighsVarType.kInteger] * len(idx)))
        self._add_rows(h)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        solved = status == highspy.HighsModelStatus.kOptimal
        feasible = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
        values = list(h.getSolution().col_value) if feasible else []
        bound = info.objective_function_value if solved and not self.integer else info.mip_dual_bound
        if solved:
            bound = max(bound, info.objective_function_value)
        return values, bound, solved, bool(values)

    def _add_rows(self, h: highspy.Highs) -> None:
        if not self.rows:
            return
        starts: list[int] = []
        index: list[int] = []
        value: list[float] = []
        for _, _, coefficients in self.rows:
            starts.append(len(index))
            index.extend(coefficients)
            value.extend(coefficients.values())
        h.addRows(
            len(self.rows),
            np.array([r[0] for r in self.rows]),
            np.array([r[1] for r in self.rows]),
            len(index),
            np.array(starts, dtype=np.int32),
            np.array(index, dtype=np.int32),
            np.array(value),
        )


def unit_range(topology: Topology, units: Units, budget: int, v: int) -> tuple[int, int]:
    """Bounds of ``x_v``: up to ``min(headroom, budget)`` for scale-out, down to the floor for scale-in."""
    if budget >= 0:
        return 0, int(min(topology.headroom(units, v), budget))
    return -min(topology.removable(units, v), -budget), 0


def _unit_columns(
    program: _Program, topology: Topology, units: Units, budget: int, fixed: dict[int, int]
) -> dict[int, int]:
    """One integer column per component whose units may change (spouts in ``fixed`` excluded)."""
    cols = {}
    for v in range(len(topology.components)):
        lo, hi = unit_range(topology, units, budget, v)
        if v in fixed or lo == hi:
            continue
        cols[v] = program.column(lo, hi, integer=True)
    return cols


@dataclass(frozen=True, slots=True)
class _Capacity:
    """``cap_v(n_v + x_v)`` as a linear expression of the program's columns: ``Σ terms + constant``."""

    terms: dict[int, float]
    constant: float


def _capacities(
    program: _Program, topology: Topology, units: Units, cols: dict[int, int]
) -> dict[int, _Capacity]:
    """Every bolt's capacity at ``n_v + x_v``.

    Without a task count it is linear, ``c_v n_v + c_v x_v``. With ``T`` tasks it is the step
    function ``c_v T / ⌈T/u⌉`` (:meth:`~stormscale.planner.model.Component.capacity`), written with one
    binary ``y_j`` per value ``j`` that ``x_v`` may take::

        Σ_j y_j = 1,   x_v − Σ_j j y_j = 0,   cap_v = Σ_j cap_v(n_v + j) y_j
    """
    out: dict[int, _Capacity] = {}
    for v, c in enumerate(topology.components):
        if c.is_spout:
            continue
        col = cols.get(v)
        if col is None:
            out[v] = _Capacity({}, c.capacity(units[v]))
        elif c.tasks is None:
            out[v] = _Capacity({col: c.capacity_per_unit}, c.capacity_per_unit * units[v])
        else:
            values = range(round(program.lower[col]), round(program.upper[col]) + 1)
            picks = {j: program.column(0.0, 1.0, integer=True) for j in values}
            program.row(dict.fromkeys(picks.values(), 1.0), lower=1.0, upper=1.0)
            program.row({col: 1.0, **{y: -float(j) for j, y in picks.items()}}, lower=0.0, upper=0.0)
            out[v] = _Capacity({y: c.capacity(units[v] + j) for j, y in picks.items()}, 0.0)
    return out


def _capacity_row(program: _Program, load: dict[int, float], capacity: _Capacity) -> None:
    """``load ≤ cap_v``, written as ``load − Σ terms ≤ constant``."""
    row = dict(load)
    for col, coefficient in capacity.terms.items():
        row[col] = row.get(col, 0.0) - coefficient
    program.row(row, upper=capacity.constant)


def _budget_row(program: _Program, cols: dict[int, int], budget: int, spent: int) -> None:
    coefficients = dict.fromkeys(cols.values(), 1.0)
    if budget >= 0:
        program.row(coefficients, upper=budget - spent)
    else:
        program.row(coefficients, lower=budget - spent, upper=budget - spent)


def _drop_program(topology: Topology, units: Units, budget: int) -> tuple[_Program, dict[int, int]]:
    program = _Program()
    cols = _unit_columns(program, topology, units, budget, {})
    capacity = _capacities(program, topology, units, cols)
    comps = topology.components
    processed: dict[int, int] = {}
    sinks = set(topology.sinks)
    for v in topology.order:
        c = comps[v]
        if c.is_spout:
            continue
        processed[v] = p = program.column(0.0, highspy.kHighsInf, c.selectivity if v in sinks else 0.0)
        _capacity_row(program, {p: 1.0}, capacity[v])
        arrivals = {p: 1.0}
        constant = c.external_input
        for q, f in topology.parents[v]:
            src = comps[q]
            if src.is_spout:
                constant += f * src.output_per_unit * units[q]
                if q in cols:
                    arrivals[cols[q]] = arrivals.get(cols[q], 0.0) - f * src.output_per_unit
            else:
                arrivals[processed[q]] = arrivals.get(processed[q], 0.0) - f * src.selectivity
        program.row(arrivals, upper=constant)
    for s in sinks:  # a spout with no children is its own sink
        if comps[s].is_spout and s in cols:
            program.cost[cols[s]] += comps[s].output_per_unit
    _budget_row(program, cols, budget, 0)
    return program, cols


def _sources(topology: Topology) -> list[int]:
    return [v for v, c in enumerate(topology.components) if c.is_spout or c.external_input > 0]


def _source_profile(topology: Topology, units: Units, source: int) -> tuple[float, list[float], float]:
    """Offered rate of one source, the demand it alone puts on every component, and its Θ at full rate."""
    comps = topology.components
    n = len(comps)
    demand = [0.0] * n
    out = [0.0] * n
    c0 = comps[source]
    offered = units[source] * c0.output_per_unit if c0.is_spout else c0.external_input
    for v in topology.order:
        c = comps[v]
        if v == source:
            demand[v] = 0.0 if c.is_spout else offered
            out[v] = offered if c.is_spout else offered * c.selectivity
            continue
        if c.is_spout:
            continue
        demand[v] = sum(out[p] * f for p, f in topology.parents[v])
        out[v] = demand[v] * c.selectivity
    return offered, demand, sum(out[s] for s in topology.sinks)


def _backpressure_program(
    topology: Topology, units: Units, budget: int, fixed: dict[int, int]
) -> tuple[_Program, dict[int, int]]:
    """The program for fixed spout units (``fixed``: extra units already given to scalable spouts)."""
    program = _Program()
    state = add_allocation(topology, units, fixed)
    cols = _unit_columns(program, topology, units, budget, fixed)
    capacity = _capacities(program, topology, units, cols)
    comps = topology.components
    profiles = {i: _source_profile(topology, state, i) for i in _sources(topology)}
    total_demand = [sum(p[1][v] for p in profiles.values()) for v in range(len(comps))]
    for source, (_offered, _demand, gain) in profiles.items():
        alpha = program.column(0.0, 1.0, gain)
        reach = topology.descendants[source] | (1 << source)
        for v, c in enumerate(comps):
            # α_i D_v ≤ c_v (n_v + x_v) for every component the source reaches (flow.py's rule)
            if c.is_spout or not reach >> v & 1 or total_demand[v] <= 0:
                continue
            _capacity_row(program, {alpha: total_demand[v]}, capacity[v])
    _budget_row(program, cols, budget, sum(fixed.values()))
    return program, cols


def _single_spout_program(
    topology: Topology, units: Units, budget: int, spout: int
) -> tuple[_Program, dict[int, int]]:
    """One source, a spout that may scale: ``λ ≤ s (n + x)``, ``d_v λ ≤ c_v (n_v + x_v)``."""
    program = _Program()
    cols = _unit_columns(program, topology, units, budget, {})
    capacity = _capacities(program, topology, units, cols)
    comps = topology.components
    unit_state = tuple(1 if v == spout else u for v, u in enumerate(units))
    per_unit, demand, gain = _source_profile(topology, unit_state, spout)
    if per_unit <= 0:
        demand, gain = [0.0] * len(comps), 0.0
    else:
        demand, gain = [d / per_unit for d in demand], gain / per_unit
    lam = program.column(0.0, highspy.kHighsInf, gain)
    offer = {lam: 1.0}
    if spout in cols:
        offer[cols[spout]] = -per_unit
    program.row(offer, upper=per_unit * units[spout])
    for v, c in enumerate(comps):
        if c.is_spout or demand[v] <= 0:
            continue
        _capacity_row(program, {lam: demand[v]}, capacity[v])
    _budget_row(program, cols, budget, 0)
    return program, cols


def _spout_levels(topology: Topology, units: Units, budget: int) -> Iterator[dict[int, int]]:
    """Every combination of scalable spouts' extra units that the budget allows."""
    spouts = [
        v
        for v, c in enumerate(topology.components)
        if c.is_spout and unit_range(topology, units, budget, v) != (0, 0)
    ]
    ranges = [range(lo, hi + 1) for lo, hi in (unit_range(topology, units, budget, v) for v in spouts)]
    count = 1
    for r in ranges:
        count *= len(r)
    if count > MAX_SPOUT_COMBINATIONS:
        raise OptimalLimitError(
            f"optimal: {count} combinations of scalable spout units exceed {MAX_SPOUT_COMBINATIONS}; "
            "fix some spouts' maxUnits or use another strategy"
        )
    for levels in itertools.product(*ranges):
        if (budget >= 0 and sum(levels) <= budget) or (budget < 0 and sum(levels) >= budget):
            yield dict(zip(spouts, levels, strict=True))


def optimal_alloc(
    topology: Topology, units: Units, budget: int, model: FlowModel, time_limit: float = 30.0
) -> OptimalResult:
    """The allocation of highest Θ: at most ``budget`` extra units, or exactly ``-budget`` removals.

    A scale-in asks for no more removals than the components' floors allow (the rest is reported as
    unallocated by the caller).
    """
    if budget < 0:
        budget = max(budget, -sum(topology.removable(units, v) for v in range(len(units))))
    if model is FlowModel.DROP:
        return _solve([(*_drop_program(topology, units, budget), {})], topology, units, model, time_limit)
    sources = _sources(topology)
    if len(sources) == 1 and topology.components[sources[0]].is_spout:
        program = _single_spout_program(topology, units, budget, sources[0])
        return _solve([(*program, {})], topology, units, model, time_limit)
    programs = [
        (*_backpressure_program(topology, units, budget, fixed), fixed)
        for fixed in _spout_levels(topology, units, budget)
    ]
    return _solve(programs, topology, units, model, time_limit)


def _solve(
    programs: Sequence[tuple[_Program, dict[int, int], dict[int, int]]],
    topology: Topology,
    units: Units,
    model: FlowModel,
    time_limit: float,
) -> OptimalResult:
    """The best of ``(program, unit columns, spout units fixed outside it)``, the time limit shared."""
    best: OptimalResult | None = None
    bound = -np.inf
    proven = True
    share = time_limit / max(1, len(programs))
    for program, cols, fixed in programs:
        values, upper, solved, feasible = program.solve(share)
        proven &= solved
        bound = max(bound, upper)
        if not feasible:
            continue
        extra = dict(fixed)
        extra.update({v: round(values[col]) for v, col in cols.items() if round(values[col]) != 0})
        state = add_allocation(topology, units, extra)
        result = OptimalResult(extra, throughput(topology, state, model), upper, solved)
        if best is None or result.throughput > best.throughput + 1e-9:
            best = result
    if best is None:  # stopped before any incumbent: keep the current units, report the bound found
        current = throughput(topology, units, model)
        return OptimalResult({}, current, max(bound, current), False, found=False)
    return OptimalResult(best.extra, best.throughput, max(bound, best.throughput), proven)
