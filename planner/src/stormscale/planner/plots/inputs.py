"""What the plots read besides the profile, checked before any planning: measured points, a plan, and
the file to write. Every rejection is one :class:`PlotInputError` line naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from stormscale.planner.flow import FlowModel
from stormscale.planner.model import Topology
from stormscale.planner.numbers import is_finite_number
from stormscale.planner.profile import MAX_RATE, MAX_UNITS

#: The most budget steps one plot plans (every strategy plans every step: 4 × 101 plans).
MAX_PLOT_BUDGET = 100
#: File formats by extension; matplotlib picks its renderer from the extension too.
FORMATS = {".png": "png", ".svg": "svg"}


class PlotInputError(ValueError):
    """Input to a plot that cannot be drawn (measured points, a plan, an output file): one line."""


@dataclass(frozen=True)
class MeasuredPoint:
    """Θ measured at the sinks with ``budget`` extra units applied."""

    budget: int
    throughput: float


@dataclass(frozen=True)
class PlanOverlay:
    """What ``stormscale graph --plan`` takes from a plan: its allocation and, if given, its flow model."""

    allocation: dict[str, int]
    flow_model: FlowModel | None = None


def output_format(path: str, flag: str) -> str:
    """``png`` or ``svg`` from the file's extension, once the file can be written where it is asked."""
    target = Path(path)
    if target.is_dir():
        raise PlotInputError(f"{flag}: {path}: is a directory, not a file")
    fmt = FORMATS.get(target.suffix.lower())
    if fmt is None:
        raise PlotInputError(
            f"{flag}: {path}: unknown extension {target.suffix or '(none)'!r}, use .png or .svg"
        )
    parent = target.parent
    if not parent.is_dir():
        raise PlotInputError(f"{flag}: {path}: no such directory {str(parent)!r}")
    return fmt


def parse_measured(document: Any, source: str = "measured") -> tuple[MeasuredPoint, ...]:
    """Measured points from a decoded JSON document, sorted by budget.

    Either a list of ``{"budget": int, "throughput": tuples/s}`` or an accuracy / end-to-end report
    (``{"steps": [{"budget": …, "measured": …}, …]}``). Errors name the field, e.g.
    ``measured.json: [1].throughput: must be a finite number ≥ 0 (tuples/s)``.
    """
    if isinstance(document, Mapping) and isinstance(document.get("steps"), list):
        items, rate_key, prefix = document["steps"], "measured", "steps"
    elif isinstance(document, list):
        items, rate_key, prefix = document, "throughput", ""
    else:
        raise PlotInputError(f"{source}: must be a list of {{budget, throughput}} points")
    points = [_point(f"{source}: {prefix}[{i}]", item, rate_key) for i, item in enumerate(items)]
    return tuple(sorted(points, key=lambda p: p.budget))


def _point(path: str, item: Any, rate_key: str) -> MeasuredPoint:
    if not isinstance(item, Mapping):
        raise PlotInputError(f"{path}: must be an object with budget and {rate_key}")
    budget = item.get("budget")
    if not _is_int(budget) or abs(budget) > MAX_PLOT_BUDGET:
        raise PlotInputError(f"{path}.budget: must be an integer within ±{MAX_PLOT_BUDGET}")
    rate = item.get(rate_key)
    if not is_finite_number(rate) or not 0 <= rate <= MAX_RATE:
        raise PlotInputError(f"{path}.{rate_key}: must be a finite number ≥ 0 (tuples/s)")
    return MeasuredPoint(budget, float(rate))


def parse_plan(document: Any, topology: Topology, source: str = "plan") -> PlanOverlay:
    """The allocation of a plan (``stormscale plan --output json``) checked against ``topology``.

    Every id must be one of the profile's components and leave it at 0 units or more; the plan's
    ``topology``, when both name one, must be the profile's.
    """
    if not isinstance(document, Mapping) or "allocation" not in document:
        raise PlotInputError(
            f"{source}: must be a plan object with an allocation (stormscale plan --output json)"
        )
    if document.get("formatVersion", 1) != 1:
        raise PlotInputError(f"{source}: formatVersion: a sizing plan, not a budget plan (stormscale plan)")
    name = document.get("topology")
    if isinstance(name, str) and name and topology.name and name != topology.name:
        raise PlotInputError(
            f"{source}: topology: the plan is for {name!r}, the profile is {topology.name!r}"
        )
    raw = document["allocation"]
    if not isinstance(raw, Mapping):
        raise PlotInputError(f"{source}: allocation: must be an object of component id → units")
    allocation: dict[str, int] = {}
    for cid, extra in raw.items():
        if cid not in topology.index:
            raise PlotInputError(f"{source}: allocation.{cid}: unknown component")
        if not _is_int(extra) or abs(extra) > MAX_UNITS:
            raise PlotInputError(f"{source}: allocation.{cid}: must be an integer within ±{MAX_UNITS:,}")
        if topology.components[topology.index[cid]].units + extra < 0:
            raise PlotInputError(f"{source}: allocation.{cid}: leaves the component below 0 units")
        allocation[cid] = extra
    model = document.get("flowModel")
    if model is not None and model not in {m.value for m in FlowModel}:
        raise PlotInputError(f"{source}: flowModel: must be one of {', '.join(m.value for m in FlowModel)}")
    return PlanOverlay(allocation, None if model is None else FlowModel(model))


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
