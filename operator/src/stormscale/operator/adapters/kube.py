"""Kubernetes adapters: the worker Deployment (with the other writers of its replicas), HPAs that
target it, its pods, the resource's status, and the fleet job's published profile (a ConfigMap)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from stormscale.operator.policy import millicores
from stormscale.operator.ports import GoneError, RefusedError, SupersededError, UnavailableError, Workers
from stormscale.operator.status import StormTopologyStatus, status_patch
from stormscale.storm.samples import Pod

FIELD_MANAGER = "stormscale"
#: The annotation a ReplicaSet ranks pods by when it scales down: lower goes first (Kubernetes'
#: PodDeletionCost, beta and on by default since 1.22).
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
#: The cost given to pods the operator wants removed first (any value below the default 0 would do).
REMOVE_FIRST_COST = "-100"
GROUP, VERSION, PLURAL = "stormscale.io", "v1alpha1", "stormtopologies"
#: (connect, read) seconds for every call to the API server. Without it a silent API server blocks a
#: call for ever, under the resource's lock in Kopf's shared thread pool: a few such calls stall every
#: StormTopology while liveness stays green. A timeout is an ``UnavailableError``: retried next pass.
REQUEST_TIMEOUT_S = (5.0, 15.0)


def _raise(err: ApiException | urllib3.exceptions.HTTPError, what: str) -> NoReturn:
    """Map a client error to the ports' two kinds: retry later, or don't."""
    if isinstance(err, ApiException) and err.status == 404:
        raise GoneError(f"{what}: {err.status} {err.reason}") from None
    if isinstance(err, ApiException) and err.status in {400, 401, 403, 409, 422}:
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
        replicas_owners=replicas_owners(deployment),
    )


def replicas_owners(deployment: Mapping[str, Any]) -> tuple[str, ...]:
    """Field managers other than the operator's (:data:`FIELD_MANAGER`) that own the Deployment's
    ``spec.replicas`` (``f:spec.f:replicas`` in ``metadata.managedFields``), sorted.

    By ``Apply`` (``kubectl apply --server-side``, Argo CD's and Flux's server-side apply) or by
    ``Update`` (client-side apply, ``kubectl edit``/``patch``, and ``kubectl scale``: manager
    ``kubectl``, ``subresource: scale``). A manager loses the field when another one changes its value
    (or force-applies it): the operator's forced apply leaves it the only owner, so another owner here
    has written the field since (or re-applied the same value), or created the Deployment and the
    operator has not scaled it yet; the decision tells them apart by the count.
    """
    owners = {
        str(entry["manager"])
        for entry in deployment["metadata"].get("managedFields") or []
        if entry.get("manager") != FIELD_MANAGER
        and "f:replicas" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    }
    return tuple(sorted(owners))


def label_selector(selector: Mapping[str, Any]) -> str:
    """A Deployment's ``spec.selector`` (matchLabels and matchExpressions) as a list call's
    ``labelSelector`` string."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        if operator in {"In", "NotIn"}:
            terms.append(f"{key} {operator.lower()} ({','.join(values)})")
        elif operator == "Exists":
            terms.append(key)
        elif operator == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


def pods_from(deployment: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Pod]:
    """The worker pods (JSON objects) as the CPU join needs them: name, IP, and the container the
    Deployment's template names first (the one whose CPU limit ``workers_from`` reads) with its limit."""
    template = deployment["spec"]["template"]["spec"].get("containers") or [{}]
    wanted = template[0].get("name")
    out = []
    for pod in pods:
        containers = pod.get("spec", {}).get("containers") or []
        container = next((c for c in containers if c.get("name") == wanted), None)
        if container is None:
            continue
        cpu = (container.get("resources") or {}).get("limits", {}).get("cpu")
        out.append(
            Pod(
                name=pod["metadata"]["name"],
                ip=(pod.get("status") or {}).get("podIP"),
                container=container["name"],
                cpu_limit_cores=millicores(str(cpu)) / 1000 if cpu else None,
                terminating=bool(pod["metadata"].get("deletionTimestamp")),
            )
        )
    return sorted(out, key=lambda p: p.name)


