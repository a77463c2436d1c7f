"""A test-bed stand-in for the kubelet: Deployment replicas as local processes in CPU cgroups.

The runner watches apps/v1 Deployments that carry a label (``stormscale.io/pod-runner=true`` by
default) and keeps ``spec.replicas`` processes running for each. Replica ``i`` of Deployment ``d``
in namespace ``ns`` runs, with every process it forks, in the cgroup ``stormscale/<ns>-<d>-<i>``,
whose CPU quota equals the pod template's first container CPU limit and whose weight follows its
CPU request, as the kubelet sets them. Scaling down stops, as a kubelet does, the replicas whose
Pods the ReplicaSet deleted (without Pods to go by, the highest index first); scaling up takes the
lowest free index. What a replica
runs comes from a launcher callable (default: the container's ``command`` + ``args``). A changed
CPU limit or request is applied in place to the running replicas' cgroups; other template changes
reach only replicas started later.

With kube-controller-manager running, Deployments own ReplicaSets and Pods; the runner binds each
live replica to one of those Pods (newest Pods first, a binding kept while both live) and marks the
bound Pods Ready and the others not, so Deployment status (readyReplicas, availableReplicas) reflects
the processes, computed by the real controllers. A bound Pod's ``status.podIP`` is the address its
replica announces (the launcher's ``Command.pod_ip``; for a Storm Supervisor its
``storm.local.hostname``), as a kubelet records the pod's address.

Like a kubelet, the runner serves the bound replicas' CPU in cAdvisor's names at
``http://127.0.0.1:<cadvisor_port>/metrics/cadvisor`` (see :mod:`.cadvisor`), from each cgroup's own
CPU accounting, for a Prometheus to scrape.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.harness.kubernetes import cadvisor
from tests.harness.kubernetes.cgroups import CpuCgroup, CpuResources, parse_cpu_millis, remove_if_empty
from tests.harness.process import free_port

LOG = logging.getLogger(__name__)
DEFAULT_SELECTOR = "stormscale.io/pod-runner=true"
DEFAULT_CGROUP_PARENT = "stormscale"
WATCH_WINDOW_S = 2
RESTART_BACKOFF_S = 1.0
STOP_GRACE_S = 5.0
# Moves the shell into the cgroup (every ``cgroup.procs`` file before ``--``: the cpu group and its
# cpuacct twin), then execs the command: every descendant inherits the cgroups.
_ENTER_CGROUP = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 1; shift; done; shift; exec "$@"'

Json = dict[str, Any]


@dataclass(frozen=True)
class Replica:
    """What a launcher knows about the replica it starts."""

    namespace: str
    deployment: str
    index: int
    cpu: CpuResources
    container: Json  # the pod template's first container, as API JSON (camelCase keys)
    run_dir: Path

    @property
    def name(self) -> str:
        """``<ns>-<deployment>-<index>``: also the cgroup's and the log file's name."""
        return f"{self.namespace}-{self.deployment}-{self.index}"

    @property
    def cpu_millis(self) -> int | None:
        """The CPU limit in millicores (None: unlimited)."""
        return self.cpu.limit

    @property
    def log_path(self) -> Path:
        """Where the replica's stdout and stderr go."""
        return self.run_dir / f"{self.name}.log"


@dataclass(frozen=True)
class Command:
    """A process to start: argv, extra environment, working directory."""

    argv: list[str]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    #: The address the process announces (its Pod's ``status.podIP`` once bound); None: none.
    pod_ip: str | None = None


Launcher = Callable[[Replica], Command]


class LaunchError(RuntimeError):
    """The launcher cannot make a command for this replica."""


def container_command(replica: Replica) -> Command:
    """Default launcher: run the container's ``command`` + ``args`` with its literal ``env`` values."""
    argv = [*replica.container.get("command", []), *replica.container.get("args", [])]
    if not argv:
        raise LaunchError(f"{replica.name}: the container has no command (images cannot run here)")
    env = {e["name"]: e["value"] for e in replica.container.get("env", []) if "value" in e}
    return Command([str(a) for a in argv], env)


