"""Packaging on real parts: helm (built from Go modules) lints, renders and installs the chart into the
real API server; the operator then runs with the chart's ServiceAccount token, not the admin's, and
the API-server scenario passes. Removing a rule the operator needs makes it fail. The image's contents
match the lock and its entry point serves health: from the built image's root filesystem when
``make test`` built it (``STORMSCALE_BED_OPERATOR=image``), else installed by operator/image/install.sh
(what the Dockerfile runs) into a fresh prefix, since no Docker engine runs here.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from kubernetes import config

from stormscale.operator import handlers
from stormscale.planner import Topology, load_profile
from stormscale.publish import cli as publish_cli
from stormscale.publish.kube import FleetApi
from tests.harness.bed.operator_image import (
    SECRETS_DIR,
    OperatorRootfs,
    env_command,
    from_image,
    image_argv,
    project_kubeconfig,
)
from tests.harness.fakes.ports import FakeNimbus, FakeProfiler, with_fakes
from tests.harness.kubernetes.binaries import kubernetes_version
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.helm import ensure_helm
from tests.harness.locks import lock_pins, pins
from tests.harness.process import free_port, http_ok
from tests.harness.waiting import wait_for
from tests.integration.test_operator_api import (
    condition,
    deployment,
    get,
    manifest,
    operator,
    replicas,
)
from tests.synthetic import samples as synthetic

pytestmark = pytest.mark.integration

REPO = Path(__file__).parents[2]
CHART = REPO / "charts" / "stormscale"
RELEASE, RELEASE_NS = "ss", "stormscale-system"
ROLE = "ss-stormscale"
PUBLISHER_IMAGE = "stormscale/publisher:0.1.0"  # make image-check builds it, make test does not
IMAGE_PREFIX = "/opt/stormscale"  # where the Dockerfile installs the operator's contents
KUBE_VERSION = kubernetes_version()


@pytest.fixture(scope="module")
def helm(control_plane: ControlPlane) -> Any:
    binary = ensure_helm()

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [str(binary), f"--kubeconfig={control_plane.kubeconfig}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
        if check and done.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    return run


def render(helm: Any, *sets: str) -> list[dict[str, Any]]:
    args = ["template", RELEASE, str(CHART), "--namespace", RELEASE_NS, "--kube-version", KUBE_VERSION]
    for s in sets:
        args += ["--set", s]
    return [d for d in yaml.safe_load_all(helm(*args).stdout) if d]


def test_helm_lint_strict_passes(helm: Any) -> None:
    result = helm("lint", "--strict", str(CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_rendered_rbac_is_exactly_what_the_operator_calls(helm: Any) -> None:
    docs = render(helm)
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == ROLE)
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        (("stormscale.io",), ("stormtopologies",)): {"get", "list", "watch", "patch"},
        (("stormscale.io",), ("stormtopologies/status",)): {"get", "patch"},
        (("apps",), ("deployments",)): {"get"},
        (("apps",), ("deployments/scale",)): {"patch"},  # replicas only, never another field
        (("autoscaling",), ("horizontalpodautoscalers",)): {"list"},
        # the profiler joins executors to worker pods (their CPU); a scale-down marks the pods that run
        # no worker to go first (pod-deletion-cost)
        (("",), ("pods",)): {"list", "patch"},
        (("", "events.k8s.io"), ("events",)): {"create"},
        (("",), ("configmaps",)): {"get"},  # the fleet job's published profile, by name
        (("",), ("secrets",)): {"get"},  # the Secrets a spec's metrics.auth names, by name
    }
    assert not [d for d in docs if d["kind"] == "CronJob"]  # the publisher is off by default
    operator_deploy = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == ROLE)
    pod = operator_deploy["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert operator_deploy["spec"]["replicas"] == 1
    assert "--standalone" in container["args"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_namespaced_install_uses_roles_and_peering_allows_replicas(helm: Any) -> None:
    docs = render(helm, "watchNamespaces={a,b}")
    assert [d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"] == ["a", "b"]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ClusterRole"] == [f"{ROLE}-discovery"]
    peered = render(helm, "peering.enabled=true", "replicaCount=2")
    assert any(d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith("-peering") for d in peered)
    assert [d["metadata"]["name"] for d in peered if d["kind"] == "ClusterKopfPeering"] == ["stormscale"]
    operator_args = next(d for d in peered if d["kind"] == "Deployment" and d["metadata"]["name"] == ROLE)
    assert "--peering=stormscale" in operator_args["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["replicaCount=2"], "replicaCount must be 1 unless peering.enabled"),
        (["image.pullPolicy=Sometimes"], "image.pullPolicy"),
        (["exporter.nimbus=nimbus"], "exporter.nimbus"),
    ],
)
def test_bad_values_are_refused(helm: Any, sets: list[str], message: str) -> None:
    args = ["template", RELEASE, str(CHART), "--kube-version", KUBE_VERSION]
    for s in sets:
        args += ["--set", s]
    result = helm(*args, check=False)
    assert result.returncode != 0
    assert message in result.stderr


PUBLISHER = f"{ROLE}-publisher"
PUBLISHER_VALUES = [
    "publisher.enabled=true",
    "publisher.suspend=true",  # no run of its own during the tests: the test runs the job itself
    "publisher.samples={/data/samples}",
    "publisher.structures=/data/structures",
]


def test_the_publisher_cronjob_has_exactly_its_rules(helm: Any) -> None:
    docs = render(helm, *PUBLISHER_VALUES)
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] == PUBLISHER)
    rules = {(tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in role["rules"]}
    assert rules == {
        (("stormscale.io",), ("stormtopologies",)): {"list"},
        (("",), ("configmaps",)): {"create", "patch"},  # server-side apply: create the first time
    }
    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == PUBLISHER
    args = pod["containers"][0]["args"]
    assert "--master=local[2]" in args  # two grouped tasks' workers and the JVM within the 5Gi limit
    assert "--conf=spark.driver.memory=3g" in args
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    namespaced = render(helm, *PUBLISHER_VALUES, "watchNamespaces={a,b}")
    assert [
        d["metadata"]["namespace"]
        for d in namespaced
        if d["kind"] == "Role" and "publisher" in d["metadata"]["name"]
    ] == ["a", "b"]


def service_account_kubeconfig(control_plane: ControlPlane, account: str) -> Path:
    token = control_plane.kubectl("create", "token", account, "-n", RELEASE_NS, "--duration=2h").strip()
    kubeconfig = control_plane.run_dir / f"{account}.kubeconfig"
    kubeconfig.write_text(control_plane.kubeconfig.read_text().replace(control_plane.token, token))
    return kubeconfig


@pytest.fixture(scope="module")
def installed(helm: Any, control_plane: ControlPlane) -> Iterator[Path]:
    """The chart installed (the publisher CronJob too, suspended); yields a kubeconfig that
    authenticates as the operator's ServiceAccount."""
    sets = [f for value in PUBLISHER_VALUES for f in ("--set", value)]
    helm(
        "install", RELEASE, str(CHART), "--namespace", RELEASE_NS, "--create-namespace", "--wait=false", *sets
    )
    yield service_account_kubeconfig(control_plane, ROLE)
    helm("uninstall", RELEASE, "--namespace", RELEASE_NS)


