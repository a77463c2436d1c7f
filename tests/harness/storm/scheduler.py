"""Stormscale's scheduler jar (``scheduler/``, a shipped part: docs/scheduler.md), built by Maven into
``.cache/scheduler/`` for the test bed's Nimbus.

``ensure_scheduler_jar()`` returns ``.cache/scheduler/stormscale-scheduler-<digest>.jar``, building it
(and running its JUnit tests) first when it is missing (:class:`tests.harness.storm.maven.MavenJar`).
The test bed's Nimbus has it on its classpath and runs it (``storm.scheduler``:
:data:`SCHEDULER_CLASS`), so every real-Storm test goes through it: topologies without a placement
through its fallback to Storm's DefaultScheduler. Standard library only::

    python3 -m tests.harness.storm.scheduler        # build if missing, print the path
"""

from __future__ import annotations

from pathlib import Path

from tests.harness.paths import CACHE_DIR, REPO_ROOT
from tests.harness.storm.home import STORM_VERSION
from tests.harness.storm.maven import Log, MavenJar, stderr_log

SCHEDULER_CLASS = "io.stormscale.scheduler.PlacementScheduler"
SCHEDULER_JAR = MavenJar(
    "scheduler",
    REPO_ROOT / "scheduler",
    CACHE_DIR / "scheduler",
    "stormscale-scheduler",
    "scheduler.build.dir",
)


def ensure_scheduler_jar(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """The scheduler jar of the current sources, built (tests included) first if it is missing."""
    return SCHEDULER_JAR.ensure(version, log)


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_scheduler_jar())


if __name__ == "__main__":
    main()
