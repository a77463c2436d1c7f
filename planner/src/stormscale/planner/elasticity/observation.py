"""What the planner sees of a running topology over one monitoring window T (multi-level elasticity §2.2, §4).

Time is an argument: a window is ``[window_start, window_end)`` and ``now = window_end``. Rates and
health come from counter deltas (:mod:`.signals`, :mod:`.health`); CPU and memory are fractions of
the pod's limits (usage / limit, working set / limit).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PodObservation:
    """A pod over the last window: ``totalCPU_T`` and ``totalMem_T`` as fractions of its limits.

    ``executors`` are the executors counted against ``vCPU``; the caller may leave out
    components with negligible traffic (e.g. DDoS's analyzer, 1 tuple/min).
    """

    pod: int
    cpu: float
    mem: float
    workers: int = 1
    executors: int = 0
    vcpus: int = 1


@dataclass(frozen=True)
class OperatorObservation:
    """An operator over the last window: ``dist(op)`` from the sources, its health (``None``: undefined),
    its executors ``k_op`` and its task count (the executor cap, R-task)."""

    component: str
    distance: int
    health: float | None
    executors: int
    tasks: int


@dataclass(frozen=True)
class Observation:
    """One monitoring window.

    ``load`` is the measured input rate ``L`` (tuples/s; ``None`` if not measured). ``reset``: a
    counter went backwards (a worker restarted), so the window is discarded. ``ready_since``:
    since when every provisioned container runs (a new pod's supervisor is registered); ``None``
    while one is still starting.
    """

    window_start: float
    window_end: float
    load: float | None = None
    operators: tuple[OperatorObservation, ...] = field(default=())
    pods: tuple[PodObservation, ...] = field(default=())
    ready_since: float | None = float("-inf")
    reset: bool = False


def is_fresh(observation: Observation, stale_before: float) -> bool:
    """Decide only on a window that starts after the last action and after every container runs."""
    ready = observation.ready_since
    return (
        not observation.reset and ready is not None and observation.window_start >= max(stale_before, ready)
    )
