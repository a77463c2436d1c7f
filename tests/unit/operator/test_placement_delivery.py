"""Placements delivered to the scheduler's endpoint instead of the topology's conf: the request the
endpoint gets (path, token, body), the rebalance that follows (no conf overrides), and every way the
endpoint can fail, each one line, the token in none of them. The endpoint here is a loopback stand-in
recording what it is sent; the real one (Java, in Nimbus) has its own tests beside its sources."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stormscale.operator.adapters.errors import mapped
from stormscale.operator.adapters.nimbus import NimbusPort
from stormscale.operator.ports import RefusedError, UnavailableError
from stormscale.planner import load_profile
from stormscale.storm import Endpoint, NimbusClient
from stormscale.storm.delivery import (
    PLACEMENTS_PATH,
    DeliveryRefusedError,
    DeliveryUnavailableError,
    PlacementEndpoint,
)
from stormscale.storm.placement import parse
from tests.harness.fakes import nimbus as fake_nimbus

LINEAR = load_profile(Path(__file__).parents[3] / "examples" / "profiles" / "thesis-linear.json")
LAYOUT = [[{"1": 1, "__acker": 1}, {"2": 2}], [{"3": 2}, {"4": 1}]]
TOKEN = "tok-3f9a"


@dataclass
class Recorder:
    """What the stand-in endpoint was sent, and what it answers."""

    status: int = 204
    answer: bytes = b""
    delay_s: float = 0.0
    calls: list[tuple[str, str, str | None, bytes]] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[tuple[Recorder, int]]:
    recorder = Recorder()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:  # http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            recorder.calls.append(("PUT", self.path, self.headers.get("Authorization"), body))
            time.sleep(recorder.delay_s)
            self.send_response(recorder.status)
            self.send_header("Content-Length", str(len(recorder.answer)))
            self.end_headers()
            self.wfile.write(recorder.answer)

        def log_message(self, format: str, *args: object) -> None:  # http.server's naming
            """Quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def test_a_delivered_placement_leaves_the_conf_alone(
    endpoint: tuple[Recorder, int], token_file: Path
) -> None:
    recorder, http_port = endpoint
    with fake_nimbus.serving(lambda p: fake_nimbus.Fleet("127.0.0.1", p, supervisors=6, slots=2)) as fleet:
        fleet.submit("linear", LINEAR, {"1": 1, "2": 4, "3": 4, "4": 4})
        client = NimbusClient(Endpoint("127.0.0.1", fleet.port))
        topology_id = client.topology("linear").id  # type: ignore[union-attr]  # submitted above
        port = NimbusPort(client, PlacementEndpoint(http_port, token_file))
        port.rebalance("linear", {"1": 1, "2": 2, "3": 2, "4": 1}, 4, 0, LAYOUT)
        (request,) = fleet.requests
    assert request.conf_overrides == {}
    assert request.executors == {"1": 1, "2": 2, "3": 2, "4": 1}
    assert request.workers == 4
    ((method, path, authorization, body),) = recorder.calls
    assert (method, path, authorization) == ("PUT", PLACEMENTS_PATH + topology_id, f"Bearer {TOKEN}")
    assert [[w.counts for w in pod.workers] for pod in parse(body.decode()).pods] == LAYOUT


def test_a_refused_delivery_stops_the_rebalance(endpoint: tuple[Recorder, int]) -> None:
    recorder, http_port = endpoint
    recorder.status, recorder.answer = 401, b"a bearer token is required"
    with fake_nimbus.serving(lambda p: fake_nimbus.Fleet("127.0.0.1", p, supervisors=6, slots=2)) as fleet:
        fleet.submit("linear", LINEAR, {"1": 1, "2": 4, "3": 4, "4": 4})
        port = NimbusPort(NimbusClient(Endpoint("127.0.0.1", fleet.port)), PlacementEndpoint(http_port))
        with pytest.raises(RefusedError, match=r"placement endpoint 127\.0\.0\.1:\d+: 401 a bearer token"):
            port.rebalance("linear", {"1": 1, "2": 2, "3": 2, "4": 1}, 4, 0, LAYOUT)
        assert fleet.requests == []


ANSWERS = [
    (404, b"topology t-1-1 is not running", DeliveryRefusedError, "404 topology t-1-1 is not running"),
    (400, b"stormscale.placement: bad\nmore", DeliveryRefusedError, "400 stormscale.placement: bad"),
    (503, b"the scheduler has not run yet", DeliveryUnavailableError, "503 the scheduler has not run"),
    (500, b"", DeliveryUnavailableError, "500 Internal Server Error"),
]


@pytest.mark.parametrize("case", ANSWERS, ids=[str(a[0]) for a in ANSWERS])
def test_each_answer_but_204_is_one_line_of_the_right_kind(
    endpoint: tuple[Recorder, int], token_file: Path, case: tuple[int, bytes, type[Exception], str]
) -> None:
    recorder, http_port = endpoint
    status, answer, error, message = case
    recorder.status, recorder.answer = status, answer
    with pytest.raises(error) as caught:
        PlacementEndpoint(http_port, token_file).deliver("127.0.0.1", "t-1-1", "{}")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_slow_endpoint_is_given_up_at_the_deadline(endpoint: tuple[Recorder, int]) -> None:
    recorder, http_port = endpoint
    recorder.delay_s = 3.0
    started = time.monotonic()
    with pytest.raises(DeliveryUnavailableError, match=r"no answer within 0\.5 s"):
        PlacementEndpoint(http_port, timeout_s=0.5).deliver("127.0.0.1", "t-1-1", "{}")
    assert time.monotonic() - started < 2.5


def test_nothing_listening_is_unavailable_and_a_bad_token_file_refused(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="ConnectionRefusedError"):
        mapped(lambda: PlacementEndpoint(1, timeout_s=2).deliver("127.0.0.1", "t-1-1", "{}"))
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(DeliveryRefusedError, match="empty or more than one line"):
        PlacementEndpoint(1, empty).deliver("127.0.0.1", "t-1-1", "{}")
    with pytest.raises(DeliveryRefusedError, match="No such file"):
        PlacementEndpoint(1, tmp_path / "missing").deliver("127.0.0.1", "t-1-1", "{}")
