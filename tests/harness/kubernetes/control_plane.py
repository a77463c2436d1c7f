"""A real, local Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager.

Every daemon listens on 127.0.0.1 at ports chosen at run time. Clients authenticate with a static
bearer token (group system:masters); TLS uses the certificate the API server generates for itself,
whose CA goes into the kubeconfig. State and logs live in one run directory (.run/<timestamp>/).
There is no kubelet and no scheduler: Deployments get ReplicaSets and Pods, and the pod runner
(tests/harness/kubernetes/pod_runner.py) stands in for the kubelet.

Standard library only, so ``make cluster-up`` needs no virtualenv::

    python3 -m tests.harness.kubernetes.control_plane up    # start in the background, print the kubeconfig
    python3 -m tests.harness.kubernetes.control_plane down  # stop what ``up`` started
"""

from __future__ import annotations

import argparse
import base64
import functools
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from tests.harness.kubernetes import binaries
from tests.harness.paths import RUN_ROOT
from tests.harness.process import (
    STOP_GRACE_S,
    Daemon,
    DaemonError,
    LaunchSpec,
    daemon_named,
    free_port,
    http_ok,
    new_run_dir,
    pid_gone,
    runs_binary,
    signal_group,
    stop_group,
)
from tests.harness.waiting import wait_for

CLUSTER_LINK = RUN_ROOT / "cluster"
READY_TIMEOUT_S = 120.0
READY_POLL_S = 0.25
STATE_FILE = "state.json"


