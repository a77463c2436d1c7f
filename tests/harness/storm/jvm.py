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

import hashlib
import os
import shutil
import time
from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR
from tests.harness.storm.home import STORM_VERSION
from tests.harness.storm.maven import Log, built_once, run_maven, stderr_log

JVM_DIR = ASSETS / "jvm"
JAR_DIR = CACHE_DIR / "jvm-testbed"
JAR_NAME = "stormscale-testbed"
OFFLINE_MISS = "offline mode"  # Maven's words when ~/.m2 lacks an artifact and -o forbids a download


class JvmBuildError(RuntimeError):
    """Maven failed to build the topology jar."""


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


def _maven(build_dir: Path, version: str, offline: bool, log: Log) -> tuple[int, list[str]]:
    """``mvn package`` into ``build_dir``; echo progress; return the exit status and the output's tail."""
    cmd = ["mvn", "-B", "-Dstyle.color=never", "-f", str(JVM_DIR / "pom.xml")]
    cmd += [f"-Dstorm.version={version}", f"-Dtestbed.build.dir={build_dir}"]
    cmd += ["-o", "package"] if offline else ["package"]
    progress = ("Building ", "Compiling ", "BUILD", "[ERROR]")
    return run_maven(cmd, tag="jvm-testbed", log=log, progress=progress, every=20)


def build_topology_jar(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
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


def ensure_topology_jar(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """The jar of the current sources, built first if it is missing."""
    out = jar_path(version)
    return built_once(out, out.is_file, JAR_DIR / ".build.lock", lambda: build_topology_jar(version, log))


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_topology_jar())


if __name__ == "__main__":
    main()
