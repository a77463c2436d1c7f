"""The fleet's engine (``--engine spark-grouped``): Spark schedules groups of topologies, each task
aggregates its group with the single-process estimators (:mod:`stormscale.aggregation.local`).

Why: a topology's profile needs only that topology's samples, and the DataFrame job
(:mod:`stormscale.aggregation.spark.job`) pays for its generality with a shuffle and sort of every raw
row and a per-row window (about 11 µs of CPU a sample, against about 1.2 here: docs/aggregation.md).
Here nothing is shuffled: each task reads its topologies' rows straight from the Parquet files (row
groups whose ``topology`` statistics miss the group are skipped), runs the NumPy estimators (the
DataFrame job's twins, tested to agree with it) and returns a few rows per component; the driver
merges the groups' aggregates.

Memory per task is one group's rows (about 600 bytes a sample in the estimators), so the number of
groups grows with the input, ``⌈rows / rows_per_task⌉`` (at least two per core), and a task's memory
stays flat as the fleet or its window grows — as long as one topology's window fits in a task: a
group never splits a topology. The files must be readable from every executor (a shared filesystem or
an object store URI pyarrow understands), as they are for ``local[*]``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import partial

import pyarrow.dataset as pds
from pyspark.sql import SparkSession

from stormscale.aggregation import local
from stormscale.aggregation.aggregates import Aggregates
from stormscale.aggregation.params import Params
from stormscale.aggregation.schema import AggregationError, check_columns, parquet_files


def checked_rows(paths: Sequence[str]) -> int:
    """Rows in the Parquet files at ``paths``, their columns checked against the contract (on the
    driver, from the footers alone, so that bad input fails before any task runs)."""
    try:
        dataset = pds.dataset(parquet_files(paths), format="parquet")
        rows = int(sum(f.metadata.num_rows for f in dataset.get_fragments()))
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        hint = (
            " (spark-grouped reads with pyarrow: s3:// not s3a://, or --engine spark)"
            if "://" in "".join(paths)
            else ""
        )
        raise AggregationError(f"samples: cannot read {', '.join(paths)}: {err}{hint}") from None
    check_columns(((f.name, str(f.type)) for f in dataset.schema), arrow=True)
    return rows


def topology_groups(
    topologies: Sequence[str], rows: int, rows_per_task: int, parallelism: int
) -> list[list[str]]:
    """Topologies in name order, cut into G contiguous groups of (nearly) equal count:

        G = min(T, max(2·parallelism, ⌈rows / rows_per_task⌉))

    Contiguous names keep a group's rows in few row groups when the files are sorted by topology (as
    the sample reader writes them). Assumes topologies of similar size; a larger one makes its group
    larger, never split.
    """
    if rows_per_task < 1:
        raise AggregationError(f"rows per task: {rows_per_task} is not a positive number")
    names = sorted(set(topologies))
    count = min(len(names), max(2 * parallelism, math.ceil(rows / rows_per_task)))
    if count == 0:
        return []
    size, extra = divmod(len(names), count)
    groups, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        groups.append(names[start:end])
        start = end
    return groups


def aggregate_group(
    paths: Sequence[str], params: Params, group: Sequence[str]
) -> Aggregates | AggregationError:
    """One task: the group's samples → its aggregates (empty when the window holds none of its rows);
    bad input is returned, not raised, so that the driver says it in the estimators' own words."""
    try:
        table = local.read(paths, group, params)
        if table.num_rows == 0:
            return Aggregates({}, {}, {})
        return local.aggregates_of(table, params)
    except AggregationError as err:
        return err


def merged(parts: Sequence[Aggregates]) -> Aggregates:
    """The groups' aggregates as one (a topology is in exactly one group)."""
    result = Aggregates({}, {}, {})
    for part in parts:
        result.windows.update(part.windows)
        result.components.update(part.components)
        result.edges.update(part.edges)
    return result


def aggregate(
    spark: SparkSession,
    paths: Sequence[str],
    topologies: Sequence[str],
    params: Params,
    rows_per_task: int,
) -> Aggregates:
    """The aggregates of ``topologies``, one Spark task per group (see the module's docstring)."""
    context = spark.sparkContext
    groups = topology_groups(topologies, checked_rows(paths), rows_per_task, context.defaultParallelism)
    tasks = context.parallelize(groups, len(groups))
    try:
        parts = tasks.map(partial(aggregate_group, tuple(paths), params)).collect()
    except Exception as err:  # a task's failure reaches the driver as Py4J's or PySpark's error
        raise AggregationError(f"spark-grouped: a task failed: {_cause(err)}") from None
    errors = [part for part in parts if isinstance(part, AggregationError)]
    if errors:
        raise errors[0]
    result = merged([part for part in parts if isinstance(part, Aggregates)])
    if not result.windows:
        raise AggregationError("samples: no rows for the named topologies in the window")
    return result


def _cause(err: Exception) -> str:
    """The line of a task's failure that names it: the last ``module.ExceptionName: …`` line of the
    Python worker's traceback (``pyarrow.lib.ArrowInvalid: …``), else the message's first line."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*: ", line)]
    return named[-1] if named else (lines[0] if lines else type(err).__name__)
