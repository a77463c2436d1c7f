"""The model's assumptions checked against the topology's conf and graph: each finding appears exactly
when its condition holds, and the decision says so in ``AssumptionsChecked`` (never Degraded)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stormscale.operator.decision import Act, Observation, TopologyView, decide
from stormscale.operator.decision.assumptions import (
    LOAD_AWARE_KEY,
    MAX_LINES,
    UNCOVERED,
    Finding,
    capacity_share,
    check,
    load_aware,
    message,
)
from stormscale.operator.policy import parse_spec
from stormscale.operator.ports import MeasuredProfile
from stormscale.operator.status import ASSUMPTIONS_CHECKED, DEGRADED, Reason, StormTopologyStatus
from stormscale.planner import FlowModel, load_profile, throughput

OFF = {LOAD_AWARE_KEY: True}
SHUFFLED = {"b": frozenset({"shuffle"}), "c": frozenset({"shuffle"})}
EVEN = {"b": 2, "c": 4}
TASKS = {"a": 4, "b": 4, "c": 8}


def kinds(findings: tuple[Finding, ...]) -> list[str]:
    return [f.assumption for f in findings]


def test_a_topology_that_fits_the_model_has_no_finding() -> None:
    assert check(OFF, SHUFFLED, EVEN, TASKS) == ()
    assert message(()).startswith("The model's assumptions hold")


@pytest.mark.parametrize(
    ("conf", "on"),
    [
        ({}, True),
        ({LOAD_AWARE_KEY: False}, True),
        ({LOAD_AWARE_KEY: "false"}, True),
        (OFF, False),
        ({LOAD_AWARE_KEY: "true"}, False),
    ],
)
def test_load_aware_messaging_is_on_unless_the_conf_disables_it(conf: dict[str, Any], on: bool) -> None:
    assert load_aware(conf) is on
    findings = check(conf, SHUFFLED, EVEN, TASKS)
    assert kinds(findings) == (["load-aware messaging on"] if on else [])


def test_load_aware_messaging_names_the_shuffled_components_and_the_measured_error() -> None:
    groupings = {"b": frozenset({"shuffle"}), "c": frozenset({"local_or_shuffle"}), "d": frozenset()}
    (finding,) = check({}, groupings, {}, {})
    assert finding.components == ("b", "c")
    assert "~19 %" in finding.effect
    assert LOAD_AWARE_KEY in finding.effect


def test_load_aware_messaging_without_a_shuffle_input_is_no_finding() -> None:
    assert check({}, {"b": frozenset({"direct"})}, {}, {}) == check(OFF, {"b": frozenset({"direct"})}, {}, {})


@pytest.mark.parametrize(
    ("tasks", "units", "share"), [(8, 4, 1.0), (4, 3, 4 / 6), (8, 3, 8 / 9), (2, 4, 0.5)]
)
def test_the_capacity_share_is_tasks_over_units_times_the_largest_executor(
    tasks: int, units: int, share: float
) -> None:
    assert capacity_share(tasks, units) == pytest.approx(share)


def test_units_that_do_not_divide_the_tasks_are_a_finding_per_component() -> None:
    findings = check(OFF, SHUFFLED, {"a": 4, "b": 3, "c": 3}, TASKS)
    assert [(f.assumption, f.components) for f in findings] == [
        ("units do not divide tasks", ("b",)),
        ("units do not divide tasks", ("c",)),
    ]
    assert "33%" in findings[0].effect  # 4 tasks on 3 executors: the one with 2 sets the pace
    assert "11%" in findings[1].effect
    assert check(OFF, SHUFFLED, {"b": 1, "c": 8}, TASKS) == ()


def test_a_component_without_known_tasks_is_no_division_finding() -> None:
    assert check(OFF, SHUFFLED, {"z": 3}, TASKS) == ()


@pytest.mark.parametrize("grouping", sorted(UNCOVERED))
def test_each_uncovered_grouping_is_a_finding_naming_the_components_it_feeds(grouping: str) -> None:
    groupings = {
        "b": frozenset({"shuffle", grouping}),
        "c": frozenset({grouping}),
        "d": frozenset({"shuffle"}),
    }
    findings = check(OFF, groupings, EVEN, TASKS)
    assert [(f.assumption, f.components) for f in findings] == [(f"{grouping} grouping", ("b", "c"))]
    assert findings[0].effect == UNCOVERED[grouping]


def test_fields_grouping_says_the_busiest_executor_sets_the_capacity() -> None:
    (finding,) = check(OFF, {"c": frozenset({"fields"})}, {}, {})
    assert "key skew" in finding.effect
    assert "busiest executor" in finding.effect


def test_the_message_is_one_line_a_finding_bounded_in_lines_and_names() -> None:
    many = {f"c{i}": 3 for i in range(10)}
    findings = check({}, {f"c{i}": frozenset({"shuffle"}) for i in range(10)}, many, dict.fromkeys(many, 4))
    assert len(findings) == 11
    lines = message(findings).splitlines()
    assert len(lines) == MAX_LINES + 1
    assert lines[-1] == f"and {11 - MAX_LINES} more"
    assert lines[0].startswith("load-aware messaging on (c0, c1, c2, c3 and 6 more): ")


PROFILES = Path(__file__).parents[3] / "examples" / "profiles"
LINEAR = load_profile(PROFILES / "thesis-linear.json")  # 1 → 2 → 3 → 4, one unit each
BASELINE = {"1": 1, "2": 1, "3": 1, "4": 1}


def planned(conf: dict[str, Any] | None, groupings: dict[str, frozenset[str]] | None) -> Any:
    """A Manual budget of 2 planned on the linear profile, every component with 8 tasks."""
    spec = {
        "topologyName": "linear",
        "nimbus": {"host": "nimbus"},
        "workers": {"deployment": "linear-workers", "slotsPerPod": 1},
        "metrics": {"prometheus": "http://prometheus:9090"},
        "scaling": {"mode": "Manual", "budget": 2, "flowModel": "Drop", "maxUnits": 6},
    }
    view = TopologyView(
        state="ACTIVE",
        active=True,
        executors=BASELINE,
        tasks=dict.fromkeys(BASELINE, 8),
        system_executors={},
        replicas=4,
        conf=conf,
        groupings=groupings,
    )
    measured = MeasuredProfile(LINEAR, throughput(LINEAR, LINEAR.units, FlowModel.BACKPRESSURE), 5.0)
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    observation = Observation(now, 1, view, baseline=BASELINE, measured=measured)
    return decide(observation, parse_spec(spec), StormTopologyStatus(baseline=BASELINE))


def assumption_condition(decision: Any) -> tuple[bool, Reason, str] | None:
    return next(((h, r, m) for k, h, r, m in decision.conditions if k == ASSUMPTIONS_CHECKED), None)


def test_the_decision_says_the_assumptions_hold_or_lists_what_breaks_them_and_still_plans() -> None:
    shuffled = {"2": frozenset({"shuffle"}), "3": frozenset({"shuffle"}), "4": frozenset({"shuffle"})}
    fits = planned(OFF, shuffled)
    assert fits.act is Act.APPLY
    assert assumption_condition(fits) == (True, Reason.MODEL_ASSUMPTIONS_HOLD, message(()))
    broken = planned({}, shuffled | {"4": frozenset({"fields"})})
    assert broken.act is Act.APPLY
    assert all(kind != DEGRADED for kind, *_ in broken.conditions)
    condition = assumption_condition(broken)
    assert condition is not None
    holds, reason, text = condition
    assert (holds, reason) == (False, Reason.MODEL_ASSUMPTIONS_VIOLATED)
    assert "load-aware messaging on (2, 3)" in text
    assert "fields grouping (4)" in text


def test_without_the_conf_or_the_groupings_the_assumptions_go_unchecked() -> None:
    assert assumption_condition(planned(None, {"2": frozenset({"fields"})})) is None
    assert assumption_condition(planned({}, None)) is None
