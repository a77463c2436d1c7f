"""A Nimbus Thrift client: framed binary transport, timeouts, leader discovery, typed one-line errors.

Reads go to the first seed that answers; state changes (rebalance, kill) go to the leader, found
through the cluster summary's ``isLeader``. Each call opens its own connection, so a Nimbus restart or
a leader change needs no reconnect logic. Pure Python (thriftpy2): no Java at run time.
"""

from __future__ import annotations

import functools
import io
import json
import socket
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from thriftpy2.protocol import binary, cybin
from thriftpy2.thrift import TApplicationException, TClient, TException
from thriftpy2.transport import TTransportException, buffered, framed
from thriftpy2.transport import socket as tsocket

from stormscale.storm import decode
from stormscale.storm.errors import (
    NimbusError,
    NimbusUnavailableError,
    NotAuthorizedError,
    RequestRejectedError,
    TopologyNotFoundError,
)
from stormscale.storm.idl import NIMBUS
from stormscale.storm.model import (
    ALL_TIME,
    ClusterSummary,
    Endpoint,
    RebalanceRequest,
    TopologyInfo,
    TopologyPage,
    TopologyStructure,
    TopologySummary,
)
from stormscale.storm.placement import override_problems
from stormscale.storm.stats import check_rebalance, rebalance_tasks
from stormscale.storm.wire import check_reply_frame, max_elements_from_env

#: The deadline of one whole call (connect, send, every read of the answer), not of each socket read.
DEFAULT_TIMEOUT_S = 10.0
#: The largest answer frame read: Storm's own default (``nimbus.thrift.max_buffer_size``) is 1 MiB; a
#: big cluster's topology info stays well below this. A bigger header is refused before anything is
#: allocated for it (a hostile 2 GiB header once raised ``MemoryError``; 400 MB took 1.25 GB).
MAX_FRAME_BYTES = 16 * 1024 * 1024
#: What a garbled or hostile answer raises while it is decoded (thriftpy2's C decoder raises its own
#: ``ProtocolError``, or ``SystemError`` for a negative length; a huge frame header, ``MemoryError``):
#: a bad response, not a crash.
MALFORMED: tuple[type[BaseException], ...] = (
    cybin.ProtocolError,  # type: ignore[attr-defined]  # a Cython module without stubs
    MemoryError,
    SystemError,
    ValueError,
    struct.error,
)
NOT_LEADER = "not a leader"
T = TypeVar("T")
# thriftpy2's pure-Python transports and protocol, untyped: as ``Any`` for mypy.
_TSocket: Any = tsocket.TSocket
_TFramedTransport: Any = framed.TFramedTransport
_TBufferedTransport: Any = buffered.TBufferedTransport
_TBinaryProtocol: Any = binary.TBinaryProtocol


class FrameTooLargeError(ValueError):
    """An answer frame over :data:`MAX_FRAME_BYTES` (or a negative length): refused unread."""


class DeadlineSocket(_TSocket):  # type: ignore[misc]  # an untyped base
    """A socket whose connect and every read and write get only the time left until one deadline.

    A per-read timeout lets a server that trickles a byte every few seconds hold a call for ever;
    this way the whole call ends by ``deadline`` (a ``socket.timeout``, i.e. "timed out").
    """

    def __init__(self, host: str, port: int, deadline: float) -> None:
        super().__init__(host, port)
        self.deadline = deadline

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("call deadline passed")
        return left

    def open(self) -> None:
        self.connect_timeout = self.socket_timeout = self._left()
        super().open()

    def read(self, sz: int) -> bytes:
        self.sock.settimeout(self._left())
        data: bytes = super().read(sz)
        return data

    def write(self, buf: bytes) -> None:
        self.sock.settimeout(self._left())
        super().write(buf)


