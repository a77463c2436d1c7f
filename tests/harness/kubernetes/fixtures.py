"""Session fixtures of the Kubernetes part of the test bed (registered in tests/conftest.py).

- ``kube_binaries``: builds etcd, kube-apiserver, kube-controller-manager and kubectl when missing.
- ``control_plane``: a running :class:`ControlPlane`
  (``.kubeconfig``, ``.server``, ``.token``, ``.kubectl()``).
- ``kube_api``: a ``kubernetes.client.ApiClient`` for it.
- ``pod_runner_factory``: makes :class:`PodRunner` s (own launcher, label selector) stopped at session end.
- ``pod_runner``: the default runner (container command, label ``stormscale.io/pod-runner=true``).
- ``stormtopology_crd``: the StormTopology CRD applied and Established (per module: a test may
  uninstall it, as the chart's does).

:func:`scratch_namespace` makes a namespace of its own for one test.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import PodRunner
from tests.harness.paths import REPO_ROOT
from tests.harness.process import new_run_dir

PodRunnerFactory = Callable[..., PodRunner]

#: The StormTopology CRD as the chart installs it.
STORMTOPOLOGY_CRD = REPO_ROOT / "crds" / "stormtopologies.stormscale.io.yaml"


@pytest.fixture(scope="session")
def kube_binaries(pytestconfig: pytest.Config) -> Path:
    """The directory with the test bed's binaries, built on first use (a cold build takes minutes).

    The build's progress lines go straight to the terminal, not into pytest's captured output.
    """
    if not binaries.missing_binaries():
        return binaries.BIN_DIR
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        return binaries.ensure_binaries()


@pytest.fixture(scope="session")
def control_plane(kube_binaries: Path) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager for the whole session, logs under .run/."""
    with ControlPlane(new_run_dir("pytest-"), bin_dir=kube_binaries) as plane:
        yield plane


@pytest.fixture(scope="session")
def kube_api(control_plane: ControlPlane) -> client.ApiClient:
    """A kubernetes client configured from the control plane's kubeconfig."""
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig))


@pytest.fixture(scope="session")
def pod_runner_factory(control_plane: ControlPlane, kube_api: client.ApiClient) -> Iterator[PodRunnerFactory]:
    """``factory(**kwargs)`` starts a PodRunner (kwargs as for PodRunner); all stop at session end."""
    runners: list[PodRunner] = []

    def make(**kwargs: Any) -> PodRunner:
        kwargs.setdefault("run_dir", control_plane.run_dir / f"pods-{len(runners)}")
        runner = PodRunner(kube_api, **kwargs).start()
        runners.append(runner)
        return runner

    yield make
    for runner in reversed(runners):
        runner.stop()


@pytest.fixture(scope="session")
def pod_runner(pod_runner_factory: PodRunnerFactory) -> PodRunner:
    """The default pod runner: runs each labelled Deployment's container command as local processes."""
    return pod_runner_factory()


@pytest.fixture(scope="module")
def stormtopology_crd(control_plane: ControlPlane) -> Path:
    """The StormTopology CRD, applied and Established (its path)."""
    control_plane.apply_crds(STORMTOPOLOGY_CRD)
    return STORMTOPOLOGY_CRD


@contextlib.contextmanager
def scratch_namespace(plane: ControlPlane, prefix: str) -> Iterator[str]:
    """A new namespace ``<prefix>-<6 hex>``, deleted (without waiting) on exit."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    plane.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        plane.kubectl("delete", "namespace", name, "--wait=false")