@dataclass
class RunningReplica:
    """A launched replica: its process (the cgroup holds its descendants too)."""

    replica: Replica
    command: Command
    cgroup: CpuCgroup
    proc: subprocess.Popen[bytes]
    started_at: float
    restarts: int = 0
    #: The Pod (API object name) this replica is, once bound; None while unbound.
    pod: str | None = None

    @property
    def live(self) -> bool:
        return self.proc.poll() is None

    def container_cpu(self) -> cadvisor.ContainerCpu | None:
        """Its CPU as a kubelet's cAdvisor reports it (None: not bound to a Pod, or not running)."""
        if self.pod is None or not self.live:
            return None
        quota, period = self.cgroup.limit()
        return cadvisor.ContainerCpu(
            namespace=self.replica.namespace,
            pod=self.pod,
            container=str(self.replica.container.get("name", "")),
            image=str(self.replica.container.get("image", "")),
            cgroup="/" + "/".join(self.cgroup.path.parts[-2:]),  # <parent>/<name> under the root
            usage_seconds=self.cgroup.usage_us() / 1e6,
            quota_us=quota,
            period_us=period,
        )


def first_container(deployment: Json) -> Json:
    """The pod template's first container (empty if there is none)."""
    containers: list[Json] = deployment["spec"]["template"]["spec"].get("containers") or [{}]
    return containers[0]


def cpu_resources(deployment: Json) -> CpuResources:
    """The first container's CPU limit and request; the request defaults to the limit, as for Pods."""
    resources = first_container(deployment).get("resources") or {}
    limit, request = (resources.get(kind, {}).get("cpu") for kind in ("limits", "requests"))
    limit_millis = None if limit is None else parse_cpu_millis(limit)
    request_millis = limit_millis if request is None else parse_cpu_millis(request)
    return CpuResources(limit_millis, request_millis)


