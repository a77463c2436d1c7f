"""Load and validate topology profiles (``docs/formats/profile.md``).

Every rejection names the offending field as a path, e.g. ``components[3].children.9: unknown
component``. Fields the format does not know are ignored, as the format asks of readers.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from stormscale.planner.demand import DemandDistribution
from stormscale.planner.model import Component, Kind, Topology
from stormscale.planner.numbers import is_finite_number, short

FRACTION_SUM_TOLERANCE = 1e-6
#: Size limits (docs/planner.md, "Limits"): far beyond any real topology, low enough that every strategy
#: answers in seconds and no sum of rates or units overflows a float.
MAX_COMPONENTS = 10_000
MAX_UNITS = 1_000_000
MAX_RATE = 1e12
#: The largest file read as JSON (profile, plan, placement, measured points): 16 MiB, a thousand times a
#: 10,000-component profile's few MiB at most.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: The most tuples one tuple offered by a source may become on its way (the product of selectivities
#: along a path, summed over paths): a splitter chain of real topologies stays below 10⁴; the bound keeps
#: every rate, at Ω ≤ 10¹² and 10⁶ spout units, far below a float's overflow.
MAX_GAIN = 1e6


class ProfileError(ValueError):
    """A profile that breaks a rule of the format; the message starts with the field's path."""


