"""P-Deployer (Liu & Buyya, IEEE TBD 2017): the resource consumption model and operator
parallelization.

The paper's model and parallelization, and the pure decisions of its MAPE loop.
Units (inferred from the paper's point system): CPU in points (one core = 100), memory in MB,
streams in tuples/s, time in s. Symbols are the paper's (Tables 1–3):

* ``c_p``, ``c_t``, ``m_pt``, ``t_soj``: a task's unit costs (every task of an operator shares them);
* ``S_k`` / ``S'_k``: input / output stream sizes; ``S_op``: an operator's stream load (Σ of its inputs);
* ``P_op``: parallelism degree; ``α``, ``β``: the I/O and memory caps of one task (Table 4: 0.1, 512 MB);
* ``Adj_k`` / ``Adj'_k``: tasks of the upstream ``op_k`` / downstream ``op'_k`` collocated with ``τ_i``.

How we read the paper where it is ambiguous or garbled: Eq. 3's processing term is ``S_k/P_op·c_p``
and its missing "+" restored; upstream is ``op_k``, downstream ``op'_k``; ``m_opt`` is ``m_pt``;
``c_t`` is in points, the I/O cap is ``100·α`` points; the unified max-of-four rule, with an optional
per-operator class; ``S_op`` is input-only by default, ``LoadBasis.INPUT_AND_OUTPUT`` on request; a
spout's external ingress is an input that pays ``c_p`` and is always remote; loads are scaled to the
target with constant selectivity; profiles grow monotonically, with bottleneck inflation ``γ``; the
target is met ⇔ ``thr ≥ T·(1−tol)`` and latency ≤ ``L``; ceilings forgive float drift (``ceil_eps``);
the CPU bound is on ``c_p`` only, ``cpu_bound_includes_ct`` on request; the budget is checked before
executing, at most 10 iterations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property

from stormscale.planner.model import natural_key

POINTS_PER_CORE = 100.0
"""The paper's point system: one core = 100 points (after Storm's resource-aware scheduler)."""

CEIL_EPS = 1e-9
"""Float slack of ``ceil_eps``: ``300·0.07 = 21.000000000000004`` must give 21."""


def ceil_eps(x: float) -> int:
    """``ceil_eps(x) = ⌈x − 1e-9⌉``: a ceiling that ignores float noise above an integer."""
    return math.ceil(x - CEIL_EPS)


def _check_rate(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")


# ---------------------------------------------------------------------------------------------------
# Task profile and the consumption model, Eqs. (1)–(2)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskProfile:
    """Paper Table 1: the unit costs shared by every task of one operator.

    ``c_p``: CPU points per (tuple/s) processed; ``c_t``: CPU points per (tuple/s) sent or received
    across nodes; ``m_pt``: MB per (tuple/s) processed and transmitted; ``t_soj``: sojourn time of a
    tuple (s).
    """

    c_p: float
    c_t: float
    m_pt: float
    t_soj: float = 0.0

    def __post_init__(self) -> None:
        for name in ("c_p", "c_t", "m_pt", "t_soj"):
            _check_rate(name, getattr(self, name))


def cpu_consumption(profile: TaskProfile, s_in: float, remote_in: float, remote_out: float) -> float:
    """Eq. (1) for one task, with its task-level streams summed::

        C_τ = Σ_{k=1..n_i} S_k·c_p + ( Σ_{k∈Θ} S_k + Σ_{k∈Θ} S'_k )·c_t

    ``s_in = Σ S_k``; ``remote_in`` / ``remote_out`` are the sums over Θ, the streams whose peer is
    on another node. Processing pays for input only; transmission for remote input and output.
    """
    return s_in * profile.c_p + (remote_in + remote_out) * profile.c_t


def cpu_min(profile: TaskProfile, s_in: float) -> float:
    """``C_τ,min = Σ S_k·c_p`` (Θ = ∅: every peer collocated)."""
    return cpu_consumption(profile, s_in, 0.0, 0.0)


def cpu_max(profile: TaskProfile, s_in: float, s_out: float) -> float:
    """``C_τ,max = Σ S_k·c_p + (Σ S_k + Σ S'_k)·c_t`` (every peer remote)."""
    return cpu_consumption(profile, s_in, s_in, s_out)


def memory_consumption(profile: TaskProfile, s_in: float, s_out: float) -> float:
    """Eq. (2): ``M_τ = (Σ S_k + Σ S'_k)·m_pt``; placement-independent."""
    return (s_in + s_out) * profile.m_pt


# ---------------------------------------------------------------------------------------------------
# The operator graph
# ---------------------------------------------------------------------------------------------------


class OpClass(StrEnum):
    """The paper's operator classes: the resource that confines a task's throughput."""

    CPU = "cpu"
    IO = "io"
    SOJOURN = "sojourn"
    MEMORY = "memory"


@dataclass(frozen=True, slots=True)
class Operator:
    """One operator ``op``: its task profile and, for a spout, its external ingress (tuples/s).

    ``ingress`` is the external input (the Kestrel pull in the paper): we model it as an input
    that pays ``c_p`` and is always remote. ``op_class`` restricts parallelization to one of the four
    formulas (paper-literal mode); ``None`` uses the unified rule.
    """

    id: str
    profile: TaskProfile
    ingress: float = 0.0
    op_class: OpClass | None = None

    def __post_init__(self) -> None:
        _check_rate(f"ingress of {self.id!r}", self.ingress)


@dataclass(frozen=True, slots=True)
class Stream:
    """An operator-level stream ``source → target`` of size ``rate`` (``S_k`` seen from the target)."""

    source: str
    target: str
    rate: float

    def __post_init__(self) -> None:
        _check_rate(f"rate of {self.source}→{self.target}", self.rate)


@dataclass(frozen=True)
class OperatorGraph:
    """A DAG of operators with operator-level stream sizes (shuffle grouping everywhere: Assumption 1).

    Rejects unknown or repeated ids, self-loops, repeated streams and cycles.
    """

    operators: tuple[Operator, ...]
    streams: tuple[Stream, ...] = ()
    _by_id: dict[str, Operator] = field(init=False, repr=False, compare=False)
    _inputs: dict[str, tuple[Stream, ...]] = field(init=False, repr=False, compare=False)
    _outputs: dict[str, tuple[Stream, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id = {op.id: op for op in self.operators}
        if len(by_id) != len(self.operators):
            raise ValueError("operator ids must be unique")
        seen: set[tuple[str, str]] = set()
        for s in self.streams:
            if s.source not in by_id or s.target not in by_id:
                raise ValueError(f"stream {s.source}→{s.target} names an unknown operator")
            if s.source == s.target:
                raise ValueError(f"stream {s.source}→{s.target} is a self-loop")
            if (s.source, s.target) in seen:
                raise ValueError(f"stream {s.source}→{s.target} is repeated")
            seen.add((s.source, s.target))
        object.__setattr__(self, "_by_id", by_id)
        ins: dict[str, list[Stream]] = {op: [] for op in by_id}
        outs: dict[str, list[Stream]] = {op: [] for op in by_id}
        for s in self.streams:
            ins[s.target].append(s)
            outs[s.source].append(s)
        object.__setattr__(self, "_inputs", {op: tuple(x) for op, x in ins.items()})
        object.__setattr__(self, "_outputs", {op: tuple(x) for op, x in outs.items()})
        if len(self.order) != len(self.operators):
            raise ValueError("the operator graph has a cycle")

    def operator(self, op: str) -> Operator:
        return self._by_id[op]

    @cached_property
    def order(self) -> tuple[str, ...]:
        """Topological order, ties by natural id order (a deterministic task order)."""
        indegree = {op.id: 0 for op in self.operators}
        for s in self.streams:
            indegree[s.target] += 1
        ready = sorted((o for o, d in indegree.items() if d == 0), key=natural_key)
        out: list[str] = []
        while ready:
            v = ready.pop(0)
            out.append(v)
            for s in self.outputs(v):
                indegree[s.target] -= 1
                if indegree[s.target] == 0:
                    ready.append(s.target)
            ready.sort(key=natural_key)
        return tuple(out)

    def inputs(self, op: str) -> tuple[Stream, ...]:
        """Streams ``op_k → op``, k = 1..n_i."""
        return self._inputs[op]

    def outputs(self, op: str) -> tuple[Stream, ...]:
        """Streams ``op → op'_k``, k = 1..n_o."""
        return self._outputs[op]

    def stream_load(self, op: str) -> float:
        """Table 2's ``S_op``: Σ of the incoming streams, plus the external ingress."""
        return self._by_id[op].ingress + math.fsum(s.rate for s in self.inputs(op))

    def output_load(self, op: str) -> float:
        """``Σ_k S'_k``: Σ of the outgoing streams."""
        return math.fsum(s.rate for s in self.outputs(op))


def scale_to_target(graph: OperatorGraph, measured_throughput: float, target: float) -> OperatorGraph:
    """Stream loads at the target (the paper is silent), constant selectivity::

        S_e^target = S_e^measured · T / thr_measured     for every edge e;   Σ spout ingress = T

    The ingress is split over the spouts in proportion to their measured ingress (equally when none
    was measured); with one spout it is ``T``.
    """
    if not (math.isfinite(measured_throughput) and measured_throughput > 0.0):
        raise ValueError("the measured throughput must be > 0 to scale loads to a target")
    _check_rate("target", target)
    factor = target / measured_throughput
    sources = {op.id for op in graph.operators if not graph.inputs(op.id)}
    measured_in = math.fsum(graph.operator(op).ingress for op in sources)

    def ingress(op: Operator) -> float:
        if op.id not in sources:
            return op.ingress
        return target * op.ingress / measured_in if measured_in > 0 else target / len(sources)

    return OperatorGraph(
        operators=tuple(replace(op, ingress=ingress(op)) for op in graph.operators),
        streams=tuple(replace(s, rate=s.rate * factor) for s in graph.streams),
    )


# ---------------------------------------------------------------------------------------------------
# Operator parallelization
# ---------------------------------------------------------------------------------------------------


class LoadBasis(StrEnum):
    """Which load the I/O and memory bounds divide."""

    INPUT = "input"
    """Paper-literal: ``S_op``, the input load."""
    INPUT_AND_OUTPUT = "input+output"
    """``S_op + Σ S'_k``, as Eqs. (1)–(2) count it."""


@dataclass(frozen=True, slots=True)
class ParallelizationParams:
    """Table 4's ``α`` (share of a core one I/O-bound task may spend transmitting) and ``β`` (MB one
    memory-bound task may hold), and the two options (load basis, CPU bound with ``c_t``)."""

    alpha: float = 0.1
    beta: float = 512.0
    io_load: LoadBasis = LoadBasis.INPUT
    cpu_bound_includes_ct: bool = False

    def __post_init__(self) -> None:
        if not (self.alpha > 0 and self.beta > 0):
            raise ValueError("α and β must be > 0")


@dataclass(frozen=True, slots=True)
class ParallelismBounds:
    """The paper's four minimal parallelisms, one per class (0 when the parameter is 0)."""

    cpu: int
    io: int
    sojourn: int
    memory: int

    def degree(self, op_class: OpClass | None = None) -> int:
        """``P_op = max(1, bound)``: the class's bound, or the max of the four (unified rule)."""
        by_class = {
            OpClass.CPU: self.cpu,
            OpClass.IO: self.io,
            OpClass.SOJOURN: self.sojourn,
            OpClass.MEMORY: self.memory,
        }
        if op_class is not None:
            return max(1, by_class[op_class])
        return max(1, *by_class.values())


def parallelism_bounds(
    profile: TaskProfile, s_op: float, s_out: float = 0.0, params: ParallelizationParams | None = None
) -> ParallelismBounds:
    """The paper's four bounds with ``c_t`` in points, each a ``ceil_eps``::

        CPU-bound      P = ⌈ S_op·c_p / 100 ⌉              (a task is one thread: ≤ 100 points)
        I/O-bound      P = ⌈ S_op·c_t / (100·α) ⌉          (paper: ⌈S_op / (α/c_t)⌉, α a share of a core)
        sojourn-bound  P = ⌈ S_op·t_soj ⌉
        memory-bound   P = ⌈ S_op·m_pt / β ⌉               (printed with ``m_opt``)

    ``S_op`` of the I/O and memory bounds is ``S_op + s_out`` under ``LoadBasis.INPUT_AND_OUTPUT``
    With ``cpu_bound_includes_ct`` the CPU bound caps ``C_τ,max`` at 100 points instead:
    ``⌈ (S_op·c_p + (S_op + s_out)·c_t) / 100 ⌉``.
    """
    p = params or ParallelizationParams()
    io_load = s_op + s_out if p.io_load is LoadBasis.INPUT_AND_OUTPUT else s_op
    cpu_demand = s_op * profile.c_p
    if p.cpu_bound_includes_ct:
        cpu_demand += (s_op + s_out) * profile.c_t
    return ParallelismBounds(
        cpu=ceil_eps(cpu_demand / POINTS_PER_CORE),
        io=ceil_eps(io_load * profile.c_t / (POINTS_PER_CORE * p.alpha)),
        sojourn=ceil_eps(s_op * profile.t_soj),
        memory=ceil_eps(io_load * profile.m_pt / p.beta),
    )


def parallelism_degree(
    profile: TaskProfile,
    s_op: float,
    s_out: float = 0.0,
    params: ParallelizationParams | None = None,
    op_class: OpClass | None = None,
) -> int:
    """Minimal parallelism (the unified rule)::

    cap_op = min(100/c_p, 100·α/c_t, 1/t_soj, β/m_pt)      (terms with a 0 parameter skipped)
    P_op   = max(1, ceil_eps(S_op / cap_op))               = the max of the four bounds
    """
    return parallelism_bounds(profile, s_op, s_out, params).degree(op_class)


def parallelize(graph: OperatorGraph, params: ParallelizationParams | None = None) -> dict[str, int]:
    """``P_op`` for every operator, in topological order (the paper: "the least number of tasks")."""
    out: dict[str, int] = {}
    for op_id in graph.order:
        op = graph.operator(op_id)
        out[op_id] = parallelism_degree(
            op.profile, graph.stream_load(op_id), graph.output_load(op_id), params, op.op_class
        )
    return out


# ---------------------------------------------------------------------------------------------------
# Per-task demands, Eqs. (3)–(4)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """A neighbour operator of ``op`` (upstream ``op_k`` or downstream ``op'_k``) seen from one task.

    ``pair_rate`` is ``w(τ,τ') = S/(P_peer·P_op)``, the rate on each of the ``P_peer`` task pairs.
    """

    peer: str
    pair_rate: float
    peer_parallelism: int


@dataclass(frozen=True, slots=True)
class TaskDemand:
    """What every task ``τ_i`` of ``op`` demands (Assumption 1: all tasks of ``op`` are alike).

    ``s_in = (Σ_k S_k + ingress)/P_op`` and ``s_out = Σ_k S'_k/P_op`` are the task-level streams;
    ``ingress`` is the task's always-remote share of the external input.
    """

    op: str
    parallelism: int
    profile: TaskProfile
    s_in: float
    s_out: float
    ingress: float
    links: tuple[Link, ...]

    def cpu(self, adj: Mapping[str, int]) -> float:
        """Eq. (3), corrected (``S_k/P_op·c_p``, the missing "+" restored), with ``Adj`` keyed by
        neighbour operator (absent = 0)::

            C_τi = Σ_k (S_k/P_op)·c_p
                 + c_t·[ Σ_k S_k/(P_op_k·P_op)·(P_op_k − Adj_k) + Σ_k S'_k/(P'_op_k·P_op)·(P'_op_k − Adj'_k) ]

        plus the ingress share in both terms.
        """
        remote = self.ingress + math.fsum(
            link.pair_rate * (link.peer_parallelism - adj.get(link.peer, 0)) for link in self.links
        )
        return self.s_in * self.profile.c_p + remote * self.profile.c_t

    @property
    def cpu_max(self) -> float:
        """``C_τ,max``: ``Adj`` all zeros ("all unpacked tasks are considered to be external")."""
        return self.cpu({})

    @property
    def cpu_min(self) -> float:
        """``C_τ,min``: every neighbour task collocated (the ingress stays remote)."""
        return self.cpu({link.peer: link.peer_parallelism for link in self.links})

    @property
    def memory(self) -> float:
        """Eq. (4): ``M_τi = (Σ_k S_k + Σ_k S'_k)·m_pt / P_op``."""
        return memory_consumption(self.profile, self.s_in, self.s_out)


def task_demands(graph: OperatorGraph, parallelism: Mapping[str, int]) -> tuple[TaskDemand, ...]:
    """Eqs. (3)–(4)'s inputs for every operator, in topological order (the packing's task order)."""
    out: list[TaskDemand] = []
    for op_id in graph.order:
        p_op = parallelism[op_id]
        if p_op < 1:
            raise ValueError(f"parallelism of {op_id!r} must be ≥ 1, got {p_op}")
        links = [
            Link(s.source, s.rate / (parallelism[s.source] * p_op), parallelism[s.source])
            for s in graph.inputs(op_id)
        ] + [
            Link(s.target, s.rate / (parallelism[s.target] * p_op), parallelism[s.target])
            for s in graph.outputs(op_id)
        ]
        op = graph.operator(op_id)
        out.append(
            TaskDemand(
                op=op_id,
                parallelism=p_op,
                profile=op.profile,
                s_in=graph.stream_load(op_id) / p_op,
                s_out=graph.output_load(op_id) / p_op,
                ingress=op.ingress / p_op,
                links=tuple(links),
            )
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------------------
# The MAPE loop's pure decisions
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """Footnote 1: "steadily handle an input stream of throughput T within an acceptable processing
    latency L"; ``tolerance`` is ``tol`` (ours, default 0)."""

    throughput: float
    latency_s: float
    tolerance: float = 0.0


@dataclass(frozen=True, slots=True)
class Measurement:
    """One iteration's averaged readings: throughput (tuples/s) and complete latency (s)."""

    throughput: float
    complete_latency_s: float


class Verdict(StrEnum):
    """What the controller does next (the paper's MAPE loop)."""

    SUCCESS = "success"
    CONTINUE = "continue"
    BUDGET_EXCEEDED = "budget-exceeded"
    MAX_ITER_REACHED = "max-iter-reached"


MAX_ITERATIONS = 10
"""A guard on the loop (the paper reports an oscillation at iteration 6)."""


def target_met(measured: Measurement, target: Target) -> bool:
    """``thr ≥ T·(1 − tol)`` and ``latency ≤ L`` (the paper: "a higher throughput than the
    pre-defined target whilst meeting the latency constraint")."""
    return (
        measured.throughput >= target.throughput * (1.0 - target.tolerance)
        and measured.complete_latency_s <= target.latency_s
    )


def measurement_verdict(
    measured: Measurement, target: Target, iteration: int, max_iterations: int = MAX_ITERATIONS
) -> Verdict:
    """After deployment ``iteration`` (1-based) was measured: done, give up, or plan again."""
    if target_met(measured, target):
        return Verdict.SUCCESS
    return Verdict.MAX_ITER_REACHED if iteration >= max_iterations else Verdict.CONTINUE


def plan_verdict(machines: int, budget: int) -> Verdict:
    """A plan needing ``n_m > B`` machines is refused **before** it is executed."""
    return Verdict.BUDGET_EXCEEDED if machines > budget else Verdict.CONTINUE


def update_profile(previous: TaskProfile, measured: TaskProfile, headroom: float = 0.0) -> TaskProfile:
    """Profiles only grow: ``profile_{i+1} = max(profile_i, measured_i)·(1+h)``, per field."""
    grow = 1.0 + headroom
    return TaskProfile(
        c_p=max(previous.c_p, measured.c_p) * grow,
        c_t=max(previous.c_t, measured.c_t) * grow,
        m_pt=max(previous.m_pt, measured.m_pt) * grow,
        t_soj=max(previous.t_soj, measured.t_soj) * grow,
    )


def inflate_bottleneck(profile: TaskProfile, gamma: float = 0.2) -> TaskProfile:
    """When a plan repeats and the target is still missed, the bottleneck operator's CPU
    costs grow: ``c_p, c_t ← (1+γ)·c_p, (1+γ)·c_t`` (γ = 0.2)."""
    return replace(profile, c_p=profile.c_p * (1.0 + gamma), c_t=profile.c_t * (1.0 + gamma))
