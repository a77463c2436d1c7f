"""The CLI end to end, as a user runs it: ``python -m stormscale.aggregation`` on Parquet in a temp dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from stormscale.planner import load_profile
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import scenario_inputs, thesis

pytestmark = pytest.mark.spark

DIAMOND = thesis("diamond")
TREE = thesis("simple-tree")


SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
ENTRY = Path(__file__).parents[3] / "spark" / "submit.py"
#: How a user launches the job: the module with the single-process engine (no JVM: the engines agree,
#: tests/unit/spark/test_rates.py), and spark-submit with Spark's (its master is
#: spark-submit's). The same profiles must come out of both.
LAUNCHERS = {
    "python -m": [sys.executable, "-m", "stormscale.aggregation", "--engine", "local"],
    "spark-submit": [str(SUBMIT), "--master", "local[2]", str(ENTRY)],
}


@pytest.mark.parametrize("launcher", list(LAUNCHERS))
def test_cli_writes_one_valid_profile_per_topology(launcher: str, tmp_path: Path) -> None:
    cases = [
        (DIAMOND, synthetic.Scenario(name="diamond", duration_s=900, offered_scale=2.0, seed=7)),
        (
            TREE,
            synthetic.Scenario(name="tree", duration_s=900, rebalance_at_s=300, units_after={"3": 2}, seed=8),
        ),
    ]
    samples, _, files = scenario_inputs(tmp_path, cases)
    structures = tmp_path / "structures"
    structures.mkdir()
    for file in files:
        file.rename(structures / file.name)
    out = tmp_path / "profiles"
    argv = ["--samples", str(samples), "--structure", str(structures), "--output", str(out)]
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    command = [*LAUNCHERS[launcher], *argv, "--shuffle-partitions", "2"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == ["diamond.json", "tree.json"]
    assert done.stdout.split() == [str(out / "diamond.json"), str(out / "tree.json")]
    diamond = load_profile(out / "diamond.json")  # the planner reads what the job writes
    assert diamond.components[0].output_per_unit == pytest.approx(2000.0, rel=0.02)
    assert [c.capacity_per_unit for c in diamond.components[1:]] == pytest.approx([400, 200, 900], rel=0.02)
    tree = json.loads((out / "tree.json").read_text(encoding="utf-8"))
    assert {c["id"]: c["units"] for c in tree["components"]}["3"] == 2
    assert tree["confidence"]["window"]["steadyStart"] == "2026-01-01T00:07:00+00:00"
