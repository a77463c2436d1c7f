"""Where a pass of the operator spends its time, for bench/reaction.py: its ports, timed.

Loaded into the operator's own process by a second module of ``kopf run``::

    python -m kopf run -m stormscale.operator.handlers -m bench.reaction_probe --standalone ...

it wraps the ports every pass builds (:data:`stormscale.operator.handlers.PORTS_FACTORY`, the hook
the tests use) so that each call of the Deployments, Nimbus, the profiler and the status writer logs
one line with its wall-clock start and end, ``[ns/name] probe profiler.profile 1764040000.123456
1764040000.789012``. The operator's code is unchanged; a line costs tens of microseconds.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, cast

import kopf

from stormscale.operator import handlers
from stormscale.operator.policy import Policy
from stormscale.operator.ports import Ports

LOG = logging.getLogger("stormscale.probe")
#: The ports timed, by their field of :class:`~stormscale.operator.ports.Ports`.
TIMED = ("deployments", "nimbus", "profiler", "status")


class Timed:
    """A port whose every method call logs its start and end (wall clock, microseconds)."""

    def __init__(self, port: object, label: str, where: str) -> None:
        self._port, self._label, self._where = port, label, where

    def __getattr__(self, attribute: str) -> Any:
        found = getattr(self._port, attribute)
        if not callable(found):
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.time()
            try:
                return found(*args, **kwargs)
            finally:
                LOG.info(
                    "%s probe %s.%s %.6f %.6f", self._where, self._label, attribute, started, time.time()
                )

        return timed


def timed_ports(factory: handlers.PortsFactory) -> handlers.PortsFactory:
    """``factory``, with each port of :data:`TIMED` wrapped in :class:`Timed`."""

    def build(policy: Policy, namespace: str, body: kopf.Body) -> Ports:
        ports = factory(policy, namespace, body)
        where = f"[{namespace}/{body.metadata.name}]"
        wrapped = {name: cast(Any, Timed(getattr(ports, name), name, where)) for name in TIMED}
        return dataclasses.replace(ports, **wrapped)

    return build


handlers.PORTS_FACTORY = timed_ports(handlers.PORTS_FACTORY)  # at import: a module is imported once
