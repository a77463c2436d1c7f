"""`stormscale plan`: output shapes and exit statuses, run as a real subprocess where it matters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stormscale.operator.policy import ScalingSpec
from stormscale.planner.cli import DEFAULT_FLOW_MODEL, build_parser, main
from stormscale.planner.flow import FlowModel
from stormscale.planner.planning import Strategy
from tests.unit.planner.cli_run import run_cli

from .conftest import PROFILES

T17 = str(PROFILES / "thesis-topology-17.json")
CRD = Path(__file__).parents[3] / "crds" / "stormtopologies.stormscale.io.yaml"


run = run_cli


def test_json_output_is_the_plan_object_of_the_format() -> None:
    result = run(
        "plan", T17, "--budget", "3", "--strategy", "combined", "--flow-model", "drop", "--output", "json"
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan == {
        "topology": "thesis-topology-17",
        "strategy": "combined",
        "flowModel": "drop",
        "budget": 3,
        "allocation": {"11": 1, "16": 2},
        "unallocated": 0,
        "throughput": {"before": 4740.0, "after": 5740.0},
        "chosen": "predictive",
    }


def test_table_shows_every_strategy_and_marks_the_chosen_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", T17, "--budget", "2", "--strategy", "optimal", "--flow-model", "drop"]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split()[1] if line.lstrip().startswith("*") else line.split()[0]: line
        for line in out.splitlines()
        if line.strip().split(" ")[0] in {"*", "stela", "predictive", "combined", "optimal"}
    }
    assert set(rows) == {"stela", "predictive", "combined", "optimal"}
    assert rows["optimal"].lstrip().startswith("*")
    assert "proven optimum" in rows["optimal"]
    assert "5,540.0" in rows["optimal"]
    assert "5,440.0" in rows["combined"]
    assert "16         bolt   1 → 2" in out  # component rows show units before → after


def test_backpressure_table_names_the_throttled_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", T17, "--budget", "1", "--flow-model", "backpressure"]) == 0
    assert "throttled" in capsys.readouterr().out


def test_the_default_flow_model_is_the_crds_and_the_operators() -> None:
    """Without ``--flow-model`` a profile plans as in the cluster: the CRD's and the policy's default."""
    crd = yaml.safe_load(CRD.read_text())
    scaling = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "scaling"
    ]
    crd_default = scaling["properties"]["flowModel"]["default"]
    policy_default = ScalingSpec.model_fields["flow_model"].default
    assert crd_default == policy_default == "Backpressure"
    assert DEFAULT_FLOW_MODEL is FlowModel(policy_default.lower()) is FlowModel.BACKPRESSURE
    assert build_parser().parse_args(["plan", T17, "--budget", "1"]).flow_model == DEFAULT_FLOW_MODEL.value
    plan = json.loads(run("plan", T17, "--budget", "3", "--strategy", "combined", "--output", "json").stdout)
    assert plan["flowModel"] == "backpressure"
    # not the drop model's {"11": 1, "16": 2}; the thesis's {"6": 1, "16": 2} less two units adding nothing
    assert plan["allocation"] == {"16": 1}
    assert plan["unallocated"] == 2
    assert plan["throughput"]["before"] == pytest.approx(1988.888888888889)


def test_the_default_strategy_is_best_in_the_cli_the_crd_and_the_policy() -> None:
    """Without ``--strategy`` the CLI plans as the cluster does: ``best``, which names the winner."""
    crd = yaml.safe_load(CRD.read_text())
    scaling = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "scaling"
    ]
    strategy = scaling["properties"]["strategy"]
    assert strategy["default"] == ScalingSpec.model_fields["strategy"].default == "Best"
    assert set(strategy["enum"]) == {s.value.capitalize() for s in Strategy}
    assert build_parser().parse_args(["plan", T17, "--budget", "1"]).strategy == Strategy.BEST.value
    plan = json.loads(run("plan", T17, "--budget", "3", "--output", "json").stdout)
    assert (plan["strategy"], plan["chosen"]) == ("best", "optimal")
    assert plan["allocation"] == {"11": 1, "16": 2}
    assert plan["optimality"]["proven"] is True
    assert "note" not in plan


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plan", "missing.json", "--budget", "1"], "missing.json: cannot read profile"),
        (["plan", T17, "--budget", "two"], "argument --budget: invalid int value"),
        (["plan", T17, "--budget", "1", "--strategy", "magic"], "argument --strategy: invalid choice"),
        (["plan", T17], "the following arguments are required: --budget"),
        (["plan", T17, "--budget", "1", "--time-limit", "0"], "argument --time-limit: must be > 0"),
        (["frobnicate"], "argument command: invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert message in lines[0]
    assert "Traceback" not in result.stderr


def test_invalid_profile_exits_2_naming_the_field(tmp_path: Path) -> None:
    document = json.loads(Path(T17).read_text())
    document["components"][3]["children"] = {"99": 1.0}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    result = run("plan", str(bad), "--budget", "1")
    assert result.returncode == 2
    assert result.stderr.strip() == "stormscale: components[3].children.99: unknown component"