class BoundedFramedTransport(_TFramedTransport):  # type: ignore[misc]  # an untyped base
    """Thrift's framed transport, refusing frames over :data:`MAX_FRAME_BYTES` before reading them,
    and frames whose structure would keep the decoder busy or hold more than ``max_elements`` values
    (:func:`wire.check_reply_frame`); the socket's deadline is checked while the frame is walked and
    on every read the decoder makes of it (through the buffered transport: every 4 KiB)."""

    def __init__(self, trans: DeadlineSocket, max_elements: int) -> None:
        super().__init__(trans)
        self.max_elements = max_elements

    def read(self, sz: int) -> bytes:
        self._trans._left()  # the call's deadline, also while an answer already read is decoded
        data: bytes = super().read(sz)
        return data

    def read_frame(self) -> None:
        (size,) = struct.unpack("!i", self._read_exactly(4))
        if not 0 <= size <= MAX_FRAME_BYTES:
            raise FrameTooLargeError(
                f"answer frame of {size:,} bytes is over the {MAX_FRAME_BYTES:,}-byte limit"
            )
        payload = self._read_exactly(size)
        check_reply_frame(payload, self.max_elements, self._trans.deadline)
        self._rbuf = io.BytesIO(payload)

    def _read_exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left > 0:
            chunk = self._trans.read(min(left, 65536))
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def translate(err: BaseException, where: str) -> NimbusError:
    """A Thrift, socket or Nimbus exception as one of the typed errors, with a one-line message."""
    msg = str(getattr(err, "msg", "") or getattr(err, "message", "") or err)
    if isinstance(err, NIMBUS.NotAliveException):
        return TopologyNotFoundError(f"{where}: topology not alive: {msg}")
    if isinstance(err, NIMBUS.InvalidTopologyException):
        return RequestRejectedError(f"{where}: refused by Nimbus: {msg}")
    if isinstance(err, NIMBUS.AuthorizationException):
        return NotAuthorizedError(f"{where}: not authorized: {msg}")
    if isinstance(err, TimeoutError | socket.timeout):
        return NimbusUnavailableError(f"{where}: timed out")
    if isinstance(err, TApplicationException):
        return NimbusUnavailableError(f"{where}: Nimbus failed: {msg}")
    if isinstance(err, TTransportException | OSError | EOFError):
        return NimbusUnavailableError(f"{where}: cannot reach Nimbus: {msg or type(err).__name__}")
    return NimbusUnavailableError(f"{where}: bad response from Nimbus: {type(err).__name__}: {msg}")


