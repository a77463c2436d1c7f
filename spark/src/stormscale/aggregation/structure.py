"""The topology structure (samples.md, "Topology structure"): components, kinds, children, tasks.

The graph cannot be inferred from rates alone when an edge carries nothing, so the job takes it as an
input, here a JSON file (Nimbus knows it too; the job does not ask).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormscale.aggregation.schema import AggregationError


@dataclass(frozen=True, slots=True)
class ComponentSpec:
    id: str
    kind: str
    children: tuple[str, ...]
    tasks: int | None


@dataclass(frozen=True, slots=True)
class Structure:
    topology: str
    components: tuple[ComponentSpec, ...]

    def parents(self, component: str) -> tuple[str, ...]:
        return tuple(c.id for c in self.components if component in c.children)


def load_structure(path: str | Path) -> Structure:
    """Read and check one structure file; errors name the file and the field."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise AggregationError(f"{path}: cannot read structure ({err.strerror or err})") from None
    except json.JSONDecodeError as err:
        raise AggregationError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
    return parse_structure(document, str(path))


def parse_structure(document: Any, where: str = "structure") -> Structure:
    if not isinstance(document, Mapping):
        raise AggregationError(f"{where}: must be a JSON object")
    name = document.get("topology")
    if not isinstance(name, str) or not name:
        raise AggregationError(f"{where}: topology: must be a non-empty string")
    raw = document.get("components")
    if not isinstance(raw, list) or not raw:
        raise AggregationError(f"{where}: components: must be a non-empty list")
    components = tuple(_component(f"{where}: components[{i}]", item) for i, item in enumerate(raw))
    ids = [c.id for c in components]
    if len(set(ids)) != len(ids):
        raise AggregationError(f"{where}: components: ids repeat")
    for i, c in enumerate(components):
        for child in c.children:
            if child not in ids:
                raise AggregationError(f"{where}: components[{i}].children: unknown component {child!r}")
    return Structure(name, components)


def _component(where: str, item: Any) -> ComponentSpec:
    if not isinstance(item, Mapping):
        raise AggregationError(f"{where}: must be an object")
    cid, kind = item.get("id"), item.get("kind")
    if not isinstance(cid, str) or not cid:
        raise AggregationError(f"{where}.id: must be a non-empty string")
    if kind not in ("spout", "bolt"):
        raise AggregationError(f'{where}.kind: must be "spout" or "bolt", got {kind!r}')
    children = item.get("children", [])
    if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
        raise AggregationError(f"{where}.children: must be a list of component ids")
    tasks = item.get("tasks")
    if tasks is not None and (not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1):
        raise AggregationError(f"{where}.tasks: must be an integer ≥ 1, got {tasks!r}")
    return ComponentSpec(cid, str(kind), tuple(children), tasks)
