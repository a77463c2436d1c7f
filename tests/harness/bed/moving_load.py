"""Auto mode on a moving load, end to end: the load on a Kafka topic steps up, later down; the
operator, in Auto mode with the topic as the spout's demand, follows it.

:func:`run_moving_load` applies the StormTopology in Auto mode, produces the load's schedule to the
scenario's topic, and every :data:`TICK_S` records a :class:`~tests.harness.bed.timeline.Tick`: the
produced rate, the sinks' rate (from the keys the sink records, which survive a rebalance, unlike
Storm's counters), the consumer group's lag from Prometheus (the Kafka exporter's series), and the
operator's status. When the schedule ends it waits for the lag to drain and compares the keys the
sink saw with those produced. The figures the end-to-end test asserts on are in
:mod:`tests.harness.bed.timeline`; :meth:`AutoReport.table` prints them.

``python -m tests.harness.bed.moving_load`` runs it on a stack of its own and prints the report.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.harness.bed.scenarios import JVM_KAFKA_AUTO
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.bed.timeline import (
    Tick,
    applied_changes,
    changes_between,
    converged_at,
    drained_at,
    lag_peak,
    lag_peak_at,
    reaction_s,
    scaled_in,
    wished_in_since,
)
from tests.harness.kafka.seen import SeenReport, read_seen
from tests.harness.process import new_run_dir
from tests.harness.waiting import wait_for

TICK_S = 10.0
#: The sinks' rate is taken over this many seconds (three ticks: a key file grows in bursts).
RATE_S = 30.0
DRAIN_TIMEOUT_S = 300.0
LAG_FLOOR = 20.0  # records: "drained" (the spout commits every few seconds; a few are always in flight)


@dataclass(frozen=True)
class MovingLoad:
    """``low`` tuples/s for ``low_s``, ``high`` for ``high_s``, ``low`` again for ``fall_s``."""

    low: float
    high: float
    low_s: float
    high_s: float
    fall_s: float

    def schedule(self) -> str:
        """The load generator's schedule text."""
        return f"{self.low:g}@{self.low_s:g}s,{self.high:g}@{self.high_s:g}s,{self.low:g}@{self.fall_s:g}s"

    @property
    def rise_s(self) -> float:
        """Seconds from the start to the step up."""
        return self.low_s

    @property
    def fall_at_s(self) -> float:
        """Seconds from the start to the step down."""
        return self.low_s + self.high_s

    @property
    def seconds(self) -> float:
        return self.low_s + self.high_s + self.fall_s


@dataclass(frozen=True)
class AutoScaling:
    """The spec's ``scaling`` for Auto mode (durations as the CRD writes them)."""

    min_units: int = 0
    max_units: int = 4
    cooldown: str = "120s"
    scale_in_delay: str = "60s"
    target_utilization: float = 0.6
    congestion_threshold: float = 0.05

    @property
    def cooldown_s(self) -> float:
        return float(self.cooldown.removesuffix("s"))

    @property
    def scale_in_delay_s(self) -> float:
        return float(self.scale_in_delay.removesuffix("s"))

    def spec(self) -> dict[str, Any]:
        return {
            "mode": "Auto",
            "minUnits": self.min_units,
            "maxUnits": self.max_units,
            "cooldown": self.cooldown,
            "scaleInDelay": self.scale_in_delay,
            "targetUtilization": self.target_utilization,
            "congestionThreshold": self.congestion_threshold,
        }


def auto_topology(stack: Stack, scenario: Scenario, scaling: AutoScaling) -> dict[str, Any]:
    """The scenario's StormTopology in Auto mode (its demand from its Kafka topic)."""
    overhead = stack.pod_overhead.get(scenario.name, "0")
    resource = storm_topology(scenario, stack.storm.endpoints.nimbus_port, stack.prometheus.url, 0, overhead)
    resource["spec"]["scaling"] = {**resource["spec"]["scaling"], **scaling.spec()}
    resource["spec"]["scaling"].pop("budget", None)
    return resource


