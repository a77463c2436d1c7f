"""The Nimbus port with placements, through the real Thrift client against the fake Nimbus (which lays
executors out as a placement says, as Stormscale's scheduler does), and the layout the operator reads
back from it (packing.running)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stormscale.operator import packing
from stormscale.operator.adapters.nimbus import NimbusPort, placement_request
from stormscale.operator.ports import RefusedError
from stormscale.operator.status import PlacementStatus, PodLayout, ProvisionedUnit
from stormscale.planner import load_profile
from stormscale.planner.elasticity.units import Provisioned
from stormscale.storm import Endpoint, NimbusClient
from stormscale.storm.placement import PLACEMENT_KEY, parse
from tests.harness.fakes import nimbus as fake_nimbus

LINEAR = load_profile(Path(__file__).parents[3] / "examples" / "profiles" / "thesis-linear.json")
LAYOUT = [[{"1": 1, "__acker": 1}, {"2": 2}], [{"3": 2}, {"4": 1}]]


@pytest.fixture
def fleet() -> Iterator[fake_nimbus.Fleet]:
    with fake_nimbus.serving(lambda port: fake_nimbus.Fleet("127.0.0.1", port, supervisors=6, slots=2)) as f:
        f.submit("linear", LINEAR, {"1": 1, "2": 4, "3": 4, "4": 4})
        yield f


@pytest.fixture
def port(fleet: fake_nimbus.Fleet) -> NimbusPort:
    return NimbusPort(NimbusClient(Endpoint("127.0.0.1", fleet.port)))


def test_describe_says_where_every_executor_runs_and_what_each_supervisor_offers(
    port: NimbusPort, fleet: fake_nimbus.Fleet
) -> None:
    state = port.describe("linear")
    assert {e.component for e in state.assignment} == {"1", "2", "3", "4", "__acker", "__system"}
    assert state.system_executors == {"__acker": 1}  # __system is Storm's own in every worker
    assert state.supervisor_slots == {fleet.host_of(i): 2 for i in range(6)}


def test_a_placement_travels_in_the_rebalance_and_is_read_back(
    port: NimbusPort, fleet: fake_nimbus.Fleet
) -> None:
    port.rebalance("linear", {"1": 1, "2": 2, "3": 2, "4": 1}, 4, 0, LAYOUT)
    (request,) = fleet.requests
    assert request.executors == {"1": 1, "2": 2, "3": 2, "4": 1}  # the fake keeps user components' only
    assert request.workers == 4
    assert [
        [w.counts for w in pod.workers] for pod in parse(request.conf_overrides[PLACEMENT_KEY]).pods
    ] == LAYOUT
    state = port.describe("linear")
    applied = PlacementStatus(
        strategy="MultiLevel",
        slots_per_pod=2,
        pods=2,
        workers=4,
        layout=[PodLayout(workers=pod) for pod in LAYOUT],
        stack=[ProvisionedUnit(component="3", pod=1, worker=0)],
        at="2026-11-22T12:00:00Z",
    )
    assert packing.problems(packing.as_placement(applied.counts()), state, "linear") == []
    now = packing.running(applied, state, "linear")
    assert now.pods == (({"1": 1}, {"2": 2}), ({"3": 2}, {"4": 1}))  # Storm's own executors left out
    assert len(set(now.hosts)) == 2
    assert None not in now.hosts
    assert now.stack == (Provisioned("3", 1, 0),)


def test_a_layout_storm_does_not_run_is_read_from_nimbus_without_a_stack(
    port: NimbusPort, fleet: fake_nimbus.Fleet
) -> None:
    state = port.describe("linear")  # Storm's own layout: one executor per worker, no placement
    stale = PlacementStatus(
        strategy="MultiLevel",
        slots_per_pod=2,
        pods=2,
        workers=4,
        layout=[PodLayout(workers=pod) for pod in LAYOUT],
        stack=[ProvisionedUnit(component="3", pod=1, worker=0)],
        at="2026-11-22T12:00:00Z",
    )
    now = packing.running(stale, state, "linear")
    assert now.stack == ()
    assert sorted(c for pod in now.pods for w in pod for c in w) == ["1", "2", "3", "4"]
    assert set(now.hosts) == {e.host for e in state.assignment if e.component in {"1", "2", "3", "4"}}


def test_a_placement_that_does_not_hold_the_rebalances_executors_is_refused() -> None:
    with pytest.raises(RefusedError, match="placement holds"):
        placement_request(LAYOUT, {"1": 1, "2": 2, "3": 2, "4": 2}, 4, 0)
    with pytest.raises(RefusedError, match=r"in 4 workers, the rebalance asks for .* in 5"):
        placement_request(LAYOUT, {"1": 1, "2": 2, "3": 2, "4": 1}, 5, 0)
    with pytest.raises(RefusedError, match="executors >= 1"):
        placement_request([[{"1": 0}]], {"1": 0}, 1, 0)
