"""The aggregation's checks of its input against the sample contract (:mod:`stormscale.samples`).

The Spark twin of the contract's schema is in :mod:`stormscale.aggregation.spark.types` (this module
needs no PySpark).

Both implementations (the Spark job and :mod:`stormscale.aggregation.local`) read the same columns and
reject the same malformed inputs with the same one-line messages.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from stormscale.samples.names import (
    BUSY,
    CAPACITY,
    CPU_LIMIT,
    CPU_SECONDS,
    EMITTED,
    EXECUTE_LATENCY,
    EXECUTED,
    EXECUTORS,
    OFFERED,
    TASKS,
    WORKERS,
)
from stormscale.samples.schema import SERIES


class AggregationError(ValueError):
    """Malformed or insufficient input; the message is one line naming the problem."""


class UnsettledWindowError(AggregationError):
    """Too few steady intervals follow a change the samples show (a rebalance, a restarted worker):
    nothing is wrong with the input, the window has not yet got past the change and its settling."""


def _hidden(name: str) -> bool:
    """A file being written, Spark's ``_SUCCESS``, a hidden directory: not data."""
    return name.startswith((".", "_"))


def _walk(root: str, wanted: frozenset[str] | None) -> list[str]:
    """The Parquet files under ``root`` at any depth, hidden names skipped; with ``wanted``, a
    ``topology=<name>`` directory of another topology is not entered (one ``os.scandir`` per directory
    entered: a fleet task walks its own partitions, not the fleet's 24,000 files)."""
    found: list[str] = []
    todo = [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if _hidden(entry.name):
                    continue
                if entry.is_dir():
                    topology = (
                        entry.name.removeprefix("topology=") if entry.name.startswith("topology=") else None
                    )
                    if wanted is None or topology is None or topology in wanted:
                        todo.append(entry.path)
                elif entry.name.endswith(".parquet") and entry.is_file():
                    found.append(entry.path)
    return sorted(found)


def parquet_files(paths: Sequence[str], topologies: Sequence[str] | None = None) -> list[str]:
    """``paths`` with each local directory replaced by the Parquet files under it, at any depth and
    sorted (``topology=<name>/hour=<…>/`` partitions included); URLs (``s3://…``) and files are kept.

    Every engine then reads the same files and only the contract's columns: a directory's
    ``key=value`` names are not turned into columns. Names starting with ``.`` or ``_`` are skipped
    (a file being written, Spark's ``_SUCCESS``); a directory without Parquet files is an error. With
    ``topologies``, the files of :func:`files_of` those topologies, found without entering another
    topology's partitions (a directory without any of theirs is then no error: the group has none)."""
    wanted = None if topologies is None else frozenset(topologies)
    files: list[str] = []
    for raw in paths:
        if "://" in raw or not Path(raw).is_dir():
            files.extend(files_of([raw], topologies) if topologies is not None else [raw])
            continue
        found = _walk(raw, wanted)
        if not found and wanted is None:
            raise AggregationError(f"samples: no Parquet files under {raw}")
        files.extend(found)
    return files


def partition_topology(file: str) -> str | None:
    """The topology a file's path names (``…/topology=<name>/…``, the scheduled export's layout), or
    ``None`` when it names none."""
    for part in reversed(file.replace("\\", "/").split("/")):
        if part.startswith("topology="):
            return part.removeprefix("topology=")
    return None


def files_of(files: Sequence[str], topologies: Sequence[str]) -> list[str]:
    """``files`` without those whose path names a topology other than ``topologies``: a task of the
    grouped engine opens only its group's partitions (and every file that names no topology)."""
    wanted = set(topologies)
    return [f for f in files if (named := partition_topology(f)) is None or named in wanted]


#: Metrics the estimators read; the others are ignored.
USED = (
    EMITTED,
    EXECUTED,
    OFFERED,
    BUSY,
    CPU_SECONDS,
    CPU_LIMIT,
    CAPACITY,
    EXECUTE_LATENCY,
    EXECUTORS,
    TASKS,
    WORKERS,
)
#: Gauges whose change marks a rebalance (the steady window starts after the last one).
TOPOLOGY_GAUGES = (EXECUTORS, WORKERS)

#: Spark's type names for the Arrow types of the contract (what ``DataFrame.schema`` reports).
_SPARK_TYPES = {"ts": "timestamp", "value": "double", **dict.fromkeys(SERIES, "string")}
_ARROW_STRING_LIKE = {"string", "large_string", "dictionary<values=string, indices=int32, ordered=0>"}


def check_columns(found: Iterable[tuple[str, str]], *, arrow: bool) -> None:
    """Raise :class:`AggregationError` unless every contract column is present with its type.

    ``found`` is (name, type) as Spark (``df.dtypes``) or Arrow (``str(field.type)``) prints it.
    Extra columns are allowed and ignored.
    """
    types = dict(found)
    for name, expected in _SPARK_TYPES.items():
        if name not in types:
            raise AggregationError(f"samples: missing column {name!r} (see docs/formats/samples.md)")
        got = types[name]
        if _type_ok(name, expected, got, arrow=arrow):
            continue
        raise AggregationError(f"samples: column {name!r} must be {expected}, got {got}")


def _type_ok(name: str, expected: str, got: str, *, arrow: bool) -> bool:
    if not arrow:
        return got == expected or (name == "ts" and got == "timestamp_ntz")
    if name == "ts":
        return got.startswith("timestamp[")
    if name == "value":
        return got == "double"
    return got in _ARROW_STRING_LIKE or (got.startswith("dictionary<values=string") and "ordered" in got)
