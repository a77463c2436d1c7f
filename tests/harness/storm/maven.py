"""What the test bed's Maven builds share: a build lock, a progress-echoing ``mvn`` run, a logger, and
:class:`MavenJar` (a module's jar under a digest of its sources, built once).

Standard library only (``make storm-home`` and ``make jvm-testbed`` need no virtualenv).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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


#: Maven's words when ~/.m2 lacks an artifact and ``-o`` forbids a download.
OFFLINE_MISS = "offline mode"


class MavenBuildError(RuntimeError):
    """Maven failed to build a jar."""


# Every Maven run of the test bed: batch mode, and a download whose checksum is missing or wrong fails
# the build (--strict-checksums) instead of being used with a warning.
MVN: tuple[str, ...] = ("mvn", "--batch-mode", "--strict-checksums")


@dataclass(frozen=True)
class MavenJar:
    """A jar Maven builds from a module (``pom.xml`` and ``src/``) into ``out_dir`` under a name with a
    digest of the sources and the Storm version, so a changed source means a new jar (and worktrees
    sharing one ``.cache/`` keep their own). Maven runs offline first (``-o``: the machine's ~/.m2 once
    a build has filled it) and online only when offline resolution fails; the pom takes
    ``-Dstorm.version`` and ``-D<build_dir_property>`` (a folder under ``out_dir``) and names its jar
    ``name``.jar."""

    tag: str
    module: Path
    out_dir: Path
    name: str
    build_dir_property: str

    def source_files(self, root: Path | None = None) -> list[Path]:
        """The files the jar is built from: the pom and everything under ``src/``."""
        root = root or self.module
        return [root / "pom.xml", *sorted(p for p in (root / "src").rglob("*") if p.is_file())]

    def digest(self, version: str, root: Path | None = None) -> str:
        """A short digest of the sources' paths and contents and of the Storm version."""
        root = root or self.module
        digest = hashlib.sha256(f"storm {version}\n".encode())
        for path in self.source_files(root):
            digest.update(f"{path.relative_to(root)}\n".encode())
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    def path(self, version: str) -> Path:
        """Where the jar of the current sources lives (built or not)."""
        return self.out_dir / f"{self.name}-{self.digest(version)}.jar"

    def _maven(self, build_dir: Path, version: str, offline: bool, log: Log) -> tuple[int, list[str]]:
        cmd = [*MVN, "-Dstyle.color=never", "-f", str(self.module / "pom.xml")]
        cmd += [f"-Dstorm.version={version}", f"-D{self.build_dir_property}={build_dir}"]
        cmd += ["-o", "package"] if offline else ["package"]
        progress = ("Building ", "Compiling ", "Tests run:", "BUILD", "[ERROR]")
        return run_maven(cmd, tag=self.tag, log=log, progress=progress, every=20)

    def build(self, version: str, log: Log = stderr_log) -> Path:
        """Build the jar of the current sources now (offline first) and return its path."""
        out = self.path(version)
        build_dir = self.out_dir / f"build-{out.stem.rsplit('-', 1)[-1]}"
        started = time.monotonic()
        shutil.rmtree(build_dir, ignore_errors=True)
        try:
            status, tail = self._maven(build_dir, version, offline=True, log=log)
            if status != 0 and any(OFFLINE_MISS in line for line in tail):
                log(f"{self.tag}: ~/.m2 lacks some artifacts; building online")
                status, tail = self._maven(build_dir, version, offline=False, log=log)
            if status != 0:
                raise MavenBuildError(f"maven failed ({status}):\n" + "\n".join(tail))
            tmp = out.with_suffix(".tmp")
            shutil.copyfile(build_dir / f"{self.name}.jar", tmp)
            os.replace(tmp, out)
        finally:
            shutil.rmtree(build_dir, ignore_errors=True)
        log(f"{self.tag}: built {out} in {time.monotonic() - started:.0f} s")
        return out

    def ensure(self, version: str, log: Log = stderr_log) -> Path:
        """The jar of the current sources, built first if it is missing."""
        out = self.path(version)
        return built_once(out, out.is_file, self.out_dir / ".build.lock", lambda: self.build(version, log))
