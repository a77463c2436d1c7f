"""A STORM_HOME for the test bed, assembled from Maven Central by tests/harness/assets/storm/pom.xml.

``ensure_storm_home()`` builds ``.cache/storm-<version>/`` once (lib/, lib-worker/, extlib/,
multilang/resources/storm.py from Maven; log4j2/, conf/, public/ from here) and returns it at once
when it is complete. A lock file keeps two processes from building at the same time. Standard library
only, so ``make storm-home`` needs no virtualenv::

    python3 -m tests.harness.storm.home        # build if missing, print the path
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR
from tests.harness.storm.maven import MVN, Log, built_once, run_maven, stderr_log

POM_DIR = ASSETS / "storm"
STORM_VERSION = "2.8.3"
MARKER = ".complete"
REQUIRED = (
    "lib/storm-server-{v}.jar",
    "lib-worker/storm-client-{v}.jar",
    "extlib/flux-core-{v}.jar",
    "multilang/resources/storm.py",
    "log4j2/cluster.xml",
    "log4j2/worker.xml",
    "public",
)


class StormHomeError(RuntimeError):
    """Maven failed or the assembled STORM_HOME lacks a required file."""


def storm_home_dir(version: str = STORM_VERSION) -> Path:
    """Where the STORM_HOME of ``version`` lives (built or not)."""
    return CACHE_DIR / f"storm-{version}"


def missing_parts(home: Path, version: str = STORM_VERSION) -> list[str]:
    """Required files or folders absent from ``home``."""
    return [rel.format(v=version) for rel in REQUIRED if not (home / rel.format(v=version)).exists()]


def is_complete(home: Path, version: str = STORM_VERSION) -> bool:
    """True if a build finished in ``home`` and nothing required is missing."""
    return (home / MARKER).exists() and not missing_parts(home, version)


def _run_maven(home: Path, version: str, log: Log) -> None:
    """``mvn package`` of the committed pom, echoing module progress and a download count."""
    cmd = [*MVN, "-f", str(POM_DIR / "pom.xml"), f"-Dstorm.home={home}", f"-Dstorm.version={version}"]
    status, tail = run_maven(
        [*cmd, "package"], tag="storm-home", log=log, progress=("Building storm-home", "BUILD"), every=50
    )
    if status != 0:
        raise StormHomeError(f"maven failed ({status}):\n" + "\n".join(tail))


def _add_local_files(home: Path) -> None:
    """log4j2 configs from the repository, an empty public/ (the UI insists), a placeholder conf."""
    shutil.copytree(POM_DIR / "log4j2", home / "log4j2", dirs_exist_ok=True)
    (home / "public").mkdir(exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    conf = home / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "README").write_text("Each daemon of the test bed gets its own storm.yaml (-Dstorm.conf.file).\n")


def build_storm_home(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """Assemble the STORM_HOME of ``version`` now (Maven resolves from ~/.m2 when it can)."""
    home = storm_home_dir(version)
    started = time.monotonic()
    (home / MARKER).unlink(missing_ok=True)
    _run_maven(home, version, log)
    _add_local_files(home)
    missing = missing_parts(home, version)
    if missing:
        raise StormHomeError(f"STORM_HOME {home} is missing {missing}")
    (home / MARKER).write_text(f"{version}\n")
    log(f"storm-home: built {home} in {time.monotonic() - started:.0f} s")
    return home


def ensure_storm_home(version: str = STORM_VERSION, log: Log = stderr_log) -> Path:
    """The STORM_HOME of ``version``, built first if it is missing or incomplete."""
    home = storm_home_dir(version)
    lock = home.parent / f".{home.name}.lock"
    return built_once(home, lambda: is_complete(home, version), lock, lambda: build_storm_home(version, log))


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_storm_home())


if __name__ == "__main__":
    main()
