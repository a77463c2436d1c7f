"""Target-rate benchmark: does the throughput reach a raised targetRate?

On the test bed, ``spec.scaling.targetRate`` is raised; the operator sizes, packs and applies; does
the measured throughput reach the target, and how many units and pods did it take against the
planner's optimum?

Run: ``make bench-target`` (or ``.venv/bin/python -m bench.target [--quick] [--target 30]``), about
30 minutes for the four runs, 8 for ``--quick`` (one run: Exact on SAM pods of 2 slots). It takes
the real-stack lock itself (:func:`bench.accuracy.heavy_lock`), starts the whole test bed
(:class:`~tests.harness.bed.stack.Stack`) and the operator, prints progress lines, then the table;
every run's record goes to ``bench/out/target.json``.

Each run deploys the Kafka-fed JVM linear topology (:data:`~tests.harness.bed.scenarios.JVM_KAFKA_AUTO`:
1 → 2 → 3 → 4, bolt costs 8, 12.5 and 3 ms of CPU per tuple, 12 tasks per bolt, the KafkaSpout held
at one unit) afresh on worker pods of its placement's size, one pod per component, with a fixed load
of :data:`LOAD` on its topic: more than the bed can give CPU to, so the topology always runs at its
capacity and the sinks' rate is what the units can do. Then:

1. *before*: a steady profile of the baseline exactly as the operator takes it
   (:func:`~tests.harness.bed.steady.profile_now`), its sinks' rate the rate before (what the operator
   sees when it sizes); from it, the planner's optimum for the target: the exact minimum's units
   (:func:`~stormscale.planner.sizing.exact.minimum_units`) and the lower bound on pods of ``K``
   slots that any placement, sharing slots or not, needs (``ExactSizing.shared_pods``:
   ``⌈⌈S_min⌉ / K⌉``, ``S_min`` the slots' worth of CPU the target needs);
2. the StormTopology in Auto mode with ``scaling.targetRate`` = the target, ``scaling.sizing`` the
   run's sizing and ``workers.placement``/``slotsPerPod`` its placement (a cooldown and scale-in
   delay of :data:`HOLD`, so that the one change is what gets measured); the operator sizes, packs,
   scales the Deployment and rebalances with the placement, and verifies it (``Ready/Applied``);
3. *after*: the workers run, :data:`SETTLE_S` pass, and the sinks' rate is measured over
   :data:`MEASURE_S`; the pods used are read back: the placement's count (``status.placement.pods``;
   without a placement one pod per ``K`` units), the Deployment's replicas, and the Supervisors that
   host the topology's workers (the executors' hosts from Nimbus).

The runs: each sizing in :data:`SIZINGS` (Exact, the proven minimum, and MBA, Shukla & Simmhan's
heuristic) on SAM with pods of 2 slots and, as the alternative in the same run, Storm's own one-slot
placement (no ``workers.placement``, pods of one slot). A unit is 200m either way, so a 2-slot pod is 400m.

Where the CPU goes: a lone executor in a pod of 2 slots may use the pod's 400m, so the 2-slot
baseline (one worker per pod, as Storm's default spreads 4 workers over 4 Supervisors) runs bolt 3
at about twice its one-slot rate; the operator's CPU join counts its unit as the slot's share
(``limit / max(k, slotsPerPod)``), which is what keeps its profile right there. The target is above
both baselines' rates; the pods' CPU limits stay within the bed's 1.4 cores for pods (docs/testbed.md)
on one-slot pods, and 2-slot pods of an odd unit count hold one empty slot's CPU more.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from bench.accuracy import heavy_lock
from stormscale.operator.decision.planning import planning_model
from stormscale.operator.policy import millicores, parse_spec
from stormscale.operator.ports import MeasuredProfile, StaleMetricsError
from stormscale.planner.sizing.exact import minimum_units
from stormscale.storm.model import TopologyInfo
from tests.harness.bed.moving_load import AutoScaling
from tests.harness.bed.scenarios import JVM_KAFKA_AUTO
from tests.harness.bed.stack import Scenario, Stack, storm_topology
from tests.harness.bed.steady import operator_profiler, profile_now, sink_rate, wait_running
from tests.harness.process import new_run_dir
from tests.harness.waiting import wait_for

OUT = Path(__file__).parent / "out"
NAMESPACE = "target"
#: tuples/s the load generator produces on the topic, the whole run: above what the bed can serve.
LOAD = "48@60m"
#: The default target: above both baselines (about 13/s on one-slot pods, 26/s on lone 2-slot ones)
#: and within the CPU the bed has for pods at the units it needs (7 of 200m: 1 + 2 + 3 + 1).
TARGET = 30.0
SIZINGS = ("Exact", "MBA")
#: The baseline runs this long under the load before its profile is taken: the spout fills its
#: ``topology.max.spout.pending`` (200 tuples) at the bottleneck's pace, about 80 s at 12/s, and a window
#: over the fill reads the in-flight growth as a share of the spout's output lost on its edge.
SOAK_S = 90.0
SETTLE_S = 45.0
MEASURE_S = 90.0
#: The operator's verified apply (a profile after the deploy's own settle, new pods, a rebalance).
APPLY_TIMEOUT_S = 900.0
#: Cooldown and scale-in delay: longer than a run, so the one change is the one measured.
HOLD = "30m"
PROGRESS_EVERY_S = 30.0
FORGET_TIMEOUT_S = 120.0
AFTER_PROFILE_S = 90.0
_progress = functools.partial(print, flush=True)


@dataclass(frozen=True)
class Strategy:
    """One run's sizing (``scaling.sizing``) and placement (``workers.placement``, ``None``: Storm's
    own) on pods of ``slots_per_pod`` slots."""

    sizing: str
    placement: str | None
    slots_per_pod: int

    @property
    def label(self) -> str:
        where = self.placement or "default"
        return f"{self.sizing} / {where} K={self.slots_per_pod}"


def strategies(sizings: Sequence[str], quick: bool) -> list[Strategy]:
    """Per sizing: SAM on 2-slot pods, then Storm's own placement on 1-slot pods (the alternative)."""
    if quick:
        return [Strategy(sizings[0], "SAM", 2)]
    return [s for z in sizings for s in (Strategy(z, "SAM", 2), Strategy(z, None, 1))]


