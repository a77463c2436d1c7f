"""Kubernetes adapters: the worker Deployment, HPAs that target it, and the resource's status."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from stormscale.operator.ports import RefusedError, StatusWriter, UnavailableError, Workers

FIELD_MANAGER = "stormscale"
GROUP, VERSION, PLURAL = "stormscale.io", "v1alpha1", "stormtopologies"
_CPU = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m?)$")


def millicores(quantity: str) -> int:
    """A Kubernetes CPU quantity (``"500m"``, ``"1"``, ``"1.5"``) in millicores."""
    match = _CPU.match(quantity.strip())
    if not match:
        raise ValueError(f"not a CPU quantity: {quantity!r}")
    value = float(match.group(1))
    return round(value if match.group(2) else value * 1000)


def _raise(err: ApiException | urllib3.exceptions.HTTPError, what: str) -> NoReturn:
    """Map a client error to the ports' two kinds: retry later, or don't."""
    if isinstance(err, ApiException) and err.status in {400, 403, 404, 409, 422}:
        raise RefusedError(f"{what}: {err.status} {err.reason}") from None
    status = getattr(err, "status", None)
    raise UnavailableError(f"{what}: {status or type(err).__name__} {getattr(err, 'reason', err)}") from None


def workers_from(deployment: Mapping[str, Any], hpas: list[Mapping[str, Any]]) -> Workers:
    """Replicas, the first container's CPU limit, and an HPA targeting the Deployment (JSON objects)."""
    name = deployment["metadata"]["name"]
    containers = deployment["spec"]["template"]["spec"].get("containers") or [{}]
    cpu = (containers[0].get("resources") or {}).get("limits", {}).get("cpu")
    target = next(
        (
            h["metadata"]["name"]
            for h in hpas
            if h["spec"]["scaleTargetRef"].get("kind") == "Deployment"
            and h["spec"]["scaleTargetRef"]["name"] == name
        ),
        None,
    )
    return Workers(
        replicas=deployment["spec"].get("replicas", 1),
        cpu_limit_millicores=millicores(str(cpu)) if cpu else None,
        hpa=target,
    )


class KubeDeployments:
    """``WorkerDeployments`` on the apps/v1 and autoscaling/v2 APIs."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._apps = client.AppsV1Api(api)
        self._hpa = client.AutoscalingV2Api(api)

    def read(self, namespace: str, name: str) -> Workers:
        try:
            deployment = self._api.sanitize_for_serialization(
                self._apps.read_namespaced_deployment(name, namespace)
            )
            hpas = self._api.sanitize_for_serialization(
                self._hpa.list_namespaced_horizontal_pod_autoscaler(namespace)
            )["items"]
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"Deployment {namespace}/{name}")
        return workers_from(deployment, hpas)

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """Server-side apply of ``spec.replicas`` only, owned by the ``stormscale`` field manager."""
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas},
        }
        try:
            self._apps.patch_namespaced_deployment(  # type: ignore[call-arg]  # stubs lack _content_type
                name,
                namespace,
                body,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"scale Deployment {namespace}/{name} to {replicas}")


def status_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386) from ``old`` to ``new`` status, at every depth: a merge patch
    merges nested objects, so a key gone from a nested map (a component no longer in
    ``lastPlan.allocation``, say) must be sent as ``None`` too, or it would stay behind."""
    patch: dict[str, Any] = {k: None for k in old if k not in new and k != "kopf"}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            patch[key] = status_patch(before, value)
        else:
            patch[key] = value
    return patch


class WrittenStatus:
    """A ``StatusWriter`` that remembers what the stored status is after each of its saves.

    Reconcile saves its intent (``pending``) in the middle of a pass; the final patch must be taken
    against that, not against the status read at the start, or a key written mid-pass and dropped by
    the end of the same pass (an apply that needed no change) would stay behind and be applied again.
    """

    def __init__(self, inner: StatusWriter, stored: Mapping[str, Any]) -> None:
        self._inner = inner
        self.stored: dict[str, Any] = dict(stored)

    def save(self, namespace: str, name: str, status: Mapping[str, object]) -> None:
        self._inner.save(namespace, name, status)
        self.stored = merge_patched(self.stored, status)


def merge_patched(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """``target`` after the JSON merge patch ``patch`` (RFC 7386): ``None`` deletes, objects merge."""
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            before = result.get(key)
            result[key] = merge_patched(before if isinstance(before, Mapping) else {}, value)
        else:
            result[key] = value
    return result


class KubeStatus:
    """``StatusWriter``: merge-patches the StormTopology's status subresource."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)

    def load(self, namespace: str, name: str) -> dict[str, Any]:
        """The resource as the API server has it now (the watch's copy may lag our own writes)."""
        try:
            found: dict[str, Any] = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"StormTopology {namespace}/{name}")
        return found

    def save(self, namespace: str, name: str, status: Mapping[str, object]) -> None:
        try:
            self._custom.patch_namespaced_custom_object_status(  # type: ignore[call-arg]
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                {"status": dict(status)},
                _content_type="application/merge-patch+json",
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"status of StormTopology {namespace}/{name}")
