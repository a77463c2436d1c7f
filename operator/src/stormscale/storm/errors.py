"""Typed Nimbus errors, each with a clear one-line message."""

from __future__ import annotations

MAX_MESSAGE = 300


def one_line(text: object) -> str:
    """The first non-empty line of ``text``, shortened to ``MAX_MESSAGE`` characters."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    first = lines[0] if lines else type(text).__name__
    return first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"


class NimbusError(RuntimeError):
    """Any failure of a Nimbus call; ``str()`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class NimbusUnavailableError(NimbusError):
    """Nimbus cannot answer now: refused, timed out, no leader, busy (e.g. a rebalance is pending)."""


class TopologyNotFoundError(NimbusError):
    """The topology is not alive (Storm's NotAliveException)."""


class RequestRejectedError(NimbusError):
    """Nimbus (InvalidTopologyException) or the client's own checks refused the request."""


class NotAuthorizedError(NimbusError):
    """Nimbus's authorizer refused the call (AuthorizationException)."""