#: The profile's window: a fixed load needs no quick reaction, and a longer window reads capacity closer.
TARGET_WINDOW = "90s"


def scenario_for(strategy: Strategy) -> Scenario:
    """The Kafka-fed JVM linear topology on pods of the strategy's size, under the fixed load; a name
    (Deployment, topic, consumer group) of its own per run."""
    name = f"e2e-target-{strategy.sizing.lower()}-k{strategy.slots_per_pod}"
    return dataclasses.replace(
        JVM_KAFKA_AUTO,
        name=name,
        topic=name,
        window=TARGET_WINDOW,
        load=LOAD,
        slots_per_pod=strategy.slots_per_pod,
    )


#: Auto mode's settings: the budget may reach 8 units over the baseline; the one change is measured.
SCALING = AutoScaling(max_units=8, cooldown=HOLD, scale_in_delay=HOLD, target_utilization=1.0)


def target_resource(
    scenario: Scenario,
    strategy: Strategy,
    target: float,
    *,
    nimbus_port: int,
    prometheus: str,
    pod_overhead: str = "0",
) -> dict[str, Any]:
    """The scenario's StormTopology in Auto mode (:data:`SCALING`) with ``targetRate`` = ``target``,
    the strategy's sizing, and its placement on pods of its slots."""
    resource = storm_topology(scenario, nimbus_port, prometheus, 0, pod_overhead)
    spec = resource["spec"]
    scaling = {**spec["scaling"], **SCALING.spec(), "targetRate": target, "sizing": strategy.sizing}
    scaling.pop("budget", None)
    spec["scaling"] = scaling
    spec["workers"]["slotsPerPod"] = strategy.slots_per_pod
    if strategy.placement is not None:
        spec["workers"]["placement"] = strategy.placement
    return resource


@dataclass(frozen=True)
class Optimum:
    """The planner's optimum for the target on the baseline's profile."""

    units: dict[str, int]
    pods: int  # ⌈Σ n* / K⌉: the exact units, one per slot
    bound: int  # ⌈⌈S_min⌉ / K⌉: no placement uses fewer pods

    @property
    def total(self) -> int:
        return sum(self.units.values())


def optimum(
    measured: MeasuredProfile,
    resource: Mapping[str, Any],
    running: Mapping[str, int],
    tasks: Mapping[str, int],
    target: float,
) -> Optimum:
    """The exact minimum for ``target`` on the operator's planning model of ``measured`` (the units
    that run, Storm's task counts, the spec's bounds), and its pods."""
    policy = parse_spec(dict(resource["spec"]))
    model = planning_model(measured.topology, running, tasks, policy)
    exact = minimum_units(model, target)
    k = policy.spec.workers.slots_per_pod
    return Optimum(dict(exact.units), exact.pods(k), exact.shared_pods(k))


