"""Waiting on a condition: the one poll loop of the test bed, its tests and its benchmarks.

:func:`wait_for` calls ``check()`` until it returns something truthy and returns that value. Each
round, in this order: fail at once if one of ``daemons`` has exited (before ``check``: a port that
answers may be someone else's); call ``check``; past the deadline raise (or, with
``raise_on_timeout=False``, return the last value seen); sleep ``every_s``. ``check``
runs at least once, and once more after the last sleep before the deadline is judged.
:func:`seconds_until` is the same wait, timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypeVar, overload

T = TypeVar("T")

#: The interval between two calls of ``check`` unless the caller says otherwise.
EVERY_S = 0.5


class WaitTimeoutError(AssertionError):
    """A condition still false at its deadline (an AssertionError: in a test it reads as a failure)."""


class Exits(Protocol):
    """A process the wait watches (:class:`tests.harness.process.Daemon` is one)."""

    def exited(self) -> int | None: ...

    def failure(self, reason: str) -> Exception: ...


#: How much of the last value a timeout's message shows.
SHOWN_CHARS = 400


def timed_out(what: str, timeout_s: float, last: object) -> str:
    """The message of a wait that ran out: what was awaited, for how long, and the last value seen
    (its first :data:`SHOWN_CHARS` characters)."""
    shown = repr(last)
    if len(shown) > SHOWN_CHARS:
        shown = shown[:SHOWN_CHARS] + " …"
    return f"not within {timeout_s:g} s: {what} (last seen: {shown})"


@overload
def wait_for(
    check: Callable[[], T | None],
    timeout_s: float,
    what: str,
    *,
    every_s: float = ...,
    daemons: Sequence[Exits] = ...,
    raise_on_timeout: Literal[True] = ...,
    error: Callable[[str], Exception] = ...,
) -> T: ...


@overload
def wait_for(
    check: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    every_s: float = ...,
    daemons: Sequence[Exits] = ...,
    raise_on_timeout: bool,
    error: Callable[[str], Exception] = ...,
) -> T: ...


def wait_for(
    check: Callable[[], T | None],
    timeout_s: float,
    what: str,
    *,
    every_s: float = EVERY_S,
    daemons: Sequence[Exits] = (),
    raise_on_timeout: bool = True,
    error: Callable[[str], Exception] = WaitTimeoutError,
) -> T | None:
    """The first truthy value of ``check()``; ``error`` (default :class:`WaitTimeoutError`) naming
    ``what`` and the last value after ``timeout_s``, or that last value if not ``raise_on_timeout``;
    the daemon's own failure (with its log tails) as soon as one of ``daemons`` has exited."""
    deadline = time.monotonic() + timeout_s
    while True:
        for daemon in daemons:
            code = daemon.exited()
            if code is not None:
                raise daemon.failure(f"exited with code {code} while waiting for {what}")
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            if raise_on_timeout:
                raise error(timed_out(what, timeout_s, value))
            return value
        time.sleep(every_s)


@overload
def seconds_until(
    check: Callable[[], object],
    timeout_s: float,
    what: str,
    *,
    every_s: float = ...,
    daemons: Sequence[Exits] = ...,
    raise_on_timeout: Literal[True] = ...,
) -> float: ...


@overload
def seconds_until(
    check: Callable[[], object],
    timeout_s: float,
    what: str,
    *,
    every_s: float = ...,
    daemons: Sequence[Exits] = ...,
    raise_on_timeout: bool,
) -> float | None: ...


def seconds_until(
    check: Callable[[], object],
    timeout_s: float,
    what: str,
    *,
    every_s: float = EVERY_S,
    daemons: Sequence[Exits] = (),
    raise_on_timeout: bool = True,
) -> float | None:
    """Seconds until ``check()`` is truthy (:func:`wait_for`'s rules); None after ``timeout_s`` if
    not ``raise_on_timeout``."""
    started = time.monotonic()
    value = wait_for(
        check, timeout_s, what, every_s=every_s, daemons=daemons, raise_on_timeout=raise_on_timeout
    )
    return time.monotonic() - started if value else None
