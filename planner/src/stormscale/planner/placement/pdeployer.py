"""P-Deployer (Liu & Buyya, IEEE TBD 2017): resource estimation and task mapping, Algorithm 1.

The paper's Algorithm 1 (its §5.3) made incremental and deterministic (first maximum wins; weights computed
once; a task that fits no empty machine is refused), and a machine mapped to a Storm pod on Kubernetes.

Algorithm 1 is a bin-centric First-Fit-Decreasing variant: one machine is open at a time; it keeps
taking the remaining task of highest priority ``p(τ,m)`` (Eq. 6) that fits, recomputed after every
placement, and is closed when no remaining task fits. Demands are normalized (``Ĉ = C/W_c``,
``M̂ = M/W_m``). A task's CPU depends on where its neighbours are (Eq. 3), so a placement also lowers
the demand of the tasks already packed: Eq. 5's saving ``s(τ,m)``.

**Machine = pod, one slot per pod** (the paper's "one worker process per worker node").
The model's premise is that collocated tasks talk for free (intra-process queues); in Storm that holds
inside one worker (JVM), not between two workers of one pod. So every bin is a pod with a single slot
whose capacity is the pod's (``W_c``, ``W_m``), and tasks are executors (the paper sets "the number of
tasks … same as the number of executors").

**Evaluated per operator, incrementally.** All remaining tasks of one operator have the same demands
given ``φ(m)`` (Assumption 1), so the first of them in the deterministic order is the only one that can
win (first maximum wins). We evaluate Eq. 6 once per operator instead of once per task, and keep
Eq. 5's terms per operator, updated for the neighbours of each placed task (an incremental
variant). The placements are those of Algorithm 1's task loop, in O(n·ops + n·deg) instead of O(n²·k·d).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from stormscale.planner.placement.model import Placement, Pod, Slot
from stormscale.planner.sizing.pdeployer import (
    POINTS_PER_CORE,
    OperatorGraph,
    ParallelizationParams,
    TaskDemand,
    parallelize,
    task_demands,
)

STRATEGY = "pdeployer"

FIT_EPS = 1e-12
"""Slack of the normalized fit test and of the "first maximum wins" comparison."""


@dataclass(frozen=True, slots=True)
class MachineCapacity:
    """``W_c`` (CPU points) and ``W_m`` (MB) of one machine; every machine alike (Assumption 3)."""

    w_c: float
    w_m: float

    def __post_init__(self) -> None:
        if not (self.w_c > 0 and self.w_m > 0 and math.isfinite(self.w_c) and math.isfinite(self.w_m)):
            raise ValueError("W_c and W_m must be finite and > 0")

    @classmethod
    def from_pod(
        cls, cpu_cores: float, memory_mb: float, cpu_headroom: float = 0.0, jvm_base_mb: float = 0.0
    ) -> MachineCapacity:
        """A supervisor pod as a machine::

        W_c = 100·cores·(1 − h_c);   W_m = memory − JVM_base

        ``h_c = 0`` and ``JVM_base = 0`` are paper mode (ackers and JVM overhead are not modelled).
        """
        return cls(w_c=POINTS_PER_CORE * cpu_cores * (1.0 - cpu_headroom), w_m=memory_mb - jvm_base_mb)


class InfeasibleTaskError(ValueError):
    """A task does not fit an empty machine (``Ĉ_max > 1`` or ``M̂ > 1``), where Algorithm 1 would
    loop forever. The controller raises ``P_op`` (memory) or picks a bigger machine."""

    def __init__(self, op: str, c_hat: float, m_hat: float) -> None:
        super().__init__(
            f"a task of {op!r} cannot fit an empty machine: Ĉ_max = {c_hat:.6g}, M̂ = {m_hat:.6g} (limit 1)"
        )
        self.op = op
        self.c_hat = c_hat
        self.m_hat = m_hat


InfeasibleTask = InfeasibleTaskError
"""The short name."""


@dataclass(frozen=True, slots=True, order=True)
class TaskRef:
    """Task ``τ``: the ``index``-th task (1-based) of operator ``op``; printed ``S1``, ``B2``…"""

    op: str
    index: int

    def __str__(self) -> str:
        return f"{self.op}{self.index}"


@dataclass(frozen=True, slots=True)
class PackingStep:
    """One placement of Algorithm 1 (line 11): the task, the machine (1-based), ``s(τ,m)``, the task's
    normalized CPU on the machine ``Ĉ_τ`` and its priority ``p(τ,m)``."""

    machine: int
    task: TaskRef
    saving: float
    c_hat: float
    priority: float


@dataclass(frozen=True)
class Machine:
    """A used machine: its tasks ``φ(m)`` in placement order, CPU ``Σ_{τ∈φ(m)} C(τ | φ(m)∖τ)`` (points)
    and memory ``Σ M_τ`` (MB)."""

    tasks: tuple[TaskRef, ...]
    cpu: float
    memory: float

    def executors(self) -> dict[str, int]:
        """Tasks per operator, in placement order of first appearance."""
        out: dict[str, int] = {}
        for t in self.tasks:
            out[t.op] = out.get(t.op, 0) + 1
        return out


@dataclass(frozen=True)
class Packing:
    """Algorithm 1's output ``m⃗`` (``n_m = len(machines)``), its trace and Eq. 6's weights."""

    machines: tuple[Machine, ...]
    steps: tuple[PackingStep, ...]
    capacity: MachineCapacity
    a_r: float
    a_c: float
    a_m: float

    @property
    def machine_count(self) -> int:
        """``n_m``."""
        return len(self.machines)

    @property
    def placement(self) -> Placement:
        """The packing as a :class:`Placement`: one pod per machine, one slot per pod; slot
        CPU and memory normalized by ``W_c`` and ``W_m`` (a slot holds the whole pod)."""
        pods = tuple(
            Pod(
                slots=(
                    Slot(
                        executors=m.executors(),
                        cpu=m.cpu / self.capacity.w_c,
                        memory=m.memory / self.capacity.w_m,
                    ),
                )
            )
            for m in self.machines
        )
        note = (
            f"P-Deployer Algorithm 1: one slot per pod, slot = pod = W_c {self.capacity.w_c:g} points, "
            f"W_m {self.capacity.w_m:g} MB; executors = tasks"
        )
        return Placement(strategy=STRATEGY, pods=pods, notes=(note,))


def saving(
    demands: Mapping[str, TaskDemand], op: str, placed: Mapping[str, int], w_c: float
) -> tuple[float, float]:
    """Eq. (5) for a task of ``op`` on machine ``m`` whose tasks ``φ(m)`` are counted in ``placed``::

        s(τ,m) = C_τ,max − C_τ + Σ_{τ_k∈φ(m)} ( C_τk^{Adj} − C_τk^{Adj+1} )

    normalized by ``W_c``. Returns ``(own, others)``: ``own = (C_τ,max − C_τ)/W_c`` and ``others`` the
    sum, the drop of each packed task's demand when ``τ``'s operator entry of its ``Adj`` grows by one
    (``C_τ`` is the demand given ``φ(m)``). Closed form:
    ``Σ_{τk∈φ(m), adjacent} w(τ,τk)·(c_t^{op(τ)} + c_t^{op(τk)}) / W_c``.
    """
    task = demands[op]
    own = (task.cpu_max - task.cpu(placed)) / w_c
    with_task = dict(placed)
    with_task[op] = with_task.get(op, 0) + 1
    others = 0.0
    for link in task.links:
        n_k = placed.get(link.peer, 0)
        if n_k:
            peer = demands[link.peer]
            others += n_k * (peer.cpu(placed) - peer.cpu(with_task)) / w_c
    return own, others


def priority(
    s: float, c_hat: float, m_hat: float, r_cpu: float, r_mem: float, *, a_r: float, a_c: float, a_m: float
) -> float:
    """Eq. (6): ``p(τ,m) = a_r·s(τ,m) − a_c·(C_τ − r_m^cpu)² − a_m·(M_τ − r_m^mem)²`` (all normalized;
    ``r_m`` is the remaining capacity before placing ``τ``)."""
    return a_r * s - a_c * (c_hat - r_cpu) ** 2 - a_m * (m_hat - r_mem) ** 2


def machine_usage(demands: Mapping[str, TaskDemand], placed: Mapping[str, int]) -> tuple[float, float]:
    """Exact CPU (points) and memory (MB) of a machine holding ``placed`` tasks per operator::

    CPU = Σ_{τ∈φ(m)} C(τ | φ(m)∖τ)  (Eq. 3; a task is not its own neighbour, so Adj = placed),   Σ M_τ
    """
    cpu = math.fsum(n * demands[op].cpu(placed) for op, n in placed.items())
    memory = math.fsum(n * demands[op].memory for op, n in placed.items())
    return cpu, memory


@dataclass
class _OpenMachine:
    """The machine being filled: tasks per operator, ``Σ Ĉ`` and ``Σ M̂`` (Algorithm 1 line 13), and
    for every operator ``own = Ĉ_max − Ĉ_τ`` and ``sav`` of Eq. 5 given ``φ(m)`` (kept
    incrementally)."""

    n_ops: int
    placed: dict[str, int] = field(default_factory=dict)
    tasks: list[TaskRef] = field(default_factory=list)
    used_c: float = 0.0
    used_m: float = 0.0
    own: list[float] = field(init=False)
    sav: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.own = [0.0] * self.n_ops
        self.sav = [0.0] * self.n_ops


def _pair_savings(demands: Sequence[TaskDemand], w_c: float) -> list[list[tuple[int, float, float]]]:
    """Per operator ``j``: ``(i, Δown_i, Δsav_i)`` for each neighbour ``i``, where placing a task of
    ``j`` lowers each task of ``i`` by ``Δown_i = w(i,j)·c_t^i / W_c`` (Eq. 3, ``Adj_j`` + 1) and adds
    ``Δsav_i = w(i,j)·c_t^j / W_c`` to ``i``'s Eq. 5 sum (the new task of ``j`` would drop that much)."""
    position = {d.op: k for k, d in enumerate(demands)}
    out: list[list[tuple[int, float, float]]] = [[] for _ in demands]
    for i, d in enumerate(demands):
        for link in d.links:
            j = position[link.peer]
            c_t_j = demands[j].profile.c_t
            out[j].append((i, link.pair_rate * d.profile.c_t / w_c, link.pair_rate * c_t_j / w_c))
    return out


