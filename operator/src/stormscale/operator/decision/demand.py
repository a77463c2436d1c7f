"""Auto's demand: each spout at ``scaling.demandPercentile`` of its per-step demand over the profile's
window, and the line ``status.lastPlan.demand`` shows. Pure.

A profile (published or in-process) carries each spout's ``demandPerUnit``: the mean, median, 95th
percentile and largest of its rates over the window's steps (docs/formats/profile.md). Auto plans and
sizes on the profile with every spout's ``outputPerUnit`` at the chosen statistic
(:func:`~stormscale.planner.at_demand`); a spout without a distribution (a profile written before
it, or too few steps) keeps its mean, and the line says so.
"""

from __future__ import annotations

import dataclasses

from stormscale.operator.ports import MeasuredProfile
from stormscale.planner import DemandStatistic, DemandUsed, at_demand


def duration(seconds: float) -> str:
    """``5m00s``, ``1h05m``, ``45s``."""
    hours, rest = divmod(round(seconds), 3600)
    if hours:
        return f"{hours}h{rest // 60:02d}m"
    return f"{rest // 60}m{rest % 60:02d}s" if rest >= 60 else f"{rest}s"


def describe(used: DemandUsed, asked: DemandStatistic) -> str:
    """The line for ``status.lastPlan.demand``: which demand the plan sizes for, over what."""
    if used.steps is None or used.step_seconds is None:
        return (
            f"demand mean of the window: {used.mean:.4g}/s ({asked.value} asked; the profile has no "
            "per-step demand)"
        )
    span = f"{duration(used.steps * used.step_seconds)} ({used.steps} steps of {duration(used.step_seconds)})"
    line = f"demand {asked.value} of {span}: {used.rate:.4g}/s (mean {used.mean:.4g}/s)"
    if used.without:
        line += f"; spout {', '.join(used.without)} without per-step demand: at its mean"
    return line


def at_percentile(measured: MeasuredProfile, statistic: DemandStatistic) -> MeasuredProfile:
    """``measured`` with every spout's demand at ``statistic`` of its distribution, and the line
    that says so in ``demand_used``."""
    topology, used = at_demand(measured.topology, measured.demand, statistic)
    return dataclasses.replace(measured, topology=topology, demand_used=describe(used, statistic))
