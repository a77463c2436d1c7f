"""metav1.Condition bookkeeping: a transition time changes only when the status does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
SCALING_LIMITED = "ScalingLimited"
TYPES = (READY, PROGRESSING, DEGRADED, SCALING_LIMITED)


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, as Kubernetes writes times."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    *,
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
    generation: int,
) -> list[dict[str, Any]]:
    """A new list with condition ``kind`` set; its ``lastTransitionTime`` moves only on a status change."""
    value = "True" if status else "False"
    out = [dict(c) for c in conditions if c.get("type") != kind]
    previous = next((c for c in conditions if c.get("type") == kind), None)
    since = previous["lastTransitionTime"] if previous and previous.get("status") == value else timestamp(now)
    out.append(
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message[:32768],
            "lastTransitionTime": since,
            "observedGeneration": generation,
        }
    )
    return sorted(out, key=lambda c: TYPES.index(c["type"]) if c["type"] in TYPES else len(TYPES))


def condition(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)