class NimbusClient:
    """Calls to the Nimbus daemons at ``seeds`` (as Storm's ``nimbus.seeds``)."""

    def __init__(
        self,
        seeds: Sequence[Endpoint] | Endpoint,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_elements: int | None = None,
    ) -> None:
        """``max_elements``: the most values one answer may hold (else the environment's
        ``STORMSCALE_NIMBUS_MAX_ELEMENTS``, else :data:`wire.DEFAULT_MAX_ELEMENTS`)."""
        self.seeds = (seeds,) if isinstance(seeds, Endpoint) else tuple(seeds)
        if not self.seeds:
            raise ValueError("at least one Nimbus seed is needed")
        self.timeout_s = timeout_s
        self.max_elements = max_elements if max_elements is not None else max_elements_from_env()

    @contextmanager
    def _connection(self, endpoint: Endpoint) -> Iterator[Any]:
        """A client for one call: framed binary protocol, a deadline ``timeout_s`` from now, bounded
        frames. The pure-Python transport and protocol: the Cython ones read frames beyond our reach."""
        sock = DeadlineSocket(endpoint.host, endpoint.port, time.monotonic() + self.timeout_s)
        transport = _TBufferedTransport(BoundedFramedTransport(sock, self.max_elements))
        transport.open()
        client = TClient(NIMBUS.Nimbus, _TBinaryProtocol(transport))
        try:
            yield client
        finally:
            client.close()

    def _call_at(self, endpoint: Endpoint, method: str, *args: Any) -> Any:
        where = f"Nimbus {endpoint} {method}"
        try:
            with self._connection(endpoint) as client:
                return getattr(client, method)(*args)
        except (TException, OSError, EOFError) as err:
            raise translate(err, where) from None
        except MALFORMED as err:
            raise translate(err, where) from None

    def _call(self, method: str, *args: Any) -> Any:
        """Call the first seed that answers (reads)."""
        failures: list[str] = []
        for endpoint in self.seeds:
            try:
                return self._call_at(endpoint, method, *args)
            except NimbusUnavailableError as err:
                failures.append(str(err))
        raise NimbusUnavailableError("; ".join(failures))

    def _read(self, decoder: Callable[[Any], T], method: str, *args: Any) -> T:
        """A read's answer through ``decoder``. Thrift checks only the wire format: an answer whose
        fields are missing or out of shape (a garbled or hostile server; required fields too) is a
        bad response, :class:`NimbusUnavailableError`, not a crash of the caller."""
        raw = self._call(method, *args)
        try:
            return decoder(raw)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError, ArithmeticError) as err:
            where = f"Nimbus {self._seed_list()} {method}"
            raise NimbusUnavailableError(
                f"{where}: bad response from Nimbus: {type(err).__name__}: {err}"
            ) from None

    def _call_leader(self, method: str, *args: Any) -> Any:
        """Call the leader Nimbus (state changes)."""
        leader = self.cluster_summary().leader
        if leader is None:
            raise NimbusUnavailableError(f"{method}: no leader Nimbus among {self._seed_list()}")
        try:
            return self._call_at(leader.endpoint, method, *args)
        except NimbusUnavailableError as err:
            if NOT_LEADER in str(err):
                raise NimbusUnavailableError(f"{method}: leadership moved during the call: {err}") from None
            raise

    def _seed_list(self) -> str:
        return ", ".join(str(s) for s in self.seeds)

    def cluster_summary(self) -> ClusterSummary:
        """Nimbus daemons (with the leader), topologies, supervisor slots."""
        return self._read(decode.cluster_summary, "getClusterInfo")

    def topologies(self) -> tuple[TopologySummary, ...]:
        """Every topology Nimbus knows."""
        return self._read(lambda raw: tuple(decode.topology_summary(t) for t in raw), "getTopologySummaries")

    def topology(self, name: str) -> TopologySummary | None:
        """The topology called ``name``, if any."""
        return next((t for t in self.topologies() if t.name == name), None)

    def topology_info(self, name: str) -> TopologyInfo:
        """Executors of topology ``name`` with their stats (every window), errors left out."""
        options = NIMBUS.GetInfoOptions(num_err_choice=NIMBUS.NumErrorsChoice.NONE)
        return self._read(decode.topology_info, "getTopologyInfoByNameWithOpts", name, options)

    def topology_page(self, topology_id: str, window: str = ALL_TIME) -> TopologyPage:
        """The UI's topology page over ``window`` (user components), by topology id."""
        page = functools.partial(decode.topology_page, window=window)
        return self._read(page, "getTopologyPageInfo", topology_id, window, False)

    def structure(self, topology_id: str) -> TopologyStructure:
        """The submitted graph of a topology, by topology id."""
        return self._read(decode.topology_structure, "getUserTopology", topology_id)

    def topology_conf(self, topology_id: str) -> dict[str, Any]:
        """The topology's conf as Nimbus stores it (as submitted, rebalances' overrides merged), by id."""
        return self._read(decode.topology_conf, "getTopologyConf", topology_id)

    def rebalance(self, name: str, request: RebalanceRequest, validate: bool = True) -> None:
        """Ask the leader to rebalance topology ``name``.

        Nimbus itself refuses unknown components and counts below 1 but silently caps executors at the
        task count; with ``validate`` the request is first checked against the running topology's tasks
        (system components such as ``__acker`` included), and a placement among its conf overrides
        against the executors the rebalance leaves (Storm's scheduler would fall back without one).
        """
        if validate:
            info = self.topology_info(name)
            check_rebalance(name, request, rebalance_tasks(info), override_problems(request, info))
        overrides = dict(request.conf_overrides)
        options = NIMBUS.RebalanceOptions(
            wait_secs=request.wait_secs,
            num_workers=request.workers,
            num_executors=dict(request.executors) or None,
            topology_conf_overrides=json.dumps(overrides, separators=(",", ":")) if overrides else None,
        )
        self._call_leader("rebalance", name, options)

    def kill(self, name: str, wait_secs: int = 0) -> None:
        """Ask the leader to kill topology ``name``."""
        self._call_leader("killTopologyWithOpts", name, NIMBUS.KillOptions(wait_secs=wait_secs))

    def deactivate(self, name: str) -> None:
        """Ask the leader to deactivate topology ``name`` (its spouts stop emitting)."""
        self._call_leader("deactivate", name)

    def activate(self, name: str) -> None:
        """Ask the leader to activate topology ``name`` again."""
        self._call_leader("activate", name)
