"""Multi-level elasticity's container level for a plan's units on pods of K slots (elasticity/units.py)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stormscale.planner.elasticity.model import Level
from stormscale.planner.elasticity.units import ContainerPlan, Provisioned, SlotPod, change_units

TWO = 2  # slots per pod


def grow(
    pods: list[SlotPod], changes: dict[str, int], load: float = 0.5, stack: tuple[Provisioned, ...] = ()
) -> ContainerPlan:
    return change_units(
        pods, stack, changes, order=sorted(changes), load=dict.fromkeys(changes, load), slots_per_pod=TWO
    )


def test_a_pod_with_headroom_takes_the_unit_as_an_executor_in_its_worker() -> None:
    plan = grow([SlotPod(({"split": 1},), cpu=0.40)], {"split": 1})
    assert plan.pods[0].workers == ({"split": 2},)
    (choice,) = plan.choices
    assert (choice.level, choice.pod, choice.worker) == (Level.EXECUTOR, 0, 0)
    assert "pod 0 has headroom (40% CPU ≤ 90%, 1 of 2 executors)" in choice.reason
    assert plan.stack == (Provisioned("split", 0, 0),)
    assert plan.pods[0].cpu == pytest.approx(0.40 + 0.5 / TWO)  # what this pass added is accounted


@pytest.mark.parametrize(
    ("pod", "why"),
    [
        (SlotPod(({"split": 1},), cpu=0.95), "pod 0 at 95% CPU"),  # overloaded: cpu > θ_cpu (strict)
        (SlotPod(({"split": 1, "count": 1},), cpu=0.30), "pod 0 full (2 of 2 executors)"),  # the vCPU cap
        (SlotPod(({"split": 1},), cpu=None), "pod 0 not measured"),  # headroom unknown
    ],
)
def test_without_an_eligible_pod_the_unit_is_a_new_pod(pod: SlotPod, why: str) -> None:
    plan = grow([pod], {"split": 1})
    assert plan.pods[1] == SlotPod(({"split": 1},), cpu=0.25)
    (choice,) = plan.choices
    assert (choice.level, choice.pod, choice.worker) == (Level.POD, 1, 0)
    assert choice.reason == f"no pod has headroom ({why}): a new pod"


def test_exactly_ninety_percent_is_not_overloaded() -> None:
    assert grow([SlotPod(({"split": 1},), cpu=0.90)], {"split": 1}).choices[0].level is Level.EXECUTOR


def test_a_pod_without_a_worker_gets_a_new_worker_in_a_free_slot() -> None:
    plan = grow([SlotPod(({"a": 1},), cpu=0.85), SlotPod((), cpu=0.05)], {"b": 1})
    assert plan.pods[1].workers == ({"b": 1},)
    assert (plan.choices[0].level, plan.choices[0].pod) == (Level.WORKER, 1)
    assert "runs no worker: a new worker in a free slot" in plan.choices[0].reason


def test_the_least_loaded_eligible_pod_wins_ties_go_to_the_oldest() -> None:
    pods = [SlotPod(({"a": 1},), 0.6), SlotPod(({"b": 1},), 0.2), SlotPod(({"c": 1},), 0.2)]
    plan = grow(pods, {"d": 1})
    assert plan.choices[0].pod == 1
    assert plan.pods[1].workers == ({"b": 1, "d": 1},)  # multi-level elasticity: the existing worker


def test_the_executor_joins_the_worker_that_runs_its_component() -> None:
    plan = change_units(
        [SlotPod(({"a": 1}, {"b": 1}), 0.3)], (), {"b": 1}, order=["b"], load={"b": 0.2}, slots_per_pod=4
    )
    assert plan.pods[0].workers == ({"a": 1}, {"b": 2})
    assert plan.choices[0].worker == 1


def test_each_unit_of_one_pass_sees_the_cpu_the_earlier_ones_added() -> None:
    plan = grow([SlotPod(({"a": 1},), 0.45)], {"b": 2}, load=1.0)  # +0.5 of the pod per saturated executor
    assert [c.level for c in plan.choices] == [Level.EXECUTOR, Level.POD]
    assert "pod 0 at 95% CPU" in plan.choices[1].reason


def test_scale_in_takes_the_last_provisioned_unit_first() -> None:
    base = [SlotPod(({"a": 1},), 0.3), SlotPod(({"a": 1},), 0.3)]
    out = grow(base, {"a": 3})
    assert [c.level for c in out.choices] == [Level.EXECUTOR, Level.EXECUTOR, Level.POD]
    back = change_units(out.pods, out.stack, {"a": -1}, order=["a"], load={"a": 0.5}, slots_per_pod=TWO)
    assert len(back.pods) == 2  # the new pod went first, with its last executor
    assert back.choices[0].level is Level.POD
    assert back.choices[0].reason == "LIFO: the last executor of a provisioned (pod 2, worker 0)"
    assert back.stack == out.stack[:-1]


def test_below_the_stack_the_last_pod_running_the_component_gives_it_up() -> None:
    pods = [SlotPod(({"a": 1}, {"b": 1}), 0.3), SlotPod(({"a": 1},), 0.3), SlotPod(({"c": 2},), 0.3)]
    stack = (Provisioned("c", 2, 0),)
    plan = change_units(pods, stack, {"a": -1}, order=["a"], load={"a": 0.5}, slots_per_pod=TWO)
    assert [p.workers for p in plan.pods] == [({"a": 1}, {"b": 1}), ({"c": 2},)]
    assert plan.stack == (Provisioned("c", 1, 0),)  # the pods after the removed one move up
    assert "a's executor in the last pod that runs one (pod 1, worker 0)" in plan.choices[0].reason


def test_an_emptied_worker_goes_and_the_stack_follows() -> None:
    pods = [SlotPod(({"a": 1}, {"b": 1}, {"c": 1}), 0.3)]
    stack = (Provisioned("c", 0, 2),)
    plan = change_units(pods, stack, {"b": -1}, order=["b"], load={"b": 0.5}, slots_per_pod=4)
    assert plan.pods[0].workers == ({"a": 1}, {"c": 1})
    assert plan.stack == (Provisioned("c", 0, 1),)
    assert plan.choices[0].level is Level.WORKER


def test_removing_what_does_not_run_is_refused() -> None:
    with pytest.raises(ValueError, match="no executor left"):
        grow([SlotPod(({"a": 1},), 0.3)], {"b": -1})


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), slots=st.integers(1, 4))
def test_adding_units_then_removing_them_restores_the_layout(seed: int, slots: int) -> None:
    rng = random.Random(seed)
    names = ["a", "b", "c"]
    pods = [
        SlotPod(({rng.choice(names): rng.randint(1, 2)},), rng.choice([None, 0.1, 0.5, 0.95]))
        for _ in range(rng.randint(1, 4))
    ]
    adds = {n: rng.randint(0, 3) for n in names}
    load = {n: rng.random() for n in names}
    out = change_units(pods, (), adds, order=names, load=load, slots_per_pod=slots)
    assert out.executors() == {
        n: sum(p.runs(n) for p in pods) + adds[n] for n in names if sum(p.runs(n) for p in pods) + adds[n]
    }
    assert all(p.executors <= max(slots, q.executors) for p, q in zip(out.pods, pods, strict=False))
    back = change_units(
        out.pods, out.stack, {n: -k for n, k in adds.items()}, order=names, load=load, slots_per_pod=slots
    )
    assert [p.workers for p in back.pods] == [p.workers for p in pods]
    assert back.stack == ()
