"""Reading the hash-locked requirement files (`make lock`) and the pins they must agree with."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


def normalized(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list[str]) -> dict[str, str]:
    """``name==version`` at the start of a line (comments, options and hash lines skipped) by name."""
    found: dict[str, str] = {}
    for line in lines:
        match = PIN.match(line)
        if match:
            found[normalized(match[1])] = match[3]
    return found


def lock_pins(path: Path) -> dict[str, str]:
    """The versions a lock file pins, by normalized name."""
    return pins(path.read_text().splitlines())


def lock_hashes(path: Path) -> dict[str, list[str]]:
    """The ``--hash=sha256:...`` values that follow each pin of a lock file, by normalized name."""
    hashes: dict[str, list[str]] = {}
    current = ""
    for line in path.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = normalized(match[1])
            hashes[current] = []
        elif current and line.strip().startswith("--hash=sha256:"):
            hashes[current].append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
    return hashes


def project_pins(pyproject: Path, extras: tuple[str, ...] = ()) -> dict[str, str]:
    """The exact (``==``) pins of a pyproject.toml's dependencies and of the given extras."""
    project = tomllib.loads(pyproject.read_text())["project"]
    declared = list(project.get("dependencies", []))
    for extra in extras:
        declared += project["optional-dependencies"][extra]
    return pins(declared)


def build_pins(pyproject: Path) -> dict[str, str]:
    """The exact pins of a pyproject.toml's ``[build-system] requires``."""
    return pins(tomllib.loads(pyproject.read_text())["build-system"]["requires"])
