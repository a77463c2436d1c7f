"""A spout's demand as a distribution over the profile's window, and the profile at one statistic of it.

The aggregation writes, beside a spout's ``outputPerUnit`` (the window's mean rate per unit), its
``demandPerUnit``: the mean, median, 95th percentile and largest of its per-step rates per unit
(docs/formats/profile.md). Sizing for the mean leaves a bursty source congested for every step above
it; sizing for a percentile ``q`` leaves it congested for about ``1 − q`` of the window's steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.model import Topology


class DemandStatistic(StrEnum):
    """Which statistic of a spout's per-step demand a plan sizes for."""

    MEAN = "mean"
    P50 = "p50"
    P95 = "p95"
    MAX = "max"


@dataclass(frozen=True)
class DemandDistribution:
    """A spout's demand over the window, tuples/s per unit: ``mean`` (its ``outputPerUnit``), the
    median, 95th percentile and largest of its rates over ``steps`` steps of about ``step_seconds``."""

    mean: float
    p50: float
    p95: float
    max: float
    steps: int
    step_seconds: float

    def at(self, statistic: DemandStatistic) -> float:
        """The demand per unit at ``statistic``."""
        return float(getattr(self, statistic.value))


@dataclass(frozen=True)
class DemandUsed:
    """What a profile at one statistic offers: ``rate`` (Σ over spouts of units · the statistic),
    ``mean`` (Σ units · outputPerUnit), and the spouts that had no distribution (their mean is used)."""

    statistic: DemandStatistic
    rate: float
    mean: float
    without: tuple[str, ...]
    steps: int | None
    step_seconds: float | None


def at_demand(
    topology: Topology, distributions: Mapping[str, DemandDistribution], statistic: DemandStatistic
) -> tuple[Topology, DemandUsed]:
    """``topology`` with each spout's ``outputPerUnit`` at ``statistic`` of its distribution::

        outputPerUnit_s ← q_s        (q_s: spout s's statistic per unit; its mean where it has none)

    With several spouts each is taken at its own statistic: Σ_s p95_s is at least the p95 of their
    sum (the peaks need not coincide), so a plan for it is on the safe side. ``steps`` and
    ``step_seconds`` are the fewest steps and the longest step among the spouts' distributions."""
    components = []
    rate = mean = 0.0
    without: list[str] = []
    found: list[DemandDistribution] = []
    for c in topology.components:
        if not c.is_spout:
            components.append(c)
            continue
        distribution = distributions.get(c.id)
        per_unit = c.output_per_unit
        if distribution is None:
            without.append(c.id)
        else:
            found.append(distribution)
            per_unit = c.output_per_unit if statistic is DemandStatistic.MEAN else distribution.at(statistic)
        rate += per_unit * c.units
        mean += c.output_per_unit * c.units
        components.append(dataclasses.replace(c, output_per_unit=per_unit))
    used = DemandUsed(
        statistic=statistic,
        rate=rate,
        mean=mean,
        without=tuple(without),
        steps=min((d.steps for d in found), default=None),
        step_seconds=max((d.step_seconds for d in found), default=None),
    )
    return Topology(topology.name, tuple(components)), used
