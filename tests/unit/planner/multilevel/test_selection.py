"""Node selection and Algorithm 2: literal and recommended node choice, the optimal container, the task cap,
a memory-bound spout; the hierarchy's rules (one worker per pod); the order of congested operators."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner.elasticity.health import is_congested, spout_health
from stormscale.planner.elasticity.model import (
    AddExecutor,
    AddPod,
    AddWorker,
    Alert,
    AlertReason,
    Level,
    PodLayout,
    RemoveExecutor,
    RemovePod,
    RemoveWorker,
    apply,
    inverse,
    minimal_layout,
    notation,
    replay,
    to_placement,
)
from stormscale.planner.elasticity.observation import OperatorObservation, PodObservation
from stormscale.planner.elasticity.selection import (
    Selection,
    first_congested,
    is_eligible,
    optimal_container,
    scale_out,
    select_pod_literal,
    select_pod_recommended,
)

LEAST_CPU_FULL = (
    PodObservation(0, cpu=0.95, mem=0.40, executors=1, vcpus=4),  # A
    PodObservation(1, cpu=0.60, mem=0.92, executors=1, vcpus=4),  # B
    PodObservation(2, cpu=0.70, mem=0.50, executors=1, vcpus=4),  # C
)
PARSER = OperatorObservation("parser", distance=1, health=0.8, executors=3, tasks=16)


def test_literal_algorithm_2_takes_min_cpu_node_and_sees_it_overloaded() -> None:
    assert select_pod_literal(LEAST_CPU_FULL) is None
    assert scale_out(PARSER, LEAST_CPU_FULL, Selection.LITERAL) == (
        AddPod(3),
        AddWorker(3),
        AddExecutor("parser", 3),
    )


def test_recommended_filters_first() -> None:
    assert select_pod_recommended(LEAST_CPU_FULL) == 2
    assert scale_out(PARSER, LEAST_CPU_FULL, Selection.RECOMMENDED) == (AddExecutor("parser", 2),)


def test_optimal_container_is_an_executor_in_the_existing_worker() -> None:
    node = PodObservation(0, cpu=0.5, mem=0.5, workers=1, executors=2, vcpus=4)
    parser = OperatorObservation("parser", distance=1, health=0.8, executors=2, tasks=16)
    assert scale_out(parser, (node,)) == (AddExecutor("parser", 0),)
    layout = (PodLayout(1, {"parser": 2}),)
    after = apply(layout, AddExecutor("parser", 0))
    assert after == (PodLayout(1, {"parser": 3}),)  # one worker still
    bare = PodObservation(0, cpu=0.1, mem=0.1, workers=0, executors=0, vcpus=4)
    assert optimal_container("parser", bare) == (AddWorker(0), AddExecutor("parser", 0))


def test_task_cap_refuses() -> None:
    node = PodObservation(0, cpu=0.5, mem=0.5, executors=2, vcpus=4)
    capped = OperatorObservation("parser", distance=1, health=0.5, executors=16, tasks=16)
    (alert,) = scale_out(capped, (node,))
    assert isinstance(alert, Alert)
    assert alert.reason is AlertReason.TASK_CAP


def test_executors_per_pod_are_capped_by_vcpus() -> None:
    full = PodObservation(0, cpu=0.5, mem=0.5, executors=2, vcpus=2)
    assert not is_eligible(full)
    assert scale_out(PARSER, (full,)) == (AddPod(1), AddWorker(1), AddExecutor("parser", 1))
    assert scale_out(PARSER, (full,), Selection.LITERAL) == (AddExecutor("parser", 0),)


def test_pod_budget_alerts_instead_of_a_new_pod() -> None:
    full = PodObservation(0, cpu=0.95, mem=0.5, executors=1, vcpus=2)
    (alert,) = scale_out(PARSER, (full,), max_pods=1)
    assert isinstance(alert, Alert)
    assert alert.reason is AlertReason.POD_LIMIT


def test_ties_go_to_the_oldest_pod() -> None:
    pods = (
        PodObservation(1, 0.4, 0.1, executors=1, vcpus=4),
        PodObservation(0, 0.4, 0.1, executors=1, vcpus=4),
    )
    assert select_pod_recommended(pods) == 0
    assert select_pod_literal(pods) == 0


def test_memory_bound_spout_gets_a_new_pod() -> None:
    h = spout_health(18000, target_rate=500, period=60)
    spout = OperatorObservation("spout", distance=0, health=h, executors=1, tasks=8)
    node = PodObservation(0, cpu=0.40, mem=0.93, executors=1, vcpus=4)
    assert is_congested(h)
    expected = (AddPod(1), AddWorker(1), AddExecutor("spout", 1))
    assert scale_out(spout, (node,), Selection.LITERAL) == expected
    assert scale_out(spout, (node,), Selection.RECOMMENDED) == expected
    layout = replay(minimal_layout(["spout"]), expected)
    assert notation(layout, "spout") == "(1,1)+(1,1)"  # 2 spouts on 2 pods


def test_first_congested_is_closest_to_the_sources_then_lowest_health() -> None:
    ops = (
        OperatorObservation("analyzer", 3, 0.1, 1, 4),
        OperatorObservation("parser", 1, 0.85, 1, 4),
        OperatorObservation("aggregator", 1, 0.7, 1, 4),
        OperatorObservation("spout", 0, None, 1, 4),
    )
    chosen = first_congested(ops)
    assert chosen is not None
    assert chosen.component == "aggregator"
    assert first_congested((OperatorObservation("x", 0, 0.95, 1, 1),)) is None


def test_levels_and_the_hierarchy_rules() -> None:
    assert Level.EXECUTOR < Level.WORKER < Level.POD
    assert AddPod(1).level is Level.POD
    assert RemoveExecutor("p", 0).level is Level.EXECUTOR
    layout = minimal_layout(["spout", "parser"])
    with pytest.raises(ValueError, match="worker"):
        apply(layout, AddWorker(0))  # never a second worker on a pod
    with pytest.raises(ValueError, match="ordinal"):
        apply(layout, AddPod(2))
    grown = replay(layout, [AddPod(1), AddWorker(1), AddExecutor("parser", 1)])
    with pytest.raises(ValueError, match="no worker"):
        apply(replay(layout, [AddPod(1)]), AddExecutor("parser", 1))
    with pytest.raises(ValueError, match="worker"):
        apply(grown, RemovePod(1))  # a pod goes only with its last executor and worker
    with pytest.raises(ValueError, match="last pod"):
        apply(grown, RemovePod(0))
    back = replay(grown, [RemoveExecutor("parser", 1), RemoveWorker(1), RemovePod(1)])
    assert back == layout
    assert inverse(AddExecutor("parser", 1)) == RemoveExecutor("parser", 1)
    placement = to_placement(grown)
    assert placement.pod_count == 2
    assert placement.executors() == {"spout": 1, "parser": 2}


pods_strategy = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=1),
        st.floats(min_value=0, max_value=1),
        st.integers(min_value=0, max_value=6),
        st.integers(min_value=1, max_value=4),
    ),
    min_size=1,
    max_size=6,
).map(lambda rows: tuple(PodObservation(i, c, m, 1, e, v) for i, (c, m, e, v) in enumerate(rows)))


@settings(max_examples=300, deadline=None)
@given(pods_strategy)
def test_selection_properties(pods: tuple[PodObservation, ...]) -> None:
    chosen = select_pod_recommended(pods)
    eligible = [p for p in pods if is_eligible(p)]
    if chosen is None:
        assert not eligible
    else:
        assert is_eligible(pods[chosen])
        assert pods[chosen].cpu == min(p.cpu for p in eligible)
    literal = select_pod_literal(pods)
    least = min(pods, key=lambda p: (p.cpu, p.pod))
    assert literal == (None if least.cpu > 0.9 or least.mem > 0.9 else least.pod)
    for selection in Selection:
        actions = scale_out(PARSER, pods, selection)
        assert sum(isinstance(a, AddExecutor) for a in actions) == 1  # exactly one new instance
        assert not any(isinstance(a, AddWorker) and a.pod < len(pods) for a in actions)  # one worker per pod
