"""The ``Nimbus`` port on the Thrift client: describe a topology, rebalance it in one call."""

from __future__ import annotations

from collections.abc import Mapping

from stormscale.operator.adapters.errors import mapped
from stormscale.operator.ports import RefusedError, StormTopologyState
from stormscale.storm.client import NimbusClient
from stormscale.storm.model import RebalanceRequest
from stormscale.storm.stats import executors_per_component, tasks_per_component


class NimbusPort:
    """``ports.Nimbus`` backed by a ``NimbusClient``."""

    def __init__(self, client: NimbusClient) -> None:
        self.client = client

    def describe(self, topology: str) -> StormTopologyState:
        """Status, workers, and executors and tasks per user component."""
        return mapped(lambda: self._describe(topology))

    def _describe(self, topology: str) -> StormTopologyState:
        summary = self.client.topology(topology)
        if summary is None:
            raise RefusedError(f"topology {topology!r} is not running on Nimbus")
        info = self.client.topology_info(topology)
        supervisors = self.client.cluster_summary().supervisors
        return StormTopologyState(
            status=info.status,
            executors=executors_per_component(info),
            tasks=tasks_per_component(info),
            workers=summary.workers,
            free_slots=sum(max(0, s.slots - s.used_slots) for s in supervisors),
        )

    def rebalance(self, topology: str, executors: Mapping[str, int], workers: int, wait_secs: int) -> None:
        """Set every component's executors and the worker count in one rebalance (checked first)."""
        request = RebalanceRequest(wait_secs=wait_secs, workers=workers, executors=dict(executors))
        mapped(lambda: self.client.rebalance(topology, request))
