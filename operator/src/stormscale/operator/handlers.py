"""Kopf handlers: thin. Parse the spec, run one reconcile pass, write status, map errors.

Run with ``kopf run -m stormscale.operator.handlers --standalone`` (one active writer; see
docs/operator.md for peering). Every change of ``spec`` (create, update, resume after a restart) runs
a pass at once; a timer runs one every ``STORMSCALE_INTERVAL_SECONDS`` (default 30) so that
unfinished applies, Auto mode and recovered dependencies converge without a spec change.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import kopf
from kubernetes import client, config

from stormscale.operator import conditions as cond
from stormscale.operator.adapters.kube import (
    GROUP,
    PLURAL,
    VERSION,
    KubeDeployments,
    KubeStatus,
    WrittenStatus,
    status_patch,
)
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.adapters.profiler import prometheus_profiler
from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.operator.ports import (
    Ports,
    RefusedError,
)
from stormscale.operator.reconcile import Outcome, Resource, reconcile
from stormscale.storm.client import NimbusClient
from stormscale.storm.model import Endpoint

INTERVAL_S = float(os.environ.get("STORMSCALE_INTERVAL_SECONDS", "30"))
"""Seconds between two timer passes over each StormTopology (level-based reconciliation)."""
LOG = logging.getLogger("stormscale.operator")

PortsFactory = Callable[[Policy, str, kopf.Body], Ports]


class KopfEvents:
    """``Events`` posted through Kopf on the resource (Kubernetes Events), each also logged, so the
    operator's log tells what it decided without ``kubectl get events``."""

    def __init__(self, body: kopf.Body) -> None:
        self._body = body
        self._where = f"[{body.metadata.namespace}/{body.metadata.name}]"

    def normal(self, reason: str, message: str) -> None:
        LOG.info("%s %s: %s", self._where, reason, message)
        kopf.event(self._body, type="Normal", reason=reason, message=message)

    def warning(self, reason: str, message: str) -> None:
        LOG.warning("%s %s: %s", self._where, reason, message)
        kopf.event(self._body, type="Warning", reason=reason, message=message)


_API: client.ApiClient | None = None


def kube_api() -> client.ApiClient:
    """One API client per process: in-cluster credentials, else the kubeconfig (``KUBECONFIG``)."""
    global _API  # noqa: PLW0603 - a process-wide client, created lazily
    if _API is None:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
        _API = client.ApiClient()
    return _API


def default_ports(policy: Policy, namespace: str, body: kopf.Body) -> Ports:
    api = kube_api()
    nimbus = NimbusClient(Endpoint(policy.spec.nimbus.host, policy.spec.nimbus.port))
    return Ports(
        deployments=KubeDeployments(api),
        nimbus=NimbusPort(nimbus),
        profiler=prometheus_profiler(policy.spec.metrics.prometheus, nimbus, policy.step_s, policy.settle_s),
        status=KubeStatus(api),
        events=KopfEvents(body),
    )


PORTS_FACTORY: PortsFactory = default_ports
"""How handlers build their ports; tests of the Kubernetes side may replace it to inject faults."""


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod: the service account; elsewhere: the kubeconfig that ``KUBECONFIG`` names now."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Kopf tuning, in one place."""
    # Keep Kopf's bookkeeping in annotations: our status schema is strict (anchors §3 trap).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="stormscale.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="stormscale.io", key="last-handled-configuration"
    )
    # Kopf posts log lines at INFO as Events by default; we post our own, one per decision.
    settings.posting.level = logging.WARNING
    # Watches stall silently on some networks without a server-side timeout (kopf#585).
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(uid: str) -> threading.Lock:
    """One lock per resource: Kopf runs timers concurrently with the spec handlers."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(uid, threading.Lock())


def run_pass(body: kopf.Body) -> None:
    """One reconcile pass on the resource as stored now; an invalid spec is Degraded, never retried."""
    with _lock_for(str(body.metadata.uid)):
        _run_pass(body)


def _run_pass(body: kopf.Body) -> None:
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    try:
        fresh = KubeStatus(kube_api()).load(namespace, name)
    except RefusedError:
        return  # deleted meanwhile
    now = datetime.now(UTC)
    resource = Resource(namespace, name, int(fresh["metadata"].get("generation") or 0))
    status = {k: v for k, v in (fresh.get("status") or {}).items() if k != "kopf"}
    try:
        policy = parse_spec(dict(fresh.get("spec") or {}))
    except InvalidSpecError as err:
        _record_invalid_spec(body, resource, status, str(err), now)
        raise kopf.PermanentError(str(err)) from None
    reconcile_and_save(resource, policy, status, PORTS_FACTORY(policy, resource.namespace, body), now)


def reconcile_and_save(
    resource: Resource, policy: Policy, status: Mapping[str, Any], ports: Ports, now: datetime
) -> Outcome:
    """One reconcile pass, then one merge patch from the status as stored (intent saved mid-pass
    included) to the outcome's status."""
    written = WrittenStatus(ports.status, status)
    outcome = reconcile(resource, policy, dict(status), dataclasses.replace(ports, status=written), now)
    written.save(resource.namespace, resource.name, status_patch(written.stored, outcome.status))
    return outcome


def _record_invalid_spec(
    body: kopf.Body, resource: Resource, status: Mapping[str, Any], message: str, now: datetime
) -> None:
    conditions = list(status.get("conditions") or [])
    previous = cond.condition(conditions, cond.DEGRADED)
    if not previous or previous.get("reason") != "InvalidSpec" or previous.get("message") != message:
        kopf.event(body, type="Warning", reason="InvalidSpec", message=message)
    for kind, value in ((cond.DEGRADED, True), (cond.READY, False), (cond.PROGRESSING, False)):
        conditions = cond.set_condition(
            conditions,
            kind=kind,
            status=value,
            reason="InvalidSpec",
            message=message,
            now=now,
            generation=resource.generation,
        )
    patch = {"conditions": conditions, "observedGeneration": resource.generation}
    KubeStatus(kube_api()).save(resource.namespace, resource.name, patch)


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
def on_spec(*, body: kopf.Body, **_: Any) -> None:
    """A new or changed spec, or the operator restarted: reconcile now."""
    run_pass(body)


@kopf.timer(GROUP, VERSION, PLURAL, interval=INTERVAL_S, initial_delay=INTERVAL_S)
def on_timer(*, body: kopf.Body, **_: Any) -> None:
    """Level-based pass: finish pending applies, run Auto mode, recover once dependencies are back."""
    run_pass(body)
