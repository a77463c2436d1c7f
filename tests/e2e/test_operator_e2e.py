"""End to end on the whole test bed: a StormTopology's budget rises 0 → 1 → 2 → 3 and throughput follows.

Everything is real: the API server, the operator (``kopf run`` in its own process, default ports),
Storm with one Supervisor per worker pod in a cgroup whose quota is the pod's CPU limit, the
exporter, Prometheus and the in-operator profiler. The thesis's linear shape runs under a load that
congests it; each budget is applied from a steady state, and at each the test records the measured
sink throughput next to what every strategy predicted under both flow models (the model accuracy
report; also written to ``<run dir>/e2e-report.json``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.bed.scenarios import CONGESTED_LINEAR
from tests.harness.bed.stack import Stack
from tests.harness.process import new_run_dir
from tests.harness.tools.accuracy import Report, run_budget_steps

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.storm]

SCENARIO = CONGESTED_LINEAR
BUDGETS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    with Stack(new_run_dir("e2e-")) as s:
        yield s


@pytest.fixture(scope="module")
def report(stack: Stack) -> Report:
    stack.deploy(SCENARIO)
    stack.start_operator()
    result = run_budget_steps(stack, SCENARIO, BUDGETS)
    (stack.run_dir / "e2e-report.json").write_text(json.dumps(result.to_json(), indent=2))
    print("\n" + result.table())
    return result


def test_each_budget_is_applied_to_pods_and_storm(stack: Stack, report: Report) -> None:
    for step in report.steps:
        assert step.status_units == step.storm_executors, f"budget {step.budget}"
        assert sum(step.storm_executors.values()) == len(SCENARIO.components) + step.budget
        assert step.replicas == sum(step.storm_executors.values())  # one slot per pod
        assert step.storm_workers == step.replicas
        assert step.events == 1  # exactly one Normal ScalingApplied event per applied budget


def test_measured_throughput_rises_with_the_budget(report: Report) -> None:
    measured = [step.measured for step in report.steps]
    assert all(m > 0 for m in measured)
    for before, after in itertools.pairwise(measured):
        assert after >= 0.9 * before, measured  # never a real loss
    assert measured[-1] >= 1.5 * measured[0], measured  # three units later the topology does much more


def test_operator_predictions_are_recorded_for_every_strategy(report: Report) -> None:
    for step in report.steps[1:]:
        assert set(step.operator_predicted) == {"stela", "predictive", "combined", "optimal"}
        assert step.operator_predicted["combined"] > 0


def test_report_is_written(stack: Stack, report: Report) -> None:
    written = json.loads(Path(stack.run_dir / "e2e-report.json").read_text())
    assert [s["budget"] for s in written["steps"]] == list(BUDGETS)
