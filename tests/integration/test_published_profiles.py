"""Published profiles on real parts: the fleet job on real PySpark (``local[2]``)
profiles synthetic Parquet samples and applies a ConfigMap into the real API server; the operator,
with the real Kubernetes ports and a StormTopology asking for ``profile: Published``, plans on it.
A stale and a malformed ConfigMap give the ``PublishedProfile`` condition and no action.

Nimbus is a recording fake, and the in-process profiler always fails here (there is no Prometheus):
whatever the operator plans on can only be the published profile, and a fallback ends Degraded
without acting. One SparkSession serves the module (reused if the run already has one).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kubernetes import client
from pyspark.sql import SparkSession

from stormscale.aggregation.published import configmap, parse_published
from stormscale.aggregation.spark import job
from stormscale.operator import handlers
from stormscale.operator.decision.planning import planning_model, strategy_plans
from stormscale.operator.policy import Policy, parse_spec
from stormscale.operator.ports import Ports, StaleMetricsError
from stormscale.planner import load_profile
from stormscale.publish import cli
from stormscale.publish.kube import FleetApi
from tests.harness.fakes.ports import FakeNimbus, FakeProfiler, with_fakes
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.kubernetes.fixtures import scratch_namespace
from tests.harness.waiting import wait_for
from tests.integration.test_operator_api import (
    condition,
    deployment,
    events,
    get,
    operator,
    replicas,
    resource,
)
from tests.synthetic import samples as synthetic

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).parents[2]
LINEAR = load_profile(REPO / "examples" / "profiles" / "thesis-linear.json")
EXECUTORS, TASKS = {"1": 1, "2": 1, "3": 1, "4": 1}, dict.fromkeys("1234", 8)
REL = 0.03


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    existing = SparkSession.getActiveSession()
    session = existing or job.session("local[2]", shuffle_partitions=2, app="published-profiles")
    yield session
    if existing is None:
        session.stop()


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, datetime]:
    """20 minutes of the thesis's linear topology (as Storm topology ``linear``), ending 5 minutes
    ago, and its structure file."""
    folder = tmp_path_factory.mktemp("published")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=25)
    scenario = synthetic.Scenario(name="linear", duration_s=1200, noise=0.01, seed=11, start=start)
    pq.write_table(synthetic.generate(LINEAR, scenario), folder / "samples.parquet")
    structures = folder / "structures"
    structures.mkdir()
    document = synthetic.structure(LINEAR, scenario)
    (structures / "linear.json").write_text(json.dumps(document), encoding="utf-8")
    return folder / "samples.parquet", structures, start + timedelta(seconds=1200)


PUBLISHED = {"prometheus": "http://127.0.0.1:9", "profile": "Published", "publishedMaxAge": "1h"}


def stormtopology(namespace: str, budget: int = 2) -> dict[str, Any]:
    return resource(namespace, budget, metrics=PUBLISHED)


@pytest.fixture
def namespace(control_plane: ControlPlane, stormtopology_crd: Path) -> Iterator[str]:
    with scratch_namespace(control_plane, "pub") as name:
        control_plane.kubectl("apply", "-f", "-", stdin=deployment(name))
        yield name


@pytest.fixture
def storm(
    control_plane: ControlPlane, kube_api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> FakeNimbus:
    """Real Kubernetes ports (the published profile's too), fake Nimbus, and an in-process profiler
    that cannot measure: a plan can only rest on the ConfigMap."""
    nimbus = FakeNimbus(dict(EXECUTORS), dict(TASKS))
    blind = FakeProfiler(LINEAR, fail=StaleMetricsError("no Prometheus in this test"))
    monkeypatch.setenv("KUBECONFIG", str(control_plane.kubeconfig))
    monkeypatch.setattr(handlers, "_API", kube_api)

    def ports(policy: Policy, namespace: str, body: Any) -> Ports:
        real = handlers.default_ports(policy, namespace, body)
        return with_fakes(real, nimbus, blind)

    monkeypatch.setattr(handlers, "PORTS_FACTORY", ports)
    return nimbus


def publish(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    samples: tuple[Path, Path, datetime],
) -> int:
    """The fleet job as the CronJob runs it (Spark, here the module's local[2] session)."""
    parquet, structures, end = samples
    argv = ["--samples", str(parquet), "--structure", str(structures), "--namespace", namespace]
    argv += ["--end", (end + timedelta(seconds=30)).isoformat(), "--window", "1h"]
    argv += ["--engine", "spark-grouped"]
    return cli.main(argv, fleet=FleetApi(kube_api))


def config_map(control_plane: ControlPlane, namespace: str) -> dict[str, Any]:
    return get(control_plane, namespace, "configmap/linear-profile")


def test_the_job_publishes_and_the_operator_plans_on_it(
    control_plane: ControlPlane,
    *,
    kube_api: client.ApiClient,
    spark: SparkSession,
    samples: tuple[Path, Path, datetime],
    namespace: str,
    storm: FakeNimbus,
) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(stormtopology(namespace, budget=0)))
    assert publish(control_plane, kube_api, namespace, samples) == 0
    found = config_map(control_plane, namespace)
    owner = get(control_plane, namespace)["metadata"]["uid"]
    assert found["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "stormscale",
        "stormscale.io/stormtopology": "linear",
    }
    assert [(r["kind"], r["uid"]) for r in found["metadata"]["ownerReferences"]] == [("StormTopology", owner)]
    published = parse_published(found["data"])
    assert published.end <= samples[2]
    assert published.end > samples[2] - timedelta(seconds=30)
    truth = {c.id: c for c in LINEAR.components}
    for c in published.topology.components:
        if not c.is_spout:
            assert c.capacity_per_unit == pytest.approx(truth[c.id].capacity_per_unit, rel=REL), c.id
    assert published.document["confidence"]["steady"] is True

    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(stormtopology(namespace, budget=2)))
        applied = wait_for(
            lambda: (
                r
                if (r := get(control_plane, namespace)).get("status", {}).get("appliedBudget") == 2
                else None
            ),
            60,
            "appliedBudget 2 on the published profile",
        )
    assert runner.exception is None
    plan = applied["status"]["lastPlan"]
    assert plan["profileSource"] == "Published"
    assert plan["profileWindow"] == found["data"]["window"]
    assert condition(applied, "PublishedProfile") == ("True", "PublishedProfileUsed")
    assert condition(applied, "Ready") == ("True", "Applied")
    policy = parse_spec(stormtopology(namespace)["spec"])
    expected = strategy_plans(planning_model(published.topology, EXECUTORS, TASKS, policy), 2, policy)
    assert plan["allocation"] == expected[policy.strategy].allocation
    assert storm.executors == {c: EXECUTORS[c] + plan["allocation"].get(c, 0) for c in EXECUTORS}
    assert replicas(control_plane, namespace) == sum(storm.executors.values())


