"""Hostile input to `stormscale plan/size/place`: one line on stderr, exit status 2, never a traceback or
a hang. Each case runs the real CLI as a subprocess with a time bound."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from stormscale.planner import cli
from stormscale.planner.model import Component, Kind, Topology
from stormscale.planner.profile import MAX_COMPONENTS, MAX_FILE_BYTES, MAX_GAIN, parse_profile
from stormscale.planner.sizing.strategies import MAX_SIZED_UNITS
from tests.unit.planner.cli_run import run_cli

#: Catches a hang (a FIFO nobody writes, an endless device): generous, because a loaded machine can
#: take seconds just to start the interpreter; speed is checked against a baseline run instead.
TIME_BOUND_S = 60.0


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


def wide(n: int) -> Topology:
    """A spout with ``n`` bolt children."""
    spout = Component(id="s", kind=Kind.SPOUT, units=1, children=tuple((f"b{i}", 0.0) for i in range(n)))
    bolts = tuple(Component(id=f"b{i}", kind=Kind.BOLT, units=1, capacity_per_unit=1.0) for i in range(n))
    return Topology(name="wide", components=(spout, *bolts))


def seconds_to_order(n: int) -> float:
    """The best of three timings of the order of a fresh ``wide(n)``, the garbage collector paused: a
    full collection over 10^5 live components in one timing once read as a 20× step."""
    timings = []
    for _ in range(3):
        topology = wide(n)
        gc.disable()
        try:
            started = time.perf_counter()
            order = topology.order
            timings.append(time.perf_counter() - started)
        finally:
            gc.enable()
        assert len(order) == n + 1
        assert order[:3] == (0, 1, 2)  # ties still broken by position in the profile
    return min(timings)


def test_a_spout_with_100000_children_loads_in_n_log_n() -> None:
    """The loader's topological order once re-sorted its ready list on every pop (quadratic: minutes).
    Against 20,000 children in the same run (the machine's speed cancels): n log n takes ~6× as long
    for 5× the children, quadratic 25×."""
    small = seconds_to_order(20_000)
    large = seconds_to_order(100_000)
    assert large < 12 * small + 0.2, (large, small)


def test_too_many_components_is_one_line(tmp_path: Path) -> None:
    n = MAX_COMPONENTS + 1
    document = {
        "topology": "wide",
        "components": [{"id": f"b{i}", "kind": "bolt", "units": 1, "capacityPerUnit": 1.0} for i in range(n)],
    }
    path = write(tmp_path, json.dumps(document))
    assert_one_line_exit_2(run("plan", path, "--budget", "1"), "components: at most")


FLAGS = {
    "plan": ["--budget", "1"],
    "size": ["--target-rate", "5"],
    "place": ["--slots-per-pod", "1"],
}


@pytest.mark.parametrize("command", ["plan", "size", "place"])
def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "profile.fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes: the time bound catches it
    assert_one_line_exit_2(run(command, str(fifo), *FLAGS[command]), "not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_not_read(device: str) -> None:
    assert_one_line_exit_2(
        run("plan", device, *FLAGS["plan"]), f"{device}: cannot read profile (not a regular"
    )


def test_a_file_past_the_size_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk, no time
    assert_one_line_exit_2(run("place", str(path), *FLAGS["place"]), f"larger than {MAX_FILE_BYTES:,} bytes")


def chain(selectivity: float, length: int) -> dict[str, Any]:
    bolts = [
        {
            "id": f"b{i}",
            "kind": "bolt",
            "units": 1,
            "capacityPerUnit": 1e12,
            "selectivity": selectivity,
            **({"children": {f"b{i + 1}": 1.0}} if i + 1 < length else {}),
        }
        for i in range(length)
    ]
    spout = {"id": "s", "kind": "spout", "units": 1, "outputPerUnit": 10.0, "children": {"b0": 1.0}}
    return {"topology": "chain", "components": [spout, *bolts]}


@pytest.mark.parametrize("command", ["plan", "size", "place"])
def test_a_chain_of_huge_selectivities_names_the_field_and_the_bound(tmp_path: Path, command: str) -> None:
    path = write(tmp_path, json.dumps(chain(1e12, 30)))
    result = run(command, path, *FLAGS[command])
    assert_one_line_exit_2(result, "components[1].selectivity: one tuple a source offers becomes 1e+12")
    assert f"above the bound {MAX_GAIN:g}" in result.stderr


def test_a_real_splitter_chain_still_loads() -> None:
    assert len(parse_profile(chain(10.0, 5)).components) == 6  # 10⁵ tuples per offered tuple: fine


@pytest.mark.parametrize("command", ["size", "place"])
def test_a_vanishing_capacity_is_refused_by_the_sizing_bound(tmp_path: Path, command: str) -> None:
    path = write(tmp_path, json.dumps(profile(bolt={"capacityPerUnit": 1e-300})))
    assert_one_line_exit_2(
        run(command, path, *FLAGS[command]), f"needs more than {MAX_SIZED_UNITS:,} units in all"
    )


def test_a_target_rate_beyond_the_sizing_bound_is_refused_fast(tmp_path: Path) -> None:
    """As fast as sizing for a small rate in the same run (it once searched for minutes)."""
    path = write(tmp_path, json.dumps(profile()))
    started = time.perf_counter()
    assert run("size", path, "--target-rate", "10").returncode == 0
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    result = run("size", path, "--target-rate", "1e9")
    assert_one_line_exit_2(result, "--target-rate: 1e+09 tuples/s needs more than 100,000 units")
    assert time.perf_counter() - started < 3 * baseline + 2.0


@pytest.mark.parametrize(
    ("slots", "message"),
    [
        ("1e20", "argument --slots-per-pod: invalid int value"),
        ("100000000000000000000", "argument --slots-per-pod: must be at most 64"),
        ("65", "argument --slots-per-pod: must be at most 64"),
    ],
)
@pytest.mark.parametrize("command", ["size", "place"])
def test_slots_per_pod_beyond_the_crds_bound_is_refused(
    tmp_path: Path, command: str, slots: str, message: str
) -> None:
    path = write(tmp_path, json.dumps(profile()))
    flags = ["--target-rate", "5"] if command == "size" else []
    assert_one_line_exit_2(run(command, path, *flags, "--slots-per-pod", slots), message)


@pytest.mark.parametrize("error", [RecursionError, OverflowError, ValueError, MemoryError])
def test_main_turns_an_arithmetic_escape_into_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: type[BaseException]
) -> None:
    def escape(argv: object) -> str:
        raise error("deep inside a strategy")

    monkeypatch.setattr(cli, "run", escape)
    assert cli.main(["plan", "p.json", "--budget", "1"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"stormscale: input beyond what the planner computes ({error.__name__}: deep inside a strategy)"
    ]
