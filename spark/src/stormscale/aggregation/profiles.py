"""Aggregates of one topology → its profile (``docs/formats/profile.md``) plus confidence fields.

The required fields are exactly the format's; everything the aggregation adds (sample counts,
spreads, where each number came from, whether the window was steady) lives under ``confidence``,
which readers ignore.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stormscale.aggregation import formulas
from stormscale.aggregation.aggregates import (
    BUSY_COUNTER,
    BUSY_CPU,
    BUSY_LATENCY,
    BUSY_SOURCES,
    Aggregates,
    ComponentStats,
    EdgeStats,
    WindowStats,
)
from stormscale.aggregation.params import Params
from stormscale.aggregation.schema import AggregationError, UnsettledWindowError
from stormscale.aggregation.structure import ComponentSpec, Structure
from stormscale.planner import parse_profile

#: A spout counts as throttled when its source offers this much more than it emits.
THROTTLE_TOLERANCE = 0.02
#: Fractions summing up to this much above 1 are noise on a split, beyond it copies (fan-out).
FANOUT_NOISE = 0.05


@dataclass
class _Notes:
    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.items.append(text)


def _num(x: float | None, digits: int = 6) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def _spread(n: int, cv: float | None) -> dict[str, Any]:
    return {"samples": n, "spread": _num(cv, 3)}


def _iso(epoch_s: float | None) -> str | None:
    return None if epoch_s is None else datetime.fromtimestamp(epoch_s, UTC).isoformat()


def build_profile(
    structure: Structure,
    window: WindowStats,
    components: Mapping[str, ComponentStats],
    edges: Sequence[EdgeStats],
    params: Params,
) -> dict[str, Any]:
    """The profile document of one topology; raises :class:`AggregationError` when a field cannot
    be estimated (it never guesses a required number)."""
    notes = _Notes()
    rates = {(e.child, e.parent): e for e in edges}
    out = []
    unstable = []
    swinging = []
    for spec in structure.components:
        stats = components.get(spec.id)
        if stats is None:
            raise AggregationError(
                f"topology {structure.topology!r}: component {spec.id!r} has no samples in the steady window"
            )
        entry = _component(
            structure=structure,
            spec=spec,
            stats=stats,
            rates=rates,
            notes=notes,
            min_steps=params.min_intervals,
        )
        spread = stats.offered_cv if _throttled_source(entry) else stats.rate_cv
        stable = spread is None or spread <= params.max_cv
        entry["confidence"]["stable"] = stable
        if not stable and _judges_the_window(spec):
            unstable.append(spec.id)
        elif not stable:
            swinging.append(spec.id)
        out.append(entry)
    if swinging:
        notes.add(
            f"rates vary more than cv {params.max_cv} in {', '.join(swinging)} between steady sources and "
            "sinks (backpressure pausing them): the window is judged by its sources and sinks"
        )
    document = {
        "topology": structure.topology,
        "components": out,
        "confidence": {
            "steady": not unstable,
            "unstable": unstable,
            "window": {
                "start": _iso(window.first_ts),
                "end": _iso(window.last_ts),
                "changedAt": _iso(window.changed_at),
                "steadyStart": _iso(window.steady_start),
                "intervals": window.intervals,
                "settleSeconds": params.settle_s,
                "maxCv": params.max_cv,
            },
            "notes": notes.items,
        },
    }
    if unstable:
        notes.add(f"rates vary more than cv {params.max_cv} in {', '.join(unstable)}: not a steady state")
    parse_profile(document)  # the planner's own validation: a profile we write, it can read
    return document


def _judges_the_window(spec: ComponentSpec) -> bool:
    """Whether a component's rate spread decides if the window is steady: the spouts' (what enters, by demand
    when throttled) and the sinks' (what leaves). A steady state holds the rates in and out constant (the
    thesis's steady-state assumption); a bolt between them that swings while both stay constant is paused and
    resumed by backpressure from a bottleneck downstream (measured on the Kafka-fed JVM linear shape at 16
    tuples/s: bolt 2's executed tuples per 10 s ran 101-240 while the spout was steady and bolts 3 and 4
    stayed within 5 %), and its window totals, all a profile uses, are still exact."""
    return spec.kind == "spout" or not spec.children


def _throttled_source(entry: Mapping[str, Any]) -> bool:
    """A spout whose demand is its offered counter and that backpressure throttles.

    Storm 2.x backpressure stops and restarts such a spout, so its emitted rate swings from interval
    to interval by design; its demand is the offered counter's rate, so the spread of that rate, not
    of the emitted one, says whether the window is steady.
    """
    output = entry["confidence"].get("outputPerUnit") or {}
    return entry["kind"] == "spout" and output.get("source") == "offered" and bool(output.get("throttled"))


def _units(spec: ComponentSpec, stats: ComponentStats) -> tuple[int, str]:
    if stats.units is not None and stats.units >= 1:
        return round(stats.units), "executors-gauge"
    return stats.executors_seen, "executors-seen"


def _max_units(spec: ComponentSpec, stats: ComponentStats, units: int) -> tuple[int | None, str]:
    if stats.tasks is not None and stats.tasks >= 1:
        return max(round(stats.tasks), units), "tasks-gauge"
    if spec.tasks is not None:
        return max(spec.tasks, units), "structure"
    return None, "absent"


def _fractions(
    structure: Structure,
    spec: ComponentSpec,
    stats: ComponentStats,
    rates: Mapping[tuple[str, str], EdgeStats],
) -> tuple[dict[str, float], dict[str, Any]]:
    fractions: dict[str, float] = {}
    confidence: dict[str, Any] = {}
    emitted = stats.emitted_rate or 0.0
    for child in spec.children:
        edge = rates.get((child, spec.id))
        received = edge.rate if edge is not None else 0.0
        fractions[child] = formulas.edge_fraction(received, emitted) if emitted > 0 else 0.0
        confidence[child] = _spread(edge.fraction_n, edge.fraction_cv) if edge else _spread(0, None)
    return fractions, confidence


def _component(
    *,
    structure: Structure,
    spec: ComponentSpec,
    stats: ComponentStats,
    rates: Mapping[tuple[str, str], EdgeStats],
    notes: _Notes,
    min_steps: int = 1,
) -> dict[str, Any]:
    where = f"topology {structure.topology!r}, component {spec.id!r}"
    units, units_source = _units(spec, stats)
    if units < 1:
        raise AggregationError(f"{where}: no executors in the steady window")
    max_units, max_source = _max_units(spec, stats, units)
    fractions, fraction_conf = _fractions(structure, spec, stats, rates)
    confidence: dict[str, Any] = {
        "samples": stats.rate_n,
        "rateSpread": _num(stats.rate_cv, 3),
        "units": {"source": units_source},
        "maxUnits": {"source": max_source},
        "children": fraction_conf,
    }
    entry: dict[str, Any] = {"id": spec.id, "kind": spec.kind, "units": units}
    if spec.kind == "spout":
        scale = _spout(where=where, stats=stats, units=units, entry=entry, conf=confidence, notes=notes)
    else:
        scale = _bolt(where=where, spec=spec, stats=stats, units=units, entry=entry, conf=confidence)
        _compare_busy(spec.id, stats, units, confidence["capacityPerUnit"], notes)
        if stats.busy_source not in (BUSY_CPU, BUSY_COUNTER):
            gauge = "execute-latency" if stats.busy_source == BUSY_LATENCY else "capacity"
            notes.add(
                f"{spec.id}: busy time from Storm's {gauge} gauge, not busy_seconds_total, in some or all "
                "intervals: a 10-minute mean that lags a start or a rebalance (capacity reads high)"
            )
    unfolded = scale
    scale, fractions, fanout = formulas.fold_fanout(scale, fractions, FANOUT_NOISE)
    if fanout > 1.0 + FANOUT_NOISE:
        confidence["fanout"] = _num(fanout)
        notes.add(f"{spec.id}: children receive {fanout:.3g}× its output (copies folded into its rate)")
    entry["outputPerUnit" if spec.kind == "spout" else "selectivity"] = _num(scale)
    if spec.kind == "spout":
        distribution = demand_per_unit(stats, confidence["outputPerUnit"]["source"], units, min_steps)
        if distribution is None:
            notes.add(
                f"{spec.id}: fewer than {min_steps} steps with a known rate; no demand distribution "
                "(planned on the window's mean)"
            )
        else:
            folded = scale / unfolded if unfolded > 0 else 1.0
            entry["demandPerUnit"] = {
                "mean": _num(scale),
                **{k: _num(v * folded) for k, v in distribution.items() if k in QUANTILES},
                "steps": distribution["steps"],
                "stepSeconds": _num(distribution["stepSeconds"]),
            }
    entry["maxUnits"] = max_units
    if max_units is None:
        del entry["maxUnits"]
    else:  # the task count: executors share a bolt's input by task (docs/formats/profile.md)
        entry["tasks"] = max_units
    if fractions:
        # full precision: fractions rounded one by one could sum above 1 + 1e-6, which the format forbids
        entry["children"] = dict(fractions)
    entry["confidence"] = confidence
    return entry


def _spout(
    *,
    where: str,
    stats: ComponentStats,
    units: int,
    entry: dict[str, Any],
    conf: dict[str, Any],
    notes: _Notes,
) -> float:
    emitted = stats.emitted_rate
    if stats.offered_rate is not None:
        offered, source, n, cv = stats.offered_rate, "offered", stats.offered_n, stats.offered_cv
    elif emitted is not None:
        offered, source, n, cv = emitted, "emitted", stats.emitted_n, stats.emitted_cv
        notes.add(
            f"{entry['id']}: no offered_total; outputPerUnit is the emitted rate, "
            "which backpressure may have throttled below the demand"
        )
    else:
        raise AggregationError(f"{where}: neither offered_total nor emitted_total in the steady window")
    throttled = emitted is not None and offered > emitted * (1 + THROTTLE_TOLERANCE)
    conf["outputPerUnit"] = {**_spread(n, cv), "source": source, "throttled": throttled}
    conf["emittedRate"] = _num(emitted)
    return formulas.output_per_unit(offered, units)


#: The statistics of a spout's demand distribution besides its mean (``demandPerUnit``).
QUANTILES = ("p50", "p95", "max")


def demand_per_unit(
    stats: ComponentStats, source: str, units: int, min_steps: int
) -> dict[str, float] | None:
    """A spout's demand over the window's steps, per unit, from the counter its ``outputPerUnit``
    rests on (``source``: ``offered`` or ``emitted``)::

        q_u = q(r_t) / n        q ∈ {p50, p95, max},  r_t the component's rate at step t

    ``r_t`` is :func:`formulas.period_rate` summed over the counter's series, ``n`` the spout's units.
    ``None`` with fewer than ``min_steps`` steps (too few for a percentile to mean anything)."""
    steps = stats.offered_steps if source == "offered" else stats.emitted_steps
    values = {q: getattr(stats, f"{source}_{q}") for q in QUANTILES}
    if steps < min_steps or stats.step_s is None or any(v is None for v in values.values()):
        return None
    return {**{q: v / units for q, v in values.items()}, "steps": steps, "stepSeconds": stats.step_s}


def _idle_while_executing(where: str, source: int, executed: float) -> str:
    """Why a bolt that executed tuples reads as never busy: with busy time from the pods' CPU, the
    pods used no more than the overhead the spec subtracts (``workers.podOverheadCPU`` set too high,
    e.g. measured while the worker JVMs were still booting)."""
    if BUSY_SOURCES[source] == "pod-cpu":
        return (
            f"{where}: executed {executed:.3g} tuples/s but its pods' CPU never rose above "
            "workers.podOverheadCPU: the overhead is set at or above what an idle pod uses"
        )
    return f"{where}: executed {executed:.3g} tuples/s with a busy time of 0; capacity cannot be estimated"


def _bolt(
    *,
    where: str,
    spec: ComponentSpec,
    stats: ComponentStats,
    units: int,
    entry: dict[str, Any],
    conf: dict[str, Any],
) -> float:
    executed = stats.executed_rate
    if executed is None or executed <= 0:
        raise AggregationError(
            f"{where}: no tuples executed in the steady window; capacity cannot be estimated"
        )
    if stats.busy_max is None:
        raise AggregationError(f"{where}: no execute_latency_ms or capacity samples; busy time unknown")
    if stats.busy_max <= 0:
        raise AggregationError(_idle_while_executing(where, stats.busy_source, executed))
    capacity = formulas.capacity_per_unit(executed, float(units), stats.busy_max)
    entry["capacityPerUnit"] = _num(capacity)
    skew = stats.busy_max / stats.busy_mean if stats.busy_mean else None
    conf["capacityPerUnit"] = {
        **_spread(stats.capacity_n, stats.capacity_cv),
        "source": BUSY_SOURCES[stats.busy_source],
        "busiest": _num(stats.busy_max, 4),
        "skew": _num(skew, 4),
    }
    conf["executedRate"] = _num(executed)
    emitted = stats.emitted_rate or 0.0
    if not spec.children and emitted <= 0:
        conf["selectivity"] = {"samples": 0, "spread": None, "source": "sink-default"}
        return 1.0
    conf["selectivity"] = {**_spread(stats.selectivity_n, stats.selectivity_cv), "source": "measured"}
    return formulas.selectivity(emitted, executed)


def _compare_busy(cid: str, stats: ComponentStats, units: int, conf: dict[str, Any], notes: _Notes) -> None:
    """Where the capacity rests on the pod's CPU and Storm measured busy time too, record Storm's
    figure beside it (``storm``) and whether the two disagree (``formulas.busy_disagrees``); a
    disagreement adds a note. The CPU's figure is the one used: it does not depend on where a tuple
    waits (a multilang bolt's execute latency is the hand-off into its pipe)."""
    if stats.busy_source != BUSY_CPU or stats.storm_busy_max is None or stats.busy_max is None:
        return
    executed, storm = stats.executed_rate or 0.0, stats.storm_busy_max
    storm_capacity = formulas.capacity_per_unit(executed, float(units), storm) if storm > 0 else None
    disagree = formulas.busy_disagrees(stats.busy_max, storm)
    conf["storm"] = {
        "source": BUSY_SOURCES[stats.storm_busy_source],
        "capacityPerUnit": _num(storm_capacity),
        "busiest": _num(storm, 4),
    }
    conf["disagreement"] = disagree
    if disagree:
        cpu_capacity = formulas.capacity_per_unit(executed, float(units), stats.busy_max)
        shown = "unbounded" if storm_capacity is None else f"{storm_capacity:.4g}/s"
        notes.add(
            f"{cid}: busiest executor {stats.busy_max:.3g} busy by its pod's CPU, {storm:.3g} by Storm's "
            f"{BUSY_SOURCES[stats.storm_busy_source]}: capacity per unit {cpu_capacity:.4g}/s from the CPU "
            f"(used), {shown} from Storm"
        )


def profiles(structures: Sequence[Structure], aggregates: Aggregates, params: Params) -> list[dict[str, Any]]:
    """One profile per structure; :class:`AggregationError` when a topology lacks a steady window."""
    out = []
    for structure in structures:
        window = _steady_window(structure.topology, aggregates.windows, params)
        out.append(
            build_profile(
                structure,
                window,
                aggregates.components.get(structure.topology, {}),
                aggregates.edges.get(structure.topology, []),
                params,
            )
        )
    return out


def profile_results(
    structures: Sequence[Structure], aggregates: Aggregates, params: Params
) -> dict[str, dict[str, Any] | AggregationError]:
    """One profile per structure, or the error that stopped it, by topology: a fleet of hundreds
    publishes every topology it can and names the others (:func:`profiles` stops at the first)."""
    out: dict[str, dict[str, Any] | AggregationError] = {}
    for structure in structures:
        try:
            out[structure.topology] = profiles([structure], aggregates, params)[0]
        except AggregationError as err:
            out[structure.topology] = err
    return out


def _steady_window(topology: str, windows: Mapping[str, WindowStats], params: Params) -> WindowStats:
    window = windows.get(topology)
    if window is None:
        raise AggregationError(f"samples: no rows for topology {topology!r} in the window")
    if window.duplicates:
        raise AggregationError(
            f"samples: topology {topology!r} has {window.duplicates} rows repeating a (series, ts) pair"
        )
    if window.intervals < params.min_intervals:
        error = AggregationError if window.changed_at is None else UnsettledWindowError
        raise error(
            f"samples: topology {topology!r} has {window.intervals} steady intervals after the last change "
            f"(+{params.settle_s:g} s settling); at least {params.min_intervals} are needed"
        )
    return window


def write_profile(document: Mapping[str, Any], directory: Path) -> Path:
    """Write ``<directory>/<topology>.json`` atomically (a reader never sees half a profile)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{document['topology']}.json"
    partial = target.with_suffix(".json.partial")
    partial.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    partial.replace(target)
    return target