def match_labels_selector(deployment: Json) -> str:
    """``spec.selector.matchLabels`` as a label selector string (matchExpressions are not used here)."""
    labels = (deployment["spec"].get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


class PodRunner:
    """Keeps local processes in step with labelled Deployments; ``start()`` / ``stop()``."""

    def __init__(
        self,
        api: client.ApiClient,
        run_dir: Path,
        *,
        launcher: Launcher = container_command,
        label_selector: str = DEFAULT_SELECTOR,
        cgroup_parent: str = DEFAULT_CGROUP_PARENT,
        mark_pods_ready: bool = True,
        stop_grace_s: float = STOP_GRACE_S,
        cadvisor_port: int | None = None,
    ) -> None:
        self._api = api
        self._apps = client.AppsV1Api(api)
        self._core = client.CoreV1Api(api)
        self.run_dir = run_dir
        self._launcher = launcher
        self._selector = label_selector
        self._cgroup_parent = cgroup_parent
        self._mark_pods_ready = mark_pods_ready
        self._grace_s = stop_grace_s
        self._replicas: dict[tuple[str, str], list[RunningReplica]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.cadvisor_port = cadvisor_port or free_port()
        self._serving = contextlib.ExitStack()

    @property
    def cadvisor_target(self) -> str:
        """``host:port`` of the kubelet-like endpoint (path :data:`cadvisor.PATH`)."""
        return f"127.0.0.1:{self.cadvisor_port}"

    def start(self) -> PodRunner:
        """Serve ``/metrics/cadvisor``, then start the watch loop in a daemon thread."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._serving.enter_context(cadvisor.serving(self.containers_cpu, self.cadvisor_port))
        self._thread = threading.Thread(target=self._loop, name="pod-runner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching and serving, then stop every replica and remove its cgroup."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=WATCH_WINDOW_S + 30)
        self._serving.close()
        with self._lock:
            for running in self._replicas.values():
                self._scale_down(running, 0, None)
            self._replicas.clear()
        remove_if_empty(self._cgroup_parent)

    def containers_cpu(self) -> list[cadvisor.ContainerCpu]:
        """The CPU of every replica bound to a Pod (what ``/metrics/cadvisor`` serves)."""
        with self._lock:
            running = [r for replicas in self._replicas.values() for r in replicas]
        out = []
        for replica in running:
            with contextlib.suppress(OSError):  # stopped (its cgroup removed) since the copy
                cpu = replica.container_cpu()
                if cpu is not None:
                    out.append(cpu)
        return out

    def replicas(self, namespace: str, deployment: str) -> list[RunningReplica]:
        """The replicas of one Deployment by index (a copy), live or waiting to be restarted."""
        with self._lock:
            return list(self._replicas.get((namespace, deployment), []))

    def _loop(self) -> None:
        """List and reconcile everything, then react to watch events for a short window; repeat."""
        while not self._stopping.is_set():
            try:
                self._watch(self._resync())
            except Exception:  # the API server may restart or time out; log and try again
                LOG.exception("pod runner: reconcile failed; retrying")
                self._stopping.wait(1.0)

    def _resync(self) -> str:
        """Reconcile every labelled Deployment; stop replicas of those that are gone."""
        listing = self._apps.list_deployment_for_all_namespaces(label_selector=self._selector)
        seen = {self._reconcile(self._api.sanitize_for_serialization(item)) for item in listing.items}
        for key in set(self._replicas) - seen:
            self._forget(key)
        return str(self._api.sanitize_for_serialization(listing)["metadata"]["resourceVersion"])

    def _watch(self, resource_version: str) -> None:
        """React to Deployment events for one short watch window."""
        stream = watch.Watch().stream(
            self._apps.list_deployment_for_all_namespaces,
            label_selector=self._selector,
            resource_version=resource_version,
            timeout_seconds=WATCH_WINDOW_S,
        )
        for event in stream:
            if self._stopping.is_set():
                return
            if event is None or event["type"] == "BOOKMARK":
                continue
            deployment = self._api.sanitize_for_serialization(event["object"])
            if event["type"] == "DELETED":
                self._forget(_key(deployment))
            else:
                self._reconcile(deployment)

    def _reconcile(self, deployment: Json) -> tuple[str, str]:
        """Make the replicas of one Deployment match its spec; then mark its Pods."""
        key = _key(deployment)
        desired = int(deployment["spec"].get("replicas", 1))
        cpu = cpu_resources(deployment)
        pods = self._current_pods(deployment) if self._mark_pods_ready else None
        with self._lock:
            running = self._replicas.setdefault(key, [])
            self._restart_dead(running)
            for replica in running:
                if replica.replica.cpu != cpu:
                    replica.cgroup.apply(cpu)
                    replica.replica = dataclasses.replace(replica.replica, cpu=cpu)
            self._scale_down(running, desired, pods)
            self._scale_up(key, running, desired, deployment)
        if self._mark_pods_ready:
            self._bind_pods(deployment, key)
        return key

    def _current_pods(self, deployment: Json) -> set[str] | None:
        """Names of the Deployment's Pods not being deleted (None: no selector to list them by)."""
        selector = match_labels_selector(deployment)
        if not selector:
            return None
        listing = self._core.list_namespaced_pod(deployment["metadata"]["namespace"], label_selector=selector)
        return {
            p["metadata"]["name"]
            for p in self._api.sanitize_for_serialization(listing)["items"]
            if _is_current(p)
        }

    def _scale_down(self, running: list[RunningReplica], desired: int, pods: set[str] | None) -> None:
        """Stop surplus replicas. With ``pods`` (the Deployment's live Pods), as a kubelet: the
        replicas whose Pod the ReplicaSet deleted, then unbound ones; a bound surplus whose Pod is
        still there waits for the ReplicaSet's choice (the next resync looks again). Without, the
        highest index first."""
        if pods is None:
            while len(running) > desired:
                self._stop_replica(running.pop())
            return
        gone = [r for r in running if r.pod is not None and r.pod not in pods]
        unbound = [r for r in running if r.pod is None]
        for replica in (gone + unbound)[: max(0, len(running) - desired)]:
            running.remove(replica)
            self._stop_replica(replica)

    def _scale_up(
        self, key: tuple[str, str], running: list[RunningReplica], desired: int, deployment: Json
    ) -> None:
        """Start missing replicas, each at the lowest index not running."""
        cpu, container = cpu_resources(deployment), first_container(deployment)
        while len(running) < desired:
            used = {r.replica.index for r in running}
            index = next(i for i in range(len(running) + 1) if i not in used)
            replica = Replica(key[0], key[1], index, cpu, container, self.run_dir)
            try:
                running.append(self._launch(replica))
            except (LaunchError, OSError) as err:
                LOG.error("pod runner: cannot start %s: %s", replica.name, err)
                return
            running.sort(key=lambda r: r.replica.index)

    def _forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._scale_down(self._replicas.pop(key, []), 0, None)

    def _launch(self, replica: Replica) -> RunningReplica:
        """Create the replica's cgroup and start its command inside it."""
        command = self._launcher(replica)
        group = CpuCgroup.create(self._cgroup_parent, replica.name, replica.cpu)
        try:
            proc = _spawn(replica, group, command)
        except OSError:
            group.remove()
            raise
        return RunningReplica(replica, command, group, proc, time.monotonic())

    def _restart_dead(self, running: list[RunningReplica]) -> None:
        """Restart replicas whose process ended (restartPolicy Always), with a short back-off."""
        for replica in running:
            if replica.proc.poll() is None or time.monotonic() - replica.started_at < RESTART_BACKOFF_S:
                continue
            LOG.warning(
                "pod runner: %s exited with %s; restarting", replica.replica.name, replica.proc.returncode
            )
            replica.cgroup.kill_all(self._grace_s)  # descendants left behind
            replica.proc = _spawn(replica.replica, replica.cgroup, replica.command)
            replica.started_at = time.monotonic()
            replica.restarts += 1

    def _stop_replica(self, replica: RunningReplica) -> None:
        """SIGTERM, then SIGKILL, the whole cgroup; reap the process; remove the cgroup."""
        LOG.info("pod runner: stopping %s", replica.replica.name)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(replica.proc.pid, signal.SIGTERM)
        replica.cgroup.kill_all(self._grace_s)
        replica.proc.wait()
        replica.cgroup.remove()

    def _bind_pods(self, deployment: Json, key: tuple[str, str]) -> None:
        """Bind live replicas to the Deployment's Pods; mark bound Pods Ready with their replica's
        address and the others not Ready."""
        namespace = deployment["metadata"]["namespace"]
        selector = match_labels_selector(deployment)
        if not selector:
            return
        listing = self._core.list_namespaced_pod(namespace, label_selector=selector)
        pods = [p for p in self._api.sanitize_for_serialization(listing)["items"] if _is_current(p)]
        with self._lock:
            wanted = bind(self._replicas.get(key, []), pods)
        for pod in pods:
            name = pod["metadata"]["name"]
            ip = wanted.get(name)
            if _is_ready(pod) != (name in wanted) or _pod_ip(pod) != ip:
                self._set_ready(namespace, name, name in wanted, ip)

    def _set_ready(self, namespace: str, pod: str, ready: bool, ip: str | None) -> None:
        """Set the Pod's phase to Running, its Ready conditions and its address (the kubelet's job)."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = "True" if ready else "False"
        conditions = [
            {"type": t, "status": status, "lastTransitionTime": now} for t in ("Ready", "ContainersReady")
        ]
        body = {
            "status": {
                "phase": "Running",
                "startTime": now,
                "conditions": conditions,
                "podIP": ip,
                "podIPs": None if ip is None else [{"ip": ip}],
            }
        }
        try:
            self._core.patch_namespaced_pod_status(pod, namespace, body)
        except ApiException as err:
            if err.status != 404:  # the Pod may be gone already
                raise


def bind(running: list[RunningReplica], pods: list[Json]) -> dict[str, str | None]:
    """Keep each live replica's Pod while that Pod exists; give unbound live replicas (lowest index
    first) the newest unbound Pods. Returns bound Pod name → its replica's ``pod_ip``."""
    names = {p["metadata"]["name"] for p in pods}
    for replica in running:
        if replica.pod not in names or not replica.live:
            replica.pod = None
    taken = {r.pod for r in running if r.pod is not None}
    newest_first = sorted(pods, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))
    free = [p["metadata"]["name"] for p in reversed(newest_first) if p["metadata"]["name"] not in taken]
    for replica in running:
        if replica.live and replica.pod is None and free:
            replica.pod = free.pop(0)
    return {r.pod: r.command.pod_ip for r in running if r.pod is not None}


