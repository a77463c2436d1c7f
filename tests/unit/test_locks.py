"""The hash-locked requirements (`make lock`) agree with every declared pin, so neither drifts silently:
each ``==`` pin of requirements-dev.txt, requirements-build.txt and the three pyproject.toml files is in
the lock that installs it, at that version, with sha256 hashes; the build backend is pinned alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.locks import build_pins, lock_hashes, lock_pins, pins, project_pins
from tests.harness.paths import REPO_ROOT as REPO

DEV_LOCK = REPO / "requirements-dev.lock"
OPERATOR_LOCK = REPO / "operator" / "requirements.lock"
PUBLISHER_LOCK = REPO / "spark" / "requirements.lock"
PLANNER = REPO / "planner" / "pyproject.toml"
AGGREGATION = REPO / "spark" / "pyproject.toml"
OPERATOR = REPO / "operator" / "pyproject.toml"


def file_pins(path: Path) -> dict[str, str]:
    return pins(path.read_text().splitlines())


BUILD = file_pins(REPO / "requirements-build.txt")

# each lock and the pins it must hold: (declared pins) per lock
DECLARED = {
    "make venv": (
        DEV_LOCK,
        {
            **file_pins(REPO / "requirements-dev.txt"),
            **BUILD,
            **project_pins(PLANNER, ("plot",)),
            **project_pins(AGGREGATION, ("spark", "publish")),
            **project_pins(OPERATOR),
        },
    ),
    "operator image": (
        OPERATOR_LOCK,
        {**BUILD, **project_pins(PLANNER), **project_pins(AGGREGATION), **project_pins(OPERATOR)},
    ),
    "publisher image": (
        PUBLISHER_LOCK,
        {**BUILD, **project_pins(PLANNER), **project_pins(AGGREGATION, ("spark", "publish"))},
    ),
}


@pytest.mark.parametrize("which", sorted(DECLARED))
def test_every_declared_pin_is_in_the_lock_at_its_version(which: str) -> None:
    lock, declared = DECLARED[which]
    locked = lock_pins(lock)
    assert declared, which
    drift = {
        name: (version, locked.get(name)) for name, version in declared.items() if locked.get(name) != version
    }
    assert drift == {}, f"{lock.name} disagrees with the declared pins (declared, locked): run make lock"


@pytest.mark.parametrize(
    "lock", [DEV_LOCK, OPERATOR_LOCK, PUBLISHER_LOCK], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_locked_package_carries_sha256_hashes_and_no_local_package(lock: Path) -> None:
    hashes = lock_hashes(lock)
    assert set(hashes) == set(lock_pins(lock))
    assert all(len(h) == 64 and int(h, 16) >= 0 for values in hashes.values() for h in values)
    assert [name for name, values in hashes.items() if not values] == []
    assert not any(name.startswith("stormscale") for name in hashes)


@pytest.mark.parametrize("pyproject", [PLANNER, AGGREGATION, OPERATOR], ids=lambda p: p.parent.name)
def test_the_build_backend_is_pinned_as_requirements_build_says(pyproject: Path) -> None:
    assert build_pins(pyproject) == BUILD
    assert BUILD


def test_a_changed_pin_is_caught() -> None:
    lock, declared = DECLARED["operator image"]
    locked = lock_pins(lock)
    bumped = {name: version + ".1" for name, version in declared.items()}
    assert all(locked.get(name) != version for name, version in bumped.items())


def test_the_lock_reader_normalizes_names_and_skips_hashes_and_comments() -> None:
    lines = [
        "# via x",
        "Prometheus_Client==0.26.0 \\",
        "    --hash=sha256:ab",
        "pyspark[sql]==4.3.0 ; python_version >= '3'",
        "-r other.txt",
    ]
    assert pins(lines) == {"prometheus-client": "0.26.0", "pyspark": "4.3.0"}