def corrupt(document: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap with its profile.json cut off half way (a hand edit, a truncated write)."""
    text = document["data"]["profile.json"]
    meta = {k: document["metadata"][k] for k in ("name", "namespace")}
    data = {**document["data"], "profile.json": text[: len(text) // 2]}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def aged(document: dict[str, Any], hours: float) -> dict[str, Any]:
    """The same profile, its window moved ``hours`` into the past (older than publishedMaxAge 1h)."""
    published = parse_published(document["data"])
    shift = timedelta(hours=hours)
    meta = document["metadata"]
    return configmap(
        namespace=meta["namespace"],
        stormtopology="linear",
        uid=None,
        document=published.document,
        start=published.start - shift,
        end=published.end - shift,
        computed_at=published.computed_at - shift,
    )


@pytest.mark.parametrize(
    ("damage", "reason", "says"),
    [
        (lambda d: aged(d, 3), "PublishedProfileStale", "ended 3h"),
        (corrupt, "PublishedProfileInvalid", "profile.json is not JSON"),
    ],
    ids=["stale", "malformed"],
)
def test_a_stale_or_malformed_profile_gives_a_condition_and_no_action(
    control_plane: ControlPlane,
    *,
    kube_api: client.ApiClient,
    spark: SparkSession,
    samples: tuple[Path, Path, datetime],
    namespace: str,
    storm: FakeNimbus,
    damage: Any,
    reason: str,
    says: str,
) -> None:
    control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(stormtopology(namespace, budget=0)))
    assert publish(control_plane, kube_api, namespace, samples) == 0
    FleetApi(kube_api).apply(damage(config_map(control_plane, namespace)))
    with operator(namespace) as runner:
        control_plane.kubectl("apply", "-f", "-", stdin=json.dumps(stormtopology(namespace, budget=2)))
        held = wait_for(
            lambda: (
                r
                if condition(r := get(control_plane, namespace), "PublishedProfile") == ("False", reason)
                else None
            ),
            60,
            f"PublishedProfile False {reason}",
        )
        wait_for(
            lambda: condition(get(control_plane, namespace), "Degraded") == ("True", "StaleMetrics"),
            60,
            "Degraded StaleMetrics",
        )
    assert runner.exception is None
    message = next(c["message"] for c in held["status"]["conditions"] if c["type"] == "PublishedProfile")
    assert says in message
    assert "in-process" in message
    assert [c for c in storm.calls if c[0] == "rebalance"] == []
    assert replicas(control_plane, namespace) == 4
    assert "appliedBudget" not in get(control_plane, namespace)["status"]
    assert len(events(control_plane, namespace, reason)) == 1
