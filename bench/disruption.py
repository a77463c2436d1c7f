"""What one scaling step costs a running topology: Storm's default rebalance against Stormscale's, in
the same run, on the linear and the diamond shapes.

Run: ``make bench-disruption`` (``.venv/bin/python -m bench.disruption``), about 30 minutes; it holds
the real-stack lock of ``make accuracy``. Prints one table, writes ``bench/out/disruption.png`` and
``bench/out/disruption.json``.

One test bed (tests/harness/bed/stack.py: the API server, Storm with Stormscale's scheduler on
Nimbus, Kafka, Prometheus, the operator), and in turn, each on worker pods of its own:

* the Kafka-fed JVM linear topology (``JVM_KAFKA_LINEAR``: its 48 tuples/s load starts at deploy;
  bolt 3 is the bottleneck), and the JVM diamond (``JVM_DIAMOND``: its spout offers 120/s, branch 3
  holds it);
* each three ways: **storm**, no placement and ``stormscale.sticky: false`` in the topology's conf:
  the rebalance leaves the layout to Storm's ``DefaultScheduler`` alone, which spreads the topology
  afresh; **sticky**, no placement, what a StormTopology without ``workers.placement`` gets: the
  scheduler puts every worker whose executors did not change back on its slot before
  ``DefaultScheduler`` spreads the rest; **stormscale**: ``workers.placement: MultiLevel`` (one unit
  changes the layout that runs by one executor), delivered to the scheduler's endpoint
  (``nimbus.placementPort``: the topology's conf is not touched, no blob changes), which keeps every
  worker whose executors are unchanged on its slot.

For each: budget 0 applied and verified, the scenario's settling time and a minute more (a
placement's first layout is a rebalance: both ways wait as long), ``--before`` seconds of the sink's
rate recorded (every 5 s, from the tuples it records: Storm's counters restart with a worker),
``kubectl apply`` of budget 1, and the rate recorded until ``--after`` seconds after the rebalance.
Printed per step:

* workers restarted: of the workers that ran before the apply, those whose JVM is younger than the
  apply afterwards or is gone (Nimbus's executor uptime), and the workers started anew;
* seconds at zero: the 5 s intervals from the rebalance on with the sink below 5 % of its steady rate;
* tuples lost: ∫ (steady − rate)⁺ dt from the rebalance until the old rate is back;
* apply → new steady rate: the first 5 s interval from which three in a row are within 10 % of the
  mean of the last 45 s.

The ratio columns are sticky / storm and stormscale / storm of the same shape, same run: the machine
is noisy, compare within a run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import fleet
from bench.accuracy import heavy_lock
from bench.reaction import (
    AFTER_REBALANCE_S,
    TICK_S,
    Bin,
    back_at,
    bins,
    lost,
    mean_rate,
    rebalance_pass,
    settled_at,
    verified_pass,
)
from tests.harness.process import new_run_dir

OUT = Path(__file__).parent / "out"
NAMESPACE = "disruption"
#: A 5 s interval below this share of the steady rate counts as the sink at zero.
ZERO_SHARE = 0.05
WAYS = ("storm", "sticky", "stormscale")
#: The topology conf that leaves a topology without a placement to Storm's DefaultScheduler alone.
NOT_STICKY = {"stormscale.sticky": False}
#: After budget 0 is applied, beyond the scenario's settling time: the operator's steady intervals.
STEADY_S = 60.0


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


Worker = tuple[str, int]


@dataclass
class Step:
    """One budget step of one shape, one way: the sink's readings and the workers around it."""

    shape: str
    way: str
    readings: list[tuple[float, float]]
    applied_at: float
    rebalanced_at: float | None = None
    verified_at: float | None = None
    before_s: float = 60.0
    #: (host, port) -> uptime (s) of each worker just before the apply, and at the end with its time.
    workers_before: dict[str, int] = field(default_factory=dict)
    workers_after: dict[str, int] = field(default_factory=dict)
    ended_at: float = 0.0

    @property
    def series(self) -> list[Bin]:
        return bins(self.readings)

    def restarts(self) -> tuple[int, int, int]:
        """(workers before, of them restarted or gone, workers started anew): a worker whose JVM
        started after the apply is younger than ``ended_at − applied_at``."""
        since = self.ended_at - self.applied_at
        young = {w for w, up in self.workers_after.items() if up < since}
        restarted = {w for w in self.workers_before if w in young or w not in self.workers_after}
        new = {w for w in young if w not in self.workers_before}
        return len(self.workers_before), len(restarted), len(new)

    def figures(self) -> dict[str, float | None]:
        series, end = self.series, max(t for t, _ in self.readings)
        centre = self.rebalanced_at if self.rebalanced_at is not None else self.applied_at
        steady = mean_rate(series, self.applied_at - self.before_s, self.applied_at)
        new = mean_rate(series, end - 45.0, end)
        recovered = back_at(series, centre, steady)
        settled = settled_at(series, centre, new)
        at_zero = sum(
            b.end - b.start for b in series if b.start >= centre - 1e-9 and b.rate < ZERO_SHARE * steady
        )
        before, restarted, started = self.restarts()
        return {
            "steady_before": steady,
            "steady_after": new,
            "workers_before": float(before),
            "restarted": float(restarted),
            "started": float(started),
            "zero_s": at_zero,
            "lost": lost(series, steady, centre, recovered if recovered else end, clip=True),
            "rebalance_s": None if self.rebalanced_at is None else self.rebalanced_at - self.applied_at,
            "settled_s": None if settled is None else settled - self.applied_at,
        }


