"""The Storm package's errors as the ports' two kinds: retry later, or don't."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from stormscale.operator.ports import RefusedError, TooLargeError, UnavailableError
from stormscale.storm import NimbusError, NimbusUnavailableError
from stormscale.storm.samples import PrometheusError, PrometheusTooLargeError, PrometheusUnavailableError

T = TypeVar("T")
RETRYABLE = (NimbusUnavailableError, PrometheusUnavailableError)


def port_error(err: NimbusError | PrometheusError) -> UnavailableError | RefusedError:
    """Unavailable for transport, timeout, leader and overload problems; an answer over a cap is
    :class:`TooLargeError` (a refusal naming the cap); refused otherwise."""
    if isinstance(err, PrometheusTooLargeError):
        return TooLargeError(str(err))
    return UnavailableError(str(err)) if isinstance(err, RETRYABLE) else RefusedError(str(err))


def mapped(call: Callable[[], T]) -> T:
    """``call()``, with Nimbus's and Prometheus's errors raised as the ports' errors."""
    try:
        return call()
    except (NimbusError, PrometheusError) as err:
        raise port_error(err) from None
