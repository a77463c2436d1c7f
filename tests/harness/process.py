"""The test bed's processes: how each daemon is launched, watched and stopped, and where it writes.

A ``LaunchSpec`` is everything needed to start one daemon (argv, environment, working directory, log
files); the pod runner can run it inside a cgroup itself. A ``Daemon`` is a started spec in its own
session (so its process group holds the workers a Supervisor forks), stopped with SIGTERM then SIGKILL.
Every part uses these: the control plane, the Storm daemons, Prometheus, the exporter and the operator.
Free loopback ports, log tails and fresh run directories come from here too.

Standard library only (``make cluster-up`` runs before the virtualenv exists).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness.paths import RUN_ROOT
from tests.harness.waiting import wait_for

LOG_TAIL_LINES = 50
STOP_GRACE_S = 10.0
POLL_S = 0.5


class DaemonError(RuntimeError):
    """A daemon exited, did not become ready or refused a request; the message carries its log tails."""


def interrupt_on_sigterm() -> None:
    """SIGTERM (``kill``, a CI timeout) raises ``KeyboardInterrupt`` as Ctrl-C does, so that the
    context managers and fixtures of a test run or a benchmark stop the daemons they started: by
    default Python dies at once and leaves the test bed's JVMs, etcd and Prometheus running."""
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def new_run_dir(prefix: str) -> Path:
    """A fresh directory ``.run/<prefix><timestamp>-<random>/`` for one run's state and logs."""
    path = RUN_ROOT / f"{prefix}{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    path.mkdir(parents=True)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def http_ok(url: str, token: str | None = None, context: ssl.SSLContext | None = None) -> bool:
    """True if GET ``url`` answers 200 within 2 s."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a text file (empty if it does not exist)."""
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
    except FileNotFoundError:
        return ""


@dataclass(frozen=True)
class LaunchSpec:
    """How to start one daemon: the exact command, environment and files."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log: Path
    console: Path
    marker: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def tails(self) -> str:
        """The last lines of the daemon's log and of its console output."""
        parts = []
        for path in dict.fromkeys((self.log, self.console)):  # once if both are one file
            text = log_tail(path)
            if text:
                parts.append(f"--- last {LOG_TAIL_LINES} lines of {path}:\n{text}")
        return "\n".join(parts) or f"(no output in {self.log} or {self.console})"


class Daemon:
    """A started ``LaunchSpec`` in its own session."""

    def __init__(self, spec: LaunchSpec) -> None:
        self.spec = spec
        spec.console.parent.mkdir(parents=True, exist_ok=True)
        with spec.console.open("ab") as out:
            self.proc = subprocess.Popen(
                spec.argv,
                env=spec.env,
                cwd=spec.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        """The daemon's pid (also its process group id)."""
        return self.proc.pid

    def exited(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return self.proc.poll()

    def failure(self, reason: str) -> DaemonError:
        """A DaemonError naming this daemon, with its log tails."""
        return DaemonError(f"{self.spec.name} {reason}\n{self.spec.tails()}")

    def wait_ready(
        self, probe: Callable[[], bool], timeout_s: float, what: str, every_s: float = POLL_S
    ) -> None:
        """Poll ``probe`` until true; fail at once if the process exits, or after ``timeout_s``."""
        wait_for(probe, timeout_s, what, every_s=every_s, daemons=(self,), error=self.failure)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_s``, then sweep leftovers."""
        stop_group(self.proc.pid, grace_s, lambda: self.proc.poll() is not None)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace_s)
        if self.spec.marker:
            kill_marked(self.spec.marker)


class AlwaysRestarted:
    """A daemon kept running as a container with ``restartPolicy: Always`` is: a watchdog thread starts
    it again (same spec, so the same port) whenever it exits, after ``backoff_s``. ``restarts`` counts
    them; :meth:`stop` ends the watchdog first, then the daemon."""

    def __init__(self, spec: LaunchSpec, backoff_s: float = 1.0, every_s: float = POLL_S) -> None:
        self.spec = spec
        self.restarts = 0
        self._backoff_s = backoff_s
        self._every_s = every_s
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.daemon = Daemon(spec)
        self._watchdog = threading.Thread(target=self._watch, name=f"restart {spec.name}", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while not self._stopping.wait(self._every_s):
            with self._lock:
                if self._stopping.is_set() or self.daemon.exited() is None:
                    continue
                if self._stopping.wait(self._backoff_s):
                    return
                self.daemon = Daemon(self.spec)
                self.restarts += 1

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        self._stopping.set()
        with self._lock:
            self.daemon.stop(grace_s)
        self._watchdog.join(timeout=grace_s)


def daemon_named(daemons: Sequence[Daemon], name: str, owner: str) -> Daemon:
    """The daemon of ``daemons`` launched as ``name``; :class:`DaemonError` naming ``owner`` if none is."""
    for daemon in daemons:
        if daemon.spec.name == name:
            return daemon
    raise DaemonError(f"{owner} has no {name}")


def stop_group(pgid: int, grace_s: float, gone: Callable[[], bool]) -> None:
    """SIGTERM a process group, wait up to ``grace_s`` for ``gone``, then SIGKILL the group."""
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.2)
    signal_group(pgid, signal.SIGKILL)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a process group; a group that is gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def pid_gone(pid: int) -> bool:
    """True if ``pid`` no longer runs (absent, or a zombie waiting for its parent's wait())."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


def runs_binary(pid: int, name: str) -> bool:
    """True if ``pid`` runs a binary called ``name`` (guards against a recycled pid)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return Path(argv0).name == name


def marked_pids(marker: str) -> list[int]:
    """Pids whose command line or working directory contains ``marker`` (a folder unique to one
    daemon: workers name it on their command line, their multilang subprocesses run inside it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and _is_marked(entry, marker):
            pids.append(int(entry.name))
    return pids


def _is_marked(proc_dir: Path, marker: str) -> bool:
    try:
        if (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return False  # a zombie is already dead: only its parent's wait() is missing
        cmdline = (proc_dir / "cmdline").read_bytes().decode(errors="replace")
        return marker in cmdline or os.readlink(proc_dir / "cwd").startswith(marker)
    except (OSError, IndexError):
        return False


def kill_marked(marker: str, timeout_s: float = STOP_GRACE_S) -> list[int]:
    """SIGKILL every process marked with ``marker`` (workers that left the group) and wait until
    they are gone; the pids still there after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = marked_pids(marker)
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