def _spawn(replica: Replica, group: CpuCgroup, command: Command) -> subprocess.Popen[bytes]:
    """Start ``command`` through a shell that first moves itself into ``group``."""
    env = {**os.environ, **_replica_env(replica), **command.env}
    joins = [str(path) for path in group.join_files]
    argv = ["/bin/sh", "-c", _ENTER_CGROUP, "enter-cgroup", *joins, "--", *command.argv]
    LOG.info("pod runner: starting %s: %s", replica.name, command.argv)
    with replica.log_path.open("ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=command.cwd,
            start_new_session=True,
        )


def _key(deployment: Json) -> tuple[str, str]:
    return deployment["metadata"]["namespace"], deployment["metadata"]["name"]


def _is_current(pod: Json) -> bool:
    """Not being deleted."""
    return "deletionTimestamp" not in pod["metadata"]


def _pod_ip(pod: Json) -> str | None:
    ip: str | None = (pod.get("status") or {}).get("podIP")
    return ip


def _is_ready(pod: Json) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _replica_env(replica: Replica) -> dict[str, str]:
    """Environment every replica gets, like the downward API."""
    return {
        "POD_NAMESPACE": replica.namespace,
        "STORMSCALE_DEPLOYMENT": replica.deployment,
        "STORMSCALE_REPLICA_INDEX": str(replica.index),
        "STORMSCALE_REPLICA_NAME": replica.name,
        "STORMSCALE_CPU_MILLIS": "" if replica.cpu_millis is None else str(replica.cpu_millis),
    }
