"""``stormscale size`` and ``stormscale place``: tables, JSON and one-line errors with exit status 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from stormscale.planner.cli import main
from stormscale.planner.placement.model import parse_placement
from stormscale.planner.profile import load_profile, profile_document
from stormscale.planner.sizing.exact import minimum_units, offered_rate
from tests.unit.planner.conftest import PROFILES

T17 = str(PROFILES / "thesis-topology-17.json")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def rows(table: str, heading: str) -> dict[str, list[str]]:
    """Rows of the table under ``heading``, keyed by their strategy (or first) cell."""
    block = table.split(heading, 1)[1].split("\n\n", 1)[0].splitlines()[2:]  # rest of heading, header
    out = {}
    for line in block:
        cells = line.split()
        if cells[0] == "*":
            cells = [*cells[1:], "*"]
        out[cells[0]] = cells[1:]
    return out


def test_size_table_puts_every_strategy_side_by_side_and_marks_the_exact_minimum(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["size", T17, "--target-rate", "6000", "--slots-per-pod", "2"], capsys)
    assert (code, err) == (0, "")
    strategies = rows(out, "Sizing by strategy")
    assert list(strategies) == ["exact", "lsa", "mba", "pdeployer"]
    exact = minimum_units(load_profile(T17), 6000.0)
    assert strategies["exact"][:2] == [str(exact.total_units), str(exact.total_units)]
    assert strategies["exact"][4] == str(exact.pods(2))
    assert "proven minimum" in " ".join(strategies["exact"])
    assert strategies["pdeployer"][4] == "—"  # one slot per pod
    units = rows(out, "Units per component")
    assert {cid: int(cells[-4]) for cid, cells in units.items()} == exact.units


def test_size_json_is_a_version_2_plan_that_place_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        ["size", T17, "--target-rate", "6000", "--strategy", "mba", "--output", "json"], capsys
    )
    plan = json.loads(out)
    assert code == 0
    assert (plan["formatVersion"], plan["sizing"], plan["targetRate"]) == (2, "mba", 6000.0)
    assert plan["profile"] == profile_document(load_profile(T17))
    assert plan["pods"] == math.ceil(plan["slots"] / plan["slotsPerPod"])
    path = tmp_path / "plan.json"
    path.write_text(out, encoding="utf-8")
    code, out, _ = run(["place", str(path), "--slots-per-pod", "3", "--output", "json"], capsys)
    placement = parse_placement(json.loads(out))
    assert code == 0
    assert placement.strategy == "sam"
    assert placement.executors() == plan["units"]
    assert all(len(pod.slots) == 3 for pod in placement.pods)


def test_place_table_lists_pods_per_strategy_and_every_slot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["place", T17, "--slots-per-pod", "1", "--strategy", "pdeployer"], capsys)
    assert code == 0
    strategies = rows(out, "Pods by strategy")
    assert list(strategies) == ["dsm", "rsm", "sam", "pdeployer"]
    assert strategies["pdeployer"][-1] == "*"
    slots = rows(out, "Slots under pdeployer")
    assert len(slots) == int(strategies["pdeployer"][0])  # one slot per pod
    topology = load_profile(T17)
    assert f"target {offered_rate(topology):,.1f} tuples/s" in out  # a profile without a rate: today's


def test_place_json_of_a_profile_at_a_target(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "place",
            T17,
            "--slots-per-pod",
            "2",
            "--strategy",
            "rsm",
            "--target-rate",
            "5000",
            "--output",
            "json",
        ],
        capsys,
    )
    placement = parse_placement(json.loads(out))
    assert code == 0
    assert placement.executors() == {
        k: v for k, v in minimum_units(load_profile(T17), 5000.0).units.items() if v
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["size", T17, "--target-rate", "0"], "--target-rate: must be a finite rate > 0"),
        (["size", T17, "--target-rate", "-5"], "--target-rate: must be a finite rate > 0"),
        (["size", T17, "--target-rate", "inf"], "--target-rate: must be a finite rate > 0"),
        (["size", T17, "--target-rate", "nan"], "--target-rate: must be a finite rate > 0"),
        (["size", T17, "--target-rate", "fast"], "not a rate"),
        (["size", T17, "--target-rate", "10", "--strategy", "best"], "invalid choice: 'best'"),
        (["size", T17, "--target-rate", "10", "--slots-per-pod", "0"], "--slots-per-pod: must be at least 1"),
        (
            ["size", T17, "--target-rate", "10", "--strategy", "pdeployer", "--slots-per-pod", "2"],
            "single worker slot",
        ),
        (["place", T17, "--slots-per-pod", "2", "--strategy", "pdeployer"], "single worker slot"),
        (["place", T17, "--slots-per-pod", "-1"], "--slots-per-pod: must be at least 1"),
        (["place", T17, "--slots-per-pod", "1", "--strategy", "ffd"], "invalid choice: 'ffd'"),
        (["place", "/nonexistent.json", "--slots-per-pod", "1"], "cannot read"),
    ],
)
def test_bad_input_is_one_line_with_exit_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert message in err


def test_a_profile_that_cannot_be_placed_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = profile_document(load_profile(T17))
    document["components"][3]["memoryPerUnit"] = 1.5  # one unit needs more memory than a slot has
    path = tmp_path / "heavy.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    for strategy in ("sam", "pdeployer"):
        code, _, err = run(["place", str(path), "--slots-per-pod", "1", "--strategy", strategy], capsys)
        assert code == 2
        assert err.count("\n") == 1
        assert document["components"][3]["id"] in err


def test_a_plan_with_a_bad_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["size", T17, "--target-rate", "6000", "--output", "json"], capsys)
    for field, value, message in (
        ("targetRate", -1, "targetRate: must be a finite rate"),
        ("targetRate", 10**400, "targetRate: must be a finite rate > 0 tuples/s, got an integer of 401"),
        ("formatVersion", 3, "formatVersion:"),
        ("sizing", "magic", "sizing: must be one of"),
        ("units", {"1": 99}, "units: differ"),
    ):
        plan = json.loads(out)
        plan[field] = value
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan), encoding="utf-8")
        code, _, err = run(["place", str(path), "--slots-per-pod", "1"], capsys)
        assert code == 2, field
        assert message in err, field
