"""The ``Nimbus`` port on the Thrift client: describe a topology, rebalance it in one call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from stormscale.operator.ports import RefusedError, StormTopologyState, UnavailableError
from stormscale.operator.storm.client import NimbusClient
from stormscale.operator.storm.errors import NimbusError, NimbusUnavailableError
from stormscale.operator.storm.model import RebalanceRequest
from stormscale.operator.storm.stats import executors_per_component, tasks_per_component

T = TypeVar("T")


def port_error(err: NimbusError) -> UnavailableError | RefusedError:
    """Unavailable (retry later) for transport, timeout and leader problems; refused otherwise."""
    if isinstance(err, NimbusUnavailableError):
        return UnavailableError(str(err))
    return RefusedError(str(err))


def _mapped(call: Callable[[], T]) -> T:
    try:
        return call()
    except NimbusError as err:
        raise port_error(err) from None


class NimbusPort:
    """``ports.Nimbus`` backed by a ``NimbusClient``."""

    def __init__(self, client: NimbusClient) -> None:
        self.client = client

    def describe(self, topology: str) -> StormTopologyState:
        """Status, workers, and executors and tasks per user component."""
        return _mapped(lambda: self._describe(topology))

    def _describe(self, topology: str) -> StormTopologyState:
        summary = self.client.topology(topology)
        if summary is None:
            raise RefusedError(f"topology {topology!r} is not running on Nimbus")
        info = self.client.topology_info(topology)
        return StormTopologyState(
            status=info.status,
            executors=executors_per_component(info),
            tasks=tasks_per_component(info),
            workers=summary.workers,
        )

    def rebalance(self, topology: str, executors: Mapping[str, int], workers: int, wait_secs: int) -> None:
        """Set every component's executors and the worker count in one rebalance (checked first)."""
        request = RebalanceRequest(wait_secs=wait_secs, workers=workers, executors=dict(executors))
        _mapped(lambda: self.client.rebalance(topology, request))
