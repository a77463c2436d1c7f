"""Which StormTopologies the fleet job profiles, and the Storm topology each names (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PUBLISHED = "Published"


@dataclass(frozen=True, order=True)
class Target:
    """One StormTopology to publish a profile for: where it lives, its uid (the ConfigMap's owner) and
    the Storm topology name its samples carry (``spec.topologyName``)."""

    namespace: str
    name: str
    topology: str
    uid: str | None = None

    @property
    def where(self) -> str:
        return f"{self.namespace}/{self.name}"


def targets(items: Iterable[Mapping[str, Any]], *, every: bool = False) -> list[Target]:
    """The StormTopology objects (as the API server lists them) whose ``spec.metrics.profile`` is
    ``Published`` (``every``: all of them), sorted by namespace and name. An object without a
    ``spec.topologyName`` (the CRD requires one) is left out."""
    out = []
    for item in items:
        meta, spec = item.get("metadata") or {}, item.get("spec") or {}
        metrics = spec.get("metrics") or {}
        topology = spec.get("topologyName")
        if not isinstance(topology, str) or not topology:
            continue
        if every or metrics.get("profile") == PUBLISHED:
            out.append(Target(str(meta.get("namespace")), str(meta.get("name")), topology, meta.get("uid")))
    return sorted(out)
