"""`stormscale plan --plot` and `stormscale graph`: the files are written and valid, the text output of
`plan` is unchanged, bad input is one line and exit status 2, and matplotlib stays optional."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from stormscale.planner.cli import main
from tests.unit.planner.cli_run import run_cli

from .conftest import PROFILES

T17 = str(PROFILES / "thesis-topology-17.json")
LINEAR = str(PROFILES / "thesis-linear.json")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG_ROOT = "{http://www.w3.org/2000/svg}svg"


run = run_cli


def assert_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC


def assert_svg(path: Path) -> None:
    assert ET.parse(path).getroot().tag == SVG_ROOT


def test_plot_writes_a_png_and_leaves_the_text_output_unchanged(tmp_path: Path) -> None:
    plain = run("plan", T17, "--budget", "3")
    plotted = run("plan", T17, "--budget", "3", "--plot", str(tmp_path / "t17.png"))
    assert plotted.returncode == 0, plotted.stderr
    assert plotted.stdout == plain.stdout
    assert plotted.stderr == ""
    assert_png(tmp_path / "t17.png")


def test_plot_with_measured_points_and_json_output_writes_an_svg(tmp_path: Path) -> None:
    measured = tmp_path / "measured.json"
    measured.write_text(json.dumps([{"budget": 0, "throughput": 4500.0}, {"budget": 3, "throughput": 5600}]))
    out = tmp_path / "t17.svg"
    result = run(
        "plan",
        T17,
        "--budget",
        "3",
        "--strategy",
        "combined",
        "--flow-model",
        "drop",
        "--output",
        "json",
        "--plot",
        str(out),
        "--measured",
        str(measured),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["allocation"] == {"11": 1, "16": 2}
    assert_svg(out)


def test_graph_writes_svg_and_png_and_names_the_bottlenecks(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(run("plan", LINEAR, "--budget", "3", "--flow-model", "drop", "--output", "json").stdout)
    svg, png = tmp_path / "linear.svg", tmp_path / "linear.png"
    plain = run("graph", LINEAR, "--flow-model", "drop", "--out", str(svg))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == f"{svg}: thesis-linear under the drop model, bottleneck 2, 3"
    assert_svg(svg)
    planned = run("graph", LINEAR, "--plan", str(plan), "--flow-model", "backpressure", "--out", str(png))
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.strip() == f"{png}: thesis-linear under the backpressure model, bottleneck 3"
    assert_png(png)


def test_graph_takes_the_plans_flow_model_by_default(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(run("plan", LINEAR, "--budget", "1", "--flow-model", "drop", "--output", "json").stdout)
    result = run("graph", LINEAR, "--plan", str(plan), "--out", str(tmp_path / "g.svg"))
    assert result.returncode == 0, result.stderr
    assert "under the drop model" in result.stdout
    alone = run("graph", LINEAR, "--out", str(tmp_path / "alone.svg"))
    assert "under the backpressure model" in alone.stdout  # no plan: the CLI's default


def bad_cases(tmp: Path) -> list[tuple[list[str], str]]:
    other_plan = tmp / "t17-plan.json"
    other_plan.write_text(json.dumps({"topology": "thesis-topology-17", "allocation": {"16": 1}}))
    bad_points = tmp / "points.json"
    bad_points.write_text(json.dumps([{"budget": 1, "throughput": -3}]))
    return [
        (["graph", "missing.json", "--out", str(tmp / "g.svg")], "missing.json: cannot read profile"),
        (["plan", "missing.json", "--budget", "1", "--plot", str(tmp / "p.png")], "cannot read profile"),
        (["graph", LINEAR, "--out", str(tmp)], f"--out: {tmp}: is a directory"),
        (["plan", LINEAR, "--budget", "1", "--plot", str(tmp)], f"--plot: {tmp}: is a directory"),
        (["graph", LINEAR, "--out", str(tmp / "g.jpg")], "unknown extension '.jpg', use .png or .svg"),
        (["plan", LINEAR, "--budget", "1", "--plot", str(tmp / "p.pdf")], "unknown extension '.pdf'"),
        (["graph", LINEAR, "--out", str(tmp / "no" / "g.svg")], "no such directory"),
        (["graph", LINEAR], "the following arguments are required: --out"),
        (["graph", LINEAR, "--plan", str(other_plan), "--out", str(tmp / "g.svg")], "the plan is for"),
        (
            ["graph", LINEAR, "--plan", str(tmp / "none.json"), "--out", str(tmp / "g.svg")],
            "cannot read plan",
        ),
        (
            ["plan", LINEAR, "--budget", "1", "--measured", str(bad_points)],
            "argument --measured: needs --plot",
        ),
        (
            ["plan", LINEAR, "--budget", "1", "--plot", str(tmp / "p.png"), "--measured", str(bad_points)],
            "[0].throughput: must be a finite number ≥ 0",
        ),
        (["plan", LINEAR, "--budget", "500", "--plot", str(tmp / "p.png")], "at most ±100 budget steps"),
    ]


CASE_IDS = [
    "graph-missing-profile",
    "plot-missing-profile",
    "graph-out-directory",
    "plot-directory",
    "graph-unknown-extension",
    "plot-unknown-extension",
    "graph-missing-directory",
    "graph-no-out",
    "graph-plan-of-another-topology",
    "graph-missing-plan",
    "measured-without-plot",
    "bad-measured-point",
    "plot-too-many-steps",
]


@pytest.mark.parametrize("case", range(len(CASE_IDS)), ids=CASE_IDS)
def test_bad_input_exits_2_with_one_line(case: int, tmp_path: Path) -> None:
    args, message = bad_cases(tmp_path)[case]
    result = run(*args)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert not [*tmp_path.glob("*.png"), *tmp_path.glob("*.svg")]


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``import matplotlib…`` fails, as it does where the [plot] extra is not installed."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


@pytest.mark.usefixtures("no_matplotlib")
@pytest.mark.parametrize(
    "args",
    [["plan", LINEAR, "--budget", "2", "--plot", "{out}.png"], ["graph", LINEAR, "--out", "{out}.svg"]],
    ids=["plot", "graph"],
)
def test_without_matplotlib_drawing_is_one_line_and_exit_2(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(out=tmp_path / "x") for a in args]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "stormscale: matplotlib is not installed: pip install 'stormscale-planner[plot]'"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.usefixtures("no_matplotlib")
def test_without_matplotlib_the_planner_still_plans(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", LINEAR, "--budget", "2"]) == 0
    assert "thesis-linear · flow model backpressure · budget +2" in capsys.readouterr().out


def test_the_cli_does_not_import_matplotlib_until_it_draws() -> None:
    probe = "import sys, stormscale.planner.cli; print('matplotlib' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
