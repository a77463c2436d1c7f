"""The whole test bed in one object, for the end-to-end test and the demo.

A :class:`Stack` starts, in order: the Kubernetes control plane, ZooKeeper + Nimbus (no Supervisor of
its own), Prometheus, the Stormscale exporter, and a pod runner that runs every replica of a labelled
worker Deployment as a Storm Supervisor (one slot) in a cgroup whose CPU quota is the pod's CPU
limit; the pod's ``podIP`` is the address its Supervisor announces, and Prometheus scrapes the
exporter and the pod runner's ``/metrics/cadvisor`` (the pods' CPU, as from a kubelet). It installs
the CRD and one namespace. On top of it, :meth:`Stack.deploy` starts a benchmark topology on its
worker pods and :meth:`Stack.start_operator` runs the operator as its own process (``kopf run``),
exactly as a user would run it outside a cluster. Everything stops, in reverse order, when the
stack does.

With ``kafka=True`` (or at the first deploy of a scenario whose ``source`` is ``"kafka"``) it also
starts, after Prometheus and in the daemons' cgroup like every daemon, a Kafka broker (KRaft, one
node) and the offsets exporter that Prometheus scrapes as job ``kafka``. Deploying such a scenario
creates its topic and hands the topology the bootstrap address, topic, consumer group (the
scenario's name) and the folder where its sink records every key; :meth:`Stack.load` produces to the
topic on a schedule and :meth:`Stack.seen_keys` reads what the sink saw.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config

from stormscale.operator.policy import millicores
from stormscale.storm import NimbusClient
from tests.harness.bed.measure import running_exporter
from tests.harness.bed.operator_image import OperatorRootfs, from_image, image_argv, project_kubeconfig
from tests.harness.kafka.broker import KafkaBroker
from tests.harness.kafka.exporter import running_offsets_exporter
from tests.harness.kafka.load import LoadGenerator, Schedule
from tests.harness.kafka.seen import SeenReport, compare, read_seen
from tests.harness.kubernetes import binaries, cadvisor
from tests.harness.kubernetes.cgroups import CpuCgroup, daemons_group
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.pod_runner import Command, PodRunner, Replica
from tests.harness.paths import REPO_ROOT
from tests.harness.process import Daemon, LaunchSpec, free_port, http_ok
from tests.harness.prometheus.server import Prometheus, StaticJob
from tests.harness.storm.cluster import StormCluster
from tests.harness.storm.home import ensure_storm_home
from tests.harness.storm.topology import Topology, kill, submit
from tests.harness.waiting import wait_for

CRD = REPO_ROOT / "crds" / "stormtopologies.stormscale.io.yaml"
#: The worker container's variable that says how many slots its Supervisor offers.
SLOTS_ENV = "STORM_SUPERVISOR_SLOTS"
OPERATOR_READY_S = 120.0
OPERATOR_STOP_GRACE_S = 15.0
WORKERS_LABEL = "stormscale.io/storm-workers"
SUPERVISORS_TIMEOUT_S = 300.0
APPLY_TIMEOUT_S = 600.0
DELETE_TIMEOUT_S = 180.0
OVERHEAD_WARM_S = 30.0
OVERHEAD_DRAIN_S = 15.0
#: The overhead is read in windows of this length until two in a row agree (:func:`overhead_settled`).
OVERHEAD_WINDOW_S = 10.0
OVERHEAD_SETTLE_TIMEOUT_S = 240.0
#: Two windows agree when every pod's CPU differs by at most this (cores) or this share of it.
OVERHEAD_TOLERANCE_CORES = 0.010
OVERHEAD_TOLERANCE_SHARE = 0.15
#: A pod above this share of its limit with no tuples to work on is still booting (JIT at a fifth of a core).
OVERHEAD_MAX_SHARE = 0.6
Log = Callable[[str], None]


def overhead_settled(previous: Sequence[float], current: Sequence[float], limit_cores: float) -> bool:
    """Idle pods' CPU (cores, one reading per pod) has settled: every pod below
    :data:`OVERHEAD_MAX_SHARE` of its limit, and within max(:data:`OVERHEAD_TOLERANCE_CORES`,
    :data:`OVERHEAD_TOLERANCE_SHARE` · its value) of the previous window's reading."""
    if len(previous) != len(current) or not current:
        return False
    return all(
        now < OVERHEAD_MAX_SHARE * limit_cores
        and abs(now - then) <= max(OVERHEAD_TOLERANCE_CORES, OVERHEAD_TOLERANCE_SHARE * then)
        for then, now in zip(previous, current, strict=True)
    )


