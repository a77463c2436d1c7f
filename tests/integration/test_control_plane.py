"""The local control plane works for kubectl, the kubernetes client and Kopf, and fails loudly."""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kopf
import pytest
from kubernetes import client

from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane, Ports
from tests.harness.process import DaemonError
from tests.harness.waiting import wait_for

pytestmark = pytest.mark.integration


def test_kubectl_reports_the_built_version_and_admin_identity(control_plane: ControlPlane) -> None:
    version = json.loads(control_plane.kubectl("version", "-o", "json"))
    assert version["serverVersion"]["gitVersion"] == binaries.kubernetes_version()
    assert version["clientVersion"]["gitVersion"] == binaries.kubernetes_version()
    whoami = json.loads(control_plane.kubectl("auth", "whoami", "-o", "json"))
    assert whoami["status"]["userInfo"]["username"] == "admin"
    assert "system:masters" in whoami["status"]["userInfo"]["groups"]


def test_wrong_token_is_rejected(control_plane: ControlPlane, tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text(control_plane.kubeconfig.read_text().replace(control_plane.token, "not-the-token"))
    kubectl = [str(control_plane.bin_dir / "kubectl"), f"--kubeconfig={bad}", "get", "namespaces"]
    done = subprocess.run(kubectl, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "You must be logged in" in done.stderr


def test_python_client_sees_what_kubectl_created(
    control_plane: ControlPlane, kube_api: client.ApiClient
) -> None:
    name = f"it-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", name)
    names = {ns.metadata.name for ns in client.CoreV1Api(kube_api).list_namespace().items if ns.metadata}
    assert {name, "default", "kube-system"} <= names


def test_controller_manager_turns_a_deployment_into_pods(
    control_plane: ControlPlane, kube_api: client.ApiClient
) -> None:
    name = f"kcm-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "deployment", name, "--image=none", "--replicas=2", "-n", "default")
    core = client.CoreV1Api(kube_api)

    def two_pods() -> bool:
        return len(core.list_namespaced_pod("default", label_selector=f"app={name}").items) == 2

    wait_for(two_pods, 60, "the ReplicaSet's two Pods", every_s=0.25)
    control_plane.kubectl("delete", "deployment", name, "-n", "default")


def run_kopf_operator(registry: kopf.OperatorRegistry, stop: threading.Event, ready: threading.Event) -> None:
    """Run a Kopf operator (standalone, cluster-wide) in this thread until ``stop`` is set."""
    asyncio.run(
        kopf.operator(registry=registry, clusterwide=True, standalone=True, stop_flag=stop, ready_flag=ready)
    )


def test_kopf_logs_in_with_the_kubeconfig_and_watches(
    control_plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    registry = kopf.OperatorRegistry()
    target, seen = f"kopf-{secrets.token_hex(3)}", threading.Event()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.event("namespaces", registry=registry)
    def on_namespace(name: str, **_: Any) -> None:
        if name == target:
            seen.set()

    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=run_kopf_operator, args=(registry, stop, ready), daemon=True)
    thread.start()
    try:
        assert ready.wait(60), "Kopf did not become ready"
        control_plane.kubectl("create", "namespace", target)
        assert seen.wait(30), "Kopf did not see the new namespace"
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port held open by a listening socket for the test's duration."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def nothing_listens_on(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("daemon", ["etcd", "kube-apiserver"])
def test_a_daemon_that_cannot_bind_fails_startup_fast_with_its_log(
    kube_binaries: Path, busy_port: int, daemon: str, tmp_path: Path
) -> None:
    ports = Ports(etcd_client=busy_port) if daemon == "etcd" else Ports(apiserver=busy_port)
    plane = ControlPlane(tmp_path, ports=ports, bin_dir=kube_binaries)
    started = time.monotonic()
    with pytest.raises(DaemonError) as failure:
        plane.start()
    assert time.monotonic() - started < 60
    message = str(failure.value)
    assert message.startswith(f"{daemon} exited")
    assert "address already in use" in message
    assert str(plane.run_dir / f"{daemon}.log") in message
    if daemon == "kube-apiserver":  # etcd had started: it must have been stopped again
        wait_for(lambda: nothing_listens_on(ports.etcd_client), 10, "etcd to stop listening", every_s=0.25)