@dataclass
class AutoReport:
    """What happened, tick by tick, and the figures asserted on."""

    load: MovingLoad
    scaling: AutoScaling
    started: float
    ticks: list[Tick] = field(default_factory=list)
    produced: int = 0
    seen: SeenReport | None = None
    drained_s: float | None = None

    @property
    def rise_at(self) -> float:
        return self.started + self.load.rise_s

    @property
    def fall_at(self) -> float:
        return self.started + self.load.fall_at_s

    def figures(self) -> dict[str, Any]:
        """The numbers of the closing note: reaction times, steps, convergence, peak lag, units."""
        up = changes_between(self.ticks, self.rise_at, self.fall_at)
        down = changes_between(self.ticks, self.fall_at, float("inf"))
        converged = converged_at(self.ticks, self.rise_at)
        rise_decided = decided_at(self.ticks, self.rise_at, lambda b: b > 0)
        fall_decided = decided_at(self.ticks, self.fall_at, lambda b: b < max((c[1] for c in up), default=0))
        wishes = wished_in_since(self.ticks, self.rise_at, fall_decided or float("inf"))
        peak = lag_peak_at(self.ticks, self.rise_at, fall_decided or float("inf"))
        return {
            # the largest budget Auto wanted before the rise (the low load needs none)
            "desired_before_rise": max(
                (b for t in self.ticks if t.at < self.rise_at and (b := t.desired_budget) is not None),
                default=None,
            ),
            "scale_out_decided_s": None if rise_decided is None else rise_decided - self.rise_at,
            "scale_out_applied_s": reaction_s(self.ticks, self.rise_at),
            # the first applied rise of the budget, from the rise: negative when it came before it
            "first_scale_out_s": next(
                (at - self.rise_at for at, budget in applied_changes(self.ticks) if budget > 0), None
            ),
            "steps_up": len(up),
            "budgets_up": [b for _, b in up],
            "converged_s": None if converged is None else converged - self.rise_at,
            "steps_before_converged": len(changes_between(self.ticks, self.rise_at, converged or 0.0)),
            "peak_lag": lag_peak(self.ticks, self.rise_at, self.fall_at),
            # when the lag stopped growing, and when it fell to the floor past that peak, before Auto
            # scaled in (whose rebalance makes a lag of its own), from the rise
            "peak_lag_s": None if peak is None else peak - self.rise_at,
            "drained_s": drain_after(self.ticks, self.rise_at, fall_decided or float("inf")),
            "scale_in_decided_s": None if fall_decided is None else fall_decided - self.fall_at,
            # when each wish to scale in began, from the rise (negative: before the fall)
            "scale_in_wished_s": [round(w - self.fall_at, 1) for w in wishes],
            "scale_in_waited_s": None if fall_decided is None or not wishes else fall_decided - wishes[-1],
            "scale_in_applied_s": reaction_s(self.ticks, self.fall_at),
            "steps_down": len(down),
            "budgets_down": [b for _, b in down],
            "units_at_peak": units_at(self.ticks, self.fall_at),
            # seconds with a backlog (the consumer group's lag above the floor: demand not yet served)
            "backlog_s": TICK_S * sum(1 for t in self.ticks if t.lag is not None and t.lag > LAG_FLOOR),
            # Σ units running × the tick: what the run cost
            "unit_seconds": TICK_S * sum(sum(t.units.values()) for t in self.ticks),
            "produced": self.produced,
            "missing": None if self.seen is None else len(self.seen.missing),
            "duplicates": None if self.seen is None else self.seen.duplicates,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "load": vars(self.load),
            "scaling": vars(self.scaling),
            "started": self.started,
            "figures": self.figures(),
            "ticks": [t.to_json() for t in self.ticks],
        }

    def table(self) -> str:
        """The timeline, one line per tick, and the figures."""
        lines = [
            "| t/s | produced/s | sinks/s | lag | applied | desired | units | reason |",
            "|" + "---|" * 8,
        ]
        for t in self.ticks:
            sink = "–" if t.sink_rate is None else f"{t.sink_rate:.1f}"
            lag = "–" if t.lag is None else f"{t.lag:.0f}"
            units = ",".join(f"{c}:{n}" for c, n in sorted(t.units.items()))
            lines.append(
                f"| {t.at - self.started:.0f} | {t.produced_rate:g} | {sink} | {lag} | "
                f"{t.applied_budget} | {t.desired_budget} | {units} | {t.reason} |"
            )
        lines.append("")
        lines += [f"{k}: {v}" for k, v in self.figures().items()]
        return "\n".join(lines)


def decided_at(ticks: Sequence[Tick], after: float, wanted: Any) -> float | None:
    """The first tick from ``after`` whose desired budget satisfies ``wanted``."""
    return next(
        (t.at for t in ticks if t.at >= after and t.desired_budget is not None and wanted(t.desired_budget)),
        None,
    )


