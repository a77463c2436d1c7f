"""Auto with look-ahead against reactive Auto on the moving Kafka load, in the same run.

Run: ``make bench-lookahead`` (``.venv/bin/python -m bench.lookahead``), about 40 minutes; it holds
the real-stack lock of ``make accuracy``. Prints one table and writes ``bench/out/lookahead.json``
(every tick of both runs).

One test bed (tests/harness/bed/stack.py: the API server, Storm, Kafka, Prometheus, the operator)
and the Kafka-fed JVM linear topology in Auto mode (``JVM_KAFKA_AUTO`` with the end-to-end test's
Auto settings, :data:`~tests.harness.bed.moving_load.SCALING`), each way on names (pods, topic,
consumer group) of its own, while the load on its topic steps from 5 to 16 tuples/s and back
(:data:`LOAD`: the low phase long enough for Auto to settle on it before a lead of 2 minutes reaches
the rise):

* **reactive**: ``scaling.lookAhead`` absent: Auto scales out once a steady window shows the rise;
* **schedule**: ``scaling.lookAhead`` with the load's own schedule (``forecast: Schedule``, lead 2m):
  Auto as run by a user who knows when the load rises and falls.

Per way, from the ticks the end-to-end test records (every 10 s): the first scale-out applied, from
the rise (negative: before it); the consumer group's peak lag (records); seconds with a backlog (lag
above 20 records); unit-seconds (Σ units × 10 s over the run: what the capacity cost); the scale-in
applied, from the fall; records produced and missing. A regression forecast follows a ramp and does
not foresee a step, so it is not run here (its behaviour on a ramp is asserted in
tests/unit/operator/test_lookahead.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.accuracy import _progress, heavy_lock
from tests.harness.bed.moving_load import SCALING, AutoReport, MovingLoad, known_schedule, run_moving_load
from tests.harness.process import new_run_dir

OUT = Path(__file__).parent / "out"
NAMESPACE = "lookahead"
LOAD = MovingLoad(low=5, high=16, low_s=240, high_s=300, fall_s=300)
LEAD = "2m"


@dataclass(frozen=True)
class Way:
    """A way of running Auto: its name and the ``scaling.lookAhead`` it gives for the load's start."""

    name: str
    look_ahead: Callable[[float], dict[str, Any]] | None


WAYS = (
    Way("reactive", None),
    Way("schedule", functools.partial(known_schedule, LOAD, lead=LEAD)),
)


@dataclass(frozen=True)
class Row:
    way: str
    figures: dict[str, Any]


def _seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:+.0f}"


def table(rows: Sequence[Row]) -> str:
    """One line per way; the last columns are this way's figure over reactive's of the same run."""
    lines = [
        "| way | scale-out applied (s from the rise) | peak lag (records) | backlog (s) | unit·s | "
        "scale-in applied (s from the fall) | produced | missing | peak lag ÷ reactive | backlog ÷ reactive "
        "| unit·s ÷ reactive |",
        "|" + "---|" * 11,
    ]
    base = next((r.figures for r in rows if r.way == "reactive"), None)

    def ratio(figures: dict[str, Any], key: str) -> str:
        if base is None or not base.get(key):
            return "–"
        return f"{(figures.get(key) or 0) / base[key]:.2f}"

    for r in rows:
        f = r.figures
        lines.append(
            f"| {r.way} | {_seconds(f['first_scale_out_s'])} | {f['peak_lag'] or 0:.0f} | "
            f"{f['backlog_s']:.0f} | {f['unit_seconds']:.0f} | {_seconds(f['scale_in_applied_s'])} | "
            f"{f['produced']} | {f['missing']} | {ratio(f, 'peak_lag')} | {ratio(f, 'backlog_s')} | "
            f"{ratio(f, 'unit_seconds')} |"
        )
    return "\n".join(lines)


def run(ways: Sequence[Way]) -> list[tuple[Row, AutoReport]]:
    from tests.harness.bed.scenarios import JVM_KAFKA_AUTO
    from tests.harness.bed.stack import Stack

    run_dir = new_run_dir("lookahead-")
    _progress(f"look-ahead benchmark: logs in {run_dir}")
    out = []
    with heavy_lock(), Stack(run_dir, namespace=NAMESPACE, log=_progress) as stack:
        stack.start_operator()
        for way in ways:
            name = f"la-{way.name}"
            scenario = dataclasses.replace(JVM_KAFKA_AUTO, name=name, topic=name)
            stack.deploy(scenario)
            try:
                report = run_moving_load(stack, scenario, LOAD, SCALING, look_ahead=way.look_ahead)
            finally:
                stack.undeploy(scenario)
            out.append((Row(way.name, report.figures()), report))
            _progress(table([r for r, _ in out]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lookahead", description=__doc__.splitlines()[0])
    parser.add_argument("--ways", default="reactive,schedule", help="comma-separated: reactive, schedule")
    args = parser.parse_args(argv)
    chosen = {w.strip() for w in args.ways.split(",") if w.strip()}
    unknown = chosen - {w.name for w in WAYS}
    if unknown:
        print(f"--ways: unknown way(s) {', '.join(sorted(unknown))}; choose from reactive, schedule")
        return 2
    results = run([w for w in WAYS if w.name in chosen])
    OUT.mkdir(parents=True, exist_ok=True)
    document = [{"way": row.way, **report.to_json()} for row, report in results]
    (OUT / "lookahead.json").write_text(json.dumps(document, indent=2, default=str))
    print(table([row for row, _ in results]))
    print(f"\nreadings in {OUT / 'lookahead.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
