"""The demo's figures, drawn offline from a thesis profile: both files written and
valid PNGs, with the profile and the measured points beside them that the CLI can draw again."""

from __future__ import annotations

import json
from pathlib import Path

from stormscale.planner import load_profile
from stormscale.planner.cli import main
from stormscale.planner.plots.inputs import MeasuredPoint
from tests.harness.demo import write_figures

PROFILES = Path(__file__).parents[2] / "examples" / "profiles"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_the_demo_writes_both_figures_and_what_redraws_them(tmp_path: Path) -> None:
    topology = load_profile(PROFILES / "thesis-linear.json")
    measured = (MeasuredPoint(0, 240.0), MeasuredPoint(3, 470.0))
    throughput_png, topology_png = write_figures(tmp_path, topology, 3, {"2": 1, "3": 2}, measured)
    assert throughput_png.read_bytes()[:8] == PNG_MAGIC
    assert topology_png.read_bytes()[:8] == PNG_MAGIC
    assert json.loads((tmp_path / "demo-measured.json").read_text()) == [
        {"budget": 0, "throughput": 240.0},
        {"budget": 3, "throughput": 470.0},
    ]
    again = tmp_path / "again.svg"
    profile, points = str(tmp_path / "demo-profile.json"), str(tmp_path / "demo-measured.json")
    assert main(["plan", profile, "--budget", "3", "--plot", str(again), "--measured", points]) == 0
    assert again.read_text().lstrip().startswith("<?xml")
