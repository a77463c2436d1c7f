"""Deliver a placement to Stormscale's scheduler in Nimbus, beside the topology's conf.

A placement carried in a rebalance's ``topology_conf_overrides`` changes the topology's conf blob, and
every Supervisor then updates the topology's blobs and restarts every worker (Storm's ``Slot`` restarts
a worker whose blobs change). Delivered to the scheduler's endpoint instead
(``PUT /v1/placements/<topology id>``, docs/scheduler.md), the conf stays as it is and only the workers
whose executors change restart. One call, one deadline, one line on failure; the token, when there is
one, travels in the ``Authorization`` header and never into a message.
"""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from stormscale.storm.errors import NimbusUnavailableError, RequestRejectedError, one_line, redact
from stormscale.storm.samples.fetch import DeadlineExceededError, deadline_connection

#: The endpoint's path; the topology id follows.
PLACEMENTS_PATH = "/v1/placements/"
#: The most of an answer read: the endpoint answers one line.
MAX_ANSWER = 64 * 1024


class DeliveryUnavailableError(NimbusUnavailableError):
    """The scheduler's endpoint cannot take the placement now (unreachable, no answer in time, 5xx)."""


class DeliveryRefusedError(RequestRejectedError):
    """The scheduler's endpoint refused the placement (4xx: token, unknown topology, invalid), or the
    token cannot be read."""


@dataclass(frozen=True)
class PlacementEndpoint:
    """The scheduler's endpoint on a Nimbus host: ``host:port``, a bearer token file, a deadline."""

    port: int
    token_file: Path | None = None
    timeout_s: float = 10.0

    def deliver(self, host: str, topology_id: str, placement_json: str) -> None:
        """``PUT`` ``placement_json`` as topology ``topology_id``'s placement at ``host``; raises
        ``DeliveryRefusedError`` (4xx) or ``DeliveryUnavailableError`` unless the endpoint answers 204."""
        where = f"placement endpoint {redact(host)}:{self.port}"
        headers = {"Content-Type": "application/json"}
        if self.token_file is not None:
            headers["Authorization"] = f"Bearer {read_token(self.token_file)}"
        deadline = time.monotonic() + self.timeout_s
        try:
            connection, sock = deadline_connection(f"http://{host}:{self.port}", deadline, None)
            try:
                path = PLACEMENTS_PATH + quote(topology_id, safe="")
                connection.request("PUT", path, placement_json.encode(), headers)
                response = connection.getresponse()
                answer = response.read(MAX_ANSWER).decode("utf-8", "replace")
            finally:
                sock.close()
        except DeadlineExceededError:
            raise DeliveryUnavailableError(f"{where}: no answer within {self.timeout_s:g} s") from None
        except (OSError, http.client.HTTPException) as err:
            raise DeliveryUnavailableError(f"{where}: {type(err).__name__}: {err}") from None
        if response.status != 204:
            refused = 400 <= response.status < 500 and response.status != 429
            error = DeliveryRefusedError if refused else DeliveryUnavailableError
            raise error(f"{where}: {response.status} {one_line(answer or response.reason)}")


def read_token(path: Path) -> str:
    """The bearer token in ``path`` (trimmed); ``DeliveryRefusedError`` when it cannot be read or is empty."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as err:
        raise DeliveryRefusedError(f"placement endpoint token {path}: {err.strerror or err}") from None
    if not token or any(c in token for c in "\r\n"):
        raise DeliveryRefusedError(f"placement endpoint token {path}: empty or more than one line")
    return token
