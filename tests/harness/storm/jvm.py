"""The JVM benchmark components' topology jar, built by Maven from ``assets/jvm/`` into ``.cache/``.

``ensure_topology_jar()`` returns ``.cache/jvm-testbed/stormscale-testbed-<digest>.jar``, building it
first when it is missing (:class:`tests.harness.storm.maven.MavenJar`: the digest covers the pom,
every source file and the Storm version; offline first; progress echoed). storm-client is compiled
against the STORM_HOME's version (:data:`tests.harness.storm.home.STORM_VERSION`). Standard library
only, like ``home.py``::

    python3 -m tests.harness.storm.jvm        # build if missing, print the path
"""

from __future__ import annotations

from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR
from tests.harness.storm.home import STORM_VERSION
from tests.harness.storm.maven import Log, MavenBuildError, MavenJar, stderr_log

JVM_DIR = ASSETS / "jvm"
JAR_DIR = CACHE_DIR / "jvm-testbed"
JAR_NAME = "stormscale-testbed"
TOPOLOGY_JAR = MavenJar("jvm-testbed", JVM_DIR, JAR_DIR, JAR_NAME, "testbed.build.dir")
#: Maven failed to build the topology jar.
JvmBuildError = MavenBuildError


def source_files(root: Path = JVM_DIR) -> list[Path]:
    """The files the jar is built from: the pom and everything under ``src/``."""
    return TOPOLOGY_JAR.source_files(root)


def sources_digest(root: Path = JVM_DIR, version: str = STORM_VERSION) -> str:
    """A short digest of the sources' paths and contents and of the Storm version."""
    return TOPOLOGY_JAR.digest(version, root)


def jar_path(version: str = STORM_VERSION) -> Path:
    """Where the jar of the current sources lives (built or not)."""
    return TOPOLOGY_JAR.path(version)


def build_topology_jar(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """Build the jar of the current sources now (offline first) and return its path."""
    return TOPOLOGY_JAR.build(version, log)


def ensure_topology_jar(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """The jar of the current sources, built first if it is missing."""
    return TOPOLOGY_JAR.ensure(version, log)


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_topology_jar())


if __name__ == "__main__":
    main()
