"""A placement as its own object: pod → worker slot → executors per component.

Every mapping strategy returns one. A slot is one Storm worker (one JVM) with one resource unit of
CPU (1.0 = one slot's CPU) and memory (1.0 = one slot's memory); a pod holds ``slots_per_pod`` slots.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Slot:
    """One worker: executors per component id, and the CPU and memory they are expected to use."""

    executors: Mapping[str, int]
    cpu: float = 0.0
    memory: float = 0.0

    @property
    def executor_count(self) -> int:
        return sum(self.executors.values())


@dataclass(frozen=True)
class Pod:
    """One worker pod (a VM in the papers): its slots, used or not."""

    slots: tuple[Slot, ...]


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