def drain_after(ticks: Sequence[Tick], start: float, end: float) -> float | None:
    """Seconds from ``start`` until the lag, past its peak in ``[start, end]``, fell to the floor."""
    at = drained_at([t for t in ticks if t.at <= end], start, LAG_FLOOR)
    return None if at is None else at - start


def units_at(ticks: Sequence[Tick], moment: float) -> int:
    """Units running at the last tick before ``moment``."""
    before = [t for t in ticks if t.at <= moment and t.units]
    return sum(before[-1].units.values()) if before else 0


def consumer_lag(stack: Stack, scenario: Scenario) -> float | None:
    """Σ over partitions of the consumer group's lag now (None: no series yet)."""
    promql = f'sum(kafka_consumergroup_lag{{consumergroup="{scenario.group}", topic="{scenario.topic}"}})'
    result = stack.prometheus.query(promql)
    return float(result[0]["value"][1]) if result else None


def seen_count(stack: Stack, scenario: Scenario) -> int:
    """Keys the sink has recorded so far, duplicates included (its executed tuples)."""
    return sum(read_seen(stack.seen_dir(scenario)).values())


def unix(text: str | None) -> float | None:
    """A status timestamp (``2026-11-25T04:06:04Z``) as Unix seconds."""
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _status_fields(status: Mapping[str, Any]) -> tuple[int | None, int | None, dict[str, int], str]:
    reason = str(_reporting_condition(status).get("reason", ""))
    autoscaler = status.get("autoscaler") or {}
    return (
        status.get("appliedBudget"),
        autoscaler.get("desiredBudget"),
        dict(status.get("units") or {}),
        reason,
    )


def _reporting_condition(status: Mapping[str, Any]) -> Mapping[str, Any]:
    """``Degraded`` while it holds, else ``Ready``: the condition that says what the operator does."""
    conditions: dict[str, Mapping[str, Any]] = {c["type"]: c for c in status.get("conditions", [])}
    degraded = conditions.get("Degraded", {})
    return degraded if degraded.get("status") == "True" else conditions.get("Ready", {})


def _condition_message(status: Mapping[str, Any]) -> str:
    """The message of :func:`_reporting_condition`."""
    return str(_reporting_condition(status).get("message", ""))


