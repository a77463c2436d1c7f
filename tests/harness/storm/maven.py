"""What the test bed's Maven builds share: a build lock, a progress-echoing ``mvn`` run, a logger.

Standard library only (``make storm-home`` and ``make jvm-testbed`` need no virtualenv).
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

Log = Callable[[str], None]
TAIL_LINES = 40


def stderr_log(line: str) -> None:
    """The default progress log: one line on stderr, flushed."""
    print(line, file=sys.stderr, flush=True)


@contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created with its folder): one build at a time across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_once(result: Path, ready: Callable[[], bool], lock: Path, build: Callable[[], Path]) -> Path:
    """``result`` if ``ready()``; else ``build()`` it under the exclusive ``lock``, unless another
    process built it while this one waited for the lock."""
    if ready():
        return result
    with build_lock(lock):
        return result if ready() else build()


def run_maven(
    cmd: Sequence[str], *, tag: str, log: Log, progress: Sequence[str], every: int
) -> tuple[int, list[str]]:
    """Run ``cmd``; echo lines containing a ``progress`` word and every ``every``-th download under
    ``tag``; return the exit status and the output's last lines."""
    log(f"{tag}: {' '.join(cmd)}")
    downloads = 0
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-TAIL_LINES:], line.rstrip()]
            if line.startswith(("Downloaded from", "[INFO] Downloaded from")):
                downloads += 1
                if downloads % every == 0:
                    log(f"{tag}: {downloads} artifacts downloaded")
            elif any(word in line for word in progress):
                log(f"{tag}: {line.strip()}")
    return proc.returncode, tail
