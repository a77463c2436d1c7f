"""The chart's least privilege, rendered by ``helm template``: the operator pod's NetworkPolicy, the
publisher's ConfigMap rights scoped to the namespaces it serves, and the metrics server's address."""

from __future__ import annotations

from typing import Any

from tests.unit.test_chart_files import operator_container, render

PUBLISHER = (
    "publisher.enabled=true",
    "publisher.samples={/data/samples}",
    "publisher.structures=/data/structures",
)


def network_policy(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    (policy,) = [d for d in manifests if d["kind"] == "NetworkPolicy"]
    spec: dict[str, Any] = policy["spec"]
    return spec


def ports(rule: dict[str, Any]) -> set[tuple[str, int]]:
    return {(p["protocol"], p["port"]) for p in rule["ports"]}


def configmap_writes(
    manifests: list[dict[str, Any]],
) -> list[tuple[str, str | None, set[str], list[str] | None]]:
    """Every rule that may write ConfigMaps: (kind of role, its namespace, verbs, resourceNames)."""
    found = []
    for d in manifests:
        if d["kind"] not in {"Role", "ClusterRole"}:
            continue
        for rule in d["rules"]:
            writes = set(rule["verbs"]) - {"get", "list", "watch"}
            if "configmaps" in rule["resources"] and writes:
                found.append((d["kind"], d["metadata"].get("namespace"), writes, rule.get("resourceNames")))
    return found


def test_the_operator_pod_is_reached_only_on_its_health_and_metrics_ports_from_the_chosen_peers() -> None:
    spec = network_policy(render())
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "operator"
    (ingress,) = spec["ingress"]
    assert ports(ingress) == {("TCP", 8080), ("TCP", 8081)}
    assert ingress["from"] == [
        {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    ]
    assert network_policy(render("networkPolicy.metricsFrom=null"))["ingress"] == []  # nothing at all


def test_the_operator_pod_reaches_only_the_api_server_dns_nimbus_and_prometheus() -> None:
    spec = network_policy(
        render(
            "networkPolicy.apiServer.cidrs={10.0.0.1/32}",
            "networkPolicy.nimbus.ports={6627,6628}",
            "networkPolicy.prometheus.ports={443}",
        )
    )
    api, dns, nimbus, prometheus = spec["egress"]
    assert ports(api) == {("TCP", 443), ("TCP", 6443)}
    assert api["to"] == [{"ipBlock": {"cidr": "10.0.0.1/32"}}]
    assert ports(dns) == {("UDP", 53), ("TCP", 53)}
    assert dns["to"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]
    assert ports(nimbus) == {("TCP", 6627), ("TCP", 6628)}
    assert ports(prometheus) == {("TCP", 443)}


def test_the_network_policy_can_be_turned_off() -> None:
    assert not [d for d in render("networkPolicy.enabled=false") if d["kind"] == "NetworkPolicy"]


def test_no_cluster_wide_configmap_write_remains_when_watch_namespaces_is_set() -> None:
    manifests = render("watchNamespaces={team-a,team-b}", *PUBLISHER)
    writes = configmap_writes(manifests)
    assert sorted((kind, ns) for kind, ns, _, _ in writes) == [("Role", "team-a"), ("Role", "team-b")]
    assert all(verbs == {"create", "patch"} for _, _, verbs, _ in writes)
    operator_rules = [r for d in manifests if d["kind"] == "ClusterRole" for r in d["rules"]]
    assert not [r for r in operator_rules if "configmaps" in r["resources"]]


def test_the_publisher_may_patch_only_the_named_configmaps_and_create_only_where_it_serves() -> None:
    writes = configmap_writes(
        render("watchNamespaces={team-a}", "publisher.configMapNames={linear-profile}", *PUBLISHER)
    )
    assert sorted(writes, key=lambda w: sorted(w[2])) == [
        ("Role", "team-a", {"create"}, None),  # RBAC cannot scope create by name
        ("Role", "team-a", {"patch"}, ["linear-profile"]),
    ]


def test_the_publisher_s_own_namespaces_scope_it_apart_from_the_operator_s() -> None:
    manifests = render("publisher.namespaces={team-a}", *PUBLISHER)
    assert [(kind, ns) for kind, ns, _, _ in configmap_writes(manifests)] == [("Role", "team-a")]
    (job,) = [d for d in manifests if d["kind"] == "CronJob"]
    args = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=team-a" in args


def test_without_namespaces_the_publisher_s_configmap_rights_are_cluster_wide() -> None:
    """The one case left cluster-wide: it serves every namespace (documented)."""
    assert [(kind, ns) for kind, ns, _, _ in configmap_writes(render(*PUBLISHER))] == [("ClusterRole", None)]


def test_the_metrics_bind_the_pod_ip_by_default_and_a_chosen_address_on_request() -> None:
    def listen(*values: str) -> str:
        env = operator_container(render(*values))["env"]
        return str(next(e["value"] for e in env if e["name"] == "STORMSCALE_METRICS_LISTEN"))

    assert listen() == "$(POD_IP):8081"
    assert listen("metrics.listen=127.0.0.1") == "127.0.0.1:8081"
