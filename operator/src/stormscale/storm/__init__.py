"""Storm adapters: a Nimbus Thrift client (framed binary, the project's own IDL) and its value objects."""

from stormscale.storm.client import NimbusClient
from stormscale.storm.errors import (
    NimbusError,
    NimbusUnavailableError,
    NotAuthorizedError,
    RequestRejectedError,
    TopologyNotFoundError,
)
from stormscale.storm.model import Endpoint, RebalanceRequest

__all__ = [
    "Endpoint",
    "NimbusClient",
    "NimbusError",
    "NimbusUnavailableError",
    "NotAuthorizedError",
    "RebalanceRequest",
    "RequestRejectedError",
    "TopologyNotFoundError",
]
