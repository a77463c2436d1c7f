"""What the planner's model assumes of the running topology, checked against Storm's own view. Pure.

The model (Puttaswamy's predictive model, Stela's ETP) takes a component's input as split evenly
over its executors (shuffle grouping) and its capacity as proportional to its units. Three things
the topology's conf and graph say break that:

* load-aware messaging (``topology.disable.loadaware.messaging`` absent or false, Storm's default):
  a shuffle grouping sends fewer tuples to busy executors, so the split is not even;
* a component whose planned units do not divide its tasks: the executors hold ⌈T/k⌉ or ⌊T/k⌋ of
  its T tasks, and the one with ⌈T/k⌉ saturates first. With the input even over tasks, the k units
  give ``T / (k·⌈T/k⌉)`` of the capacity the model counts (1 when k divides T);
* a grouping other than shuffle (fields, global, partial key, custom, direct, all).

Each :class:`Finding` names the components and what it does to the prediction. The operator still
plans: the findings go into the ``AssumptionsChecked`` condition, not into Degraded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: The conf key that turns Storm's load-aware shuffle off (true) or leaves it on (false, absent).
LOAD_AWARE_KEY = "topology.disable.loadaware.messaging"
#: Groupings whose even split load-aware messaging bends.
SHUFFLE_LIKE = ("shuffle", "local_or_shuffle", "none")
#: The largest prediction error measured on the test bed with load-aware messaging on.
LOAD_AWARE_ERROR = "~19 %"
#: Groupings the model does not cover, each with what it does to the prediction.
UNCOVERED: Mapping[str, str] = {
    "fields": "key skew: the busiest executor sets the capacity, not the mean",
    "global": "every tuple goes to one task: units beyond one add no capacity",
    "partial_key": "each key split over two tasks: skew halved, not gone; the busiest executor rules",
    "custom": "the split is the custom grouping's own: the even split may not hold",
    "direct": "the emitter picks the task: the split is the application's, not even",
    "all": "every executor gets every tuple: more units add no capacity",
}
#: Lines the condition's message holds at most, and component names per line.
MAX_LINES = 5
MAX_NAMES = 4


@dataclass(frozen=True)
class Finding:
    """An assumption that does not hold: which, the components it touches, and its effect."""

    assumption: str
    components: tuple[str, ...]
    effect: str

    def line(self) -> str:
        """One line: the assumption, at most :data:`MAX_NAMES` components, the effect."""
        names = ", ".join(self.components[:MAX_NAMES])
        more = len(self.components) - MAX_NAMES
        if more > 0:
            names += f" and {more} more"
        return f"{self.assumption} ({names}): {self.effect}"


def load_aware(conf: Mapping[str, Any]) -> bool:
    """Whether Storm's load-aware shuffle is on: unless the conf disables it (true, or ``"true"``)."""
    value = conf.get(LOAD_AWARE_KEY, False)
    disabled = value is True or (isinstance(value, str) and value.strip().lower() == "true")
    return not disabled


def capacity_share(tasks: int, units: int) -> float:
    """The share of the model's capacity ``units`` executors give over ``tasks`` tasks:
    ``T / (k·⌈T/k⌉)``, 1 when ``units`` divides ``tasks``."""
    if tasks <= 0 or units <= 0:
        return 1.0
    return tasks / (units * math.ceil(tasks / units))


def load_aware_finding(conf: Mapping[str, Any], groupings: Mapping[str, frozenset[str]]) -> Finding | None:
    """Load-aware messaging on, and components fed by a shuffle grouping that it bends."""
    fed = tuple(sorted(c for c, g in groupings.items() if g & set(SHUFFLE_LIKE)))
    if not fed or not load_aware(conf):
        return None
    effect = (
        "load-aware shuffle sends fewer tuples to busy executors, so the split is not even: the "
        f"prediction may be off by up to {LOAD_AWARE_ERROR} as measured on the test bed "
        f"(set {LOAD_AWARE_KEY}: true)"
    )
    return Finding("load-aware messaging on", fed, effect)


def division_findings(units: Mapping[str, int], tasks: Mapping[str, int]) -> list[Finding]:
    """One finding per component whose planned units do not divide its task count."""
    found: list[Finding] = []
    for component in sorted(units):
        k, t = units[component], tasks.get(component, 0)
        if k <= 0 or t <= 0 or t % k == 0:
            continue
        loss = 1.0 - capacity_share(t, k)
        effect = (
            f"{k} executors over {t} tasks: the one with {math.ceil(t / k)} tasks saturates first, "
            f"capacity up to {loss:.0%} below the model's"
        )
        found.append(Finding("units do not divide tasks", (component,), effect))
    return found


def grouping_findings(groupings: Mapping[str, frozenset[str]]) -> list[Finding]:
    """One finding per grouping the model does not cover, naming the components it feeds."""
    found: list[Finding] = []
    for grouping, effect in UNCOVERED.items():
        fed = tuple(sorted(c for c, g in groupings.items() if grouping in g))
        if fed:
            found.append(Finding(f"{grouping} grouping", fed, effect))
    return found


def check(
    conf: Mapping[str, Any],
    groupings: Mapping[str, frozenset[str]],
    units: Mapping[str, int],
    tasks: Mapping[str, int],
) -> tuple[Finding, ...]:
    """Every assumption of the model that the topology breaks: ``conf`` is its conf from Nimbus,
    ``groupings`` the groupings of each component's inputs, ``units`` the planned executors per
    component and ``tasks`` its task counts."""
    loaded = load_aware_finding(conf, groupings)
    return (
        *(() if loaded is None else (loaded,)),
        *division_findings(units, tasks),
        *grouping_findings(groupings),
    )


def message(findings: tuple[Finding, ...]) -> str:
    """The condition's message: one line a finding, at most :data:`MAX_LINES`."""
    if not findings:
        return "The model's assumptions hold: even shuffle splits, units dividing tasks"
    lines = [f.line() for f in findings[:MAX_LINES]]
    if len(findings) > MAX_LINES:
        lines.append(f"and {len(findings) - MAX_LINES} more")
    return "\n".join(lines)
