"""The fleet's aggregation on a Spark standalone cluster (a master and two workers, each a JVM from
PyPI's PySpark distribution): the same profiles as the single-process engine on the same samples,
through the command line a user points at ``spark://…``.

The command runs as a subprocess, as the CronJob runs it: its own driver, the cluster's executors
and their Python workers (``PYSPARK_PYTHON`` names the interpreter with the package, as a user's image
does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.harness.spark.standalone import StandaloneCluster, standalone_cluster
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SHAPES = ("linear", "diamond", "simple-tree")
#: Seconds one aggregation may take on the cluster (its driver JVM starts, two executors register).
RUN_S = 600


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-standalone")) as running:
        yield running


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three of the thesis's topologies, 10 minutes each, in hour partitions as the export writes them."""
    root = tmp_path_factory.mktemp("fleet")
    structures = root / "structures"
    structures.mkdir()
    tables = []
    for seed, shape in enumerate(SHAPES):
        topology = thesis(shape)
        scenario = synthetic.Scenario(name=shape, duration_s=600, noise=0.01, seed=seed)
        tables.append(synthetic.generate(topology, scenario))
        document = synthetic.structure(topology, scenario)
        (structures / f"{shape}.json").write_text(json.dumps(document), encoding="utf-8")
        partition = root / f"topology={shape}" / "hour=2026-01-01T00"
        partition.mkdir(parents=True)
        pq.write_table(tables[-1], partition / "samples.parquet")
    assert sum(t.num_rows for t in tables) == pa.concat_tables(tables).num_rows
    return root, structures


def aggregate(root: Path, structures: Path, out: Path, *engine: str) -> dict[str, Any]:
    """``python -m stormscale.aggregation`` on the fleet; the profiles it wrote, by topology."""
    argv = [sys.executable, "-m", "stormscale.aggregation", "--samples", str(root)]
    argv += ["--structure", str(structures), "--output", str(out), *engine]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_S, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}


def capacities(document: dict[str, Any]) -> dict[str, float]:
    return {c["id"]: c["capacityPerUnit"] for c in document["components"] if "capacityPerUnit" in c}


def test_the_grouped_engine_on_a_standalone_cluster_gives_the_single_process_s_profiles(
    cluster: StandaloneCluster, fleet: tuple[Path, Path], tmp_path: Path
) -> None:
    root, structures = fleet
    assert cluster.alive_workers() == 2
    alone = aggregate(root, structures, tmp_path / "local", "--engine", "local")
    on_cluster = ["--engine", "spark-grouped", "--master", cluster.master_url, "--rows-per-task", "20000"]
    spread = aggregate(root, structures, tmp_path / "standalone", *on_cluster)
    assert sorted(alone) == sorted(spread) == sorted(SHAPES)
    for shape in SHAPES:
        assert spread[shape]["confidence"]["steady"] is True
        assert capacities(spread[shape]) == pytest.approx(capacities(alone[shape]), rel=1e-9), shape
    assert cluster.completed_applications() >= 1  # the work ran on the cluster, not in a local master