def known_schedule(load: MovingLoad, started: float, lead: str = "2m") -> dict[str, Any]:
    """``scaling.lookAhead`` with the load's own schedule from ``started``: Auto as a user who knows
    the load's steps would run it."""
    steps = [(0.0, load.low), (load.rise_s, load.high), (load.fall_at_s, load.low)]
    return {
        "lead": lead,
        "forecast": "Schedule",
        "schedule": {
            "start": datetime.fromtimestamp(int(started), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "steps": [{"offset": f"{offset:.0f}s", "rate": rate} for offset, rate in steps],
        },
    }


def run_moving_load(
    stack: Stack,
    scenario: Scenario,
    load: MovingLoad,
    scaling: AutoScaling,
    *,
    look_ahead: Callable[[float], dict[str, Any]] | None = None,
    until_scaled_in: bool = False,
) -> AutoReport:
    """Auto mode from the start, the load's schedule produced, a tick every :data:`TICK_S`; with
    ``look_ahead``, the spec's ``scaling.lookAhead`` is what it gives for the load's start. With
    ``until_scaled_in`` the load ends at the first tick after the fall whose applied budget is below the
    highest one applied before it (what the end-to-end test waits for), not at the schedule's end; a
    comparison of whole runs (units·seconds) keeps the schedule whole."""
    generator = stack.load(scenario, load.schedule())
    report = AutoReport(load, scaling, time.time())
    resource = auto_topology(stack, scenario, scaling)
    if look_ahead is not None:
        resource["spec"]["scaling"]["lookAhead"] = look_ahead(report.started)
    stack.kubectl_apply(resource)
    counts: list[tuple[float, int]] = []
    said = ""
    while generator.running:
        tick_start = time.monotonic()
        at, count = time.time(), seen_count(stack, scenario)
        counts.append((at, count))
        older = [(t, c) for t, c in counts if t <= at - RATE_S + 1] or counts[:1]
        since, then = older[-1]
        sink = (count - then) / (at - since) if at > since else None
        status = stack.status(scenario)
        applied, desired, units, reason = _status_fields(status)
        tick = Tick(
            at,
            generator.rate_now,
            generator.produced,
            sink,
            consumer_lag(stack, scenario),
            applied,
            desired,
            units,
            reason,
            unix((status.get("autoscaler") or {}).get("scaleInSince")),
        )
        report.ticks.append(tick)
        stack.log(
            f"[auto] t={at - report.started:4.0f}s load {tick.produced_rate:g}/s sinks "
            f"{'–' if sink is None else f'{sink:.1f}'}/s lag {tick.lag} "
            f"applied {applied} desired {desired} {reason}"
        )
        message = _condition_message(status)
        if message != said:  # why the operator waits, once per change (a CI log shows it)
            stack.log(f"[auto]       {message}")
            said = message
        if until_scaled_in and scaled_in(report.ticks, report.started + load.fall_at_s):
            stack.log(f"[auto] scaled in to budget {applied} after the fall: the load ends here")
            generator.stop()
            break
        time.sleep(max(0.0, TICK_S - (time.monotonic() - tick_start)))
    generator.wait()
    report.produced = generator.produced
    drain_start = time.monotonic()
    wait_for(
        lambda: len(set(read_seen(stack.seen_dir(scenario)))) >= report.produced,
        DRAIN_TIMEOUT_S,
        f"the sink to see all {report.produced} keys",
        every_s=5.0,
    )
    report.drained_s = time.monotonic() - drain_start
    report.seen = stack.seen_report(scenario, report.produced)
    return report


#: The test's load and Auto settings (docs/evaluation.md, "Auto mode on a moving load"). Capacities per unit
#: as measured: bolt 3 12.0-13.6/s, bolt 2 (5 ms a tuple in this scenario) above 30/s. At 5/s and an 80 %
#: target Auto plans for 6.25/s: within one unit of every bolt with a 50 % margin (narrower margins failed
#: on CI: 8/s at 60 % sat on bolt 3's capacity; 7/s at 70 % scaled out before the rise once). At 14/s it
#: plans for 17.5/s: two units on bolt 3 (23.6-27/s measured, a 35 % margin; one unit is 23-31 % short),
#: nothing on bolt 2, budget 1, one step. The backlog of the high phase must drain within it, for the
#: scale-in to come within the low phase after it: it is mostly what the rebalance's stop adds (~70 s
#: at the high rate) and drains at two units' capacity less the load. At 16/s (planned for 20/s) it
#: drained 340 s after the rise in one run (peak lag 1,664) and 442 s after it, past the fall, in a
#: clean-clone run (peak 1,911, drained at 7.6/s), whose scale-in then came after the load had ended.
#: With bolt 2 at 8 ms a tuple (19.5-23/s) and a 70 % target (22.9/s) the plan sat on bolt 2's capacity:
#: budget 1 or 2 by how busy bolt 2 read, and after budget 1 a second step a cooldown later, whose
#: rebalance came so late in the high phase that the lag's peak met the fall.
#: Measured (docs/evaluation.md): the low load is planned 40 s into the run; the rise seen 70-80 s after
#: it (a 60 s window must be steady past it; 80-160 s with 90 s windows, unsteady ones looked at again
#: only after 30 s), applied 40-50 s later, the topology stopped ~70 s by the rebalance; scale-in is
#: wished ~70 s after a fall the backlog had drained before and applied 150-160 s after it, so the low
#: phase after the fall is 270 s: 60 s low, 390 s high, 270 s low again.
LOAD = MovingLoad(low=5, high=14, low_s=60, high_s=390, fall_s=270)
SCALING = AutoScaling(target_utilization=0.8)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.bed.moving_load", description=__doc__)
    parser.add_argument("--schedule", default=None, help="LOW,HIGH,LOW_S,HIGH_S,FALL_S (default: the test's)")
    args = parser.parse_args(argv)
    load = LOAD if args.schedule is None else MovingLoad(*(float(x) for x in args.schedule.split(",")))
    with Stack(new_run_dir("moving-load-")) as stack:
        stack.start_operator()
        stack.deploy(JVM_KAFKA_AUTO)
        report = run_moving_load(stack, JVM_KAFKA_AUTO, load, SCALING)
        (stack.run_dir / "moving-load.json").write_text(json.dumps(report.to_json(), indent=2, default=str))
        print(report.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