def capacities(measured: MeasuredProfile) -> dict[str, str]:
    """Each bolt's capacity per unit in a profile and where its busy time came from (``pod-cpu``, or
    Storm's ``execute-latency`` where a pod runs several components), e.g. ``"13.2/s pod-cpu"``."""
    out = {}
    for c in measured.topology.components:
        if not c.is_spout:
            source = measured.confidence.of(c.id).capacity_source or "?"
            out[c.id] = f"{c.capacity_per_unit:.1f}/s {source}"
    return out


def spout_fractions(measured: MeasuredProfile) -> dict[str, float]:
    """Each spout edge's fraction in a profile, ``"1→2"`` → f (the share of the spout's output its
    child receives)."""
    return {
        f"{c.id}→{child}": round(f, 4)
        for c in measured.topology.components
        if c.is_spout
        for child, f in c.children
    }


def hosting(info: TopologyInfo) -> set[str]:
    """The Supervisors (hosts) that run the topology's workers, as Nimbus reports its executors."""
    return {e.host for e in info.executors}


def placement_pods(status: Mapping[str, Any], slots_per_pod: int) -> int:
    """Pods the applied layout needs: ``status.placement.pods``, else one pod per ``K`` units."""
    placement = status.get("placement") or {}
    if placement.get("pods") is not None:
        return int(placement["pods"])
    units = sum(int(n) for n in (status.get("units") or {}).values())
    return -(-units // slots_per_pod)


def ready_condition(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status's Ready condition (empty: none yet)."""
    found: dict[str, Any] = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), {})
    return found


def sized(status: Mapping[str, Any], strategy: Strategy) -> bool:
    """The operator has applied and verified its sizing: the last plan is the run's sizing, its budget
    is the applied one (recorded only once Storm runs the units, and the placement), nothing is
    pending, and with a placement the run's placement is recorded. (Ready may be False meanwhile:
    Auto's next passes find no steady window since the rebalance, ``Settling``, then rates not yet
    steady, ``Degraded/StaleMetrics``.)"""
    plan = status.get("lastPlan") or {}
    placement = (status.get("placement") or {}).get("strategy")
    return (
        not status.get("pending")
        and status.get("units") is not None
        and plan.get("chosen") == strategy.sizing.lower()
        and plan.get("budget") is not None
        and status.get("appliedBudget") == plan.get("budget")
        and placement == strategy.placement
    )


@dataclass
class Row:
    """One run: the target, what the operator sized and placed, the pods used, the rates."""

    strategy: Strategy
    target: float
    before: float
    sized_units: int
    units: dict[str, int]
    exact_units: int | None  # status.sizing.exactUnits: the operator's own optimum
    optimum: Optimum
    sizing_pods: int | None  # status.sizing.pods: the sizing strategy's own count
    placement_pods: int
    replicas: int
    supervisors: int
    pod_cpu_cores: float  # the pods' CPU limits together
    measured: float
    received_cores: float  # what the pods used while measured
    #: Auto's sizing at the end (``status.sizing.totalUnits`` from a later profile of the new layout)
    #: and whether it wishes to scale in (``autoscaler.scaleInSince``): the cooldown holds both back.
    sized_after: int | None
    scale_in_wished: bool = False
    layout: list[list[dict[str, int]]] = field(default_factory=list)
    #: bolt → capacity per unit and its busy time's source, at the baseline and after the change.
    capacities_before: dict[str, str] = field(default_factory=dict)
    capacities_after: dict[str, str] = field(default_factory=dict)
    #: "spout→child" → the share of the spout's output its child receives in the baseline's profile
    #: (1 on every edge of this topology; less where in-flight tuples grew over the window).
    spout_fractions: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def reached(self) -> float:
        """measured / target."""
        return self.measured / self.target

    @property
    def pods_agree(self) -> bool:
        """The pods used are the placement's count (Deployment and Nimbus alike)."""
        return self.replicas == self.placement_pods == self.supervisors


def _cell(value: float | int | None, spec: str = "") -> str:
    return "–" if value is None else format(value, spec)