def pack(demands: Sequence[TaskDemand], capacity: MachineCapacity, a_r: float = 1.0) -> Packing:
    """Algorithm 1, incremental and deterministic.

    Tasks are ``P_op`` per demand, in the order given (``task_demands`` gives topological order, ties by
    name), then by index. Weights, computed once::

        a_c = (1/n)·Σ_k Ĉ_τk,max        a_m = (1/n)·Σ_k M̂_τk

    For each remaining task, given the open machine's ``φ(m)`` (Eqs. 3, 5, 6)::

        Ĉ_τ = Ĉ_τ,max − own_τ;   s(τ,m) = own_τ + sav_τ
        p(τ,m) = a_r·s − a_c·(Ĉ_τ − (1 − used_c))² − a_m·(M̂_τ − (1 − used_m))²

    kept incrementally (placing ``τ*`` updates only its neighbours, with the
    closed form of Eq. 5, which Eq. 3's linearity in ``Adj`` makes exact; :func:`saving` is Eq. 5 as
    printed, and the tests hold one against the other). Fit test with exact accounting of the
    neighbours' savings::

        used_c − sav_τ + Ĉ_τ ≤ 1 + 1e-12   and   used_m + M̂_τ ≤ 1 + 1e-12

    The remaining task of largest ``p`` is placed, the first in order among maxima within 1e-12;
    the machine closes when none fits. Raises :class:`InfeasibleTaskError` when a task cannot fit an
    empty machine.
    """
    by_op = {d.op: d for d in demands}
    if len(by_op) != len(demands):
        raise ValueError("one demand per operator")
    w_c, w_m = capacity.w_c, capacity.w_m
    c_max = [d.cpu_max / w_c for d in demands]
    m_hat = [d.memory / w_m for d in demands]
    for k, d in enumerate(demands):
        if c_max[k] > 1.0 or m_hat[k] > 1.0:  # Algorithm 1's pre-check, literal
            raise InfeasibleTaskError(d.op, c_max[k], m_hat[k])
    n = sum(d.parallelism for d in demands)
    a_c = math.fsum(c_max[k] for k, d in enumerate(demands) for _ in range(d.parallelism)) / n if n else 0.0
    a_m = math.fsum(m_hat[k] for k, d in enumerate(demands) for _ in range(d.parallelism)) / n if n else 0.0
    neighbours = _pair_savings(demands, w_c)

    next_index = [1] * len(demands)
    active = [k for k, d in enumerate(demands) if d.parallelism > 0]  # operators with tasks left
    machines: list[Machine] = []
    steps: list[PackingStep] = []
    while active:  # line 3
        m = _OpenMachine(len(demands))  # lines 4-5
        while True:  # line 6
            best: tuple[float, int] | None = None  # (p, operator position)
            r_cpu, r_mem = 1.0 - m.used_c, 1.0 - m.used_m
            for k in active:  # lines 7-10, the first remaining task of each operator
                c_hat = c_max[k] - m.own[k]
                if m.used_c - m.sav[k] + c_hat > 1.0 + FIT_EPS or m.used_m + m_hat[k] > 1.0 + FIT_EPS:
                    continue
                s = m.own[k] + m.sav[k]
                p = priority(s, c_hat, m_hat[k], r_cpu, r_mem, a_r=a_r, a_c=a_c, a_m=a_m)
                if best is None or p > best[0] + FIT_EPS:
                    best = (p, k)
            if best is None:
                break
            p, k = best  # lines 11-13
            op = demands[k].op
            task = TaskRef(op, next_index[k])
            c_hat = c_max[k] - m.own[k]
            steps.append(PackingStep(len(machines) + 1, task, m.own[k] + m.sav[k], c_hat, p))
            m.tasks.append(task)
            m.placed[op] = m.placed.get(op, 0) + 1
            m.used_c += c_hat - m.sav[k]
            m.used_m += m_hat[k]
            for i, d_own, d_sav in neighbours[k]:
                m.own[i] += d_own
                m.sav[i] += d_sav
            next_index[k] += 1
            if next_index[k] > demands[k].parallelism:
                active.remove(k)
        cpu, memory = machine_usage(by_op, m.placed)
        machines.append(Machine(tuple(m.tasks), cpu, memory))
    return Packing(tuple(machines), tuple(steps), capacity, a_r, a_c, a_m)


@dataclass(frozen=True)
class DeploymentPlan:
    """One P-Deployer plan: ``{P_op}``, the task demands, and the packing (``n_m``, the map)."""

    parallelism: Mapping[str, int]
    demands: tuple[TaskDemand, ...]
    packing: Packing

    @property
    def machine_count(self) -> int:
        return self.packing.machine_count

    @property
    def placement(self) -> Placement:
        return self.packing.placement


def plan_deployment(
    graph: OperatorGraph,
    capacity: MachineCapacity,
    params: ParallelizationParams | None = None,
    a_r: float = 1.0,
) -> DeploymentPlan:
    """The Deployment Planner's steps (2)–(3): parallelize, then estimate and map (Algorithm 1).

    ``graph`` carries the stream loads at the target (see ``scale_to_target``).
    """
    parallelism = parallelize(graph, params)
    demands = task_demands(graph, parallelism)
    return DeploymentPlan(parallelism, demands, pack(demands, capacity, a_r))
