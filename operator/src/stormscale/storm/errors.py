"""Typed Nimbus errors, each with a clear one-line message."""

from __future__ import annotations

import re

MAX_MESSAGE = 300


def one_line(text: object) -> str:
    """The first non-empty line of ``text``, shortened to ``MAX_MESSAGE`` characters."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    first = lines[0] if lines else type(text).__name__
    return first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"


class NimbusError(RuntimeError):
    """Any failure of a Nimbus call; ``str()`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(redact(message)))


class NimbusUnavailableError(NimbusError):
    """Nimbus cannot answer now: refused, timed out, no leader, busy (e.g. a rebalance is pending)."""


class TopologyNotFoundError(NimbusError):
    """The topology is not alive (Storm's NotAliveException)."""


class RequestRejectedError(NimbusError):
    """Nimbus (InvalidTopologyException) or the client's own checks refused the request."""


class NotAuthorizedError(NimbusError):
    """Nimbus's authorizer refused the call (AuthorizationException)."""


#: Userinfo: after ``//``, or at the start of a word (a bare ``user:pw@host:port``, also inside quotes
#: or brackets of a socket error), everything up to the host's ``@``.
_USERINFO = re.compile(r"""(?:(?<=//)|(?<![^\s('"\[]))[^\s/?#'"()\[\]]*@""")


def redact(text: object) -> str:
    """``text`` (a URL, ``host:port``, or a message holding them) with every userinfo
    (``user:password@``) replaced by ``***@``: the one form in which an endpoint goes into a message,
    a condition, an event or a log."""
    return _USERINFO.sub("***@", str(text))