def read_json(path: str | Path, what: str = "file") -> Any:
    """Read and decode a JSON file; every way it can fail is a one-line :class:`ProfileError`.

    ``json`` raises ``RecursionError`` on deep nesting (``[`` × 100,000) and a plain ``ValueError`` on
    integers beyond Python's 4,300-digit conversion limit: both are bad input, not crashes.
    """
    try:
        text = _read_regular_file(path, what).decode("utf-8")
    except OSError as err:
        raise ProfileError(f"{path}: cannot read {what} ({err.strerror or err})") from None
    except UnicodeDecodeError as err:
        raise ProfileError(f"{path}: not UTF-8 (byte {err.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ProfileError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    except RecursionError:
        raise ProfileError(f"{path}: not valid JSON (nested too deeply)") from None
    except ValueError:
        raise ProfileError(f"{path}: not valid JSON (integer too long)") from None


def _read_regular_file(path: str | Path, what: str) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES`; anything else (a FIFO, whose open
    blocks, a device such as ``/dev/zero``, a directory, a larger file) is refused before it is read."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise ProfileError(f"{path}: cannot read {what} (not a regular file)")
    # O_NONBLOCK: should the path become a FIFO after the check, opening it still returns at once.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise ProfileError(f"{path}: cannot read {what} (not a regular file)")
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ProfileError(f"{path}: cannot read {what} (larger than {MAX_FILE_BYTES:,} bytes)")
    return data


def load_profile(path: str | Path) -> Topology:
    """Read and validate a profile file."""
    return parse_profile(read_json(path, "profile"))


def parse_profile(document: Any) -> Topology:
    """Validate a decoded profile and build the :class:`Topology`."""
    if not isinstance(document, Mapping):
        raise ProfileError("profile: must be a JSON object")
    name = document.get("topology", "")
    if not isinstance(name, str):
        raise ProfileError("topology: must be a string")
    raw = document.get("components")
    if not isinstance(raw, list) or not raw:
        raise ProfileError("components: must be a non-empty list")
    if len(raw) > MAX_COMPONENTS:
        raise ProfileError(f"components: at most {MAX_COMPONENTS:,}, got {len(raw):,}")
    components = tuple(_parse_component(f"components[{i}]", item) for i, item in enumerate(raw))
    _check_unique_ids(components)
    _check_children(components)
    topology = Topology(name=name, components=components)
    _check_acyclic(topology)
    _check_gain(topology)
    return topology


def _check_gain(topology: Topology) -> None:
    """Refuse a profile whose selectivities multiply a source's tuples by more than :data:`MAX_GAIN`.

    In topological order, with ``[v is a source]`` 1 for a spout or a bolt with external input:
    ``g_v = [v is a source] + Σ_p g_p · s_p · f_pv`` tuples arrive at v per tuple offered, and
    ``g_v · s_v`` leave it (a spout's ``s`` is 1); the first v whose output passes the bound is named.
    """
    out_gain = [0.0] * len(topology.components)
    for v in topology.order:
        c = topology.components[v]
        source = 1.0 if c.is_spout or c.external_input > 0 else 0.0
        arriving = source + sum(out_gain[p] * f for p, f in topology.parents[v])
        out = arriving * (1.0 if c.is_spout else c.selectivity)
        out_gain[v] = out
        if not out <= MAX_GAIN:
            raise ProfileError(
                f"components[{v}].selectivity: one tuple a source offers becomes {out:.3g} tuples out of "
                f"{c.id!r}, above the bound {MAX_GAIN:g}"
            )


def _parse_component(path: str, item: Any) -> Component:
    if not isinstance(item, Mapping):
        raise ProfileError(f"{path}: must be an object")
    cid = item.get("id")
    if not isinstance(cid, str) or not cid:
        raise ProfileError(f"{path}.id: must be a non-empty string")
    kind_raw = item.get("kind")
    if kind_raw not in ("spout", "bolt"):
        raise ProfileError(f'{path}.kind: must be "spout" or "bolt", got {kind_raw!r}')
    kind = Kind(kind_raw)
    units = _count(item, "units", path, required=True)
    assert units is not None
    max_units = _max_units(item, path, kind, units)
    tasks = _tasks(item, path, units)
    children = _children(item, path)
    _demand_per_unit(item, path, kind)  # validated here, read by demand_distributions
    if kind is Kind.SPOUT:
        return Component(
            id=cid,
            kind=kind,
            units=units,
            output_per_unit=_rate(item, "outputPerUnit", path, required=True),
            max_units=max_units,
            children=children,
            min_units=units if "maxUnits" not in item else min(units, 1),
            memory_per_unit=_rate(item, "memoryPerUnit", path, default=0.0),
            tasks=tasks,
        )
    capacity = _rate(item, "capacityPerUnit", path, required=True)
    if capacity <= 0:
        raise ProfileError(f"{path}.capacityPerUnit: must be > 0, got {capacity:g}")
    return Component(
        id=cid,
        kind=kind,
        units=units,
        capacity_per_unit=capacity,
        selectivity=_rate(item, "selectivity", path, default=1.0),
        external_input=_rate(item, "externalInput", path, default=0.0),
        max_units=max_units,
        children=children,
        min_units=min(units, 1),
        memory_per_unit=_rate(item, "memoryPerUnit", path, default=0.0),
        tasks=tasks,
    )


def _rate(
    item: Mapping[str, Any], key: str, path: str, *, required: bool = False, default: float = 0.0
) -> float:
    """A rate: a finite number in [0, :data:`MAX_RATE`]."""
    if key not in item:
        if required:
            raise ProfileError(f"{path}.{key}: missing (required for a {item.get('kind')})")
        return default
    value = item[key]
    if not is_finite_number(value):
        raise ProfileError(f"{path}.{key}: must be a finite number, got {short(value)}")
    if value < 0:
        raise ProfileError(f"{path}.{key}: must be ≥ 0, got {value:g}")
    if value > MAX_RATE:
        shown = f"{value:g}" if isinstance(value, float) else short(value)
        raise ProfileError(f"{path}.{key}: must be at most {MAX_RATE:g}, got {shown}")
    return float(value)


def _demand_per_unit(item: Mapping[str, Any], path: str, kind: Kind) -> DemandDistribution | None:
    """``demandPerUnit`` (optional, spouts only): the demand's distribution over the window, per unit::

    {"mean": m, "p50": a, "p95": b, "max": c, "steps": n, "stepSeconds": s}
    rates in [0, MAX_RATE],  a ≤ b ≤ c,  n ≥ 1,  0 < s ≤ MAX_RATE

    The mean is the window's rate (over each series' own span), not the steps' mean: it is not
    held to the steps' maximum.
    """
    raw = item.get("demandPerUnit")
    if raw is None:
        return None
    where = f"{path}.demandPerUnit"
    if kind is not Kind.SPOUT:
        raise ProfileError(f"{where}: only a spout's demand has a distribution")
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{where}: must be an object")
    missing = [k for k in ("mean", "p50", "p95", "max", "steps", "stepSeconds") if k not in raw]
    if missing:
        raise ProfileError(f"{where}.{missing[0]}: missing")
    rates = {k: _rate(raw, k, where) for k in ("mean", "p50", "p95", "max")}
    if not rates["p50"] <= rates["p95"] <= rates["max"]:
        shown = ", ".join(f"{rates[k]:g}" for k in ("p50", "p95", "max"))
        raise ProfileError(f"{where}: p50 ≤ p95 ≤ max must hold, got {shown}")
    steps = _count(raw, "steps", where, required=True)
    assert steps is not None
    if steps < 1:
        raise ProfileError(f"{where}.steps: must be at least 1, got {steps}")
    step = _rate(raw, "stepSeconds", where)
    if step <= 0:
        raise ProfileError(f"{where}.stepSeconds: must be > 0, got {step:g}")
    return DemandDistribution(steps=steps, step_seconds=step, **rates)


def demand_distributions(document: Any) -> dict[str, DemandDistribution]:
    """Each spout's ``demandPerUnit`` by id, from a document :func:`parse_profile` accepted (a
    profile without them, as every profile written before, has none: its spouts' means are used)."""
    out: dict[str, DemandDistribution] = {}
    for i, item in enumerate(document["components"]):
        distribution = _demand_per_unit(item, f"components[{i}]", Kind(item["kind"]))
        if distribution is not None:
            out[item["id"]] = distribution
    return out


def _count(item: Mapping[str, Any], key: str, path: str, *, required: bool) -> int | None:
    """A unit count: an integer in [0, :data:`MAX_UNITS`]."""
    if key not in item:
        if required:
            raise ProfileError(f"{path}.{key}: missing")
        return None
    value = item[key]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProfileError(f"{path}.{key}: must be an integer ≥ 0, got {short(value)}")
    if value > MAX_UNITS:
        raise ProfileError(f"{path}.{key}: must be at most {MAX_UNITS:,}, got {short(value)}")
    return value


def _max_units(item: Mapping[str, Any], path: str, kind: Kind, units: int) -> int | None:
    """Resolve ``maxUnits``: absent → bolts unbounded, spouts fixed; ``null`` → unbounded."""
    if "maxUnits" not in item:
        return units if kind is Kind.SPOUT else None
    if item["maxUnits"] is None:
        return None
    bound = _count(item, "maxUnits", path, required=True)
    assert bound is not None
    if units > bound:
        raise ProfileError(f"{path}.units: {units} exceeds maxUnits {bound}")
    return bound


def _tasks(item: Mapping[str, Any], path: str, units: int) -> int | None:
    """``tasks`` (optional): Storm's task count, ≥ 1 and ≥ ``units`` (an executor runs ≥ 1 task)."""
    tasks = _count(item, "tasks", path, required=False)
    if tasks is None:
        return None
    if tasks < 1:
        raise ProfileError(f"{path}.tasks: must be at least 1, got {tasks}")
    if units > tasks:
        raise ProfileError(f"{path}.units: {units} exceeds tasks {tasks} (Storm runs ≥ 1 task per executor)")
    return tasks


def _children(item: Mapping[str, Any], path: str) -> tuple[tuple[str, float], ...]:
    raw = item.get("children", {})
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ProfileError(f"{path}.children: must be an object mapping child id to fraction")
    out: list[tuple[str, float]] = []
    for child, fraction in raw.items():
        if not is_finite_number(fraction) or not 0 <= fraction <= 1:
            raise ProfileError(
                f"{path}.children.{child}: fraction must be a number in [0, 1], got {short(fraction)}"
            )
        out.append((str(child), float(fraction)))
    total = sum(f for _, f in out)
    if total > 1 + FRACTION_SUM_TOLERANCE:
        raise ProfileError(f"{path}.children: fractions sum to {total:g}, above 1")
    return tuple(out)


def _check_unique_ids(components: tuple[Component, ...]) -> None:
    seen: dict[str, int] = {}
    for i, c in enumerate(components):
        if c.id in seen:
            raise ProfileError(f"components[{i}].id: {c.id!r} repeats components[{seen[c.id]}]")
        seen[c.id] = i


def _check_children(components: tuple[Component, ...]) -> None:
    kinds = {c.id: c.kind for c in components}
    for i, c in enumerate(components):
        for child, _ in c.children:
            if child not in kinds:
                raise ProfileError(f"components[{i}].children.{child}: unknown component")
            if kinds[child] is Kind.SPOUT:
                raise ProfileError(f"components[{i}].children.{child}: a spout cannot receive tuples")


def _check_acyclic(topology: Topology) -> None:
    if len(topology.order) == len(topology.components):
        return
    remainder = set(range(len(topology.components))) - set(topology.order)
    # Every component Kahn's algorithm left behind has a parent that was left behind too, so walking
    # parents inside the remainder must come back to a component already seen: that is a cycle.
    path = [min(remainder)]
    while True:
        parent = next(p for p, _ in topology.parents[path[-1]] if p in remainder)
        if parent in path:
            forward = path[path.index(parent) :][::-1]  # parents were walked: reverse to follow edges
            start = forward.index(min(forward))  # name the cycle from its first component in the profile
            forward = forward[start:] + forward[:start]
            cycle = [*forward, forward[0]]
            break
        path.append(parent)
    names = " → ".join(topology.components[i].id for i in cycle)
    raise ProfileError(f"components[{cycle[0]}].children: cycle {names}")


def profile_document(topology: Topology) -> dict[str, Any]:
    """The profile as the format's JSON object; ``parse_profile(profile_document(t)) == t``.

    ``maxUnits`` is written only where leaving it out would mean something else (a spout absent it
    is fixed at its units, a bolt absent it is unbounded).
    """
    return {"topology": topology.name, "components": [_component_document(c) for c in topology.components]}


def _component_document(c: Component) -> dict[str, Any]:
    out: dict[str, Any] = {"id": c.id, "kind": c.kind.value, "units": c.units}
    if c.is_spout:
        out["outputPerUnit"] = c.output_per_unit
        if not (c.max_units == c.units and c.min_units == c.units):
            out["maxUnits"] = c.max_units
    else:
        out["capacityPerUnit"] = c.capacity_per_unit
        out["selectivity"] = c.selectivity
        if c.external_input:
            out["externalInput"] = c.external_input
        if c.max_units is not None:
            out["maxUnits"] = c.max_units
    if c.memory_per_unit:
        out["memoryPerUnit"] = c.memory_per_unit
    if c.tasks is not None:
        out["tasks"] = c.tasks
    if c.children:
        out["children"] = dict(c.children)
    return out


# --- confidence: where each number came from (the aggregation's ``confidence`` fields) --------------


@dataclass(frozen=True)
class DemandCheck:
    """A spout's demand from outside Storm checked against what it emits (Kafka): the topic's append
    rate, the spout's emitted rate and the consumer group's lag growth dL/dt, in records/s;
    ``disagreement`` when ``|append − (emitted + dL/dt)|`` exceeds the profiler's tolerance."""

    append_rate: float
    lag_growth: float
    emitted_rate: float | None = None
    disagreement: bool = False


@dataclass(frozen=True)
class ComponentConfidence:
    """Where one component's numbers came from (``None``: not said) and the rates behind them.

    ``output_source`` is the spout's ``outputPerUnit.source`` (``offered``, ``emitted``, or the
    demand source that replaced them: ``kafka``, ``demand-query``); ``capacity_source`` the bolt's
    busy time (``pod-cpu``, ``busy-counter``, ``execute-latency``, ``capacity``).
    """

    units_source: str | None = None
    max_units_source: str | None = None
    output_source: str | None = None
    throttled: bool = False
    capacity_source: str | None = None
    selectivity_source: str | None = None
    #: Tuples/s the component executed (bolts) and emitted (spouts) over the window.
    executed_rate: float | None = None
    emitted_rate: float | None = None
    #: How many copies of its output its children receive together (1: a split, not a fan-out).
    fanout: float = 1.0
    stable: bool | None = None
    demand: DemandCheck | None = None


@dataclass(frozen=True)
class WindowConfidence:
    """The samples' window: its first and last sample, the last change seen and where the steady
    part starts (ISO 8601), its steady intervals, and the settling time and spread bound used."""

    start: str | None = None
    end: str | None = None
    changed_at: str | None = None
    steady_start: str | None = None
    intervals: int | None = None
    settle_seconds: float | None = None
    max_cv: float | None = None


@dataclass(frozen=True)
class ProfileConfidence:
    """The profile's ``confidence``: whether the window was steady (and which components were not),
    the window, notes for people, and each component's :class:`ComponentConfidence` by id."""

    steady: bool = False
    unstable: tuple[str, ...] = ()
    window: WindowConfidence | None = None
    notes: tuple[str, ...] = ()
    components: Mapping[str, ComponentConfidence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a read-only view of a copy: the value is frozen all the way down, as its other fields are tuples
        object.__setattr__(self, "components", MappingProxyType(dict(self.components)))

    def of(self, component: str) -> ComponentConfidence:
        """The component's confidence; one that says nothing when the profile has none for it."""
        return self.components.get(component, ComponentConfidence())


@dataclass(frozen=True)
class Profile:
    """A profile as the planner reads it (:class:`Topology`) with its confidence."""

    topology: Topology
    confidence: ProfileConfidence = field(default_factory=ProfileConfidence)
    #: Each spout's demand over the window (``demandPerUnit``) by id; empty when the profile has none.
    demand: Mapping[str, DemandDistribution] = field(default_factory=dict)


def read_profile(document: Any) -> Profile:
    """:func:`parse_profile`, :func:`parse_confidence` and :func:`demand_distributions` of one
    decoded document: raises :class:`ProfileError` on the format's fields only (the confidence never
    fails)."""
    topology = parse_profile(document)
    return Profile(topology, parse_confidence(document), demand_distributions(document))


def _object(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a published document is untrusted)."""
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if is_finite_number(value) else None


def _positive(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and number > 0 else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < MAX_RATE else None


def parse_confidence(document: Any) -> ProfileConfidence:
    """The ``confidence`` fields of a decoded profile, typed; never raises. Anything missing or of
    the wrong JSON type reads as unsaid: a window is steady only if it says ``steady: true``."""
    top = _object(_object(document).get("confidence"))
    raw = _object(document).get("components")
    entries = [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []
    unstable = top.get("unstable")
    notes = top.get("notes")
    window = top.get("window")
    return ProfileConfidence(
        steady=top.get("steady") is True,
        unstable=tuple(map(str, unstable)) if isinstance(unstable, list) else (),
        window=_window(window) if isinstance(window, Mapping) else None,
        notes=tuple(n for n in notes if isinstance(n, str)) if isinstance(notes, list) else (),
        components={
            e["id"]: _component_confidence(_object(e.get("confidence")))
            for e in entries
            if isinstance(e.get("id"), str)
        },
    )


def _window(raw: Mapping[str, Any]) -> WindowConfidence:
    return WindowConfidence(
        start=_text(raw.get("start")),
        end=_text(raw.get("end")),
        changed_at=_text(raw.get("changedAt")),
        steady_start=_text(raw.get("steadyStart")),
        intervals=_integer(raw.get("intervals")),
        settle_seconds=_number(raw.get("settleSeconds")),
        max_cv=_number(raw.get("maxCv")),
    )


def _component_confidence(raw: Mapping[str, Any]) -> ComponentConfidence:
    output = _object(raw.get("outputPerUnit"))
    stable = raw.get("stable")
    return ComponentConfidence(
        units_source=_text(_object(raw.get("units")).get("source")),
        max_units_source=_text(_object(raw.get("maxUnits")).get("source")),
        output_source=_text(output.get("source")),
        throttled=output.get("throttled") is True,
        capacity_source=_text(_object(raw.get("capacityPerUnit")).get("source")),
        selectivity_source=_text(_object(raw.get("selectivity")).get("source")),
        executed_rate=_number(raw.get("executedRate")),
        emitted_rate=_number(raw.get("emittedRate")),
        fanout=_positive(raw.get("fanout")) or 1.0,
        stable=stable if isinstance(stable, bool) else None,
        demand=_demand(_object(raw.get("demand"))),
    )


def _demand(raw: Mapping[str, Any]) -> DemandCheck | None:
    """The Kafka cross-check; ``None`` unless both the append rate and the lag growth are numbers."""
    append, growth = _number(raw.get("appendRate")), _number(raw.get("lagGrowth"))
    if append is None or growth is None:
        return None
    return DemandCheck(append, growth, _number(raw.get("emittedRate")), raw.get("disagreement") is True)
