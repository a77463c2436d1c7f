"""The chart's RBAC and exporter, rendered by `helm template` (no cluster): the
operator may patch only ``deployments/scale``, and the exporter never binds 0.0.0.0 by default."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.kubernetes.helm import ensure_helm

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def helm() -> Path:
    """helm, built from Go modules when missing (never skipped: CI has no other helm)."""
    return ensure_helm()


def render(helm: Path, *values: str) -> list[dict[str, Any]]:
    flags = [f for v in values for f in ("--set", v)]
    out = subprocess.run(
        [str(helm), "template", "s", str(REPO / "charts" / "stormscale"), "--kube-version", "1.31.0", *flags],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def deployment_rules(docs: list[dict[str, Any]]) -> dict[str, set[str]]:
    rules: dict[str, set[str]] = {}
    for doc in docs:
        if doc["kind"] in {"ClusterRole", "Role"}:
            for rule in doc["rules"]:
                if "apps" in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        rules.setdefault(resource, set()).update(rule["verbs"])
    return rules


@pytest.mark.parametrize("values", [(), ("watchNamespaces={a,b}",)])
def test_the_operator_may_read_deployments_and_patch_only_their_scale(
    helm: Path, values: tuple[str, ...]
) -> None:
    assert deployment_rules(render(helm, *values)) == {"deployments": {"get"}, "deployments/scale": {"patch"}}


def exporter_args(docs: list[dict[str, Any]]) -> list[str]:
    deployment = next(d for d in docs if d["kind"] == "Deployment" and "exporter" in d["metadata"]["name"])
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_the_exporter_binds_the_pod_ip_by_default_and_a_chosen_address_on_request(helm: Path) -> None:
    assert "--listen=$(POD_IP)" in exporter_args(render(helm))
    assert "--listen=127.0.0.1" in exporter_args(render(helm, "exporter.listen=127.0.0.1"))
    assert not any("0.0.0.0" in a for a in exporter_args(render(helm)))


def test_the_grafana_dashboard_is_off_by_default_and_carries_the_sidecar_label_when_on(helm: Path) -> None:
    assert not [d for d in render(helm) if d["kind"] == "ConfigMap"]
    (config_map,) = [d for d in render(helm, "dashboard.enabled=true") if d["kind"] == "ConfigMap"]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads(config_map["data"]["stormscale.json"])
    assert shipped == json.loads(
        (REPO / "charts" / "stormscale" / "dashboards" / "stormscale.json").read_text()
    )
    (moved,) = [
        d
        for d in render(helm, "dashboard.enabled=true", "dashboard.namespace=grafana")
        if d["kind"] == "ConfigMap"
    ]
    assert moved["metadata"]["namespace"] == "grafana"


def operator_pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = next(
        d
        for d in docs
        if d["kind"] == "Deployment" and d["spec"]["template"]["spec"]["containers"][0]["name"] == "operator"
    )
    pod: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return pod


def test_the_placement_token_is_mounted_from_its_secret_only_when_named(helm: Path) -> None:
    plain = operator_pod(render(helm))
    assert "STORMSCALE_PLACEMENT_TOKEN_FILE" not in {e["name"] for e in plain["containers"][0]["env"]}
    assert "placement-token" not in {v["name"] for v in plain["volumes"]}
    pod = operator_pod(render(helm, "scheduler.tokenSecret.name=sched", "scheduler.tokenSecret.key=t"))
    (container,) = pod["containers"]
    (env,) = [e for e in container["env"] if e["name"] == "STORMSCALE_PLACEMENT_TOKEN_FILE"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "placement-token"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "placement-token"]
    assert env["value"] == mount["mountPath"] + "/token"
    assert mount["readOnly"] is True
    assert volume["secret"] == {"secretName": "sched", "items": [{"key": "t", "path": "token"}]}


def freshness_env(docs: list[dict[str, Any]]) -> str | None:
    operator = next(d for d in docs if d["kind"] == "Deployment" and "exporter" not in d["metadata"]["name"])
    env = operator["spec"]["template"]["spec"]["containers"][0]["env"]
    return next((e["value"] for e in env if e["name"] == "STORMSCALE_PROFILE_FRESHNESS_SECONDS"), None)


@pytest.mark.parametrize(("value", "env"), [("12.5", "12.5"), ("0", "0"), ("3600", "3600")])
def test_a_fractional_profile_freshness_from_the_command_line_reaches_the_operator(
    helm: Path, value: str, env: str
) -> None:
    """``--set`` passes ``12.5`` as a string: the schema takes a number's text as well as a number."""
    assert freshness_env(render(helm, f"profileFreshnessSeconds={value}")) == env


@pytest.mark.parametrize("value", ["3600.5", "4000", "-1", "abc", "1e3"])
def test_a_profile_freshness_outside_0_to_3600_is_refused_by_the_schema(helm: Path, value: str) -> None:
    with pytest.raises(subprocess.CalledProcessError) as refused:
        render(helm, f"profileFreshnessSeconds={value}")
    assert "profileFreshnessSeconds" in refused.value.stderr