def table(rows: Sequence[Row]) -> str:
    """The measured table (Markdown)."""
    head = (
        "| sizing / placement | target/s | before/s | sized units | optimum units (exact) | "
        "pods bound | placement pods | replicas | Supervisors | pods' CPU | measured/s | measured/target |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r.strategy.label} | {r.target:g} | {r.before:.1f} | {r.sized_units} | "
            f"{_cell(r.exact_units)} ({r.optimum.total}) | {r.optimum.bound} | {r.placement_pods} | "
            f"{r.replicas} | {r.supervisors} | {r.pod_cpu_cores:.2f} | {r.measured:.1f} | {r.reached:.2f} |"
        )
    return "\n".join(lines)


def ratios(rows: Sequence[Row]) -> list[str]:
    """Per sizing, the packed run against the one-slot alternative of the same run: pods, their CPU
    limits, and the measured rate."""
    out = []
    for sizing in dict.fromkeys(r.strategy.sizing for r in rows):
        packed = [r for r in rows if r.strategy.sizing == sizing and r.strategy.placement is not None]
        default = [r for r in rows if r.strategy.sizing == sizing and r.strategy.placement is None]
        for p in packed:
            for d in default:
                out.append(
                    f"{sizing}: {p.strategy.label} / {d.strategy.label}: pods {p.placement_pods}/"
                    f"{d.placement_pods} = {p.placement_pods / d.placement_pods:.2f}, pods' CPU "
                    f"{p.pod_cpu_cores / d.pod_cpu_cores:.2f}×, measured {p.measured / d.measured:.2f}×"
                )
    return out


def details(rows: Sequence[Row]) -> list[str]:
    """Per run: the units per component, the layout asked of Nimbus, whether the pods agree, Auto's
    sizing at the end, how long it took."""
    out = []
    for r in rows:
        units = ", ".join(f"{c}={n}" for c, n in sorted(r.units.items()))
        optimum = ", ".join(f"{c}={n}" for c, n in sorted(r.optimum.units.items()))
        out.append(
            f"{r.strategy.label}: units {units} (exact on the bench's profile: {optimum}; the sizing's "
            f"own pod count {_cell(r.sizing_pods)}); "
            f"pods agree: {'yes' if r.pods_agree else 'NO'}; layout {r.layout or '–'}; "
            f"pods used {r.received_cores:.2f} cores while measured; Auto's sizing at the end: "
            f"{_cell(r.sized_after)} units{' (wishes to scale in)' if r.scale_in_wished else ''}; "
            f"{r.seconds / 60:.1f} min"
        )
        if r.spout_fractions:
            shown = ", ".join(f"{edge} {f:.3f}" for edge, f in sorted(r.spout_fractions.items()))
            out.append(f"  the baseline profile's spout edges: {shown}")
        if r.capacities_before or r.capacities_after:
            out.append(
                f"  capacities per unit, before: {r.capacities_before}; after: {r.capacities_after or '–'}"
            )
    return out


# --- on the test bed ---------------------------------------------------------------------------------


def wait_sized(stack: Stack, scenario: Scenario, strategy: Strategy) -> dict[str, Any]:
    """The status once the operator has applied and verified the sizing (:func:`sized`); a progress
    line at each change of its Ready condition and every :data:`PROGRESS_EVERY_S`."""
    started = time.monotonic()
    shown = [""]
    shown_at = [started]

    def done() -> dict[str, Any] | None:
        status = stack.status(scenario)
        ready = ready_condition(status)
        line = f"{ready.get('status', '?')} {ready.get('reason', '')}: {ready.get('message', '')}"
        now = time.monotonic()
        if line != shown[0] or now - shown_at[0] >= PROGRESS_EVERY_S:
            _progress(f"[target] {now - started:4.0f} s: {line}")
            shown[0], shown_at[0] = line, now
        return status if sized(status, strategy) else None

    result: dict[str, Any] = wait_for(
        done, APPLY_TIMEOUT_S, f"{strategy.label}: the sizing applied", every_s=5.0
    )
    return result


def profile_soon(stack: Stack, scenario: Scenario) -> dict[str, str]:
    """The bolts' capacities (:func:`capacities`) in the operator's profile of the layout that runs
    now, tried for :data:`AFTER_PROFILE_S` (the measurement came first: its window is usually steady);
    else why not, in one entry."""
    profiler, policy = operator_profiler(stack, scenario)
    deadline = time.monotonic() + AFTER_PROFILE_S
    while True:
        try:
            return capacities(profiler.profile(scenario.name, policy.window_s))
        except StaleMetricsError as err:
            if time.monotonic() > deadline:
                return {"-": f"no steady profile: {err}"}
            time.sleep(10.0)
        except Exception as err:  # any other: said in the record, the run's measurement stands
            return {"-": f"{type(err).__name__}: {err}"}


