"""The JVM benchmark components' topology jar, built by Maven from ``assets/jvm/`` into ``.cache/``.

``ensure_topology_jar()`` returns ``.cache/jvm-testbed/stormscale-testbed-<digest>.jar``, building it
first when it is missing. The digest covers the pom, every source file and the Storm version, so a
changed source means a new jar (and worktrees sharing one ``.cache/`` keep their own). Maven runs
offline first (``-o``: the machine's ~/.m2 once a build has filled it) and online only when offline
resolution fails; its progress is echoed. storm-client is compiled against the STORM_HOME's version
(:data:`tests.harness.storm.home.STORM_VERSION`). Standard library only, like ``home.py``::

    python3 -m tests.harness.storm.jvm        # build if missing, print the path
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR
from tests.harness.storm.home import STORM_VERSION

JVM_DIR = ASSETS / "jvm"
JAR_DIR = CACHE_DIR / "jvm-testbed"
JAR_NAME = "stormscale-testbed"
OFFLINE_MISS = "offline mode"  # Maven's words when ~/.m2 lacks an artifact and -o forbids a download

Log = Callable[[str], None]


class JvmBuildError(RuntimeError):
    """Maven failed to build the topology jar."""


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def source_files(root: Path = JVM_DIR) -> list[Path]:
    """The files the jar is built from: the pom and everything under ``src/``."""
    return [root / "pom.xml", *sorted(p for p in (root / "src").rglob("*") if p.is_file())]


def sources_digest(root: Path = JVM_DIR, version: str = STORM_VERSION) -> str:
    """A short digest of the sources' paths and contents and of the Storm version."""
    digest = hashlib.sha256(f"storm {version}\n".encode())
    for path in source_files(root):
        digest.update(f"{path.relative_to(root)}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def jar_path(version: str = STORM_VERSION) -> Path:
    """Where the jar of the current sources lives (built or not)."""
    return JAR_DIR / f"{JAR_NAME}-{sources_digest(version=version)}.jar"


@contextmanager
def _build_lock() -> Iterator[None]:
    JAR_DIR.mkdir(parents=True, exist_ok=True)
    with open(JAR_DIR / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _maven(build_dir: Path, version: str, offline: bool, log: Log) -> tuple[int, list[str]]:
    """``mvn package`` into ``build_dir``; echo progress; return the exit status and the output's tail."""
    cmd = ["mvn", "-B", "-Dstyle.color=never", "-f", str(JVM_DIR / "pom.xml")]
    cmd += [f"-Dstorm.version={version}", f"-Dtestbed.build.dir={build_dir}"]
    cmd += ["-o", "package"] if offline else ["package"]
    log(f"jvm-testbed: {' '.join(cmd)}")
    downloads = 0
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = [*tail[-40:], line.rstrip()]
            if line.startswith(("Downloaded from", "[INFO] Downloaded from")):
                downloads += 1
                if downloads % 20 == 0:
                    log(f"jvm-testbed: {downloads} artifacts downloaded")
            elif any(word in line for word in ("Building ", "Compiling ", "BUILD", "[ERROR]")):
                log(f"jvm-testbed: {line.strip()}")
    return proc.returncode, tail


def build_topology_jar(version: str = STORM_VERSION, log: Log = _stderr) -> Path:
    """Build the jar of the current sources now (offline first) and return its path."""
    out = jar_path(version)
    build_dir = JAR_DIR / f"build-{out.stem.rsplit('-', 1)[-1]}"
    started = time.monotonic()
    shutil.rmtree(build_dir, ignore_errors=True)
    try:
        status, tail = _maven(build_dir, version, offline=True, log=log)
        if status != 0 and any(OFFLINE_MISS in line for line in tail):
            log("jvm-testbed: ~/.m2 lacks some artifacts; building online")
            status, tail = _maven(build_dir, version, offline=False, log=log)
        if status != 0:
            raise JvmBuildError(f"maven failed ({status}):\n" + "\n".join(tail))
        tmp = out.with_suffix(".tmp")
        shutil.copyfile(build_dir / f"{JAR_NAME}.jar", tmp)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    log(f"jvm-testbed: built {out} in {time.monotonic() - started:.0f} s")
    return out


def ensure_topology_jar(version: str = STORM_VERSION, log: Log = _stderr) -> Path:
    """The jar of the current sources, built first if it is missing."""
    out = jar_path(version)
    if out.is_file():
        return out
    with _build_lock():
        if out.is_file():
            return out
        return build_topology_jar(version, log)


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_topology_jar())


if __name__ == "__main__":
    main()
