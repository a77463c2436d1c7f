"""Text rendering of sizings and placements: every strategy side by side, then the chosen one's detail."""

from __future__ import annotations

from collections.abc import Mapping

from stormscale.planner.model import Topology
from stormscale.planner.placement.strategies import PlacementResult, PlacementStrategy
from stormscale.planner.render import format_rate, grid
from stormscale.planner.sizing.exact import offered_rate
from stormscale.planner.sizing.strategies import ONE_SLOT_PER_POD, Sizing, SizingStrategy


def _title(topology: Topology, target_rate: float, slots_per_pod: int) -> str:
    now = offered_rate(topology)
    return (
        f"{topology.name or 'topology'} · target {format_rate(target_rate)} tuples/s "
        f"({target_rate / now:.2f} × today's {format_rate(now)}) · {slots_per_pod} slot(s) per pod"
    )


def sizing_table(sizings: Mapping[SizingStrategy, Sizing], chosen: SizingStrategy) -> list[str]:
    """One row per strategy: units, slots, CPU and memory charged (in slots), pods; ``*`` marks the choice."""
    header = ["", "strategy", "units", "slots", "CPU", "memory", "pods", "note"]
    rows = [
        [
            "*" if s is chosen else "",
            s.value,
            str(z.total_units),
            str(z.slots),
            f"{z.cpu:,.2f}",
            f"{z.memory:,.2f}",
            "—" if z.pods is None else str(z.pods),
            z.note,
        ]
        for s, z in sizings.items()
    ]
    return grid(header, rows, right={2, 3, 4, 5, 6})


def units_table(
    topology: Topology, sizings: Mapping[SizingStrategy, Sizing], demands: Mapping[str, float]
) -> list[str]:
    """Per component: kind, units now, arrivals at the target, and each strategy's units."""
    header = ["component", "kind", "now", "demand", *(s.value for s in sizings)]
    rows = [
        [
            c.id,
            c.kind.value,
            str(c.units),
            format_rate(demands[c.id]) if c.id in demands else "—",
            *(str(z.units[c.id]) for z in sizings.values()),
        ]
        for c in topology.components
    ]
    return grid(header, rows, right=set(range(2, len(header))))


def size_report(
    topology: Topology,
    sizings: Mapping[SizingStrategy, Sizing],
    chosen: SizingStrategy,
    demands: Mapping[str, float],
) -> str:
    """The whole table output of ``stormscale size``."""
    z = sizings[chosen]
    lines = [_title(topology, z.target_rate, z.slots_per_pod), ""]
    lines += ["Sizing by strategy (* = this sizing; exact = the proven minimum, one unit per slot):"]
    lines += ["  " + x for x in sizing_table(sizings, chosen)]
    lines += ["", "Units per component (demand = tuples/s arriving at the target):"]
    lines += ["  " + x for x in units_table(topology, sizings, demands)]
    return "\n".join(lines)


def _executors(executors: Mapping[str, int]) -> str:
    return " ".join(f"{cid}×{n}" for cid, n in executors.items()) or "—"


def placements_table(
    results: Mapping[PlacementStrategy, PlacementResult | str], chosen: PlacementStrategy
) -> list[str]:
    """One row per strategy: pods, slots used, slots beyond the sizing's ρ; or why it cannot place."""
    header = ["", "strategy", "pods", "slots used", "extra slots", "note"]
    rows = []
    for s, r in results.items():
        mark = "*" if s is chosen else ""
        if isinstance(r, str):
            rows.append([mark, s.value, "—", "—", "—", "one slot per pod" if r == ONE_SLOT_PER_POD else r])
        else:
            p = r.placement
            rows.append(
                [mark, s.value, str(p.pod_count), str(p.used_slots), f"+{r.extra_slots}", "; ".join(p.notes)]
            )
    return grid(header, rows, right={2, 3, 4})


def slots_table(result: PlacementResult) -> list[str]:
    """Every slot of the placement: pod, slot, executors per component, CPU and memory (in slots)."""
    header = ["pod", "slot", "executors", "CPU", "memory"]
    rows = [
        [str(j), str(k), _executors(slot.executors), f"{slot.cpu:.2f}", f"{slot.memory:.2f}"]
        for j, pod in enumerate(result.placement.pods, start=1)
        for k, slot in enumerate(pod.slots, start=1)
    ]
    return grid(header, rows, right={0, 1, 3, 4})


def place_report(
    topology: Topology,
    target_rate: float,
    results: Mapping[PlacementStrategy, PlacementResult | str],
    chosen: PlacementStrategy,
    exact_pods: int,
) -> str:
    """The whole table output of ``stormscale place``."""
    result = results[chosen]
    assert not isinstance(result, str)
    lines = [_title(topology, target_rate, result.slots_per_pod), ""]
    lines += [
        f"Pods by strategy (* = this placement; exact minimum: {exact_pods} pods at one unit per slot):"
    ]
    lines += ["  " + x for x in placements_table(results, chosen)]
    lines += ["", f"Slots under {chosen.value} (executors per component; CPU and memory in slots):"]
    lines += ["  " + x for x in slots_table(result)]
    return "\n".join(lines)