def can_i(control_plane: ControlPlane, kubeconfig: Path, *args: str) -> str:
    argv = [str(control_plane.bin_dir / "kubectl"), f"--kubeconfig={kubeconfig}", "auth", "can-i", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout.strip()


def test_the_service_account_may_do_what_the_operator_does_and_no_more(
    installed: Path, control_plane: ControlPlane
) -> None:
    who = json.loads(control_plane.kubectl("--kubeconfig", str(installed), "auth", "whoami", "-o", "json"))
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{RELEASE_NS}:{ROLE}"
    control_plane.kubectl("get", "crd", "stormtopologies.stormscale.io")
    scale = ("patch", "deployments", "--subresource=scale", "-n", "default")
    assert can_i(control_plane, installed, *scale) == "yes"
    assert (
        can_i(control_plane, installed, "patch", "stormtopologies.stormscale.io/status", "-n", "default")
        == "yes"
    )
    for verb, what in [
        ("delete", "deployments"),
        ("patch", "deployments"),
        ("update", "deployments"),
        ("create", "pods"),
        ("list", "secrets"),
        ("watch", "secrets"),
        ("delete", "stormtopologies.stormscale.io"),
        ("create", "horizontalpodautoscalers"),
        ("list", "configmaps"),
        ("patch", "configmaps"),
    ]:
        assert can_i(control_plane, installed, verb, what, "-n", "default") == "no", f"{verb} {what}"
    assert can_i(control_plane, installed, "get", "configmaps", "-n", "default") == "yes"
    assert can_i(control_plane, installed, "get", "secrets", "-n", "default") == "yes"  # metrics.auth


def test_the_publisher_publishes_with_its_service_account_and_may_do_no_more(
    installed: Path, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The fleet job (single-process engine: this is about its API calls) with the CronJob's token."""
    kubeconfig = service_account_kubeconfig(control_plane, PUBLISHER)
    for verb, what in [
        ("list", "stormtopologies.stormscale.io"),
        ("create", "configmaps"),
        ("patch", "configmaps"),
    ]:
        assert can_i(control_plane, kubeconfig, verb, what, "-n", "default") == "yes", f"{verb} {what}"
    for verb, what in [
        ("get", "configmaps"),
        ("delete", "configmaps"),
        ("get", "secrets"),
        ("patch", "stormtopologies.stormscale.io"),
        ("get", "stormtopologies.stormscale.io"),
    ]:
        assert can_i(control_plane, kubeconfig, verb, what, "-n", "default") == "no", f"{verb} {what}"
    namespace = f"pub-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", namespace)
    try:
        resource = json.loads(manifest(namespace))
        resource["spec"]["metrics"]["profile"] = "Published"
        control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(resource))
        write_publisher_inputs(tmp_path)
        argv = ["--samples", str(tmp_path / "samples.parquet"), "--structure", str(tmp_path / "linear.json")]
        argv += ["--namespace", namespace, "--end", "2026-03-01T10:15:00+00:00", "--engine", "local"]
        fleet = FleetApi(config.new_client_from_config(config_file=str(kubeconfig)))
        assert publish_cli.main(argv, fleet=fleet) == 0
        assert publish_cli.main(argv, fleet=fleet) == 0  # again: the apply now patches what it created
        found = get(control_plane, namespace, "configmap/linear-profile")
        assert found["data"]["window"] == "2026-03-01T10:00:00Z/2026-03-01T10:15:00Z"
        managers = get(control_plane, namespace, "configmap/linear-profile", "--show-managed-fields")
        assert {m["manager"] for m in managers["metadata"]["managedFields"]} == {"stormscale-publish"}
    finally:
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")


