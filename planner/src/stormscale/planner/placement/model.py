"""A placement as its own object: pod → worker slot → executors per component.

Every mapping strategy returns one. A slot is one Storm worker (one JVM) with one resource unit of
CPU (1.0 = one slot's CPU) and memory (1.0 = one slot's memory); a pod holds ``slots_per_pod`` slots.

Its JSON form (``docs/formats/profile.md``, "Placement", a Stormscale extension)::

    {"strategy": "sam", "pods": [{"slots": [{"executors": {"split": 2}, "cpu": 0.8, "memory": 0.1}]}],
     "notes": ["…"]}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormscale.planner.numbers import is_finite_number, short


class PlacementError(ValueError):
    """A placement document that breaks the format; the message starts with the field's path."""


@dataclass(frozen=True)
class Slot:
    """One worker: executors per component id, and the CPU and memory they are expected to use."""

    executors: Mapping[str, int]
    cpu: float = 0.0
    memory: float = 0.0

    @property
    def executor_count(self) -> int:
        return sum(self.executors.values())

    def to_json(self) -> dict[str, Any]:
        return {"executors": dict(self.executors), "cpu": self.cpu, "memory": self.memory}


@dataclass(frozen=True)
class Pod:
    """One worker pod (a VM in the papers): its slots, used or not."""

    slots: tuple[Slot, ...]

    def to_json(self) -> dict[str, Any]:
        return {"slots": [s.to_json() for s in self.slots]}


@dataclass(frozen=True)
class Placement:
    """Pods, their slots and executors, as placed by ``strategy``."""

    strategy: str
    pods: tuple[Pod, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def pod_count(self) -> int:
        return len(self.pods)

    @property
    def slot_count(self) -> int:
        return sum(len(pod.slots) for pod in self.pods)

    @property
    def used_slots(self) -> int:
        return sum(1 for pod in self.pods for slot in pod.slots if slot.executor_count)

    def executors(self) -> dict[str, int]:
        """Executors per component over every pod and slot."""
        total: dict[str, int] = {}
        for pod in self.pods:
            for slot in pod.slots:
                for cid, n in slot.executors.items():
                    total[cid] = total.get(cid, 0) + n
        return total

    def to_json(self) -> dict[str, Any]:
        """The placement object of the format page."""
        return {
            "strategy": self.strategy,
            "pods": [pod.to_json() for pod in self.pods],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, document: Any) -> Placement:
        """The inverse of :meth:`to_json`; :class:`PlacementError` names the offending field."""
        return parse_placement(document)


def parse_placement(document: Any) -> Placement:
    """Validate a decoded placement object (every error names its field, e.g. ``pods[1].slots[0].cpu``)."""
    if not isinstance(document, Mapping):
        raise PlacementError("placement: must be a JSON object")
    strategy = document.get("strategy")
    if not isinstance(strategy, str) or not strategy:
        raise PlacementError("strategy: must be a non-empty string")
    pods = document.get("pods")
    if not isinstance(pods, list):
        raise PlacementError("pods: must be a list")
    notes = document.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise PlacementError("notes: must be a list of strings")
    return Placement(
        strategy=strategy,
        pods=tuple(_parse_pod(f"pods[{j}]", pod) for j, pod in enumerate(pods)),
        notes=tuple(notes),
    )


def _parse_pod(path: str, item: Any) -> Pod:
    if not isinstance(item, Mapping):
        raise PlacementError(f"{path}: must be an object")
    slots = item.get("slots")
    if not isinstance(slots, list) or not slots:
        raise PlacementError(f"{path}.slots: must be a non-empty list")
    return Pod(tuple(_parse_slot(f"{path}.slots[{k}]", slot) for k, slot in enumerate(slots)))


def _parse_slot(path: str, item: Any) -> Slot:
    if not isinstance(item, Mapping):
        raise PlacementError(f"{path}: must be an object")
    raw = item.get("executors")
    if not isinstance(raw, Mapping):
        raise PlacementError(f"{path}.executors: must be an object mapping component id to executors")
    executors: dict[str, int] = {}
    for cid, n in raw.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise PlacementError(f"{path}.executors.{cid}: must be an integer ≥ 1, got {n!r}")
        executors[str(cid)] = n
    return Slot(executors, _share(item, "cpu", path), _share(item, "memory", path))


def _share(item: Mapping[str, Any], key: str, path: str) -> float:
    value = item.get(key, 0.0)
    if not is_finite_number(value) or value < 0:
        raise PlacementError(f"{path}.{key}: must be a finite number ≥ 0, got {short(value)}")
    return float(value)