@dataclass(frozen=True)
class Scenario:
    """A benchmark topology, its worker pods and the StormTopology that scales it."""

    shape: str = "linear"
    name: str = "e2e-linear"
    #: ``multilang`` (Python components) or ``jvm`` (the project's Java components).
    language: str = "multilang"
    unit_cpu: str = "250m"
    properties: Mapping[str, object] = field(default_factory=dict)
    #: Storm settings for the topology and the Supervisors (worker side), e.g. wait strategies.
    storm_conf: Mapping[str, object] = field(default_factory=dict)
    components: tuple[str, ...] = ("1", "2", "3", "4")
    sinks: tuple[str, ...] = ("4",)
    overrides: tuple[Mapping[str, object], ...] = ()
    strategy: str = "Combined"
    flow_model: str = "Backpressure"
    window: str = "2m"
    step: str = "10s"
    settle: str = "60s"
    max_age: str = "1m"
    #: Where spout "1" gets its tuples: ``rate`` (its own offered rate, a topology property) or
    #: ``kafka`` (Storm's KafkaSpout on ``topic`` of the stack's broker, ``partitions`` partitions;
    #: the rate is what :meth:`Stack.load` produces).
    source: str = "rate"
    topic: str = ""
    partitions: int = 1
    #: A Kafka source's load while the scenario runs (a :class:`Schedule`'s text, started by
    #: :meth:`Stack.deploy` once the topology runs and stopped by :meth:`Stack.undeploy`); "": none.
    load: str = ""
    #: Storm slots (workers) per worker pod: each pod's Supervisor offers this many, and its CPU limit
    #: is ``unit_cpu`` per slot (the spec's ``workers.slotsPerPod``; a unit is a slot's share).
    slots_per_pod: int = 1
    #: ``spec.workers.placement`` (``SAM``, ``PDeployer``, ``MultiLevel``), delivered to the scheduler's
    #: endpoint on the bed's Nimbus (``spec.nimbus.placementPort``); "": none (Storm's own layout).
    placement: str = ""

    @property
    def records_seen(self) -> bool:
        """Whether the sink records what it processes (``seen.dir``): a JVM shape that has the option."""
        return self.language == "jvm" and self.shape in {"diamond", "kafka-linear"}

    @property
    def deployment(self) -> str:
        return f"{self.name}-workers"

    @property
    def group(self) -> str:
        """The KafkaSpout's consumer group (a Kafka source): the scenario's name."""
        return self.name

    @property
    def settle_s(self) -> float:
        return float(self.settle.removesuffix("s"))

    @property
    def pod_cpu(self) -> str:
        """A worker pod's CPU limit: ``unit_cpu`` per slot."""
        return f"{millicores(self.unit_cpu) * self.slots_per_pod}m"


