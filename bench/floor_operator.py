"""The floor of reaction time (bench/reaction.py): the least a Kopf operator can do on a new budget.

One handler, on the creation of a StormTopology and on every change of its ``spec`` (the operator's
own triggers): it reads ``spec.scaling.budget`` and sets the worker Deployment's replicas to
:data:`BASE_REPLICAS` + budget through the ``scale`` subresource (a JSON merge patch), and logs when
it started and when the patch returned. Nothing else: no status, no Nimbus, no profile, no plan.

Kopf is configured as the operator configures it where that touches the processing of a change
(progress in annotations, Kopf's own log lines not posted as Events), so that the difference to the
operator is the operator's handler. Run it as bench/reaction.py does::

    python -m kopf run -m bench.floor_operator --standalone --namespace NS
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

import kopf
from kubernetes import client, config

from stormscale.operator.adapters.kube import GROUP, PLURAL, REQUEST_TIMEOUT_S, VERSION

BASE_REPLICAS = int(os.environ.get("STORMSCALE_FLOOR_BASE_REPLICAS", "4"))
"""Worker pods at budget 0 (bench/reaction.py's topology: four components, one pod each)."""
LOG = logging.getLogger("stormscale.floor")

_API: list[client.AppsV1Api] = []
_API_GUARD = threading.Lock()


def apps_api() -> client.AppsV1Api:
    """One apps/v1 client per process, from the kubeconfig that ``KUBECONFIG`` names."""
    with _API_GUARD:
        if not _API:
            _API.append(client.AppsV1Api(config.new_client_from_config()))
        return _API[0]


def replicas_for(budget: int, base: int = BASE_REPLICAS) -> int:
    """The replicas for ``budget``: one pod per unit, ``base`` at budget 0, never below 0."""
    return max(0, base + budget)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """The operator's Kopf settings that touch how a change is processed (stormscale.operator.handlers)."""
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="stormscale.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="stormscale.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.CRITICAL


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
def scale(*, spec: kopf.Spec, namespace: str | None, name: str | None, **_: Any) -> None:
    """Set the worker Deployment's replicas for the spec's budget; log the handler's start and end."""
    started = time.time()
    deployment = str(spec["workers"]["deployment"])
    replicas = replicas_for(int(spec["scaling"].get("budget", 0)))
    apps_api().patch_namespaced_deployment_scale(
        deployment, str(namespace), {"spec": {"replicas": replicas}}, _request_timeout=REQUEST_TIMEOUT_S
    )
    LOG.info(
        "[%s/%s] floor handler started %.6f scaled %.6f to %d",
        namespace,
        name,
        started,
        time.time(),
        replicas,
    )