def run_one(stack: Stack, strategy: Strategy, target: float) -> Row:
    """One run on the shared stack (module docstring); the bed is freed after it."""
    started = time.monotonic()
    scenario = scenario_for(strategy)
    _progress(f"[target] {strategy.label}: deploying {scenario.name} (load {LOAD} on its topic)")
    stack.deploy(scenario)
    try:
        baseline = len(scenario.components)
        wait_running(stack, scenario, baseline)
        info = stack.nimbus().topology_info(scenario.name)
        hosts = len(hosting(info))
        alone = (
            "" if hosts == baseline else " (some share a pod: their busy time is Storm's, not the pod's CPU)"
        )
        _progress(f"[target] baseline: {baseline} workers on {hosts} Supervisors{alone}")
        _progress(f"[target] the baseline runs {SOAK_S:.0f} s under the load before the target is raised")
        time.sleep(SOAK_S)
        _progress("[target] waiting for a steady profile at the baseline (the operator's window)")
        measured = profile_now(stack, scenario)
        resource = target_resource(
            scenario,
            strategy,
            target,
            nimbus_port=stack.storm.endpoints.nimbus_port,
            prometheus=stack.prometheus.url,
            pod_overhead=stack.pod_overhead.get(scenario.name, "0"),
        )
        running = {c: sum(1 for e in info.user_executors() if e.component == c) for c in scenario.components}
        tasks = {
            c: sum(e.tasks for e in info.user_executors() if e.component == c) for c in scenario.components
        }
        best = optimum(measured, resource, running, tasks, target)
        _progress(
            f"[target] profile Θ {measured.throughput:.1f}/s; optimum for {target:g}/s: {best.total} "
            f"units, pods ≥ {best.bound}; applying Auto, targetRate {target:g}, {strategy.label}"
        )
        stack.kubectl_apply(resource)
        status = wait_sized(stack, scenario, strategy)
        units = {c: int(n) for c, n in (status.get("units") or {}).items()}
        layout = (status.get("placement") or {}).get("layout") or []
        workers = sum(len(p.get("workers") or []) for p in layout) or sum(units.values())
        wait_running(stack, scenario, workers)
        _progress(f"[target] applied: {units}, {workers} workers; settling {SETTLE_S:.0f} s")
        time.sleep(SETTLE_S)
        summary = stack.nimbus().topology(scenario.name)
        assert summary is not None
        _progress(f"[target] measuring the sinks' rate over {MEASURE_S:.0f} s")
        after, pods = sink_rate(stack, scenario, summary.id, MEASURE_S)
        info = stack.nimbus().topology_info(scenario.name)
        after_profile = profile_soon(stack, scenario)
        end = stack.status(scenario)
        deployment = json.loads(
            stack.plane.kubectl("get", "deployment", scenario.deployment, "-n", stack.namespace, "-o", "json")
        )
        replicas = int(deployment["spec"]["replicas"])
        sizing = status.get("sizing") or {}
        row = Row(
            strategy=strategy,
            target=target,
            before=round(measured.throughput, 3),
            sized_units=sum(units.values()),
            units=units,
            exact_units=sizing.get("exactUnits"),
            optimum=best,
            sizing_pods=sizing.get("pods"),
            placement_pods=placement_pods(status, strategy.slots_per_pod),
            replicas=replicas,
            supervisors=len(hosting(info)),
            pod_cpu_cores=replicas * millicores(scenario.pod_cpu) / 1000,
            measured=round(after.rate, 3),
            received_cores=round(sum(u.received_cores for u in pods.values()), 3),
            sized_after=(end.get("sizing") or {}).get("totalUnits"),
            scale_in_wished=bool((end.get("autoscaler") or {}).get("scaleInSince")),
            layout=[[dict(w) for w in p.get("workers") or []] for p in layout],
            capacities_before=capacities(measured),
            spout_fractions=spout_fractions(measured),
            capacities_after=after_profile,
            seconds=round(time.monotonic() - started, 1),
        )
        (stack.run_dir / f"target-{strategy.sizing}-k{strategy.slots_per_pod}.json").write_text(
            json.dumps({"status": status, "end": end, "row": _jsonable(row)}, indent=2, default=str)
        )
        _progress(
            f"[target] {strategy.label}: measured {row.measured:.1f}/s ({row.reached:.2f} of the target)"
        )
        return row
    finally:
        free(stack, scenario)


