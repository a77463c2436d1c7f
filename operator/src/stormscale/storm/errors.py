"""Typed Nimbus errors, each with a clear one-line message."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable

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


#: Secret values shorter than this are not hidden by text replacement (it would mangle every message
#: holding those few characters); the Secrets a spec names should hold longer ones.
MIN_SECRET_LENGTH = 4
_SECRETS: dict[str, frozenset[str]] = {}
_SECRETS_GUARD = threading.Lock()


def register_secrets(owner: str, values: Iterable[str]) -> None:
    """Hide ``values`` (credentials read for ``owner``, e.g. a resource's ``namespace/name``) in every
    text :func:`redact` returns from now on; replaces what ``owner`` registered before."""
    kept = frozenset(v for v in values if len(v) >= MIN_SECRET_LENGTH)
    with _SECRETS_GUARD:
        if kept:
            _SECRETS[owner] = kept
        else:
            _SECRETS.pop(owner, None)


def forget_secrets(owner: str) -> None:
    """Stop hiding what ``owner`` registered (its resource is deleted: nothing quotes them any more)."""
    register_secrets(owner, ())


def registered_owners() -> set[str]:
    """Whose values are hidden now (the registry grows with the resources, and shrinks with them)."""
    with _SECRETS_GUARD:
        return set(_SECRETS)


def _secret_values() -> list[str]:
    """Every registered value, longest first (a value holding another is hidden whole)."""
    with _SECRETS_GUARD:
        values = set().union(*_SECRETS.values()) if _SECRETS else set()
    return sorted(values, key=len, reverse=True)


def redact(text: object) -> str:
    """``text`` (a URL, ``host:port``, or a message holding them) with every userinfo
    (``user:password@``) replaced by ``***@`` and every registered secret value
    (:func:`register_secrets`) by ``***``: the one form in which an endpoint goes into a message,
    a condition, an event or a log."""
    shown = _USERINFO.sub("***@", str(text))
    for value in _secret_values():
        shown = shown.replace(value, "***")
    return shown


class RedactingFilter(logging.Filter):
    """Log records through :func:`redact`: the message with its arguments, and a traceback's text
    (an exception's message may quote what it was given)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format: shown as given
            message = f"{record.msg} {record.args}"
        record.msg, record.args = redact(message), None
        if record.exc_info:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True
