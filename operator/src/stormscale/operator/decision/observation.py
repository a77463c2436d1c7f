"""What one pass has observed, as the decision reads it: plain values, no Storm or Kubernetes types.

The pass fills an :class:`Observation` in steps: the running topology and its worker Deployment
first, then, only when a decision asks for one (:class:`Need`), the published profile and the
in-process one. Measuring is the expensive part, and a converged Manual topology never needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from stormscale.operator.decision.placement import Running
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import Reason


@dataclass(frozen=True)
class TopologyView:
    """The running topology and its worker Deployment, in the operator's words."""

    #: What Storm calls the topology's state, for messages (``ACTIVE`` and the rest).
    state: str
    active: bool
    #: Executors and tasks per user component.
    executors: Mapping[str, int]
    tasks: Mapping[str, int]
    #: Storm's own executors a layout must place (acker, event logger; never the system one).
    system_executors: Mapping[str, int]
    #: Worker pods the Deployment asks for now.
    replicas: int
    #: ``MultiLevel``: the layout that runs, or why it cannot be read (``None``: not asked for).
    running: Running | str | None = None
    #: Why Storm no longer runs ``status.placement`` (``None``: it does, or there is none).
    drift: str | None = None
    #: Field managers other than the operator's that own the Deployment's ``spec.replicas``.
    replicas_owners: tuple[str, ...] = ()
    #: The topology's conf from Nimbus, and the groupings of each component's inputs (``None``: not
    #: read; the model's assumptions then go unchecked).
    conf: Mapping[str, Any] | None = None
    groupings: Mapping[str, frozenset[str]] | None = None


@dataclass(frozen=True)
class PublishedRead:
    """The fleet job's ConfigMap as read: ``data`` (``None``: there is none), or why it could not be."""

    where: str
    data: Mapping[str, str] | None = None
    failure: tuple[Reason, str] | None = None


@dataclass(frozen=True)
class ProfileFailure:
    """Why the in-process profile could not be measured; ``newest_age_s``: the samples show a recent
    change and too few steady intervals since, their newest this old (settling, not stale, when
    within ``metrics.maxAge``); ``unsteady``: the window's rates moved, and a window one step later
    may be steady."""

    reason: Reason
    message: str
    newest_age_s: float | None = None
    unsteady: bool = False


class Need(StrEnum):
    """What the decision needs measured before it can say more."""

    PUBLISHED = "Published"
    IN_PROCESS = "InProcess"


@dataclass(frozen=True)
class Observation:
    """Everything one decision rests on. ``now`` is the pass's clock reading (the decision reads none)."""

    now: datetime
    generation: int
    topology: TopologyView
    published: PublishedRead | None = None
    measured: MeasuredProfile | ProfileFailure | None = None
    #: Baseline units: what the topology ran when first seen (``status.baseline``).
    baseline: Mapping[str, int] = field(default_factory=dict)
