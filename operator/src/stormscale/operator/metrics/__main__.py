"""``python -m stormscale.operator.metrics --prometheus URL --topology NAME --window 2m --out F.parquet``."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from stormscale.operator.metrics.samples import SampleReader, Window, write_parquet
from stormscale.operator.ports import RefusedError, UnavailableError

_DURATION = re.compile(r"^(\d+)([smh]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600}


def seconds(text: str) -> int:
    """A duration like ``120``, ``90s``, ``2m`` or ``1h`` in whole seconds."""
    match = _DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration (e.g. 30s, 2m, 1h): {text!r}")
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="stormscale-samples", description=__doc__)
    parser.add_argument("--prometheus", required=True, help="Prometheus base URL")
    parser.add_argument("--topology", required=True, help="Storm topology name")
    parser.add_argument("--window", type=seconds, default=seconds("5m"), help="how far back (e.g. 2m)")
    parser.add_argument("--step", type=seconds, default=5, help="resolution (e.g. 5s)")
    parser.add_argument("--end", type=int, default=None, help="window end, Unix seconds (default: now)")
    parser.add_argument("--out", type=Path, required=True, help="Parquet file to write")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Read the window and write the Parquet file; one line on stderr on failure."""
    args = parse_args(argv)
    end = args.end if args.end is not None else int(time.time())
    try:
        window = Window(end - args.window, end, args.step)
        rows = SampleReader(args.prometheus).read(args.topology, window)
    except (ValueError, UnavailableError, RefusedError) as err:
        sys.exit(f"stormscale-samples: {err}")
    write_parquet(rows, args.out)
    print(f"stormscale-samples: {len(rows)} samples of {args.topology} in {args.out}")


if __name__ == "__main__":
    main()
