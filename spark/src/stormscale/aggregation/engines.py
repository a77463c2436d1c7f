"""Either engine on Parquet samples, for callers that need the aggregates (every topology at once)
rather than the profiles: the fleet job (:mod:`stormscale.publish`) builds each profile on its own, so
that one topology's bad data does not stop the others.

PySpark is imported only when the Spark engine runs (it is the optional extra ``[spark]``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from stormscale.aggregation import local
from stormscale.aggregation.aggregates import Aggregates
from stormscale.aggregation.params import Params
from stormscale.aggregation.schema import AggregationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: spark: the DataFrame job (shuffles every row; memory flat in any window); spark-grouped: Spark runs
#: groups of topologies through the single-process estimators (no shuffle; the fleet's engine, a
#: topology's window must fit one task); local: one process, all rows in memory.
ENGINES = ("spark", "spark-grouped", "local")
#: spark-grouped: rows one task aggregates at most (≈ 1.2 GB of a Python worker at ~600 bytes a sample).
ROWS_PER_TASK = 2_000_000
NO_PYSPARK = "--engine spark needs PySpark: pip install 'stormscale-aggregation[spark]' (or --engine local)"


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine``, ``--master``, ``--shuffle-partitions`` and ``--rows-per-task``, shared by the
    aggregation and publishing commands."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="spark-grouped",
        help="spark-grouped (default): Spark tasks over groups of topologies, no shuffle; spark: the "
        "DataFrame job, memory flat even for one huge window; local: one process, no JVM",
    )
    parser.add_argument("--master", help="Spark master URL (default local[*], or spark-submit's)")
    parser.add_argument(
        "--shuffle-partitions", type=_positive, default=8, help="the DataFrame job's (spark) partitions"
    )
    parser.add_argument(
        "--rows-per-task",
        type=_positive,
        default=ROWS_PER_TASK,
        help=f"spark-grouped: samples one task holds at most ({ROWS_PER_TASK:,}, about 1.2 GB)",
    )


def aggregate_with(args: argparse.Namespace, topologies: Sequence[str], params: Params) -> Aggregates:
    """:func:`aggregate` of ``args.samples`` with the flags :func:`add_engine_arguments` declared (and
    ``--conf`` settings where the command has them)."""
    return aggregate(
        args.samples,
        topologies,
        params,
        engine=args.engine,
        master=args.master,
        shuffle_partitions=args.shuffle_partitions,
        conf=dict(getattr(args, "conf", [])),
        rows_per_task=args.rows_per_task,
    )


@contextmanager
def spark_session(
    master: str | None, shuffle_partitions: int, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """The active session if there is one (a test's: reused and left running), else a new one on
    ``master`` (``local[*]`` by default, spark-submit's master under spark-submit), stopped at the end."""
    try:  # PySpark is the optional extra ``stormscale-aggregation[spark]``; the local engine needs none
        from pyspark.sql import SparkSession  # noqa: PLC0415

        from stormscale.aggregation.spark import job  # noqa: PLC0415
    except ImportError:
        raise AggregationError(NO_PYSPARK) from None
    existing = SparkSession.getActiveSession()
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    chosen = master or ("" if under_submit else "local[*]")
    spark = existing or job.session(chosen, shuffle_partitions, conf=conf)
    try:
        yield spark
    finally:
        if existing is None:
            spark.stop()


def aggregate(
    paths: Sequence[str],
    topologies: Sequence[str],
    params: Params,
    *,
    engine: str = "spark",
    master: str | None = None,
    shuffle_partitions: int = 8,
    conf: Mapping[str, str] | None = None,
    rows_per_task: int = ROWS_PER_TASK,
) -> Aggregates:
    """The aggregates of ``topologies`` in the samples at ``paths`` (Parquet files or directories);
    ``rows_per_task``: spark-grouped's bound on a task's rows."""
    if not topologies:
        raise AggregationError("structure: at least one topology structure is needed")
    if engine == "local":
        table = local.read(paths, topologies, params)
        if table.num_rows == 0:
            raise AggregationError("samples: no rows for the named topologies in the window")
        return local.aggregates_of(table, params)
    with spark_session(master, shuffle_partitions, conf) as spark:
        from stormscale.aggregation.spark import grouped, job  # noqa: PLC0415

        if engine == "spark-grouped":
            return grouped.aggregate(spark, paths, topologies, params, rows_per_task)
        return job.aggregate(job.read_samples(spark, paths), topologies, params)
