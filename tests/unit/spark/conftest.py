"""Fixtures for the aggregation job's tests: one local[2] SparkSession for the whole run.

Only this folder imports pyspark, so the planner and operator suites never start a JVM.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from stormscale.aggregation.spark import job
from stormscale.aggregation.structure import Structure, parse_structure
from stormscale.planner import Topology, load_profile
from tests.synthetic import samples as synthetic

PROFILES = Path(__file__).parents[3] / "examples" / "profiles"


def thesis(name: str) -> Topology:
    return load_profile(PROFILES / f"thesis-{name}.json")


#: The tests' inputs are a few thousand rows, where Spark's time is its per-query overhead, not the
#: data: each job is planned, code-generated and JIT-compiled for a handful of rows. Without adaptive
#: execution (which runs every shuffle stage as a job of its own: 14 jobs a run instead of 41), without
#: generated code and with the JVM's quick compiler, one run of the job on a synthetic topology took
#: 9-10 s instead of 13-17 (36 s → 21 s for the first). The results do not depend on any of them; the
#: job's own defaults are what the CLI, the benchmarks and the end-to-end test run.
SMALL_INPUT_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = job.session("local[2]", shuffle_partitions=2, app="stormscale-tests", conf=SMALL_INPUT_CONF)
    yield session
    session.stop()


def write_samples(path: Path, tables: Sequence[pa.Table]) -> Path:
    pq.write_table(pa.concat_tables(tables), path)
    return path


def scenario_inputs(
    tmp: Path, cases: Sequence[tuple[Topology, synthetic.Scenario]]
) -> tuple[Path, list[Structure], list[Path]]:
    """One Parquet file holding every case (one topology each) and the structures, as files too."""
    samples = write_samples(tmp / "samples.parquet", [synthetic.generate(t, s) for t, s in cases])
    structures, files = [], []
    for topology, scenario in cases:
        document = synthetic.structure(topology, scenario)
        file = tmp / f"{document['topology']}.structure.json"
        file.write_text(json.dumps(document), encoding="utf-8")
        structures.append(parse_structure(document))
        files.append(file)
    return samples, structures, files
