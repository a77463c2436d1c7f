"""Text rendering of plans: every strategy side by side, then every component before and after."""

from __future__ import annotations

import math
from collections.abc import Mapping

from stormscale.planner.flow import ComponentFlow, FlowModel, evaluate
from stormscale.planner.model import Topology, add_allocation
from stormscale.planner.planning import Plan, Strategy


def format_rate(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:,.1f}"


def _allocation(allocation: Mapping[str, int]) -> str:
    return " ".join(f"{cid}:{n:+d}" for cid, n in allocation.items()) or "—"


def _note(plan: Plan) -> str:
    if plan.chosen is not None:
        return f"chose {plan.chosen.value}" + ("" if plan.note is None else f"; {plan.note}")
    if plan.optimality is not None:
        if plan.optimality.proven:
            return "proven optimum"
        return f"time limit: Θ ≤ {format_rate(plan.optimality.bound)}"
    return ""


def strategies_table(plans: Mapping[Strategy, Plan], chosen: Strategy) -> list[str]:
    """One row per strategy: allocation, predicted Θ after, gain, unallocated units; ``*`` marks the plan."""
    header = ["", "strategy", "allocation", "Θ after", "gain", "unallocated", "note"]
    rows = [
        [
            "*" if s is chosen else "",
            s.value,
            _allocation(p.allocation),
            format_rate(p.after),
            f"{p.gain:+,.1f}",
            str(p.unallocated),
            _note(p),
        ]
        for s, p in plans.items()
    ]
    return grid(header, rows, right={3, 4, 5})


def components_table(topology: Topology, plan: Plan) -> list[str]:
    """Per component, before → after the plan: units, input, processed, output, lost, congested."""
    units = topology.units
    after_units = add_allocation(topology, units, plan.allocation)
    before = evaluate(topology, units, plan.flow_model).components
    after = evaluate(topology, after_units, plan.flow_model).components
    lost = "dropped" if plan.flow_model is FlowModel.DROP else "throttled"
    header = ["component", "kind", "units", "input", "processed", "output", lost, "congested"]
    rows = [_component_row(topology, b, a) for b, a in zip(before, after, strict=True)]
    return grid(header, rows, right={2, 3, 4, 5, 6})


def _component_row(topology: Topology, b: ComponentFlow, a: ComponentFlow) -> list[str]:
    def pair(x: float, y: float) -> str:
        return format_rate(x) if abs(x - y) < 1e-9 else f"{format_rate(x)} → {format_rate(y)}"

    def flag(c: ComponentFlow) -> str:
        return "yes" if c.congested else "no"

    kind = topology.components[topology.index[b.id]].kind.value
    units = str(b.units) if b.units == a.units else f"{b.units} → {a.units}"
    congested = flag(b) if b.congested == a.congested else f"{flag(b)} → {flag(a)}"
    return [
        b.id,
        kind,
        units,
        pair(b.input, a.input),
        pair(b.processed, a.processed),
        pair(b.output, a.output),
        pair(b.lost, a.lost),
        congested,
    ]


def grid(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [line(header), *(line(r) for r in rows)]


def plan_report(topology: Topology, plans: Mapping[Strategy, Plan], chosen: Strategy) -> str:
    """The whole table output of ``stormscale plan``."""
    plan = plans[chosen]
    title = (
        f"{topology.name or 'topology'} · flow model {plan.flow_model.value} · budget {plan.budget:+d} · "
        f"Θ before {format_rate(plan.before)} tuples/s"
    )
    lines = [title, "", "Predicted throughput by strategy (* = this plan):"]
    lines += ["  " + x for x in strategies_table(plans, chosen)]
    lines += ["", f"Components under the {chosen.value} plan:"]
    lines += ["  " + x for x in components_table(topology, plan)]
    return "\n".join(lines)
