"""The ``Nimbus`` port on the Thrift client: describe a topology, rebalance it in one call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from stormscale.operator.adapters.errors import mapped
from stormscale.operator.ports import Layout, RefusedError, StormTopologyState
from stormscale.storm.client import NimbusClient
from stormscale.storm.delivery import PlacementEndpoint
from stormscale.storm.errors import NimbusError, NimbusUnavailableError
from stormscale.storm.model import RebalanceRequest, is_system
from stormscale.storm.placement import PLACEMENT_KEY, Placement, PlacementError, rebalance_request
from stormscale.storm.stats import executors_per_component, tasks_per_component


class NimbusPort:
    """``ports.Nimbus`` backed by a ``NimbusClient``; with ``endpoint``, placements are delivered to
    the scheduler's endpoint on the leader Nimbus instead of travelling in the topology's conf."""

    def __init__(self, client: NimbusClient, endpoint: PlacementEndpoint | None = None) -> None:
        self.client = client
        self.endpoint = endpoint

    def describe(self, topology: str) -> StormTopologyState:
        """Status, workers, executors and tasks per user component, where every executor runs, and
        each Supervisor's slots."""
        return mapped(lambda: self._describe(topology))

    def _describe(self, topology: str) -> StormTopologyState:
        summary = self.client.topology(topology)
        if summary is None:
            raise RefusedError(f"topology {topology!r} is not running on Nimbus")
        info = self.client.topology_info(topology)
        supervisors = self.client.cluster_summary().supervisors
        conf, groupings = self._model_inputs(summary.id)
        return StormTopologyState(
            status=info.status,
            executors=executors_per_component(info),
            tasks=tasks_per_component(info),
            workers=summary.workers,
            free_slots=sum(max(0, s.slots - s.used_slots) for s in supervisors),
            assignment=info.executors,
            supervisor_slots={s.host: s.slots for s in supervisors},
            sched_status=info.sched_status,
            conf=conf,
            groupings=groupings,
        )

    def _model_inputs(
        self, topology_id: str
    ) -> tuple[Mapping[str, Any] | None, Mapping[str, frozenset[str]] | None]:
        """The topology's conf and its components' input groupings, or ``None`` for each that Nimbus
        did not give (an older Nimbus, a bad answer): the model's assumptions then go unchecked."""
        try:
            conf: Mapping[str, Any] | None = self.client.topology_conf(topology_id)
        except NimbusError:
            conf = None
        try:
            structure = self.client.structure(topology_id)
        except NimbusError:
            return conf, None
        groupings = {c.id: frozenset(c.inputs.values()) for c in structure.components.values()}
        return conf, groupings

    def rebalance(
        self,
        topology: str,
        executors: Mapping[str, int],
        workers: int,
        wait_secs: int,
        placement: Layout | None = None,
    ) -> None:
        """Set every component's executors and the worker count in one rebalance (checked first); with
        ``placement``, the request is the placement's own (``stormscale.storm.placement``): its
        executors (Storm's own components included), its workers, and the placement in the conf."""
        if placement is None:
            request = RebalanceRequest(wait_secs=wait_secs, workers=workers, executors=dict(executors))
        else:
            request = placement_request(placement, executors, workers, wait_secs)
            if self.endpoint is not None:
                mapped(lambda: self._deliver(topology, request))
                request = replace(request, conf_overrides={})
        mapped(lambda: self.client.rebalance(topology, request))

    def _deliver(self, topology: str, request: RebalanceRequest) -> None:
        """Hand the request's placement to the scheduler's endpoint on the leader Nimbus."""
        assert self.endpoint is not None
        summary = self.client.cluster_summary()
        leader = summary.leader
        running = next((t for t in summary.topologies if t.name == topology), None)
        if leader is None:
            raise NimbusUnavailableError("placement delivery: no leader Nimbus")
        if running is None:
            raise RefusedError(f"topology {topology!r} is not running on Nimbus")
        self.endpoint.deliver(leader.endpoint.host, running.id, request.conf_overrides[PLACEMENT_KEY])


def placement_request(
    placement: Layout, executors: Mapping[str, int], workers: int, wait_secs: int
) -> RebalanceRequest:
    """The rebalance that applies ``placement``, refused (``RefusedError``) unless the placement holds
    exactly ``executors`` of the user components in ``workers`` workers."""
    try:
        value = Placement.of(placement)
    except PlacementError as err:
        raise RefusedError(str(err)) from None
    user = {c: n for c, n in value.executors().items() if not is_system(c)}
    if user != dict(executors) or value.workers != workers:
        raise RefusedError(
            f"placement holds {user} in {value.workers} workers, the rebalance asks for "
            f"{dict(executors)} in {workers}"
        )
    return rebalance_request(value, wait_secs)