def _unverified_tls() -> ssl.SSLContext:
    """For readiness probes before the API server's CA is known."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@dataclass(frozen=True)
class Ports:
    """Loopback ports of the daemons; chosen at run time unless given."""

    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    controller_manager: int = field(default_factory=free_port)


@dataclass
class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback; use as a context manager."""

    run_dir: Path
    ports: Ports = field(default_factory=Ports)
    bin_dir: Path = binaries.BIN_DIR
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    daemons: list[Daemon] = field(default_factory=list)

    @property
    def server(self) -> str:
        """The API server's URL."""
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig for kubectl, the kubernetes client and Kopf (token auth, verified TLS)."""
        return self.run_dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        """The CA that signed the API server's serving certificate (PEM)."""
        return self.run_dir / "apiserver-ca.crt"

    def kubectl(self, *args: str, stdin: str | None = None, timeout_s: float = 60) -> str:
        """Run the test bed's kubectl against this control plane; return stdout, raise on failure."""
        argv = [str(self.bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args]
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def apply_crds(self, *paths: Path, timeout_s: float = 60) -> None:
        """Apply the CRD files and wait until each CRD is Established.

        Polled with ``kubectl get`` rather than ``kubectl wait``: a CRD the API server has not yet
        given a status makes ``kubectl wait --for=condition=Established`` fail at once (seen on a
        loaded machine) instead of waiting."""
        applied = [self.kubectl("apply", "-f", str(path), "-o", "name") for path in paths]
        names = [name for out in applied for name in out.split()]
        for name in names:
            wait_for(functools.partial(self._established, name), timeout_s, f"{name} Established")

    def _established(self, name: str) -> bool:
        """Whether CRD ``name`` (``customresourcedefinition.../<name>``) has ``Established=True``."""
        query = '-o=jsonpath={.status.conditions[?(@.type=="Established")].status}'
        return self.kubectl("get", name, query).strip() == "True"

    def start(self) -> ControlPlane:
        """Start the three daemons in order and wait for each; on failure stop all and raise."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._write_credentials()
            self._start(self._etcd(), self._etcd_ready)
            self._start(self._apiserver(), self._apiserver_ready)
            self._write_kubeconfig()
            self._start(self._controller_manager(), self._controller_manager_ready)
        except BaseException:
            self.stop()
            raise
        self._save_state()
        return self

    def stop(self) -> None:
        """Stop the daemons in reverse order of start; drop etcd's throw-away data, keep the logs."""
        for daemon in reversed(self.daemons):
            daemon.stop()
        self.daemons.clear()
        shutil.rmtree(self.run_dir / "etcd-data", ignore_errors=True)

    def stop_apiserver(self, sig: signal.Signals = signal.SIGKILL) -> float:
        """Stop kube-apiserver alone (SIGKILL by default: a crash, no graceful shutdown; etcd keeps
        every object); the seconds it took to exit. :meth:`start_apiserver` brings it back."""
        daemon = daemon_named(self.daemons, "kube-apiserver", "this control plane")
        started = time.monotonic()
        signal_group(daemon.pid, sig)
        try:
            daemon.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            signal_group(daemon.pid, signal.SIGKILL)
            daemon.proc.wait(timeout=STOP_GRACE_S)
        return time.monotonic() - started

    def start_apiserver(self) -> float:
        """Start kube-apiserver again on the same port with the same serving certificate (kept in its
        cert dir, so kubeconfigs stay valid), in its place among the daemons; the seconds until
        ``/readyz`` answers."""
        old = daemon_named(self.daemons, "kube-apiserver", "this control plane")
        if old.exited() is None:
            raise DaemonError("kube-apiserver is running: stop it first")
        started = time.monotonic()
        daemon = Daemon(self._apiserver())
        self.daemons[self.daemons.index(old)] = daemon
        ready = self._apiserver_ready
        daemon.wait_ready(ready, READY_TIMEOUT_S, "kube-apiserver serves again", every_s=READY_POLL_S)
        self._save_state()
        return time.monotonic() - started

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _start(self, spec: LaunchSpec, probe: Callable[[], bool]) -> None:
        """Start one daemon and wait until ``probe`` says it serves (fail fast if it exits)."""
        daemon = Daemon(spec)
        self.daemons.append(daemon)
        daemon.wait_ready(probe, READY_TIMEOUT_S, f"{spec.name} serves", every_s=READY_POLL_S)

    def _daemon(self, name: str, args: Sequence[str]) -> LaunchSpec:
        """The launch spec of the binary ``name`` (its log is its console output)."""
        log = self.run_dir / f"{name}.log"
        return LaunchSpec(name, [str(self.bin_dir / name), *args], dict(os.environ), self.run_dir, log, log)

    def _write_credentials(self) -> None:
        """The static token file and the service-account signing key (one RSA key for both SA flags)."""
        (self.run_dir / "tokens.csv").write_text(f'{self.token},admin,admin-uid,"system:masters"\n')
        if shutil.which("openssl") is None:
            raise DaemonError("openssl is needed to make the service-account key (Debian package openssl)")
        subprocess.run(
            ["openssl", "genrsa", "-out", str(self.run_dir / "sa.key"), "2048"],
            check=True,
            capture_output=True,
        )

    def _etcd(self) -> LaunchSpec:
        client = f"http://127.0.0.1:{self.ports.etcd_client}"
        peer = f"http://127.0.0.1:{self.ports.etcd_peer}"
        return self._daemon(
            "etcd",
            [
                f"--data-dir={self.run_dir / 'etcd-data'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--unsafe-no-fsync",  # a throw-away test store: durability is not needed
            ],
        )

    def _etcd_ready(self) -> bool:
        return http_ok(f"http://127.0.0.1:{self.ports.etcd_client}/health")

    def _apiserver(self) -> LaunchSpec:
        sa_key = self.run_dir / "sa.key"
        return self._daemon(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{self.ports.etcd_client}",
                f"--secure-port={self.ports.apiserver}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--cert-dir={self.run_dir / 'apiserver-certs'}",
                f"--token-auth-file={self.run_dir / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-issuer={self.server}",
                f"--service-account-key-file={sa_key}",
                f"--service-account-signing-key-file={sa_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--endpoint-reconciler-type=none",  # loopback is not a valid endpoint address
                "--disable-admission-plugins=ServiceAccount",
                "--allow-privileged=true",
            ],
        )

    def _apiserver_ready(self) -> bool:
        return http_ok(f"{self.server}/readyz", self.token, _unverified_tls())

    def _controller_manager(self) -> LaunchSpec:
        return self._daemon(
            "kube-controller-manager",
            [
                f"--kubeconfig={self.kubeconfig}",
                f"--secure-port={self.ports.controller_manager}",
                "--bind-address=127.0.0.1",
                f"--cert-dir={self.run_dir / 'controller-manager-certs'}",
                "--leader-elect=false",
                f"--service-account-private-key-file={self.run_dir / 'sa.key'}",
                f"--root-ca-file={self.ca_file}",
                "--controllers=*,-csrsigning,-nodeipam,-nodelifecycle,-persistentvolume-binder",
            ],
        )

    def _controller_manager_ready(self) -> bool:
        return http_ok(
            f"https://127.0.0.1:{self.ports.controller_manager}/healthz", context=_unverified_tls()
        )

    def _write_kubeconfig(self) -> None:
        """Extract the API server's generated CA and write a kubeconfig that verifies it."""
        self.ca_file.write_text(serving_ca(self.run_dir / "apiserver-certs" / "apiserver.crt"))
        ca_data = base64.b64encode(self.ca_file.read_bytes()).decode()
        self.kubeconfig.write_text(
            KUBECONFIG_TEMPLATE.format(server=self.server, ca_data=ca_data, token=self.token)
        )
        self.kubeconfig.chmod(0o600)

    def _save_state(self) -> None:
        """Record pids and endpoints so ``down`` can stop a detached control plane."""
        state = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "daemons": [{"name": d.spec.name, "pid": d.pid} for d in self.daemons],
        }
        (self.run_dir / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")


KUBECONFIG_TEMPLATE = """\
apiVersion: v1
kind: Config
clusters:
- name: stormscale-testbed
  cluster:
    server: {server}
    certificate-authority-data: {ca_data}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: stormscale-testbed
  context:
    cluster: stormscale-testbed
    user: admin
current-context: stormscale-testbed
"""

_PEM_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\n?", re.DOTALL)


def serving_ca(cert_chain: Path) -> str:
    """The CA of a self-generated serving certificate: the last PEM block of its chain file."""
    blocks = _PEM_BLOCK.findall(cert_chain.read_text())
    if not blocks:
        raise DaemonError(f"no certificate in {cert_chain}")
    last: str = blocks[-1]
    return last if last.endswith("\n") else last + "\n"


def stop_detached(run_dir: Path, grace_s: float = STOP_GRACE_S) -> list[str]:
    """Stop the daemons recorded in ``run_dir``'s state file; return the names stopped."""
    state = json.loads((run_dir / STATE_FILE).read_text())
    stopped = []
    for entry in reversed(state["daemons"]):
        pid = entry["pid"]
        if pid and runs_binary(pid, entry["name"]):
            stop_group(pid, grace_s, functools.partial(pid_gone, pid))
            stopped.append(entry["name"])
    return stopped


def cluster_up() -> ControlPlane:
    """Build what is missing, start a detached control plane, point .run/cluster at it."""
    binaries.ensure_binaries()
    if CLUSTER_LINK.exists():
        raise SystemExit(f"a control plane is already up ({CLUSTER_LINK.resolve()}); run `make cluster-down`")
    plane = ControlPlane(new_run_dir("cluster-")).start()
    CLUSTER_LINK.unlink(missing_ok=True)
    CLUSTER_LINK.symlink_to(plane.run_dir.name)
    return plane


def cluster_down() -> list[str]:
    """Stop the control plane that ``cluster_up`` started, if any."""
    if not CLUSTER_LINK.exists():
        CLUSTER_LINK.unlink(missing_ok=True)
        return []
    run_dir = CLUSTER_LINK.resolve()
    stopped = stop_detached(run_dir)
    shutil.rmtree(run_dir / "etcd-data", ignore_errors=True)
    CLUSTER_LINK.unlink()
    return stopped


def main(argv: Sequence[str] | None = None) -> int:
    """``up`` or ``down`` for people (``make cluster-up`` / ``make cluster-down``)."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.harness.kubernetes.control_plane")
    parser.add_argument("command", choices=["up", "down"])
    args = parser.parse_args(argv)
    if args.command == "up":
        plane = cluster_up()
        print(f"control plane up at {plane.server}; logs in {plane.run_dir}")
        print(f"export KUBECONFIG={plane.kubeconfig}")
    else:
        stopped = cluster_down()
        print(f"stopped: {', '.join(stopped)}" if stopped else "no control plane was up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