ROWS: tuple[tuple[str, str, str, int], ...] = (
    ("steady rate before", "steady_before", "tuples/s", 1),
    ("workers before the step", "workers_before", "", 0),
    ("of them restarted (or stopped)", "restarted", "", 0),
    ("workers started anew", "started", "", 0),
    ("seconds with the sink at zero", "zero_s", "s", 0),
    ("tuples lost, ∫ (steady − rate)⁺ dt", "lost", "tuples", 0),
    ("apply → rebalance issued", "rebalance_s", "s", 1),
    ("apply → new steady rate", "settled_s", "s", 1),
    ("new steady rate", "steady_after", "tuples/s", 1),
)


def _num(value: float | None, unit: str, digits: int) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{value:.{digits}f} {unit}".strip()


def _ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or math.isnan(ours) or math.isnan(theirs) or theirs == 0:
        return "–"
    return f"{ours / theirs:.2f}"


def table(steps: Sequence[Step]) -> str:
    """One Markdown table per shape: storm, sticky, stormscale, and each over storm per figure."""
    out: list[str] = []
    for shape in dict.fromkeys(s.shape for s in steps):
        by_way = {s.way: s.figures() for s in steps if s.shape == shape}
        storm, sticky, ours = (by_way.get(way, {}) for way in WAYS)
        out += [
            f"\n{shape}, budget 0 → 1\n",
            "| figure | storm | sticky | stormscale | sticky / storm | stormscale / storm |",
            "|---|---|---|---|---|---|",
        ]
        for label, key, unit, digits in ROWS:
            cells = [_num(way.get(key), unit, digits) for way in (storm, sticky, ours)]
            ratios = [_ratio(way.get(key), storm.get(key)) for way in (sticky, ours)]
            out.append(f"| {label} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return "\n".join(out)


def plot(steps: Sequence[Step], out: Path) -> Path:
    """The sink's 5 s rate around each step, storm and stormscale of a shape on one panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    shapes = list(dict.fromkeys(s.shape for s in steps))
    fig, axes = plt.subplots(len(shapes), 1, figsize=(9, 3.6 * len(shapes)), squeeze=False)
    for ax, shape in zip(axes[:, 0], shapes, strict=True):
        for step in (s for s in steps if s.shape == shape):
            zero = step.applied_at
            xs = [x for b in step.series for x in (b.start - zero, b.end - zero)]
            ys = [b.rate for b in step.series for _ in (0, 1)]
            ax.plot(xs, ys, lw=1.2, label=f"{step.way}")
        ax.axvline(0, color="grey", ls=":", lw=1)
        ax.set_title(f"{shape}: the sink's rate, budget 0 → 1 applied at 0")
        ax.set_xlabel("seconds from kubectl apply")
        ax.set_ylabel("tuples/s (5 s)")
        ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "disruption.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def lines_seen(folder: Path) -> int:
    """The tuples the sink recorded: the complete lines of its ``seen-<task>.txt`` files."""
    return sum(path.read_bytes().count(b"\n") for path in folder.glob("seen-*.txt"))


def worker_uptimes(info: Any) -> dict[str, int]:
    """``host:port`` -> the seconds its worker has run (its youngest executor's uptime)."""
    out: dict[str, int] = {}
    for e in info.executors:
        key = f"{e.host}:{e.port}"
        out[key] = min(out.get(key, e.uptime_s), e.uptime_s)
    return out


def run_step(stack: Any, scenario: Any, way: str, before_s: float, after_s: float) -> Step:
    """Deploy ``scenario``, budget 0, record, budget 1, record; undeploy."""
    from tests.harness.bed.steady import wait_running

    stack.deploy(scenario)
    stack.apply_budget(scenario, 0)
    stack.wait_applied(scenario, 0)
    wait_running(stack, scenario, len(scenario.components))
    # budget 0 may have rebalanced (a placement's first layout): both ways wait as long, so that the
    # sink is steady before the recording and the operator plans budget 1 on a settled window
    _progress(f"[{scenario.name}] {way}: budget 0 applied; {scenario.settle_s + STEADY_S:.0f} s to settle")
    time.sleep(scenario.settle_s + STEADY_S)
    log = stack.run_dir / "operator.log"
    readings: list[tuple[float, float]] = []

    def record_until(stop: Callable[[], bool]) -> None:
        while not stop():
            tick = time.monotonic()
            readings.append((time.time(), float(lines_seen(stack.seen_dir(scenario)))))
            time.sleep(max(0.0, TICK_S - (time.monotonic() - tick)))

    started = time.time()
    _progress(f"[{scenario.name}] {way}: recording the sink for {before_s:.0f} s, then budget 1")
    record_until(lambda: time.time() >= started + before_s)
    step = Step(scenario.shape, way, readings, time.time(), before_s=before_s)
    step.workers_before = worker_uptimes(stack.nimbus().topology_info(scenario.name))
    step.applied_at = time.time()
    stack.apply_budget(scenario, 1)

    def done() -> bool:
        passes = fleet.parse_passes(log.read_text().splitlines(), NAMESPACE)
        step.rebalanced_at = rebalance_pass(passes, step.applied_at)
        if step.rebalanced_at is not None:
            step.verified_at = verified_pass(passes, step.rebalanced_at)
        last = max(step.applied_at + after_s, (step.rebalanced_at or step.applied_at) + AFTER_REBALANCE_S)
        return time.time() >= last

    record_until(done)
    step.workers_after = worker_uptimes(stack.nimbus().topology_info(scenario.name))
    step.ended_at = time.time()
    stack.undeploy(scenario)
    return step


def scenarios() -> list[tuple[str, Any]]:
    """(way, scenario) per shape and way, each with names (pods, topic, group) of its own."""
    from tests.harness.bed.scenarios import JVM_DIAMOND, JVM_KAFKA_LINEAR

    out = []
    for base, short in ((JVM_KAFKA_LINEAR, "linear"), (JVM_DIAMOND, "diamond")):
        for way in WAYS:
            name = f"dis-{short}-{way}"
            placed = "MultiLevel" if way == "stormscale" else ""
            topic = name if base.source == "kafka" else ""
            conf = {**base.storm_conf, **NOT_STICKY} if way == "storm" else base.storm_conf
            scenario = dataclasses.replace(base, name=name, topic=topic, placement=placed, storm_conf=conf)
            out.append((way, scenario))
    return out


def run(before_s: float, after_s: float, shapes: Sequence[str]) -> list[Step]:
    from tests.harness.bed.stack import Stack

    run_dir = new_run_dir("disruption-")
    _progress(f"disruption benchmark: logs in {run_dir}")
    steps = []
    with heavy_lock(), Stack(run_dir, namespace=NAMESPACE, log=_progress) as stack:
        stack.start_operator()
        for way, scenario in scenarios():
            if not any(s in scenario.name for s in shapes):
                continue
            steps.append(run_step(stack, scenario, way, before_s, after_s))
            _progress(table(steps))
    return steps


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.disruption", description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=float, default=60.0, help="seconds recorded before the apply")
    parser.add_argument("--after", type=float, default=150.0, help="seconds recorded after it")
    parser.add_argument("--shapes", default="linear,diamond", help="comma-separated: linear, diamond")
    args = parser.parse_args(argv)
    steps = run(args.before, args.after, [s.strip() for s in args.shapes.split(",") if s.strip()])
    OUT.mkdir(parents=True, exist_ok=True)
    document: list[dict[str, Any]] = [{**asdict(s), "figures": s.figures()} for s in steps]
    (OUT / "disruption.json").write_text(json.dumps(document, indent=2))
    print(table(steps))
    print(f"\nplot: {plot(steps, OUT)}; readings in {OUT / 'disruption.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
