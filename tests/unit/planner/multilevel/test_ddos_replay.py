"""The DDoS benchmark replay (multi-level elasticity §5.2, Table 1), end to end as a simulation.

The fixture (inferred from the paper): 2-vCPU pods, memory fixed at 0.5, the parser's capacity per
configuration, ``health = min(1, cap / L)`` and ``cpu(pod) = parser executors on pod / 2 · min(1, L / cap)``.
Counters are all-time and go through :func:`counter_delta`, health through :func:`health`; the ramp
0 → 16000 runs Algorithm 1, the ramp 16000 → 0 runs the table-driven controller on the derived table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from stormscale.planner.elasticity.benchmark import (
    BenchmarkParams,
    BenchmarkState,
    benchmark_step,
    derive_table,
    load_schedule,
)
from stormscale.planner.elasticity.controller import ControllerParams, layout, start, step
from stormscale.planner.elasticity.health import health
from stormscale.planner.elasticity.model import (
    Action,
    AddExecutor,
    AddPod,
    AddWorker,
    Alert,
    Layout,
    RemoveExecutor,
    RemovePod,
    RemoveWorker,
    executors_of,
    minimal_layout,
    replay,
)
from stormscale.planner.elasticity.observation import Observation, OperatorObservation, PodObservation
from stormscale.planner.elasticity.selection import Selection
from stormscale.planner.elasticity.signals import counter_delta, counter_rate

from .fixtures import PARSER, TABLE1_NOTATION, shape, table1

CAPACITY = {"(1,1)": 5000.0, "(1,2)": 12500.0, "(1,2)+(1,1)": 14200.0, "(1,2)+(1,2)": 17000.0}
VCPUS = 2
MEM = 0.5
T = 30.0
DELTA = 120.0
STEP = 2000.0


@dataclass
class Replay:
    """The simulated cluster: a layout, the parser's all-time counters, and the health of each window."""

    layout: Layout = field(default_factory=lambda: minimal_layout([PARSER]))
    executed: float = 0.0
    emitted: float = 0.0
    healths: list[float | None] = field(default_factory=list)

    def window(self, start: float, load: float) -> Observation:
        cap = CAPACITY[shape(self.layout)]
        executed, emitted = self.executed + min(load, cap) * T, self.emitted + load * T
        executed_t = counter_delta(self.executed, executed)
        received_t = counter_delta(self.emitted, emitted)
        assert executed_t is not None
        assert received_t is not None
        rate = counter_rate(self.emitted, emitted, T)
        self.executed, self.emitted = executed, emitted
        h = health(executed_t, received_t)
        self.healths.append(h)
        pods = tuple(
            PodObservation(
                i,
                cpu=pod.executors.get(PARSER, 0) / VCPUS * min(1.0, load / cap),
                mem=MEM,
                workers=pod.workers,
                executors=pod.executors.get(PARSER, 0),
                vcpus=VCPUS,
            )
            for i, pod in enumerate(self.layout)
        )
        parser = OperatorObservation(PARSER, 1, h, executors_of(self.layout, PARSER), tasks=16)
        return Observation(start, start + T, load=rate, operators=(parser,), pods=pods)

    def apply(self, actions: tuple[Action, ...]) -> None:
        self.layout = replay(self.layout, [a for a in actions if not isinstance(a, Alert)])


@dataclass(frozen=True)
class Event:
    time: float
    load: float
    health: float | None
    pods: tuple[PodObservation, ...]
    actions: tuple[Action, ...]
    after: str


def benchmark(selection: Selection) -> tuple[Replay, BenchmarkState, list[Event]]:
    params = BenchmarkParams(0, 16000, STEP, DELTA, T, selection=selection)
    sim, state, events = Replay(), BenchmarkState(minimal_layout([PARSER])), []
    for level in load_schedule(params):
        for i in range(int(DELTA / T)):
            obs = sim.window(level.start + i * T, level.load)
            state, actions = benchmark_step(state, obs, params)
            sim.apply(actions)
            if actions:
                h = obs.operators[0].health
                events.append(Event(obs.window_end, level.load, h, obs.pods, actions, shape(sim.layout)))
    return sim, state, events


@pytest.mark.parametrize("selection", list(Selection))
def test_benchmark_scales_out_at_6000_14000_and_16000(selection: Selection) -> None:
    _, _, events = benchmark(selection)
    assert [(e.load, e.actions, e.after) for e in events] == [
        (6000, (AddExecutor(PARSER, 0),), "(1,2)"),
        (14000, (AddPod(1), AddWorker(1), AddExecutor(PARSER, 1)), "(1,2)+(1,1)"),
        (16000, (AddExecutor(PARSER, 1),), "(1,2)+(1,2)"),
    ]
    adapt1, adapt2, adapt3 = events
    assert adapt1.health == pytest.approx(0.833, abs=1e-3)
    assert adapt1.pods[0].cpu == pytest.approx(0.5)
    assert adapt2.health == pytest.approx(0.893, abs=1e-3)
    assert adapt2.pods[0].cpu == pytest.approx(1.0)  # > 0.9: a new pod
    assert adapt3.health == pytest.approx(0.8875, abs=1e-4)
    assert min(adapt3.pods, key=lambda p: p.cpu).pod == 1
    assert adapt3.pods[1].cpu == pytest.approx(0.5)


@pytest.mark.parametrize("selection", list(Selection))
def test_derived_table_is_table_1(selection: Selection) -> None:
    _, state, _ = benchmark(selection)
    table = derive_table(state)
    bands = [(r.lower, r.upper) for r in table.rows]
    assert bands == [(0, 4000), (4000, 12000), (12000, 14000), (14000, 16000)]
    assert tuple(shape(table.layout(k)) for k in range(4)) == TABLE1_NOTATION
    assert table == table1()
    assert table.notes == ()


@pytest.mark.parametrize("observations", [None, 1])  # k(30 s) = 3, and 1
def test_ramp_down_by_the_table_is_three_lifo_scale_ins(observations: int | None) -> None:
    sim, state, ups = benchmark(Selection.RECOMMENDED)
    table = derive_table(state)
    controller = start(table, row=len(table.rows) - 1)
    assert layout(controller) == sim.layout
    params = ControllerParams(period=T, observations=observations)
    begin = len(load_schedule(BenchmarkParams(0, 16000, STEP, DELTA, T))) * DELTA
    downs: list[Event] = []
    for n, load in enumerate(range(14000, -1, -2000)):
        for i in range(int(DELTA / T)):
            obs = sim.window(begin + n * DELTA + i * T, float(load))
            controller, actions = step(controller, obs, params)
            sim.apply(actions)
            assert layout(controller) == sim.layout
            if actions:
                downs.append(Event(obs.window_end, load, None, obs.pods, actions, shape(sim.layout)))
    assert [(e.load, e.actions, e.after) for e in downs] == [
        (14000, (RemoveExecutor(PARSER, 1),), "(1,2)+(1,1)"),  # ADAPT4
        (12000, (RemoveExecutor(PARSER, 1), RemoveWorker(1), RemovePod(1)), "(1,2)"),  # ADAPT5
        (4000, (RemoveExecutor(PARSER, 0),), "(1,1)"),  # ADAPT6
    ]
    assert len(ups) == 3
    assert max(len(e.pods) for e in ups + downs) <= 2  # at most 2 pods (the paper's 2 VMs)
    assert len(sim.layout) == 1
    unhealthy = [h for h in sim.healths if h is not None and h < 0.9]
    assert len(unhealthy) == 3  # only the three windows that triggered ADAPT1-3