def worker_deployment(scenario: Scenario, replicas: int) -> dict[str, Any]:
    """The worker Deployment: one Storm Supervisor per replica with ``slots_per_pod`` slots (the
    container's :data:`SLOTS_ENV`, as a chart would template ``supervisor.slots.ports``), its CPU
    limit a resource unit per slot."""
    labels = {"app": scenario.deployment}
    container = {
        "name": "supervisor",
        "image": "apache/storm:2.8.3",
        "env": [{"name": SLOTS_ENV, "value": str(scenario.slots_per_pod)}],
        "resources": {"limits": {"cpu": scenario.pod_cpu}},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": scenario.deployment, "labels": {WORKERS_LABEL: "yes"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def storm_topology(
    scenario: Scenario,
    nimbus_port: int,
    prometheus: str,
    budget: int,
    pod_overhead_cpu: str = "0",
    *,
    placement_port: int = 0,
) -> dict[str, Any]:
    """The StormTopology resource for ``scenario`` at ``budget`` (Manual mode); a scenario with a
    placement has it delivered to the scheduler's endpoint on ``placement_port`` (0: in the conf)."""
    nimbus: dict[str, object] = {"host": "127.0.0.1", "port": nimbus_port}
    workers: dict[str, object] = {
        "deployment": scenario.deployment,
        "slotsPerPod": scenario.slots_per_pod,
        "podOverheadCPU": pod_overhead_cpu,
    }
    if scenario.placement:
        workers["placement"] = scenario.placement
        if placement_port:
            nimbus["placementPort"] = placement_port
    return {
        "apiVersion": "stormscale.io/v1alpha1",
        "kind": "StormTopology",
        "metadata": {"name": scenario.name},
        "spec": {
            "topologyName": scenario.name,
            "nimbus": nimbus,
            "workers": workers,
            "metrics": {
                "prometheus": prometheus,
                "window": scenario.window,
                "step": scenario.step,
                "settle": scenario.settle,
                "maxAge": scenario.max_age,
            },
            "scaling": {
                "mode": "Manual",
                "budget": budget,
                "strategy": scenario.strategy,
                "flowModel": scenario.flow_model,
            },
            "components": component_overrides(scenario),
        },
    }


def component_overrides(scenario: Scenario) -> list[dict[str, object]]:
    """The spec's ``components``: the scenario's overrides and, for a Kafka source, spout "1"'s
    demand from its topic (the group is the KafkaSpout's), merged into one entry per component."""
    overrides = {str(o["name"]): dict(o) for o in scenario.overrides}
    if scenario.source == "kafka":
        source = {"kafka": {"topic": scenario.topic, "consumerGroup": scenario.group}}
        overrides["1"] = {"name": "1", **overrides.get("1", {}), **source}
    return list(overrides.values())


def kafka_properties(scenario: Scenario, bootstrap: str, seen_dir: Path) -> dict[str, object]:
    """The topology properties of a Kafka source: where to read, as which group, where the sink
    records its keys (placeholders of ``topologies/jvm/kafka-linear.yaml``)."""
    if scenario.source != "kafka" or not scenario.topic:
        raise ValueError(f"scenario {scenario.name} has no Kafka source (source={scenario.source!r})")
    return {
        "kafka.bootstrap": bootstrap,
        "kafka.topic": scenario.topic,
        "kafka.group": scenario.group,
        "seen.dir": str(seen_dir),
    }


def supervisor_slots(container: Mapping[str, Any]) -> int:
    """The slots a worker container's Supervisor offers: its :data:`SLOTS_ENV` (default 1)."""
    for var in container.get("env") or ():
        if var.get("name") == SLOTS_ENV:
            slots = int(var.get("value", "1"))
            if slots < 1:
                raise ValueError(f"{SLOTS_ENV}: at least 1 slot, got {slots}")
            return slots
    return 1


