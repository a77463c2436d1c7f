"""The table-driven controller: look-up, LIFO scale-in, proactive mode, counter resets, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner.elasticity.controller import (
    ControllerParams,
    ControllerState,
    Mode,
    layout,
    start,
    step,
)
from stormscale.planner.elasticity.model import (
    AddExecutor,
    AddPod,
    AddWorker,
    Alert,
    AlertReason,
    Provision,
    RemoveExecutor,
    RemovePod,
    RemoveWorker,
    executors_of,
    inverse,
)
from stormscale.planner.elasticity.observation import Observation, OperatorObservation, PodObservation
from stormscale.planner.elasticity.signals import ForecastSlot
from stormscale.planner.elasticity.table import lookup

from .fixtures import PARSER, TABLE1_NOTATION, shape, table1, window

ONE = ControllerParams(period=60.0)  # k(60 s) = 1


@pytest.mark.parametrize(
    ("load", "row"),
    [(0, 0), (4000, 0), (4001, 1), (12000, 1), (12001, 2), (14000, 2), (15000, 3), (16000, 3), (17000, None)],
)
def test_lookup_is_half_open(load: float, row: int | None) -> None:
    assert lookup(table1(), load) == row


def test_table_layouts_are_table_1() -> None:
    table = table1()
    assert tuple(shape(table.layout(k)) for k in range(4)) == TABLE1_NOTATION


def test_a_jump_is_one_reconfiguration() -> None:
    state, actions = step(start(table1(), row=0), window(60, 3000), ONE)
    assert actions == ()
    state, actions = step(state, window(120, 15000), ONE)
    assert actions == (
        AddExecutor(PARSER, 0),
        AddPod(1),
        AddWorker(1),
        AddExecutor(PARSER, 1),
        AddExecutor(PARSER, 1),
    )
    assert shape(layout(state)) == "(1,2)+(1,2)"


def test_beyond_the_benchmark_keeps_the_last_row_alerts_once_and_turns_to_health() -> None:
    state = start(table1(), row=3)
    state, actions = step(state, window(60, 17000), ONE)
    assert actions == (Alert(AlertReason.BEYOND_BENCHMARK, "load 17000 > 16000: possible DoS"),)
    assert state.beyond
    assert shape(layout(state)) == "(1,2)+(1,2)"
    pods = (
        PodObservation(0, cpu=1.0, mem=0.5, executors=2, vcpus=2),
        PodObservation(1, cpu=1.0, mem=0.5, executors=2, vcpus=2),
    )
    congested = (OperatorObservation(PARSER, 1, 0.85, executors=4, tasks=16),)
    obs = Observation(60, 120, load=17000, operators=congested, pods=pods)
    state, actions = step(state, obs, ONE)  # no second alert: Algorithm 2 adds a pod
    assert actions == (AddPod(2), AddWorker(2), AddExecutor(PARSER, 2))
    state, actions = step(state, window(180, 16000), ONE)  # fresh (starts at the action)
    assert actions == (RemoveExecutor(PARSER, 2), RemoveWorker(2), RemovePod(2))
    assert not state.beyond
    assert shape(layout(state)) == "(1,2)+(1,2)"


def test_lifo_scale_in() -> None:
    state, actions = step(start(table1(), row=3), window(60, 10000), ONE)
    assert actions == (RemoveExecutor(PARSER, 1), RemoveExecutor(PARSER, 1), RemoveWorker(1), RemovePod(1))
    assert shape(layout(state)) == "(1,2)"


FORECAST_LOADS = (5000, 8000, 13000, 15000, 13000, 9000, 5000)
FORECAST_SLOTS = tuple(ForecastSlot(300 * i, 300 * (i + 1), x) for i, x in enumerate(FORECAST_LOADS))


def forecast_load(t: float) -> float:
    return next(s.load for s in FORECAST_SLOTS if s.start <= t < s.end)


def test_proactive_schedule() -> None:
    params = ControllerParams(period=60.0, mode=Mode.PROACTIVE, forecast=FORECAST_SLOTS, lead=120.0)
    table = table1()
    row = lookup(table, FORECAST_LOADS[0])
    assert row is not None
    state = start(table, row)
    counts = [executors_of(layout(state), PARSER)]
    changes: list[tuple[float, int]] = []
    health: list[float] = []
    capacity = {"(1,1)": 5000.0, "(1,2)": 12500.0, "(1,2)+(1,1)": 14200.0, "(1,2)+(1,2)": 17000.0}
    for end in range(60, 2101, 60):
        load = forecast_load(end - 60)  # measured over [end - 60, end)
        health.append(min(1.0, capacity[shape(layout(state))] / load))  # the DDoS replay's capacities
        state, actions = step(state, window(end, load), params)
        assert not any(isinstance(a, Alert) for a in actions)
        if actions:
            changes.append((end, executors_of(layout(state), PARSER)))
            counts.append(changes[-1][1])
    assert changes == [(480, 3), (780, 4), (1200, 3), (1500, 2)]
    assert counts == [2, 3, 4, 3, 2]
    assert min(health) >= 0.95  # proactive: the parser's health stays at 1


def test_proactive_alerts_when_the_load_exceeds_the_forecast() -> None:
    params = ControllerParams(period=60.0, mode=Mode.PROACTIVE, forecast=FORECAST_SLOTS)
    state = start(table1(), row=1)
    state, actions = step(state, window(120, 13000), params)  # forecast 5000 over the window
    assert actions[0] == Alert(AlertReason.ABOVE_FORECAST, "measured 13000 > forecast")
    assert shape(layout(state)) == "(1,2)+(1,1)"
    state, actions = step(state, window(180, 13000), params)  # no second alert in the same excursion
    assert actions == ()


def test_a_counter_reset_drops_the_window_and_extends_the_cool_down() -> None:
    state = start(table1(), row=0)
    reset = Observation(0, 60, load=None, reset=True)
    state, actions = step(state, reset, ONE)
    assert actions == ()
    assert state.stale_before == 120
    state, actions = step(state, window(120, 15000), ONE)  # [60, 120) is still in the cool-down
    assert actions == ()
    state, actions = step(state, window(180, 15000), ONE)
    assert len(actions) == 5


def test_no_decision_while_a_pod_starts_or_on_a_stale_window() -> None:
    state, actions = step(start(table1(), row=1), window(60, 13000), ONE)
    assert actions[0] == AddPod(1)
    starting = Observation(60, 120, load=16000, ready_since=None)
    assert step(state, starting, ONE) == (state, ())
    registered_late = Observation(120, 180, load=16000, ready_since=130)
    assert step(state, registered_late, ONE) == (state, ())
    _, actions = step(state, Observation(180, 240, load=16000, ready_since=130), ONE)
    assert actions == (AddExecutor(PARSER, 1),)


# --- invariants -------------------------------------------------------------------------------

ticks = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=22000),  # measured load
        st.booleans(),  # parser congested
        st.floats(min_value=0, max_value=1),  # pods' CPU
    ),
    min_size=1,
    max_size=40,
)


def drive(loads: list[tuple[float, bool, float]], k: int, max_pods: int) -> list[ControllerState]:
    """Run the controller on Table 1 from (1,1), checking LIFO on every release; the state after each tick."""
    params = ControllerParams(period=30.0, observations=k, max_pods=max_pods)
    state = start(table1(), row=0)
    provisioned: list[Provision] = []
    states = []
    for i, (load, congested, cpu) in enumerate(loads):
        current = layout(state)
        pods = tuple(
            PodObservation(p, cpu=cpu, mem=0.5, workers=pod.workers, executors=pod.executor_count, vcpus=4)
            for p, pod in enumerate(current)
        )
        parser = OperatorObservation(PARSER, 1, 0.5 if congested else 1.0, executors_of(current, PARSER), 8)
        obs = Observation(30.0 * i, 30.0 * (i + 1), load=load, operators=(parser,), pods=pods)
        state, actions = step(state, obs, params)
        for action in actions:
            if isinstance(action, (AddPod, AddWorker, AddExecutor)):
                provisioned.append(action)
            elif not isinstance(action, Alert):
                assert provisioned, "a release with nothing provisioned"
                assert action == inverse(provisioned.pop())  # LIFO: the most recent goes first
        states.append(state)
    return states


@settings(max_examples=150, deadline=None)
@given(ticks, st.integers(min_value=1, max_value=3), st.integers(min_value=2, max_value=4))
def test_scale_in_is_lifo_and_the_controller_stays_within_its_bounds(
    loads: list[tuple[float, bool, float]], k: int, max_pods: int
) -> None:
    table = table1()
    for state in drive(loads, k, max_pods):
        now = layout(state)  # replay raises if the hierarchy's rules (one worker per pod, …) break
        assert len(now) <= max(max_pods, len(table.layout(3)))
        assert executors_of(now, PARSER) <= 8  # the task cap
        if not state.beyond:
            assert now == table.layout(state.row)  # in table mode, always one of the table's rows


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=1, max_value=3),
    st.integers(min_value=0, max_value=3),
    st.floats(min_value=0, max_value=30000),
    st.integers(min_value=0, max_value=10),
    st.data(),
)
def test_the_noise_filter_never_reacts_to_a_spike_shorter_than_its_window(
    k: int, row: int, spike: float, position: int, data: st.DataObject
) -> None:
    table = table1()
    band = table.rows[row]
    steady = data.draw(st.floats(min_value=band.lower, max_value=band.upper).filter(lambda x: x > band.lower))
    length = data.draw(st.integers(min_value=0, max_value=k - 1))
    loads = [steady] * 12
    for i in range(position, min(position + length, 12)):
        loads[i] = spike
    params = ControllerParams(period=30.0, observations=k)
    state = start(table, row)
    for i, load in enumerate(loads):
        state, actions = step(state, window(30.0 * (i + 1), load, 30.0), params)
        assert actions == ()