class KubePods:
    """The worker Deployment's pods (``Pods`` of the profiler): its selector, then a list call."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._apps = client.AppsV1Api(api)
        self._core = client.CoreV1Api(api)

    def worker_pods(self, namespace: str, deployment: str) -> list[Pod]:
        try:
            found = self._api.sanitize_for_serialization(
                self._apps.read_namespaced_deployment(
                    deployment, namespace, _request_timeout=REQUEST_TIMEOUT_S
                )
            )
            selector = label_selector(found["spec"].get("selector") or {})
            pods = self._api.sanitize_for_serialization(
                self._core.list_namespaced_pod(
                    namespace, label_selector=selector, _request_timeout=REQUEST_TIMEOUT_S
                )
            )["items"]
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"pods of Deployment {namespace}/{deployment}")
        return pods_from(found, pods)


class KubeDeployments:
    """``WorkerDeployments`` on the apps/v1 and autoscaling/v2 APIs."""

    def __init__(self, api: client.ApiClient) -> None:
        self._api = api
        self._apps = client.AppsV1Api(api)
        self._hpa = client.AutoscalingV2Api(api)

    def read(self, namespace: str, name: str) -> Workers:
        try:
            deployment = self._api.sanitize_for_serialization(
                self._apps.read_namespaced_deployment(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
            )
            hpas = self._api.sanitize_for_serialization(
                self._hpa.list_namespaced_horizontal_pod_autoscaler(
                    namespace, _request_timeout=REQUEST_TIMEOUT_S
                )
            )["items"]
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"Deployment {namespace}/{name}")
        return workers_from(deployment, hpas)

    def scale(self, namespace: str, name: str, replicas: int) -> None:
        """Server-side apply of ``spec.replicas`` on the ``scale`` subresource, owned by the ``stormscale``
        field manager: RBAC then grants ``deployments/scale`` only, so neither the operator nor a
        StormTopology author steering it can change any other field of a Deployment."""
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas},
        }
        try:
            self._apps.patch_namespaced_deployment_scale(  # type: ignore[call-arg]  # stubs lack _content_type
                name,
                namespace,
                body,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _request_timeout=REQUEST_TIMEOUT_S,
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"scale Deployment {namespace}/{name} to {replicas}")

    def pods(self, namespace: str, name: str) -> list[Pod]:
        """The Deployment's worker pods (``pods: list`` with the Deployment's selector)."""
        return KubePods(self._api).worker_pods(namespace, name)

    def remove_first(self, namespace: str, pods: Sequence[str]) -> None:
        """Give each pod the lowest :data:`DELETION_COST` the operator uses, so that the ReplicaSet
        removes them first at the next scale-down (``pods: patch``)."""
        core = client.CoreV1Api(self._api)
        body = {"metadata": {"annotations": {DELETION_COST: REMOVE_FIRST_COST}}}
        for pod in pods:
            try:
                core.patch_namespaced_pod(pod, namespace, body, _request_timeout=REQUEST_TIMEOUT_S)
            except (ApiException, urllib3.exceptions.HTTPError) as err:
                _raise(err, f"mark pod {namespace}/{pod} to be removed first")


class KubeConfigMaps:
    """``PublishedProfiles``: the data of one ConfigMap, read by name (``get``: the only verb on
    ConfigMaps the operator's RBAC grants)."""

    def __init__(self, api: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api)

    def read(self, namespace: str, name: str) -> dict[str, str] | None:
        try:
            found = self._core.read_namespaced_config_map(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status == 404:
                return None
            _raise(err, f"ConfigMap {namespace}/{name}")
        except urllib3.exceptions.HTTPError as err:
            _raise(err, f"ConfigMap {namespace}/{name}")
        return dict(found.data or {})


@dataclass(frozen=True)
class Held:
    """The version of a StormTopology a pass holds: the object (``uid``), its spec (``generation``),
    and the ``resourceVersion`` it last loaded or saved."""

    uid: str
    generation: int
    resource_version: str

    @classmethod
    def of(cls, found: Mapping[str, Any]) -> Held:
        meta = found.get("metadata") or {}
        return cls(
            str(meta.get("uid") or ""),
            int(meta.get("generation") or 0),
            str(meta.get("resourceVersion") or ""),
        )


def superseded(held: Held, found: Mapping[str, Any]) -> str | None:
    """Why the resource as read now (``found``) is no longer the one held, or ``None`` when it is.

    Another resource or another intent: being deleted (``deletionTimestamp``), another object of
    the same name (``uid``), another spec (``generation``). Not a newer ``resourceVersion``: Kopf's
    own writes (its progress annotations, the touch that wakes a retried handler, the finalizer)
    move it without changing what the pass acts on, and a re-read that stopped on them stopped the
    passes that overlapped them. A status stored by another writer shows as a 409 on the pass's
    next (conditional) status write instead.
    """
    now = Held.of(found)
    if (found.get("metadata") or {}).get("deletionTimestamp"):
        return "it is being deleted"
    if now.uid != held.uid:
        return "it was deleted and created again"
    if now.generation != held.generation:
        return f"its spec changed (generation {held.generation} -> {now.generation})"
    return None


class KubeStatus:
    """``StatusWriter`` on the StormTopology's status subresource.

    It remembers each resource's status as last loaded or saved, and saves a new one as the JSON merge
    patch between the two (:func:`~stormscale.operator.status.status_patch`): reconcile saves its
    intent in the middle of a pass, and the end-of-pass save must be taken against that, or a key
    written mid-pass and dropped by the end of the same pass would stay behind.

    It also remembers the version it last loaded or saved (:class:`Held`). Each patch carries that
    ``metadata.resourceVersion``, so the API server applies it only to that very version and answers
    409 Conflict otherwise (optimistic concurrency: a second operator, or a pass on a copy read
    before another pass's write, writes nothing): :class:`SupersededError`. Kopf's own patch
    (``patch.status``) carries no version, hence this writer on the API. :meth:`check` re-reads the
    resource before an act.
    """

    def __init__(
        self,
        api: client.ApiClient,
        stored: dict[tuple[str, str], dict[str, Any]] | None = None,
        held: dict[tuple[str, str], Held] | None = None,
    ) -> None:
        """``stored``, ``held``: the memories of stored statuses and versions, shared by writers on
        other clients if given."""
        self.api = api
        self._custom = client.CustomObjectsApi(api)
        self._stored = {} if stored is None else stored
        self._held = {} if held is None else held

    def _read(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            found: dict[str, Any] = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, _request_timeout=REQUEST_TIMEOUT_S
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            _raise(err, f"StormTopology {namespace}/{name}")
        return found

    def load(self, namespace: str, name: str) -> dict[str, Any]:
        """The resource as the API server has it now (the watch's copy may lag our own writes)."""
        found = self._read(namespace, name)
        self._stored[namespace, name] = dict(found.get("status") or {})
        self._held[namespace, name] = Held.of(found)
        return found

    def hold(self, namespace: str, name: str, found: Mapping[str, Any]) -> None:
        """Take ``found`` (the watch's copy, when the resource cannot be read afresh) as the version the
        next save is conditional on."""
        self._held[namespace, name] = Held.of(found)

    def check(self, namespace: str, name: str) -> None:
        """:class:`SupersededError` when the resource is gone or no longer the one last loaded or
        saved (:func:`superseded`: deleted, being deleted, re-created, re-specified); a read that
        fails otherwise is an :class:`UnavailableError` (a 403 too: the act waits, it is not the
        apply that was refused)."""
        where = f"StormTopology {namespace}/{name}"
        try:
            found = self._read(namespace, name)
        except GoneError:
            raise SupersededError(f"{where} was deleted") from None
        except RefusedError as err:
            raise UnavailableError(f"cannot re-read {where} before acting: {err}") from None
        held = self._held.get((namespace, name))
        why = superseded(held, found) if held is not None else None
        if why:
            raise SupersededError(f"{where} changed since the pass read it: {why}")

    def save(self, namespace: str, name: str, status: StormTopologyStatus) -> None:
        new = status.to_json()
        patch: dict[str, Any] = {"status": status_patch(self._stored.get((namespace, name), {}), new)}
        if not patch["status"]:
            return
        held = self._held.get((namespace, name))
        if held is not None and held.resource_version:
            patch["metadata"] = {"resourceVersion": held.resource_version}
        where = f"status of StormTopology {namespace}/{name}"
        try:
            saved: dict[str, Any] = self._custom.patch_namespaced_custom_object_status(  # type: ignore[call-arg]
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                name,
                patch,
                _content_type="application/merge-patch+json",
                _request_timeout=REQUEST_TIMEOUT_S,
            )
        except ApiException as err:
            if err.status == 409:
                raise SupersededError(
                    f"{where} not saved: 409 Conflict, another writer stored it since"
                ) from None
            if err.status == 404:
                raise SupersededError(f"{where} not saved: the resource was deleted") from None
            _raise(err, where)
        except urllib3.exceptions.HTTPError as err:
            _raise(err, where)
        self._stored[namespace, name] = new
        if held is not None:
            self._held[namespace, name] = Held.of(saved)
