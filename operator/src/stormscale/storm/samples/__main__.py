"""``python -m stormscale.storm.samples --prometheus URL --topology NAME --window 2m --out F.parquet``.

``--kafka SPOUT=TOPIC/GROUP`` or ``--demand-query SPOUT=PROMQL`` give a spout's demand from outside
Storm, as the operator's spec does (docs/operator/reference.md, "Demand"): its ``offered_total`` rows
then come from that source.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from stormscale.samples import parse_duration, write_parquet
from stormscale.storm.samples.demand import Demand, KafkaDemand, QueryDemand, with_demand
from stormscale.storm.samples.reader import PrometheusError, SampleReader, Window


def seconds(text: str) -> int:
    """A command-line duration in the one grammar of :func:`stormscale.samples.parse_duration`."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def kafka_source(text: str) -> tuple[str, Demand]:
    """``SPOUT=TOPIC/GROUP``."""
    spout, _, source = text.partition("=")
    topic, _, group = source.partition("/")
    if not (spout and topic and group):
        raise argparse.ArgumentTypeError(f"expected SPOUT=TOPIC/GROUP, got {text!r}")
    return spout, KafkaDemand(topic, group)


def query_source(text: str) -> tuple[str, Demand]:
    """``SPOUT=PROMQL``."""
    spout, _, promql = text.partition("=")
    if not (spout and promql):
        raise argparse.ArgumentTypeError(f"expected SPOUT=PROMQL, got {text!r}")
    return spout, QueryDemand(promql)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="stormscale-samples", description=__doc__)
    parser.add_argument("--prometheus", required=True, help="Prometheus base URL")
    parser.add_argument("--topology", required=True, help="Storm topology name")
    parser.add_argument("--window", type=seconds, default=seconds("5m"), help="how far back (e.g. 2m)")
    parser.add_argument("--step", type=seconds, default=seconds("5s"), help="resolution (e.g. 5s)")
    parser.add_argument("--end", type=int, default=None, help="window end, Unix seconds (default: now)")
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    parser.add_argument(
        "--kafka", type=kafka_source, action="append", default=[], help="SPOUT=TOPIC/GROUP: demand from Kafka"
    )
    parser.add_argument(
        "--demand-query",
        type=query_source,
        action="append",
        default=[],
        help="SPOUT=PROMQL: tuples/s offered",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Read the window and write the Parquet file; one line on stderr on failure."""
    args = parse_args(argv)
    end = args.end if args.end is not None else int(time.time())
    try:
        window = Window(end - args.window, end, args.step)
        reader = SampleReader(args.prometheus)
        rows = reader.read(args.topology, window)
        for spout, source in [*args.kafka, *args.demand_query]:
            rows = with_demand(rows, spout, reader.demand(args.topology, spout, source, window))
    except PrometheusError as err:
        sys.exit(f"stormscale-samples: {err}")
    write_parquet(rows, args.out)
    print(f"stormscale-samples: {len(rows)} samples of {args.topology} in {args.out}")


if __name__ == "__main__":
    main()
