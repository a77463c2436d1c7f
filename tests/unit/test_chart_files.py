"""The Helm chart's static files: CRDs identical to crds/, values documented key by key."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stormscale.operator import handlers
from tests.harness.kubernetes.helm import ensure_helm

REPO = Path(__file__).parents[2]
CHART = REPO / "charts" / "stormscale"


def test_chart_crds_are_exact_copies_of_the_source() -> None:
    source = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    copies = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert copies == source
    for name in source:
        assert (CHART / "crds" / name).read_bytes() == (REPO / "crds" / name).read_bytes(), (
            f"charts/stormscale/crds/{name} drifted from crds/{name}: cp crds/*.yaml charts/stormscale/crds/"
        )


def test_every_value_is_documented_and_in_the_schema() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    values = yaml.safe_load("\n".join(lines))
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(values) == set(schema["properties"])
    documented = {
        line.split("--")[0].strip("# ").strip() for line in lines if line.startswith("# ") and " -- " in line
    }
    assert set(values) <= documented  # each top-level key has a "# key -- meaning" comment


def render(*values: str) -> list[dict[str, Any]]:
    """The chart's manifests as ``helm template`` renders them with these ``--set`` values."""
    command = [
        str(ensure_helm()),  # built from Go modules on first use
        "template",
        "stormscale",
        str(CHART),
        "-n",
        "stormscale-system",
        "--kube-version",
        "1.31.0",
    ]
    for value in values:
        command += ["--set", value]
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def operator_container(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(
        d
        for d in manifests
        if d["kind"] == "Deployment" and d["metadata"]["labels"]["app.kubernetes.io/component"] == "operator"
    )
    container: dict[str, Any] = deployment["spec"]["template"]["spec"]["containers"][0]
    return {**container, "replicas": deployment["spec"]["replicas"]}


def test_by_default_one_standalone_replica() -> None:
    operator = operator_container(render())
    assert operator["replicas"] == 1
    assert "--standalone" in operator["args"]
    assert not [e for e in operator["env"] if e["name"] == handlers.PEERING_IDENTITY_ENV]


def test_peered_replicas_each_take_a_priority_from_their_pod_s_name() -> None:
    """Kopf pauses every replica that sees a peer of the same priority: with one shared priority two
    replicas both paused and none was active. Each pod's name gives it its own."""
    operator = operator_container(render("peering.enabled=true", "replicaCount=2"))
    assert operator["replicas"] == 2
    assert "--peering=stormscale" in operator["args"]
    assert "--standalone" not in operator["args"]
    identity = [e for e in operator["env"] if e["name"] == handlers.PEERING_IDENTITY_ENV]
    assert identity == [
        {"name": handlers.PEERING_IDENTITY_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    ]
    lifetime = [e["value"] for e in operator["env"] if e["name"] == handlers.PEERING_LIFETIME_ENV]
    assert lifetime == ["60"]
    assert handlers.peering_lifetime(lifetime[0]) == 60


def test_the_priority_is_stable_per_pod_and_differs_between_pods() -> None:
    pods = [f"stormscale-6d4f9b7c8-{suffix}" for suffix in ("x2k9p", "q7wzt", "bb4mn", "h8s2d", "zz001")]
    priorities = [handlers.peering_priority(p) for p in pods]
    assert len(set(priorities)) == len(pods)
    assert priorities == [handlers.peering_priority(p) for p in pods]
    assert all(1 <= p < 2**31 for p in priorities)


def test_the_startup_handler_sets_kopf_s_priority_from_the_identity() -> None:
    import kopf

    settings = kopf.OperatorSettings()
    handlers.set_peering(settings, None, None)
    assert settings.peering.priority == 0  # standalone: Kopf's default, untouched
    assert settings.peering.lifetime == 60
    handlers.set_peering(settings, "stormscale-6d4f9b7c8-x2k9p", "20")
    assert settings.peering.priority == handlers.peering_priority("stormscale-6d4f9b7c8-x2k9p")
    assert settings.peering.lifetime == 20


@pytest.mark.parametrize(
    ("text", "says"), [("soon", "whole number"), ("4", "not in"), ("1e9", "whole"), ("3601", "not in")]
)
def test_a_bad_peering_lifetime_is_one_line_naming_the_variable(text: str, says: str) -> None:
    import kopf

    with pytest.raises(ValueError, match=f"STORMSCALE_PEERING_LIFETIME_SECONDS.*{says}"):
        handlers.set_peering(kopf.OperatorSettings(), "pod", text)


def test_the_bounds_reach_the_operator_as_the_variables_it_reads() -> None:
    """Each ``bounds`` value is passed as the environment variable the reader and the Nimbus client
    read, as a plain number (a large one is not rendered in exponent form)."""
    from stormscale.storm.samples import reader
    from stormscale.storm.wire import DEFAULT_MAX_ELEMENTS, MAX_ELEMENTS_ENV

    env = {
        e["name"]: e.get("value")
        for e in operator_container(render("bounds.prometheusMaxBytes=1073741824"))["env"]
    }
    assert env[reader.MAX_BYTES_ENV] == "1073741824"
    assert env[reader.TIMEOUT_ENV] == "30"
    assert env[reader.MAX_SERIES_ENV] == str(reader.DEFAULT_MAX_SERIES)
    assert env[reader.MAX_POINTS_ENV] == str(reader.DEFAULT_MAX_POINTS)
    assert env[MAX_ELEMENTS_ENV] == str(DEFAULT_MAX_ELEMENTS)
    defaults = {e["name"]: e.get("value") for e in operator_container(render())["env"]}
    assert int(defaults[reader.MAX_BYTES_ENV]) == reader.DEFAULT_MAX_BYTES


def test_the_endpoint_policy_reaches_the_operator_as_the_variables_it_reads() -> None:
    """``endpointPolicy`` lists become the comma-separated variables the operator parses; unset, both
    are empty and the policy is open."""
    from stormscale.operator.endpoints import NIMBUS_ENV, URLS_ENV, EndpointPolicy

    env = {
        e["name"]: e.get("value")
        for e in operator_container(
            render(
                "endpointPolicy.nimbus={*.storm.svc:6627,nimbus.shared}",
                "endpointPolicy.urls={http://*.monitoring.svc:9090}",
            )
        )["env"]
    }
    assert env[NIMBUS_ENV] == "*.storm.svc:6627,nimbus.shared"
    assert env[URLS_ENV] == "http://*.monitoring.svc:9090"
    policy = EndpointPolicy.from_env({NIMBUS_ENV: env[NIMBUS_ENV], URLS_ENV: env[URLS_ENV]})
    assert policy.nimbus_allowed("nimbus.team-a.storm.svc", 6627)
    assert not policy.nimbus_allowed("169.254.169.254", 6627)
    assert policy.url_allowed("http://prometheus.monitoring.svc:9090")
    defaults = {e["name"]: e.get("value") for e in operator_container(render())["env"]}
    assert (defaults[NIMBUS_ENV], defaults[URLS_ENV]) == ("", "")
    assert EndpointPolicy.from_env({NIMBUS_ENV: "", URLS_ENV: ""}) == EndpointPolicy()


def secret_rules(manifests: list[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """(kind, namespace, verbs) of every operator role's rule on Secrets."""
    return [
        (d["kind"], d["metadata"].get("namespace", ""), rule["verbs"])
        for d in manifests
        if d["kind"] in {"ClusterRole", "Role"}
        and not d["metadata"]["name"].endswith(("-discovery", "-publisher"))
        for rule in d["rules"]
        if "secrets" in rule["resources"]
    ]


def test_the_operator_may_get_secrets_where_it_watches_unless_told_not_to() -> None:
    assert secret_rules(render()) == [("ClusterRole", "", ["get"])]
    assert secret_rules(render("watchNamespaces={a,b}")) == [("Role", "a", ["get"]), ("Role", "b", ["get"])]
    assert secret_rules(render("rbac.readSecrets=false")) == []


SCHEMA_KEYWORDS = {
    "type", "description", "title", "properties", "items", "additionalProperties", "required", "enum",
    "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "default", "nullable", "anyOf", "allOf", "oneOf", "not", "example",
}  # fmt: skip


def schema_problems(node: object, path: str = "") -> list[str]:
    """Every key of a CRD schema node that is no OpenAPI keyword (nor ``x-kubernetes-*``), and every
    sub-schema that is not a mapping: what YAML makes of an unquoted comma in a flow mapping
    (``{description: a, b}`` reads ``b`` as a key), which the API server refuses on a re-apply."""
    if not isinstance(node, dict):
        return [f"{path}: not a schema"]
    problems = [
        f"{path}: {key!r}"
        for key in node
        if key not in SCHEMA_KEYWORDS and not str(key).startswith("x-kubernetes-")
    ]
    for name, sub in (node.get("properties") or {}).items():
        problems += schema_problems(sub, f"{path}.{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(node.get(key), dict):
            problems += schema_problems(node[key], f"{path}.{key}")
    for key in ("anyOf", "allOf", "oneOf"):
        for i, sub in enumerate(node.get(key) or []):
            problems += schema_problems(sub, f"{path}.{key}[{i}]")
    return problems


def test_every_crd_schema_node_holds_only_schema_keywords() -> None:
    broken = yaml.safe_load("{type: object, properties: {name: {type: string, description: a, in b}}}")
    assert schema_problems(broken) == [".name: 'in b'"]
    for path in sorted((REPO / "crds").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            for version in document["spec"]["versions"]:
                schema = version["schema"]["openAPIV3Schema"]
                assert schema_problems(schema) == [], f"{path.name} {version['name']}"


EXPORT = (
    "samplesExport.enabled=true",
    "samplesExport.prometheus=http://prometheus.monitoring:9090",
    "samplesExport.nimbus=nimbus.storm:6627",
    "samplesExport.volume.persistentVolumeClaim.claimName=storm-samples",
)


def cron_container(manifests: list[dict[str, Any]], component: str) -> dict[str, Any]:
    job = next(
        d
        for d in manifests
        if d["kind"] == "CronJob" and d["metadata"]["labels"]["app.kubernetes.io/component"] == component
    )
    pod: dict[str, Any] = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return {**pod["containers"][0], "volumes": pod["volumes"]}


def test_the_samples_are_exported_on_a_schedule_to_the_volume_the_publisher_reads() -> None:
    manifests = render(*EXPORT, "publisher.enabled=true")
    export = cron_container(manifests, "samples-export")
    assert export["command"] == ["stormscale-samples-export"]
    assert "--prometheus=http://prometheus.monitoring:9090" in export["args"]
    assert "--nimbus=nimbus.storm:6627" in export["args"]
    assert "--root=/samples" in export["args"]
    assert "--retention=48h" in export["args"]
    claim = {"name": "samples", "persistentVolumeClaim": {"claimName": "storm-samples"}}
    assert claim in export["volumes"]
    publisher = cron_container(manifests, "publisher")
    assert publisher["args"][:3] == ["--samples", "/samples", "--structure=/samples/structures"]
    assert {"name": "samples", "mountPath": "/samples", "readOnly": True} in publisher["volumeMounts"]
    assert claim in publisher["volumes"]


def test_the_publisher_s_own_samples_win_over_the_export() -> None:
    publisher = cron_container(
        render(
            *EXPORT,
            "publisher.enabled=true",
            "publisher.samples={s3://bucket/samples}",
            "publisher.structures=/s",
        ),
        "publisher",
    )
    assert publisher["args"][:3] == ["--samples", "s3://bucket/samples", "--structure=/s"]


@pytest.mark.parametrize(
    ("missing", "says"),
    [(1, "samplesExport.prometheus"), (2, "samplesExport.nimbus"), (3, "samplesExport.volume")],
)
def test_an_export_without_its_endpoints_or_volume_is_refused_naming_the_value(
    missing: int, says: str
) -> None:
    values = [v for i, v in enumerate(EXPORT) if i != missing]
    with pytest.raises(subprocess.CalledProcessError) as failed:
        render(*values)
    assert says in failed.value.stderr


def test_a_bad_retention_is_refused_by_the_schema() -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        render(*EXPORT, "samplesExport.retention=1w")
    assert "retention" in failed.value.stderr