class Stack:
    """The test bed; use as a context manager (``with Stack(run_dir) as stack: ...``)."""

    def __init__(
        self, run_dir: Path, namespace: str = "stormscale-e2e", log: Log = print, *, kafka: bool = False
    ) -> None:
        self.run_dir = run_dir
        self.namespace = namespace
        self.log = log
        self.want_kafka = kafka
        self._exit = contextlib.ExitStack()
        self.plane: ControlPlane
        self.api: client.ApiClient
        self.storm: StormCluster
        self.prometheus: Prometheus
        self.pods: PodRunner
        self.exporter_url = ""
        #: ``host:port`` of the operator's own metrics, once it runs (scraped as job ``stormscale-operator``)
        self.operator_metrics = ""
        #: the Kafka broker and its offsets exporter, once started (``kafka=True`` or a Kafka scenario)
        self.kafka: KafkaBroker | None = None
        self.kafka_exporter_url = ""
        #: topic → the next key a load generator sends (keys run on over every load of a topic)
        self._next_key: dict[str, int] = {}
        #: scenario name → the load :meth:`deploy` started for it (``Scenario.load``)
        self._loads: dict[str, LoadGenerator] = {}
        self._scraping = False
        #: scenario name → its worker pods' overhead as measured by :meth:`measure_pod_overhead`.
        self.pod_overhead: dict[str, str] = {}

    def __enter__(self) -> Stack:
        try:
            self.start()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit.close()

    def _step(self, what: str) -> float:
        self.log(f"[stack] {what}")
        return time.monotonic()

    def start(self) -> None:
        """Start every part, each after the previous one is ready; the daemons (and this process)
        in a CPU cgroup of their own, so that the pods' quotas are theirs."""
        self._step("the daemons' CPU cgroup (pods get their quotas first)")
        self._exit.enter_context(daemons_group())
        self._step("Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)")
        bins = binaries.ensure_binaries()
        (self.run_dir / "kube").mkdir(parents=True, exist_ok=True)
        self.plane = self._exit.enter_context(ControlPlane(self.run_dir / "kube", bin_dir=bins))
        self.api = config.new_client_from_config(config_file=str(self.plane.kubeconfig))
        self._step("ZooKeeper and Nimbus (Storm 2.8)")
        self.storm = self._exit.enter_context(StormCluster(self.run_dir / "storm", ensure_storm_home()))
        self._step("Prometheus")
        self.prometheus = Prometheus(self.run_dir / "prometheus").start()
        self._exit.callback(self.prometheus.stop)
        if self.want_kafka:
            self.ensure_kafka()
        self._step("Stormscale exporter")
        self._start_exporter()
        self._step("pod runner: worker Deployment replicas become Supervisors in cgroups")
        self.pods = PodRunner(
            self.api,
            self.run_dir / "pods",
            launcher=self._supervisor,
            label_selector=f"{WORKERS_LABEL}=yes",
            stop_grace_s=10,
        ).start()
        self._exit.callback(self.pods.stop)
        self._scrape()
        self._step("CRD and namespace")
        self.plane.apply_crds(CRD)
        self.plane.kubectl("create", "namespace", self.namespace)

    def _supervisor(self, replica: Replica) -> Command:
        """A worker pod's Supervisor with the slots its container asks for (:func:`supervisor_slots`);
        it announces its pod's address (``storm.local.hostname``)."""
        spec = self.storm.launcher(replica, slots=supervisor_slots(replica.container))
        return Command(list(spec.argv), dict(spec.env), spec.cwd, pod_ip=str(spec.extra["host"]))

    def _start_exporter(self) -> None:
        log = self.run_dir / "exporter.log"
        self.exporter_url = self._exit.enter_context(running_exporter(self.storm.endpoints, log))

    def _scrape(self) -> None:
        """Prometheus scrapes the exporter, as it would a kubelet the pod runner's cAdvisor, and
        the Kafka offsets exporter (job ``kafka``) when Kafka runs."""
        port = self.exporter_url.rsplit(":", 1)[1]
        jobs = [
            StaticJob("stormscale-exporter", [f"127.0.0.1:{port}"]),
            StaticJob("kubelet", [self.pods.cadvisor_target], cadvisor.PATH),
        ]
        if self.kafka_exporter_url:
            jobs.append(StaticJob("kafka", [self.kafka_exporter_url.removeprefix("http://")]))
        if self.operator_metrics:
            jobs.append(StaticJob("stormscale-operator", [self.operator_metrics]))
        self.prometheus.set_jobs(jobs)
        self._scraping = True

    # --- Kafka ----------------------------------------------------------------------------------------

    def ensure_kafka(self) -> KafkaBroker:
        """The broker, started (with its offsets exporter, scraped as job ``kafka``) if it is not yet."""
        if self.kafka is not None:
            return self.kafka
        started = self._step("Kafka broker (KRaft, one node) and its offsets exporter")
        folder = self.run_dir / "kafka"
        self.kafka = self._exit.enter_context(KafkaBroker(folder))
        self.kafka_exporter_url = self._exit.enter_context(
            running_offsets_exporter(self.kafka.bootstrap, folder / "exporter.log")
        )
        self.log(f"[stack] Kafka {self.kafka.bootstrap} in {time.monotonic() - started:.1f} s")
        if self._scraping:  # started after the rest (at a deploy): add its job now
            self._scrape()
        return self.kafka

    def seen_dir(self, scenario: Scenario) -> Path:
        """Where ``scenario``'s sink records the keys it acks (``seen-<task>.txt``)."""
        return self.run_dir / "seen" / scenario.name

    def _prepare_kafka(self, scenario: Scenario) -> dict[str, object]:
        """The broker (started if need be), the scenario's topic, an empty seen folder; the topology
        properties that point the KafkaSpout and the sink at them."""
        broker = self.ensure_kafka()
        self._step(f"topic {scenario.topic} ({scenario.partitions} partitions)")
        broker.create_topic(scenario.topic, scenario.partitions)
        seen = self.seen_dir(scenario)
        shutil.rmtree(seen, ignore_errors=True)
        seen.mkdir(parents=True)
        return kafka_properties(scenario, broker.bootstrap, seen)

    def load(
        self, scenario: Scenario, schedule: Schedule | str, *, first_key: int | None = None
    ) -> LoadGenerator:
        """Start producing ``schedule`` (a :class:`Schedule` or its text, e.g. ``"48@10m"``) to the
        scenario's topic in a background thread; keys go on from the previous load of the topic unless
        ``first_key`` says otherwise. ``.stop()`` ends it early (and waits for the last acknowledgement);
        the stack stops it at exit."""
        broker = self.ensure_kafka()
        plan = Schedule.parse(schedule) if isinstance(schedule, str) else schedule
        first = self._next_key.get(scenario.topic, 0) if first_key is None else first_key
        self._step(f"load on {scenario.topic}: {plan} from key {first} ({plan.total} records)")
        generator = LoadGenerator(broker.bootstrap, scenario.topic, plan, first_key=first, log=self.log)
        self._next_key[scenario.topic] = first + plan.total
        self._exit.callback(generator.stop)
        return generator.start()

    def seen_keys(self, scenario: Scenario) -> set[int]:
        """The keys ``scenario``'s sink has recorded so far (every one it acked)."""
        return set(read_seen(self.seen_dir(scenario)))

    def seen_report(self, scenario: Scenario, produced: int) -> SeenReport:
        """The sink's keys against ``0 .. produced-1``: missing, never produced, duplicates."""
        return compare(read_seen(self.seen_dir(scenario)), produced)

    # --- the topology and its worker pods -------------------------------------------------------

    def nimbus(self) -> NimbusClient:
        return self.storm.endpoints.nimbus(timeout_s=10)

    def deploy(self, scenario: Scenario) -> Topology:
        """Worker pods (one per component), then the topology with one executor per component."""
        replicas = len(scenario.components)
        self.storm.launcher.extra_conf.update(scenario.storm_conf)
        self._step(
            f"worker Deployment {scenario.deployment}: {replicas} pods at {scenario.pod_cpu} CPU each "
            f"({scenario.slots_per_pod} slot(s))"
        )
        self.kubectl_apply(worker_deployment(scenario, replicas))
        wait_for(
            lambda: self.supervisors(scenario) >= replicas,
            SUPERVISORS_TIMEOUT_S,
            f"{replicas} Supervisors",
            every_s=1.0,
        )
        self._step(f"topology {scenario.name} ({scenario.shape}), one executor per component")
        props = {**scenario.properties, "topology.name": scenario.name, "topology.workers": replicas}
        props["metrics.sd.dir"] = str(self.prometheus.sd_dir)
        if scenario.records_seen:
            props["seen.dir"] = str(self.seen_dir(scenario))
        if scenario.source == "kafka":
            props.update(self._prepare_kafka(scenario))
        topology = submit(
            self.storm.endpoints, scenario.shape, props, conf=scenario.storm_conf, language=scenario.language
        )
        self._exit.callback(kill, self.storm.endpoints, topology.name)
        self.measure_pod_overhead(scenario)
        if scenario.source == "kafka" and scenario.load:
            self._loads[scenario.name] = self.load(scenario, scenario.load)
        return topology

    def undeploy(self, scenario: Scenario) -> None:
        """Free the bed for the next scenario: its StormTopology (the operator stops acting on it),
        its Storm topology, and its worker pods (their cgroups go with them)."""
        self._step(f"undeploy {scenario.name}: StormTopology, Storm topology, worker Deployment")
        if scenario.name in self._loads:
            self._loads.pop(scenario.name).stop()
        namespace = ["-n", self.namespace, "--ignore-not-found", "--wait=true"]
        started = time.monotonic()
        # The operator's finalizer goes once its running pass ends (seconds: handlers.TIMER_STOP_POLL_S).
        self.plane.kubectl("delete", "stormtopology", scenario.name, *namespace, timeout_s=DELETE_TIMEOUT_S)
        self.log(f"[stack] StormTopology {scenario.name} deleted in {time.monotonic() - started:.1f} s")
        kill(self.storm.endpoints, scenario.name)
        self.plane.kubectl(
            "delete", "deployment", scenario.deployment, *namespace, timeout_s=DELETE_TIMEOUT_S
        )
        wait_for(
            lambda: not self.pods.replicas(self.namespace, scenario.deployment),
            SUPERVISORS_TIMEOUT_S,
            f"{scenario.deployment}'s pods stopped",
            every_s=1.0,
        )

    def measure_pod_overhead(self, scenario: Scenario) -> str:
        """What a worker pod uses whatever its tuples, as a user would measure it for the spec's
        ``workers.podOverheadCPU``: the topology deactivated (no tuples), the pods' mean CPU over
        windows of :data:`OVERHEAD_WINDOW_S` until two in a row agree and no pod is still booting
        (:func:`overhead_settled`; worker JVMs in 200m pods took over a minute to boot on a busy
        machine, and an overhead read while they did (~180m) made every unsaturated bolt read idle).
        Kept for the StormTopology."""
        time.sleep(OVERHEAD_WARM_S)
        self.nimbus().deactivate(scenario.name)
        limit = millicores(scenario.pod_cpu) / 1000
        try:
            time.sleep(OVERHEAD_DRAIN_S)
            groups = self.pod_cgroups(scenario)
            deadline = time.monotonic() + OVERHEAD_SETTLE_TIMEOUT_S
            previous: list[float] = []
            while True:
                before, start = {n: g.usage_us() for n, g in groups.items()}, time.monotonic()
                time.sleep(OVERHEAD_WINDOW_S)
                seconds = time.monotonic() - start
                cores = [(g.usage_us() - before[n]) / 1e6 / seconds for n, g in groups.items()]
                if overhead_settled(previous, cores, limit):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{scenario.name}: the idle pods' CPU never settled within "
                        f"{OVERHEAD_SETTLE_TIMEOUT_S:.0f} s (last two windows, millicores: "
                        f"{[round(1000 * c) for c in previous]}, {[round(1000 * c) for c in cores]})"
                    )
                previous = cores
        finally:
            self.nimbus().activate(scenario.name)
        quantity = f"{round(1000 * sum(cores) / len(cores))}m"
        self.log(f"[stack] pods' overhead (deactivated, settled): {quantity} per pod")
        self.pod_overhead[scenario.name] = quantity
        return quantity

    def pod_cgroups(self, scenario: Scenario) -> dict[str, CpuCgroup]:
        """The worker pods' cgroups now, by pod label: ``<replica index>:<what runs there>``, e.g.
        ``3:2+__acker`` (from Nimbus's executors on the address the replica announces)."""
        running = self.pods.replicas(self.namespace, scenario.deployment)
        on_host: dict[str, set[str]] = {}
        if self.nimbus().topology(scenario.name) is not None:
            for e in self.nimbus().topology_info(scenario.name).executors:
                if e.component != "__system":
                    on_host.setdefault(e.host, set()).add(e.component)
        return {
            f"{r.replica.index}:{'+'.join(sorted(on_host.get(r.command.pod_ip or '', ()))) or '-'}": r.cgroup
            for r in running
        }

    def supervisors(self, scenario: Scenario) -> int:
        """Supervisors Nimbus lists now on ``scenario``'s worker pods (their hosts are the pods' IPs;
        those of pods stopped before stay listed until Nimbus times them out)."""
        listing = client.CoreV1Api(self.api).list_namespaced_pod(
            self.namespace, label_selector=f"app={scenario.deployment}"
        )
        ips = {pod.status.pod_ip for pod in listing.items if pod.status and pod.status.pod_ip}
        return sum(1 for s in self.nimbus().cluster_summary().supervisors if s.host in ips)

    def kubectl_apply(self, resource: Mapping[str, Any]) -> None:
        self.plane.kubectl("apply", "-n", self.namespace, "-f", "-", stdin=json.dumps(resource))

    # --- the operator ------------------------------------------------------------------------------

    def start_operator(self) -> None:
        """``kopf run`` of the operator's handlers, standalone, watching this namespace only: from the
        operator's image (read-only root, its user and entrypoint; :mod:`tests.harness.bed.operator_image`)
        when ``STORMSCALE_BED_OPERATOR=image`` asks for it, else from the virtual environment."""
        port = free_port()
        kopf_args = ["run", "-m", "stormscale.operator.handlers", "--standalone"]
        kopf_args += ["--namespace", self.namespace, "--liveness", f"http://127.0.0.1:{port}/healthz"]
        log = self.run_dir / "operator.log"
        self.operator_metrics = f"127.0.0.1:{free_port()}"
        settings = {
            "STORMSCALE_INTERVAL_SECONDS": "5",
            "STORMSCALE_METRICS_LISTEN": self.operator_metrics,
            "MALLOC_ARENA_MAX": "2",  # as the chart's Deployment sets it
        }
        if from_image(os.environ):
            mounted = OperatorRootfs.mount()
            self._exit.callback(mounted.remove)
            secrets = self.run_dir / "operator-secrets"
            kubeconfig = project_kubeconfig(self.plane.kubeconfig, secrets, mounted.config.user)
            argv = image_argv(mounted, secrets, kopf_args, {**settings, "KUBECONFIG": kubeconfig})
            env = dict(os.environ)
        else:
            argv = [sys.executable, "-m", "kopf", *kopf_args]
            env = {**os.environ, "KUBECONFIG": str(self.plane.kubeconfig), **settings}
        self._step(f"operator: kopf run (log {log})")
        operator = Daemon(LaunchSpec("operator", argv, env, REPO_ROOT, log, log))
        self._exit.callback(operator.stop, OPERATOR_STOP_GRACE_S)
        healthz = f"http://127.0.0.1:{port}/healthz"
        operator.wait_ready(lambda: http_ok(healthz), OPERATOR_READY_S, f"{healthz} answers")
        self._scrape()  # and now the operator's own metrics

    def apply_budget(self, scenario: Scenario, budget: int) -> None:
        nimbus_port = self.storm.endpoints.nimbus_port
        overhead = self.pod_overhead.get(scenario.name, "0")
        placement_port = self.storm.endpoints.placement_port
        self.kubectl_apply(
            storm_topology(
                scenario, nimbus_port, self.prometheus.url, budget, overhead, placement_port=placement_port
            )
        )

    def status(self, scenario: Scenario) -> dict[str, Any]:
        text = self.plane.kubectl("get", "stormtopology", scenario.name, "-n", self.namespace, "-o", "json")
        status: dict[str, Any] = json.loads(text).get("status") or {}
        return status

    def wait_applied(
        self, scenario: Scenario, budget: int, timeout_s: float = APPLY_TIMEOUT_S
    ) -> dict[str, Any]:
        """The status once the operator reports ``budget`` applied and Ready (progress lines meanwhile)."""
        last = [""]

        def applied() -> dict[str, Any] | None:
            status = self.status(scenario)
            ready: dict[str, Any] = next(
                (c for c in status.get("conditions", []) if c["type"] == "Ready"), {}
            )
            line = f"{ready.get('status', '?')} {ready.get('reason', '')}: {ready.get('message', '')}"
            if line != last[0]:
                self.log(f"[operator] {line}")
                last[0] = line
            done = status.get("appliedBudget") == budget and ready.get("status") == "True"
            return status if done else None

        result: dict[str, Any] = wait_for(applied, timeout_s, f"budget {budget} applied", every_s=2.0)
        return result


@contextlib.contextmanager
def stack(
    run_dir: Path, namespace: str = "stormscale-e2e", log: Log = print, *, kafka: bool = False
) -> Iterator[Stack]:
    with Stack(run_dir, namespace, log, kafka=kafka) as s:
        yield s
