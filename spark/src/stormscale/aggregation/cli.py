"""Command line: ``python -m stormscale.aggregation`` or ``spark-submit spark/submit.py``.

Exit status: 0 with one profile per structure written, 2 for malformed or insufficient input (one
line on stderr naming the problem, nothing written).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stormscale.aggregation import engines, local
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profiles, write_profile
from stormscale.aggregation.schema import AggregationError
from stormscale.aggregation.structure import Structure, load_structure

PROG = "stormscale-aggregate"


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Metric samples (Parquet) → topology profiles (JSON).")
    p.add_argument("--samples", nargs="+", required=True, help="Parquet files or directories")
    p.add_argument(
        "--structure", action="append", required=True, help="structure JSON file, or a directory of them"
    )
    p.add_argument("--output", required=True, type=Path, help="directory for <topology>.json")
    p.add_argument("--start", type=_timestamp, help="window start, ISO 8601 (default: first sample)")
    p.add_argument("--end", type=_timestamp, help="window end, ISO 8601 (default: last sample)")
    d = Params()
    p.add_argument("--settle", type=float, default=d.settle_s, help="seconds dropped after a rebalance")
    p.add_argument(
        "--max-cv", type=float, default=d.max_cv, help="rate spread above which a window is unstable"
    )
    p.add_argument("--min-intervals", type=int, default=d.min_intervals, help="fewest steady intervals")
    engines.add_engine_arguments(p)
    return p


def _structures(paths: Sequence[str]) -> list[Structure]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    if not files:
        raise AggregationError(f"structure: no JSON files in {', '.join(paths)}")
    structures = [load_structure(f) for f in files]
    names = [s.topology for s in structures]
    if len(set(names)) != len(names):
        raise AggregationError("structure: two structure files name the same topology")
    return structures


def _run(args: argparse.Namespace, structures: list[Structure], params: Params) -> list[dict[str, Any]]:
    if args.engine == "local":
        return local.run(args.samples, structures, params)
    if args.engine == "spark-grouped":
        found = engines.aggregate_with(args, [s.topology for s in structures], params)
        return profiles(structures, found, params)
    with engines.spark_session(args.master, args.shuffle_partitions) as spark:
        from stormscale.aggregation.spark import job  # noqa: PLC0415

        return job.run(spark, args.samples, structures, params)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    params = Params(
        settle_s=args.settle,
        min_intervals=args.min_intervals,
        max_cv=args.max_cv,
        start=args.start,
        end=args.end,
    )
    try:
        structures = _structures(args.structure)
        documents = _run(args, structures, params)
    except AggregationError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    for document in documents:
        target = write_profile(document, args.output)
        unstable = document["confidence"]["unstable"]
        flag = f" (unstable: {', '.join(unstable)})" if unstable else ""
        print(f"{target}{flag}")
    return 0