def pod_hosts(stack: Stack, scenario: Scenario) -> set[str]:
    """The addresses the scenario's worker pods announce (their Supervisors' hosts)."""
    listing = client.CoreV1Api(stack.api).list_namespaced_pod(
        stack.namespace, label_selector=f"app={scenario.deployment}"
    )
    return {p.status.pod_ip for p in listing.items if p.status and p.status.pod_ip}


def free(stack: Stack, scenario: Scenario) -> None:
    """Undeploy, then wait until Nimbus has forgotten the pods' Supervisors, so that the next run's
    topology is never scheduled on a slot of a Supervisor that is gone."""
    hosts = pod_hosts(stack, scenario)
    stack.undeploy(scenario)

    def forgotten() -> bool:
        return not hosts & {s.host for s in stack.nimbus().cluster_summary().supervisors}

    wait_for(
        forgotten, FORGET_TIMEOUT_S, f"Nimbus to forget {scenario.deployment}'s Supervisors", every_s=2.0
    )


def _jsonable(row: Row) -> dict[str, Any]:
    return {**asdict(row), "reached": row.reached, "pods_agree": row.pods_agree}


def row_of(record: Mapping[str, Any]) -> Row:
    """A row as :func:`_jsonable` wrote it (derived and unknown keys left out)."""
    known = {f.name for f in dataclasses.fields(Row)}
    values = {k: v for k, v in record.items() if k in known}
    values["strategy"] = Strategy(**record["strategy"])
    values["optimum"] = Optimum(**record["optimum"])
    return Row(**values)


def run(strategies_: Sequence[Strategy], target: float) -> tuple[list[Row], list[str]]:
    """Every run on one stack, under the real-stack lock: the rows, and a line for each run that
    failed (the next run goes on, on a bed its failure left free)."""
    rows: list[Row] = []
    failed: list[str] = []
    run_dir = new_run_dir("target-")
    with heavy_lock():
        locked = time.monotonic()
        with Stack(run_dir, namespace=NAMESPACE, log=_progress) as stack:
            _progress(f"[target] logs in {run_dir}")
            stack.start_operator()
            for i, strategy in enumerate(strategies_, 1):
                _progress(f"[target] run {i} of {len(strategies_)}: {strategy.label}, target {target:g}/s")
                try:
                    rows.append(run_one(stack, strategy, target))
                except Exception as err:  # one run's failure is reported; the others still run
                    failed.append(f"{strategy.label}: {type(err).__name__}: {err}")
                    _progress(f"[target] {failed[-1]}")
                (OUT / "target.json").write_text(
                    json.dumps({"rows": [_jsonable(r) for r in rows], "failed": failed}, indent=2)
                )
        _progress(
            f"[target] {len(rows)} runs in {(time.monotonic() - locked) / 60:.1f} min with the lock held"
        )
    return rows, failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.target", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run: the first sizing on SAM, 2 slots")
    parser.add_argument("--target", type=float, default=TARGET, help="tuples/s (default %(default)g)")
    parser.add_argument(
        "--sizings", nargs="+", choices=("Exact", "LSA", "MBA"), default=list(SIZINGS), help="in this order"
    )
    parser.add_argument("--from-json", type=Path, metavar="FILE", help="re-render saved records, run nothing")
    args = parser.parse_args(argv)
    if not args.target > 0:
        parser.error(f"--target: a rate > 0 tuples/s, got {args.target:g}")
    if args.from_json is not None:
        try:
            saved = json.loads(args.from_json.read_text())
            rows, failed = [row_of(r) for r in saved["rows"]], list(saved.get("failed") or [])
        except (OSError, ValueError, KeyError, TypeError) as err:
            parser.error(f"--from-json {args.from_json}: not a record of this benchmark ({err})")
        print(table(rows))
        print("\n" + "\n".join(ratios(rows) + details(rows) + [f"FAILED {line}" for line in failed]))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    rows, failed = run(strategies(args.sizings, args.quick), args.target)
    print("\n" + table(rows))
    print("\n" + "\n".join(ratios(rows) + details(rows) + [f"FAILED {line}" for line in failed]))
    print(f"\n{(time.monotonic() - started) / 60:.1f} min in all; records in {OUT / 'target.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
