"""The fleet job's two Kubernetes calls: list StormTopologies, and server-side apply of a ConfigMap.

The chart's CronJob ServiceAccount is granted exactly these: ``list`` on ``stormtopologies``, and
``create`` and ``patch`` on ``configmaps`` (an apply that creates the object is authorised as a
create, one that changes it as a patch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "stormscale-publish"
GROUP, VERSION, PLURAL = "stormscale.io", "v1alpha1", "stormtopologies"
REQUEST_TIMEOUT_S = (5.0, 30.0)


class KubeError(RuntimeError):
    """The API server refused or did not answer; the message is one line."""


def _error(err: ApiException | urllib3.exceptions.HTTPError, what: str) -> KubeError:
    status = getattr(err, "status", None)
    return KubeError(f"{what}: {status or type(err).__name__} {getattr(err, 'reason', err)}")


def api_client() -> client.ApiClient:
    """In a pod: its ServiceAccount; elsewhere the kubeconfig (``KUBECONFIG`` or ~/.kube/config)."""
    try:
        config.load_incluster_config()
    except config.ConfigException:
        try:
            config.load_kube_config()
        except (config.ConfigException, OSError) as err:
            raise KubeError(f"no in-cluster credentials and no kubeconfig: {err}") from None
    return client.ApiClient()


class FleetApi:
    """The StormTopologies to read and the ConfigMaps to write."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._core = client.CoreV1Api(api)

    def stormtopologies(self, namespaces: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Every StormTopology in ``namespaces`` (all namespaces when empty)."""
        items: list[dict[str, Any]] = []
        try:
            if not namespaces:
                found = self._custom.list_cluster_custom_object(
                    GROUP, VERSION, PLURAL, _request_timeout=REQUEST_TIMEOUT_S
                )
                return list(found["items"])
            for namespace in namespaces:
                found = self._custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, _request_timeout=REQUEST_TIMEOUT_S
                )
                items += found["items"]
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            raise _error(err, "list StormTopologies") from None
        return items

    def apply(self, body: Mapping[str, Any]) -> None:
        """Server-side apply of ``body`` (a ConfigMap) as the ``stormscale-publish`` field manager."""
        meta = body["metadata"]
        try:
            self._core.patch_namespaced_config_map(  # type: ignore[call-arg]  # stubs lack _content_type
                meta["name"],
                meta["namespace"],
                dict(body),
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type="application/apply-patch+yaml",
                _request_timeout=REQUEST_TIMEOUT_S,
            )
        except (ApiException, urllib3.exceptions.HTTPError) as err:
            raise _error(err, f"apply ConfigMap {meta['namespace']}/{meta['name']}") from None
