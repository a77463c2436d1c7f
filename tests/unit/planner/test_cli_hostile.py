"""Hostile input to `stormscale plan/size/place`: one line on stderr, exit status 2, never a traceback or
a hang. Each case runs the real CLI as a subprocess with a time bound."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stormscale.planner.model import Component, Kind, Topology
from stormscale.planner.profile import MAX_COMPONENTS
from tests.unit.planner.cli_run import run_cli

TIME_BOUND_S = 20.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout_s=TIME_BOUND_S)


def profile(spout: dict[str, Any] | None = None, bolt: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "topology": "t",
        "components": [
            {
                "id": "s",
                "kind": "spout",
                "units": 1,
                "outputPerUnit": 10.0,
                "children": {"b": 1.0},
                **(spout or {}),
            },
            {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 5.0, **(bolt or {})},
        ],
    }


def assert_one_line_exit_2(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]


def write(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "p.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


HOSTILE: list[tuple[str, str | bytes, str]] = [
    ("non-utf8", b'{"topology": "\xff\xfe"}', "not UTF-8"),
    ("deep-nesting", "[" * 100_000, "nested too deeply"),
    ("huge-units", json.dumps(profile(bolt={"units": 10**400})), "components[1].units: must be at most"),
    (
        "huge-rate",
        json.dumps(profile(spout={"outputPerUnit": 1e308})),
        "components[0].outputPerUnit: must be at most",
    ),
    ("huge-capacity", json.dumps(profile(bolt={"capacityPerUnit": 1e308})), "components[1].capacityPerUnit"),
    ("5000-digits", '{"topology": "t", "components": [{"units": ' + "9" * 5000 + "}]}", "integer too long"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
@pytest.mark.parametrize("command", ["plan", "size", "place", "graph"])
def test_hostile_profile_is_one_line_and_exit_2(
    tmp_path: Path, command: str, text: str | bytes, message: str
) -> None:
    path = write(tmp_path, text)
    flags = {
        "plan": ["--budget", "1"],
        "size": ["--target-rate", "5"],
        "place": ["--slots-per-pod", "1"],
        "graph": ["--out", str(tmp_path / "g.svg")],
    }[command]
    assert_one_line_exit_2(run(command, path, *flags), message)


@pytest.mark.parametrize("budget", ["100000", "-100000"])
def test_budget_beyond_the_bound_is_refused(tmp_path: Path, budget: str) -> None:
    path = write(tmp_path, json.dumps(profile()))
    assert_one_line_exit_2(run("plan", path, "--budget", budget), "argument --budget: must be within")


def test_target_rate_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(profile()))
    assert_one_line_exit_2(
        run("size", path, "--target-rate", "1e308"), "argument --target-rate: must be at most"
    )


def test_a_spout_with_100000_children_loads_in_n_log_n() -> None:
    """The loader's topological order once re-sorted its ready list on every pop (quadratic: minutes)."""
    n = 100_000
    spout = Component(id="s", kind=Kind.SPOUT, units=1, children=tuple((f"b{i}", 0.0) for i in range(n)))
    bolts = tuple(Component(id=f"b{i}", kind=Kind.BOLT, units=1, capacity_per_unit=1.0) for i in range(n))
    topology = Topology(name="wide", components=(spout, *bolts))
    started = time.perf_counter()
    assert len(topology.order) == n + 1
    assert topology.order[:3] == (0, 1, 2)  # ties still broken by position in the profile
    assert time.perf_counter() - started < 5.0


def test_too_many_components_is_one_line(tmp_path: Path) -> None:
    n = MAX_COMPONENTS + 1
    document = {
        "topology": "wide",
        "components": [{"id": f"b{i}", "kind": "bolt", "units": 1, "capacityPerUnit": 1.0} for i in range(n)],
    }
    path = write(tmp_path, json.dumps(document))
    assert_one_line_exit_2(run("plan", path, "--budget", "1"), "components: at most")
