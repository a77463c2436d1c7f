"""Fixtures for the planner tests: the repository's copies of the thesis profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormscale.planner import Topology, load_profile

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"


def thesis(name: str) -> Topology:
    return load_profile(PROFILES / f"thesis-{name}.json")


@pytest.fixture(scope="session")
def t17() -> Topology:
    return thesis("topology-17")


@pytest.fixture(scope="session")
def t10() -> Topology:
    return thesis("topology-10")
