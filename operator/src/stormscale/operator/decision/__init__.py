"""The operator's decision core: observation in, decision out; no I/O, no clock, no Storm or
Kubernetes types (:func:`decide`)."""

from stormscale.operator.decision.core import AUTO_PERIOD_S, Act, Decision, decide
from stormscale.operator.decision.observation import (
    Need,
    Observation,
    ProfileFailure,
    PublishedRead,
    TopologyView,
)

__all__ = [
    "AUTO_PERIOD_S",
    "Act",
    "Decision",
    "Need",
    "Observation",
    "ProfileFailure",
    "PublishedRead",
    "TopologyView",
    "decide",
]
