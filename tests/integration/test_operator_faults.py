"""The operator SIGKILLed at random moments of an apply, on the real API server (issue 17, item 2):
every run converges to the budget, nothing is added twice, one ``ScalingApplied`` per budget. A few
runs here; ``make bench-faults`` runs 20 and prints the fault table (tests/harness/tools/operator_faults.py
says what a run does and checks)."""

from __future__ import annotations

import os

import pytest
from kubernetes import client

from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import new_run_dir
from tests.harness.tools import operator_faults as faults

pytestmark = [pytest.mark.integration]

RUNS = int(os.environ.get("STORMSCALE_FAULT_RUNS", "4"))


def test_a_killed_operator_converges_on_restart_and_adds_nothing_twice(
    control_plane: ControlPlane, kube_api: client.ApiClient
) -> None:
    with faults.fault_bed(control_plane, kube_api) as fakes:
        runs = faults.run_kills(
            control_plane, kube_api, fakes, new_run_dir("faults-"), runs=RUNS, seed=17, progress=print
        )
    print("\n" + faults.fault_table(runs))
    assert len(runs) == RUNS
    assert {r.budget for r in runs} == set(faults.BUDGETS)  # out and in
    for run in runs:
        assert not run.problems, faults.line(run)
