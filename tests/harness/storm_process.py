"""Processes of the Storm test bed: how one is launched, watched and stopped.

A ``LaunchSpec`` is everything needed to start one daemon (argv, environment, working directory, log
files); the pod runner can run it inside a cgroup itself. A ``Daemon`` is a started spec in its own
session (so its process group holds the workers a Supervisor forks), stopped with SIGTERM then SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

LOG_TAIL_LINES = 50
STOP_GRACE_S = 10.0


class DaemonError(RuntimeError):
    """A daemon exited or did not become ready; the message carries the tail of its logs."""


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
        for path in (self.log, self.console):
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

    def wait_ready(self, probe: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll ``probe`` until true; fail at once if the process exits, or after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.exited()
            if code is not None:
                raise self.failure(f"exited with code {code} before {what}")
            if probe():
                return
            if time.monotonic() > deadline:
                raise self.failure(f"not ready after {timeout_s:.0f} s: {what}")
            time.sleep(0.5)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_s``, then sweep leftovers."""
        stop_group(self.proc.pid, grace_s, lambda: self.proc.poll() is not None)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace_s)
        if self.spec.marker:
            kill_marked(self.spec.marker)


def stop_process(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM ``process``, SIGKILL it if it is still there after ``grace_s``; wait for it either way."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


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
