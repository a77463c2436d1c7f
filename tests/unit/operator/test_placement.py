"""The placement format (stormscale.storm.placement): the shared cases both sides of the contract read,
round trips, coverage, the task-order fill, and checking what Nimbus reports against a placement."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.transport import TMemoryBuffer

from stormscale.storm.idl import NIMBUS
from stormscale.storm.model import Executor, RebalanceRequest, TopologyInfo
from stormscale.storm.placement import (
    PLACEMENT_KEY,
    Placement,
    PlacementError,
    Worker,
    executor_counts,
    expected_workers,
    layout_problems,
    override_problems,
    parse,
    rebalance_request,
)
from tests.unit.fuzzing import outcome

Buffer: Any = TMemoryBuffer  # thriftpy2's transports and protocols are untyped
Binary: Any = TBinaryProtocolFactory
CASES = json.loads(
    (Path(__file__).parents[3] / "scheduler/src/test/resources/placement-cases.json").read_text()
)


def pods_of(placement: Placement) -> list[dict[str, Any]]:
    return [{"workers": [w.counts for w in p.workers], "supervisor": p.supervisor} for p in placement.pods]


@pytest.mark.parametrize("case", CASES["valid"], ids=lambda c: c["name"])
def test_valid_cases_parse_to_their_pods_counts_and_workers(case: dict[str, Any]) -> None:
    placement = parse(case["text"])
    assert pods_of(placement) == case["pods"]
    assert placement.executors() == case["executors"]
    assert placement.workers == case["workers"]
    assert parse(placement.to_json()) == placement


@pytest.mark.parametrize("case", CASES["invalid"], ids=lambda c: c["text"][:60])
def test_invalid_cases_fail_with_one_line_naming_the_problem(case: dict[str, Any]) -> None:
    with pytest.raises(PlacementError) as err:
        parse(case["text"])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(PLACEMENT_KEY)
    for fragment in case["fragments"]:
        assert fragment in message


def test_to_json_is_the_contracts_compact_canonical_text() -> None:
    placement = Placement.of([[{"__acker": 1, "2": 1}, {"3": 2}], [{"4": 1}]], supervisors=[None, "10.0.0.8"])
    assert placement.to_json() == (
        '{"pods":[{"workers":[{"2":1,"__acker":1},{"3":2}]},'
        '{"supervisor":"10.0.0.8","workers":[{"4":1}]}],"version":1}'
    )
    overrides = json.loads(placement.conf_overrides())
    assert list(overrides) == [PLACEMENT_KEY]
    assert parse(overrides[PLACEMENT_KEY]) == placement


def test_of_refuses_what_parse_refuses() -> None:
    with pytest.raises(PlacementError, match=r"pods\[0\]\.workers\[1\]: '__system' is never placed"):
        Placement.of([[{"a": 1}, {"__system": 1}]])
    with pytest.raises(PlacementError, match="pods must not be empty"):
        Placement.of([])
    with pytest.raises(PlacementError, match=r"pods\[1\]\.workers must not be empty"):
        Placement.of([[{"a": 1}], []])
    with pytest.raises(PlacementError, match="3 supervisors for 2 pods"):
        Placement.of([[{"a": 1}], [{"b": 1}]], supervisors=["x", "y", "z"])
    with pytest.raises(PlacementError, match="both pinned"):
        Placement.of([[{"a": 1}], [{"b": 1}]], supervisors=["x", "x"])
    with pytest.raises(PlacementError, match="whole number"):
        Worker.of({"a": 0})


def test_coverage_names_every_missing_extra_and_miscounted_component() -> None:
    placement = Placement.of([[{"spout": 1, "__acker": 1}, {"bolt": 2}], [{"ghost": 1}]])
    assert placement.coverage_problems({"spout": 1, "bolt": 2, "__acker": 1, "__system": 2, "ghost": 1}) == []
    problems = placement.coverage_problems({"spout": 1, "bolt": 3, "sink": 1, "__system": 1, "__acker": 1})
    assert problems == [
        "component 'bolt': 2 executors placed, the topology has 3",
        "component 'ghost' is not in the topology",
        "component 'sink': 0 executors placed, the topology has 1",
    ]
    with pytest.raises(PlacementError, match="does not cover the topology: component 'bolt'"):
        placement.check_covers({"spout": 1, "bolt": 3, "__acker": 1, "ghost": 1})


def executor(component: str, start: int, host: str = "h", port: int = 1, end: int | None = None) -> Executor:
    return Executor(component, start, start if end is None else end, host, port, 10)


def test_executors_fill_the_workers_that_list_them_in_ascending_start_task_order() -> None:
    placement = Placement.of([[{"b": 2}, {"a": 1, "b": 1}], [{"a": 2}]])
    executors = [
        executor("a", 5),
        executor("b", 9),
        executor("a", 1),
        executor("b", 3, end=4),
        executor("a", 3),
    ]
    executors += [executor("b", 2), executor("__system", -1)]
    filled = expected_workers(placement, executors)
    assert [[(e.component, e.task_start) for e in w] for w in filled] == [
        [("b", 2), ("b", 3)],
        [("a", 1), ("b", 9)],
        [("a", 3), ("a", 5)],
    ]


def info(*executors: Executor) -> TopologyInfo:
    return TopologyInfo("t-1", "t", "ACTIVE", 10, executors)


# pods[0]: workers {spout: 1, __acker: 1} and {bolt: 2}; pods[1]: {bolt: 1}
PLACED = Placement.of([[{"spout": 1, "__acker": 1}, {"bolt": 2}], [{"bolt": 1}]])


def as_placed(sup0: str = "10.0.0.1", sup1: str = "10.0.0.2") -> list[Executor]:
    return [
        executor("spout", 1, sup0, 6700),
        executor("__acker", 5, sup0, 6700),
        executor("bolt", 2, sup0, 6701),
        executor("bolt", 3, sup0, 6701),
        executor("bolt", 4, sup1, 6700),
        executor("__system", -1, sup0, 6700),
        executor("__system", -1, sup0, 6701),
        executor("__system", -1, sup1, 6700),
    ]


def test_executor_counts_cover_system_components_but_never_system() -> None:
    assert executor_counts(info(*as_placed())) == {"__acker": 1, "bolt": 3, "spout": 1}


def test_a_layout_that_applies_the_placement_exactly_has_no_problems() -> None:
    assert layout_problems(PLACED, info(*as_placed())) == []
    pinned = Placement.of(
        [[{"spout": 1, "__acker": 1}, {"bolt": 2}], [{"bolt": 1}]], ["10.0.0.1", "10.0.0.2"]
    )
    assert layout_problems(pinned, info(*as_placed())) == []


def test_layout_problems_name_each_way_the_layout_departs() -> None:
    swapped = as_placed()
    swapped[2], swapped[4] = executor("bolt", 2, "10.0.0.2", 6700), executor("bolt", 4, "10.0.0.1", 6701)
    assert layout_problems(PLACED, info(*swapped)) == [
        "pods[0].workers[1] does not run alone in one slot (bolt[2]@10.0.0.2:6700, bolt[3]@10.0.0.1:6701)",
        "pods[0]: workers on 2 hosts (10.0.0.1, 10.0.0.2)",
        "pods[1].workers[0] does not run alone in one slot (bolt[4]@10.0.0.1:6701)",
    ]
    shared = as_placed(sup1="10.0.0.1")
    shared[4] = executor("bolt", 4, "10.0.0.1", 6702)
    assert layout_problems(PLACED, info(*shared)) == ["pods[0] and pods[1] share host 10.0.0.1"]
    pinned = Placement.of([[{"spout": 1, "__acker": 1}, {"bolt": 2}], [{"bolt": 1}]], ["10.0.0.2"])
    assert layout_problems(pinned, info(*as_placed())) == ["pods[0]: on 10.0.0.1, pinned to 10.0.0.2"]
    assert layout_problems(PLACED, info(*as_placed()[:4])) == [
        "component 'bolt': 3 executors placed, the topology has 2"
    ]


def test_one_worker_sharing_its_slot_with_another_is_a_problem() -> None:
    merged = as_placed()
    merged[2] = executor("bolt", 2, "10.0.0.1", 6700)
    merged[3] = executor("bolt", 3, "10.0.0.1", 6700)
    problems = layout_problems(PLACED, info(*merged))
    assert problems[0].startswith("pods[0].workers[0] does not run alone in one slot")
    assert problems[1].startswith("pods[0].workers[1] does not run alone in one slot")


components = st.sampled_from(["spout", "bolt", "sink", "__acker", "__eventlogger", "a-b.c"])
workers = st.dictionaries(components, st.integers(1, 2**31 - 1), min_size=1, max_size=4)
pods = st.lists(st.lists(workers, min_size=1, max_size=3), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(pods, st.lists(st.sampled_from(["h1", "h2", "h3", "h4"]), unique=True, max_size=4))
def test_every_placement_round_trips_through_its_json(pods: list[Any], pins: list[str]) -> None:
    placement = Placement.of(pods, pins[: len(pods)])
    assert parse(placement.to_json()) == placement
    assert parse(json.loads(placement.conf_overrides())[PLACEMENT_KEY]) == placement


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.one_of(st.text(max_size=200), st.from_regex(r'\{"version": ?1, ?"pods": ?\[.{0,80}\]\}')))
def test_any_text_parses_or_fails_with_one_line(text: str) -> None:
    outcome(parse, text, PlacementError)


def test_a_rebalance_request_carries_the_placement_its_executors_and_workers() -> None:
    request = rebalance_request(PLACED, wait_secs=3)
    assert (request.wait_secs, request.workers, dict(request.executors)) == (
        3,
        3,
        {"__acker": 1, "bolt": 3, "spout": 1},
    )
    assert parse(request.conf_overrides[PLACEMENT_KEY]) == PLACED
    assert override_problems(request, info(*as_placed())) == []
    assert override_problems(RebalanceRequest(workers=2), info(*as_placed())) == []


def test_override_problems_check_the_placement_against_the_executors_after_the_rebalance() -> None:
    running = info(*as_placed())
    grown = RebalanceRequest(
        workers=3, executors={"bolt": 4}, conf_overrides={PLACEMENT_KEY: PLACED.to_json()}
    )
    assert override_problems(grown, running) == [
        f"{PLACEMENT_KEY}: component 'bolt': 3 executors placed, the topology has 4"
    ]
    assert override_problems(replace(grown, executors={}, workers=4), running) == [
        f"{PLACEMENT_KEY} has 3 workers, the rebalance asks for 4"
    ]
    assert override_problems(replace(grown, conf_overrides={PLACEMENT_KEY: "{}"}), running) == [
        f"{PLACEMENT_KEY}: version must be 1, got nothing"
    ]
    assert override_problems(replace(grown, conf_overrides={PLACEMENT_KEY: {"version": 1}}), running) == [
        f'{PLACEMENT_KEY} must be a JSON string, got {{"version": 1}}'
    ]


def test_the_conf_overrides_go_out_as_rebalance_options_field_5_a_string() -> None:
    """Field 5 of storm-client 2.8.3's RebalanceOptions is ``topology_conf_overrides``, an optional
    string (its generated class's metadata): binary protocol type 11 (STRING), id 5, then the text."""
    out = Buffer()
    NIMBUS.RebalanceOptions(topology_conf_overrides='{"a":1}').write(Binary().get_protocol(out))
    assert out.getvalue() == b"\x0b\x00\x05" + struct.pack("!i", 7) + b'{"a":1}' + b"\x00"


def test_a_placement_object_in_place_of_its_json_is_named_not_a_crash() -> None:
    request = RebalanceRequest(workers=3, conf_overrides={PLACEMENT_KEY: PLACED})
    assert override_problems(request, info(*as_placed())) == [
        f"{PLACEMENT_KEY} must be a JSON string, got a Placement"
    ]
