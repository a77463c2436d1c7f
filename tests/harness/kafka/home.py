"""A Kafka home for the test bed, assembled from Maven Central by tests/harness/assets/kafka/pom.xml.

``ensure_kafka_home()`` builds ``.cache/kafka-<version>/`` once (``lib/``: kafka_2.13 and its runtime
dependencies, plus the distribution's logging binding; ``config/log4j.properties`` from here) and
returns it at once when it is complete. Maven runs offline first (``-o``: ~/.m2 once a build has
filled it) and online only when offline resolution fails. A lock file keeps two processes from
building at the same time. Standard library only, so ``make kafka-home`` needs no virtualenv::

    python3 -m tests.harness.kafka.home        # build if missing, print the path
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from tests.harness.paths import ASSETS, CACHE_DIR
from tests.harness.storm.maven import MVN, Log, built_once, run_maven, stderr_log

POM_DIR = ASSETS / "kafka"
KAFKA_VERSION = "3.9.1"
SCALA_VERSION = "2.13"
MARKER = ".complete"
OFFLINE_MISS = "offline mode"  # Maven's words when ~/.m2 lacks an artifact and -o forbids a download
REQUIRED = (
    "lib/kafka_{s}-{v}.jar",
    "lib/kafka-clients-{v}.jar",
    "lib/kafka-metadata-{v}.jar",
    "lib/slf4j-reload4j-1.7.36.jar",
    "config/log4j.properties",
)


class KafkaHomeError(RuntimeError):
    """Maven failed or the assembled Kafka home lacks a required file."""


def kafka_home_dir(version: str = KAFKA_VERSION) -> Path:
    """Where the Kafka home of ``version`` lives (built or not)."""
    return CACHE_DIR / f"kafka-{version}"


def missing_parts(home: Path, version: str = KAFKA_VERSION) -> list[str]:
    """Required files absent from ``home``."""
    wanted = [rel.format(v=version, s=SCALA_VERSION) for rel in REQUIRED]
    return [rel for rel in wanted if not (home / rel).exists()]


def is_complete(home: Path, version: str = KAFKA_VERSION) -> bool:
    """True if a build finished in ``home`` and nothing required is missing."""
    return (home / MARKER).exists() and not missing_parts(home, version)


def _maven(home: Path, version: str, offline: bool, log: Log) -> tuple[int, list[str]]:
    """``mvn package`` of the committed pom (offline with ``-o``); the exit status and the output's tail."""
    cmd = [*MVN, "-Dstyle.color=never", "-f", str(POM_DIR / "pom.xml")]
    cmd += [f"-Dkafka.home={home}", f"-Dkafka.version={version}"]
    cmd += ["-o", "package"] if offline else ["package"]
    return run_maven(cmd, tag="kafka-home", log=log, progress=("Building kafka-home", "BUILD"), every=25)


def _run_maven(home: Path, version: str, log: Log) -> None:
    """Offline first; online only when ~/.m2 lacks an artifact."""
    status, tail = _maven(home, version, offline=True, log=log)
    if status != 0 and any(OFFLINE_MISS in line for line in tail):
        log("kafka-home: ~/.m2 lacks some artifacts; resolving online")
        status, tail = _maven(home, version, offline=False, log=log)
    if status != 0:
        raise KafkaHomeError(f"maven failed ({status}):\n" + "\n".join(tail))


def build_kafka_home(version: str = KAFKA_VERSION, log: Log = stderr_log) -> Path:
    """Assemble the Kafka home of ``version`` now and return it."""
    home = kafka_home_dir(version)
    started = time.monotonic()
    (home / MARKER).unlink(missing_ok=True)
    _run_maven(home, version, log)
    (home / "config").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(POM_DIR / "log4j.properties", home / "config" / "log4j.properties")
    missing = missing_parts(home, version)
    if missing:
        raise KafkaHomeError(f"Kafka home {home} is missing {missing}")
    (home / MARKER).write_text(f"{version}\n")
    log(f"kafka-home: built {home} in {time.monotonic() - started:.0f} s")
    return home


def ensure_kafka_home(version: str = KAFKA_VERSION, log: Log = stderr_log) -> Path:
    """The Kafka home of ``version``, built first if it is missing or incomplete."""
    home = kafka_home_dir(version)
    lock = home.parent / f".{home.name}.lock"
    return built_once(home, lambda: is_complete(home, version), lock, lambda: build_kafka_home(version, log))


def main() -> None:
    """Build if missing and print the path."""
    print(ensure_kafka_home())


if __name__ == "__main__":
    main()