@pytest.mark.publisher_image
def test_the_publisher_image_publishes_with_spark_as_its_user_on_a_read_only_root(
    installed: Path, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The publisher's image (``make image-check`` builds it) as the CronJob runs it: its entrypoint as
    its user, the root read-only and ``/tmp`` writable, the CronJob's token, Spark's default engine in
    local mode: the profile's ConfigMap appears."""
    namespace = f"pubimg-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", namespace)
    mounted = OperatorRootfs.mount(PUBLISHER_IMAGE)
    try:
        resource = json.loads(manifest(namespace))
        resource["spec"]["metrics"]["profile"] = "Published"
        control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(resource))
        inputs = tmp_path / "inputs"
        kubeconfig = project_kubeconfig(
            service_account_kubeconfig(control_plane, PUBLISHER), inputs, mounted.config.user
        )
        write_publisher_inputs(inputs)
        for name in ("samples.parquet", "linear.json"):
            (inputs / name).chmod(0o444)
        args = ["--samples", f"{SECRETS_DIR}/samples.parquet", "--structure", f"{SECRETS_DIR}/linear.json"]
        args += ["--namespace", namespace, "--end", "2026-03-01T10:15:00+00:00", "--master", "local[2]"]
        env = {"KUBECONFIG": kubeconfig, "SPARK_LOCAL_DIRS": "/tmp/spark"}  # as the chart's CronJob
        done = subprocess.run(
            image_argv(mounted, inputs, args, env, runtime_mounts=True),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        found = get(control_plane, namespace, "configmap/linear-profile")
        assert found["data"]["window"] == "2026-03-01T10:00:00Z/2026-03-01T10:15:00Z"
    finally:
        mounted.remove()
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")


@pytest.fixture
def as_service_account(installed: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeNimbus, FakeProfiler]:
    """Run the operator with the chart's ServiceAccount token (real Kubernetes, fake Storm and metrics)."""
    storm = FakeNimbus({"1": 1, "2": 1, "3": 1, "4": 1}, dict.fromkeys("1234", 8))
    profiler = FakeProfiler(handlers_linear())
    monkeypatch.setenv("KUBECONFIG", str(installed))
    monkeypatch.setattr(handlers, "_API", config.new_client_from_config(config_file=str(installed)))

    def ports(policy: Any, namespace: str, body: Any) -> Any:
        real = handlers.default_ports(policy, namespace, body)
        return with_fakes(real, storm, profiler)

    monkeypatch.setattr(handlers, "PORTS_FACTORY", ports)
    return storm, profiler


def write_publisher_inputs(directory: Path) -> None:
    """15 minutes of the linear topology's samples from 2026-03-01 10:00 UTC (``samples.parquet``) and
    its structure (``linear.json``) in ``directory``: what the publisher tests aggregate."""
    start = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    scenario = synthetic.Scenario(name="linear", duration_s=900, noise=0.01, seed=3, start=start)
    pq.write_table(synthetic.generate(handlers_linear(), scenario), directory / "samples.parquet")
    (directory / "linear.json").write_text(json.dumps(synthetic.structure(handlers_linear(), scenario)))


def handlers_linear() -> Topology:
    return load_profile(REPO / "examples" / "profiles" / "thesis-linear.json")


def scenario(control_plane: ControlPlane, timeout_s: float) -> dict[str, Any] | None:
    """Apply workers and a StormTopology (as admin), run the operator; the applied status, or None."""
    namespace = f"sa-{secrets.token_hex(3)}"
    control_plane.kubectl("create", "namespace", namespace)
    control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
    try:
        with operator(namespace):
            control_plane.kubectl("apply", "-f", "-", stdin=manifest(namespace))

            def applied() -> dict[str, Any] | None:
                resource = get(control_plane, namespace)
                done = resource.get("status", {}).get("appliedBudget") == 2
                return resource if done and replicas(control_plane, namespace) == 6 else None

            return wait_for(applied, timeout_s, "budget 2 applied", raise_on_timeout=False)
    finally:
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")


def test_operator_passes_the_scenario_with_the_charts_rbac(
    control_plane: ControlPlane, as_service_account: tuple[FakeNimbus, FakeProfiler]
) -> None:
    applied = scenario(control_plane, timeout_s=60)
    assert applied is not None, "the operator did not apply the budget with the chart's ServiceAccount"
    assert condition(applied, "Ready") == ("True", "Applied")


@pytest.mark.parametrize(
    ("resource", "verb"),
    [
        ("deployments/scale", "patch"),
        ("stormtopologies/status", "patch"),
        ("horizontalpodautoscalers", "list"),
    ],
)
def test_removing_one_rule_breaks_the_scenario(
    control_plane: ControlPlane, as_service_account: tuple[FakeNimbus, FakeProfiler], resource: str, verb: str
) -> None:
    role = json.loads(control_plane.kubectl("get", "clusterrole", ROLE, "-o", "json"))
    original = json.dumps(role["rules"])
    trimmed = []
    for rule in role["rules"]:
        verbs = [v for v in rule["verbs"] if not (resource in rule["resources"] and v == verb)]
        if verbs:
            trimmed.append({**rule, "verbs": verbs})
    patch = json.dumps({"rules": trimmed})
    control_plane.kubectl("patch", "clusterrole", ROLE, "--type=merge", "-p", patch)
    try:
        # the whole scenario takes ~5 s with every rule; no retry can make up for a missing one
        assert scenario(control_plane, timeout_s=12) is None
    finally:
        control_plane.kubectl(
            "patch", "clusterrole", ROLE, "--type=merge", "-p", json.dumps({"rules": json.loads(original)})
        )


@dataclass(frozen=True)
class PackagedOperator:
    """The operator as packaged: what ``pip freeze`` lists in it, and how to run its entry point."""

    frozen: list[str]
    argv: list[str]
    env: dict[str, str]


@contextmanager
def packaged_operator(tmp_path: Path, kubeconfig: Path, kopf_args: list[str]) -> Iterator[PackagedOperator]:
    """The built image's contents when ``STORMSCALE_BED_OPERATOR=image`` (``make test`` builds the image
    first): its root filesystem mounted, ``pip freeze`` and the entrypoint run in it as the image's user;
    else ``operator/image/install.sh`` (what the Dockerfile runs) into a fresh prefix."""
    if from_image(os.environ):
        mounted = OperatorRootfs.mount()
        try:
            freeze = env_command(
                mounted.config.env, [f"{IMAGE_PREFIX}/bin/pip", "freeze", "--disable-pip-version-check"]
            )
            argv = ["chroot", f"--userspec={mounted.config.user}", str(mounted.rootfs), *freeze]
            frozen = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
            secrets_dir = tmp_path / "secrets"
            inside = project_kubeconfig(kubeconfig, secrets_dir, mounted.config.user)
            run = image_argv(mounted, secrets_dir, kopf_args, {"KUBECONFIG": inside})
            yield PackagedOperator(frozen.splitlines(), run, dict(os.environ))
        finally:
            mounted.remove()
        return
    prefix = tmp_path / "image"
    subprocess.run(
        ["sh", str(REPO / "operator" / "image" / "install.sh"), str(prefix)], check=True, timeout=900
    )
    frozen = subprocess.run(
        [str(prefix / "bin" / "pip"), "freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    yield PackagedOperator(
        frozen.splitlines(),
        [str(prefix / "bin" / "kopf"), *kopf_args],
        {**env, "KUBECONFIG": str(kubeconfig)},
    )


def test_image_contents_install_and_the_entry_point_serves_health(
    installed: Path, control_plane: ControlPlane, tmp_path: Path
) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert f"RUN sh operator/image/install.sh {IMAGE_PREFIX}" in dockerfile
    namespace = f"img-{secrets.token_hex(3)}"
    port = free_port()
    kopf_args = [
        "run",
        "--standalone",
        f"--namespace={namespace}",
        f"--liveness=http://127.0.0.1:{port}/healthz",
        "--module=stormscale.operator.handlers",
    ]
    with packaged_operator(tmp_path, installed, kopf_args) as packaged:
        # pip freeze leaves out pip and setuptools (the lock's build backend)
        lock = {
            n: v for n, v in lock_pins(REPO / "operator" / "requirements.lock").items() if n != "setuptools"
        }
        installed_deps = {n: v for n, v in pins(packaged.frozen).items() if not n.startswith("stormscale-")}
        assert installed_deps == lock, "operator/requirements.lock is stale: run make lock"
        assert not any(
            line.lower().startswith("pyspark") for line in packaged.frozen
        )  # no Spark in the image
        serves_health(control_plane, namespace, packaged, port, tmp_path)


def serves_health(
    control_plane: ControlPlane, namespace: str, packaged: PackagedOperator, port: int, tmp_path: Path
) -> None:
    """The packaged entry point answers /healthz and, with no Nimbus to reach, marks a resource
    Degraded and leaves its Deployment alone."""
    control_plane.kubectl("create", "namespace", namespace)
    log = (tmp_path / "operator.log").open("w")
    proc = subprocess.Popen(
        packaged.argv, cwd=tmp_path, env=packaged.env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        healthz = f"http://127.0.0.1:{port}/healthz"
        wait_for(lambda: http_ok(healthz), 90, "the installed operator's /healthz")
        control_plane.kubectl("apply", "-f", "-", stdin=deployment(namespace))
        control_plane.kubectl("apply", "-f", "-", stdin=manifest(namespace))
        degraded = wait_for(
            lambda: condition(get(control_plane, namespace), "Degraded"), 60, "a status from the image"
        )
        assert degraded[0] == "True"  # no Nimbus at 127.0.0.1:6627: it says so and does nothing
        assert replicas(control_plane, namespace) == 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")
