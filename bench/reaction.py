"""Reaction time benchmark: from ``kubectl apply`` of a new budget to the Deployment scaled and the
rebalance issued, against a trivial Kopf operator (the floor), on the real API server; and, with
``--dip``, what one rebalance costs a running topology in throughput.

Run: ``make bench-reaction`` (or ``.venv/bin/python -m bench.reaction [--applies 20]``), about 10
minutes; ``make bench-reaction DIP=1`` (``--dip``) measures the dip instead, on the whole test bed
(about 15 minutes). Both hold the real-stack lock of ``make accuracy``. The reaction part prints two
tables and writes ``bench/out/reaction.png`` and ``bench/out/reaction.json``; the dip part prints
one and writes ``bench/out/reaction-dip.png`` and ``bench/out/reaction-dip.json``.

**Reaction time.** A real control plane (tests/harness/kubernetes) with the CRD, and the light fakes
of bench/fleet.py (tests/harness/fakes: one fake Nimbus speaking Storm's Thrift, one fake Prometheus
serving a steady synthetic series of the thesis's linear topology). Two namespaces, each with a
worker Deployment created paused (4 replicas, no pods) and a StormTopology in Manual mode, created
at budget 0; in ``reaction-operator`` the operator runs as users run it (``python -m kopf run -m
stormscale.operator.handlers --standalone --namespace NS``, the default 30 s timer), with one
addition: :mod:`bench.reaction_probe`, a second module of the same ``kopf run``, logs each call of
its ports with its wall-clock start and end. In ``reaction-floor`` :mod:`bench.floor_operator`
runs the same way: one Kopf handler that sets the replicas for the budget and does nothing else.
Then ``--applies`` times, alternating budgets 1 and 2 (each apply changes the budget) and which of
the two goes first, each StormTopology gets a ``kubectl apply`` of its manifest with the new budget,
and the benchmark waits for:

* (a) the Deployment's ``spec.replicas`` at 4 + budget, from a watch on the Deployments (each event
  stamped as it reaches this process);
* (b) operator only: the rebalance at the fake Nimbus (stamped as the fake decodes the call);
* (c) operator only: ``status.appliedBudget`` at the budget (the operator verified that Storm runs
  the new executors), from a watch on the StormTopology.

Every time is measured from the wall-clock time taken just *before* ``kubectl apply`` starts, so it
includes kubectl itself (reported apart: ``kubectl apply`` returned). Before the next apply the
operator must be idle: (c) seen, and its spec handler done (it looks again 15 s after a rebalance,
and a spec change that arrives meanwhile waits for that retry: Kopf keeps a handler's delay across
changes).

Where the operator's extra time goes, per apply, from its log lines (the pass's ``spec pass took X
s`` gives when the handler started; the probe's lines the rest): Kopf (from the apply until the
handler starts: kubectl, the API server, the watch, Kopf's 0.1 s batching window, a thread of its
pool), the reads (the StormTopology, the Deployment and its HPAs, Nimbus's view of the topology),
the profile (Prometheus queries over the 5 min window, the graph from Nimbus, the aggregation; none
when the pass plans on the profile an earlier pass kept, docs/operator/design.md, "Profiles kept
between passes": then the span is 0 and the table's last line counts those applies), the plan
(every strategy, the exact program included), the intent save (``status.pending`` before acting),
and the scale call. The floor has the same Kopf part and the scale call only. (c) is no processing
time: the operator rebalances with ``wait_secs`` 5 and looks again 15 s later.

**The dip** (``--dip``): the test bed (tests/harness/bed/stack.py) with the operator, the
Kafka-fed JVM linear topology ``JVM_KAFKA_LINEAR`` (its load, 48 tuples/s, starts at deploy; bolt 3
is the bottleneck at ~13/s), budget 0 applied, a steady profile; then the sink's rate every 5 s,
from the keys it records (:func:`tests.harness.bed.moving_load.seen_count`: every line, replays
included; Storm's counters restart with a rebalance) from 60 s before ``kubectl apply`` of budget 1
until 120 s after it (at least 90 s after the rebalance). Printed: the steady rate before (the 60
s before the apply), the minimum 5 s rate after it, the tuples lost in the minute around the
rebalance against the steady rate, ∫ (steady − rate) dt over [rebalance − 30 s, rebalance + 30 s]
(signed: a rate above the old steady one counts against the loss), the dip alone (∫ (steady −
rate)⁺ from the rebalance until the rate is back at the old steady one), and the time until the new
steady rate (the mean of the last 45 s): the first 5 s interval from which three in a row are
within 10 % of it.

The machine is shared and noisy: compare the operator with the floor of the same run (the ratio),
not runs.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config, watch

from bench import fleet
from bench.accuracy import heavy_lock
from stormscale.operator.adapters.kube import GROUP, PLURAL, VERSION
from stormscale.planner import load_profile
from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.paths import REPO_ROOT
from tests.harness.process import Daemon, LaunchSpec, free_port, http_ok, new_run_dir
from tests.harness.waiting import wait_for

OUT = Path(__file__).parent / "out"
NAME = "t-000"  # the one topology of bench/fleet.py's fakes
OPERATOR_NS = "reaction-operator"
FLOOR_NS = "reaction-floor"
BASE_REPLICAS = fleet.BASELINE_UNITS
BUDGETS = (1, 2)
#: How long one apply may take to show (a), (b) and (c), and the operator to become idle again.
APPLY_TIMEOUT_S = 90.0
#: Pause between two applies (the previous one's writes settle; the floor's events, Kopf's patches).
GAP_S = 1.0
POLL_S = 0.01
HORIZON_S = 3600.0
SPEC_DONE = "Ready True Applied"
_PROBE = re.compile(
    r"\[(?P<namespace>[^/\]\s]+)/(?P<name>[^\]\s]+)\] probe (?P<call>\w+\.\w+) "
    r"(?P<start>\d+(?:\.\d+)?) (?P<end>\d+(?:\.\d+)?)"
)
_FLOOR = re.compile(
    r"\[(?P<namespace>[^/\]\s]+)/(?P<name>[^\]\s]+)\] floor handler started (?P<start>\d+(?:\.\d+)?) "
    r"scaled (?P<end>\d+(?:\.\d+)?) to (?P<replicas>\d+)"
)
_progress = functools.partial(print, flush=True)
percentile = fleet.percentile


# --- what the applies measured: pure ---------------------------------------------------------------


@dataclass(frozen=True)
class Apply:
    """One ``kubectl apply`` and what followed it: Unix seconds, ``None`` where it was not seen.

    ``started`` is taken just before ``kubectl apply`` starts, ``returned`` just after it ends.
    """

    who: str
    index: int
    budget: int
    replicas: int
    started: float
    returned: float
    scaled: float | None = None
    rebalanced: float | None = None
    applied: float | None = None

    def since(self, at: float | None) -> float | None:
        """Seconds from the apply's start to ``at``."""
        return None if at is None else at - self.started


#: The measures, by label: the apply's moment each one reads.
MEASURES: dict[str, Callable[[Apply], float | None]] = {
    "kubectl apply returned": lambda a: a.returned,
    "(a) Deployment replicas set": lambda a: a.scaled,
    "(b) rebalance at Nimbus": lambda a: a.rebalanced,
    "(c) status.appliedBudget": lambda a: a.applied,
}


def first_at(
    events: Iterable[tuple[float, Any]], after: float, wanted: Callable[[Any], bool]
) -> float | None:
    """The time of the first event at or after ``after`` whose value is ``wanted``."""
    return next((at for at, value in events if at >= after and wanted(value)), None)


def durations(applies: Iterable[Apply], who: str, measure: Callable[[Apply], float | None]) -> list[float]:
    """``who``'s seconds from each apply's start to ``measure``, where it was seen."""
    out = []
    for a in applies:
        if a.who == who:
            seconds = a.since(measure(a))
            if seconds is not None:
                out.append(seconds)
    return out


STATS = ("p50", "p90", "max")


def stats(values: Sequence[float]) -> tuple[float, float, float]:
    """p50 and p90 (nearest rank) and the maximum (NaN for none)."""
    return percentile(values, 50), percentile(values, 90), max(values, default=math.nan)


def _cell(seconds: float) -> str:
    return "–" if math.isnan(seconds) else f"{seconds:.3f}"


def _ratio(a: float, b: float) -> str:
    return "–" if math.isnan(a) or math.isnan(b) or b <= 0 else f"{a / b:.2f}×"


def reaction_table(applies: Sequence[Apply]) -> str:
    """Per measure and operator: applies seen of those made, p50, p90 and max (Markdown); then the
    operator over the floor for (a)."""
    lines = ["| measure (from just before kubectl apply starts) | who | seen | p50 (s) | p90 (s) | max (s) |"]
    lines.append("|---|---|---|---|---|---|")
    for label, measure in MEASURES.items():
        for who in ("operator", "floor"):
            made = sum(1 for a in applies if a.who == who)
            values = durations(applies, who, measure)
            if not values and who == "floor":
                continue  # (b) and (c): the floor has neither
            cells = " | ".join(_cell(v) for v in stats(values))
            lines.append(f"| {label} | {who} | {len(values)}/{made} | {cells} |")
    scaled = MEASURES["(a) Deployment replicas set"]
    op, floor = durations(applies, "operator", scaled), durations(applies, "floor", scaled)
    ratios = ", ".join(
        f"{name} {_ratio(o, f)}" for name, o, f in zip(STATS, stats(op), stats(floor), strict=True)
    )
    return "\n".join([*lines, "", f"(a) operator / floor: {ratios}"])


# --- where the time went: pure ----------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One call of a port in the operator's process (``call``: ``profiler.profile``, …), or the floor's
    handler (``floor.handler``), as its log line says: wall-clock start and end."""

    namespace: str
    name: str
    call: str
    start: float
    end: float


def parse_calls(lines: Iterable[str]) -> list[Call]:
    """The probe's and the floor's lines (bench/reaction_probe.py, bench/floor_operator.py)."""
    out = []
    for line in lines:
        if match := _PROBE.search(line):
            call = match["call"]
        elif match := _FLOOR.search(line):
            call = "floor.handler"
        else:
            continue
        out.append(Call(match["namespace"], match["name"], call, float(match["start"]), float(match["end"])))
    return out


#: The spans of one apply, in order: consecutive, so that they add up to (a).
OPERATOR_SPANS = (
    "Kopf: apply → handler starts",
    "reads: StormTopology, Deployment, Nimbus",
    "profile",
    "plan",
    "intent save",
    "scale call",
    "→ the watch sees it",
)
FLOOR_SPANS = ("Kopf: apply → handler starts", "scale call", "→ the watch sees it")
#: Log times are truncated to the millisecond.
LOG_RESOLUTION_S = 0.001


def operator_spans(apply: Apply, passes: Sequence[fleet.Pass], calls: Sequence[Call]) -> dict[str, float]:
    """Where the operator's (a) went, from its log: the pass that scaled (its ``pass took`` line gives
    when its handler started) and its port calls (the profile, the intent save before the scale).
    Empty where a part is missing (the apply not scaled, or not by a pass of its own)."""
    mine = sorted((c for c in calls if c.start >= apply.started), key=lambda c: c.start)
    scale = next((c for c in mine if c.call == "deployments.scale"), None)
    if scale is None or apply.scaled is None:
        return {}
    ran = next((p for p in sorted(passes, key=lambda p: p.at) if p.at + LOG_RESOLUTION_S >= scale.end), None)
    if ran is None:
        return {}
    handler = max(apply.started, ran.at - ran.took)
    before = [c for c in mine if c.end <= scale.start]
    intent = next((c for c in reversed(before) if c.call == "status.save"), None)
    if intent is None:
        return {}
    profile = next((c for c in reversed(before) if c.call == "profiler.profile"), None)
    if profile is None or profile.start < handler - LOG_RESOLUTION_S:
        profile = kept_profile(before, handler, intent)
    if profile is None:
        return {}
    marks = (
        apply.started,
        handler,
        profile.start,
        profile.end,
        intent.start,
        intent.end,
        scale.end,
        apply.scaled,
    )
    return dict(zip(OPERATOR_SPANS, (b - a for a, b in itertools.pairwise(marks)), strict=True))


def kept_profile(before: Sequence[Call], handler: float, intent: Call) -> Call | None:
    """A pass that planned on the profile an earlier pass kept makes no profiler call: its profile
    span is empty, at the end of its last read (Deployment, Nimbus) before the intent save."""
    reads = [
        c
        for c in before
        if c.call.startswith(("deployments.", "nimbus."))
        and handler - LOG_RESOLUTION_S <= c.start
        and c.end <= intent.start
    ]
    if not reads:
        return None
    last = max(reads, key=lambda c: c.end)
    return Call(last.namespace, last.name, "profiler.kept", last.end, last.end)


def floor_spans(apply: Apply, calls: Sequence[Call]) -> dict[str, float]:
    """Where the floor's (a) went: its handler's first line after the apply (start and scale end)."""
    handler = next(
        (
            c
            for c in sorted(calls, key=lambda c: c.start)
            if c.call == "floor.handler" and c.start >= apply.started
        ),
        None,
    )
    if handler is None or apply.scaled is None:
        return {}
    marks = (apply.started, handler.start, handler.end, apply.scaled)
    return dict(zip(FLOOR_SPANS, (b - a for a, b in itertools.pairwise(marks)), strict=True))


def spans_table(operator: Sequence[Mapping[str, float]], floor: Sequence[Mapping[str, float]]) -> str:
    """Per span, in milliseconds: the operator's p50 and mean, the floor's (Markdown). Means add up to
    (a)'s mean; p50s need not."""
    lines = [
        "| span | operator p50 (ms) | operator mean (ms) | floor p50 (ms) | floor mean (ms) |",
        "|---|---|---|---|---|",
    ]

    def cells(rows: Sequence[Mapping[str, float]], span: str) -> str:
        values = [r[span] for r in rows if span in r]
        if not values:
            return "– | –"
        return f"{1000 * percentile(values, 50):.0f} | {1000 * sum(values) / len(values):.0f}"

    for span in OPERATOR_SPANS:
        lines.append(f"| {span} | {cells(operator, span)} | {cells(floor, span)} |")
    total = [sum(r.values()) for r in operator if r]
    floor_total = [sum(r.values()) for r in floor if r]
    lines.append(
        f"| (a), applies broken down: {len(total)} and {len(floor_total)} | "
        f"{1000 * percentile(total, 50):.0f} | {1000 * _mean(total):.0f} | "
        f"{1000 * percentile(floor_total, 50):.0f} | {1000 * _mean(floor_total):.0f} |"
    )
    kept = sum(1 for r in operator if r.get("profile") == 0.0)
    lines += ["", f"planned on a kept profile (no query): {kept} of {len(total)} applies broken down"]
    return "\n".join(lines)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def plot_reaction(
    applies: Sequence[Apply], spans: Mapping[str, Sequence[Mapping[str, float]]], out: Path
) -> Path:
    """Two panels: each apply's (a) and (b) by apply, and the mean spans of (a) stacked, per operator."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    series = [
        ("operator", MEASURES["(a) Deployment replicas set"], "o", "C0", "operator (a) replicas"),
        ("operator", MEASURES["(b) rebalance at Nimbus"], "x", "C2", "operator (b) rebalance"),
        ("floor", MEASURES["(a) Deployment replicas set"], "s", "C1", "floor (a) replicas"),
    ]
    for who, measure, marker, color, label in series:
        pairs = [(a.index, a.since(measure(a))) for a in applies if a.who == who]
        known = [(i, s) for i, s in pairs if s is not None]
        left.plot([i for i, _ in known], [s for _, s in known], marker, color=color, label=label)
    left.set(xlabel="apply", ylabel="seconds from kubectl apply", title="Reaction per apply", ylim=(0, None))
    for i, who in enumerate(("operator", "floor")):
        rows = [r for r in spans.get(who, []) if r]
        names = OPERATOR_SPANS if who == "operator" else FLOOR_SPANS
        start = 0.0
        for name in names:
            mean = _mean([r[name] for r in rows if name in r])
            if math.isnan(mean):
                continue
            color = f"C{OPERATOR_SPANS.index(name) + 3}"
            right.barh(i, mean, left=start, color=color, label=name if who == "operator" else None)
            start += mean
    right.set_yticks([0, 1], ["operator", "floor"])
    right.set(xlabel="seconds (mean)", title="Where (a) goes")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "reaction.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --- the dip: pure -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bin:
    """The sink's rate between two readings of its key count: ``rate`` tuples/s over [start, end]."""

    start: float
    end: float
    rate: float


def bins(readings: Sequence[tuple[float, float]]) -> list[Bin]:
    """Consecutive (time, count) readings as rates: (count₂ − count₁) / (t₂ − t₁) over [t₁, t₂]."""
    ordered = sorted(readings)
    return [
        Bin(t1, t2, (c2 - c1) / (t2 - t1)) for (t1, c1), (t2, c2) in itertools.pairwise(ordered) if t2 > t1
    ]


def _overlap(b: Bin, start: float, end: float) -> float:
    return max(0.0, min(b.end, end) - max(b.start, start))


def mean_rate(series: Sequence[Bin], start: float, end: float) -> float:
    """The time-weighted mean rate over [start, end] (NaN if no bin covers any of it)."""
    covered = sum(_overlap(b, start, end) for b in series)
    if covered <= 0:
        return math.nan
    return sum(b.rate * _overlap(b, start, end) for b in series) / covered


def lost(series: Sequence[Bin], steady: float, start: float, end: float, *, clip: bool = False) -> float:
    """Tuples lost against ``steady`` over [start, end], the rate piecewise constant per bin:

    ∫ (steady − rate) dt,  or with ``clip`` ∫ max(0, steady − rate) dt
    """
    total = 0.0
    for b in series:
        gap = steady - b.rate
        total += (max(0.0, gap) if clip else gap) * _overlap(b, start, end)
    return total


def back_at(series: Sequence[Bin], after: float, level: float) -> float | None:
    """The end of the first bin after ``after`` whose rate is at least ``level``."""
    return next((b.end for b in series if b.start >= after - 1e-9 and b.rate >= level), None)


def settled_at(
    series: Sequence[Bin], after: float, target: float, tolerance: float = 0.1, hold: int = 3
) -> float | None:
    """The start of the first bin after ``after`` from which ``hold`` bins in a row are within
    ``tolerance`` of ``target`` (|rate − target| ≤ tolerance · target)."""
    later = [b for b in series if b.start >= after - 1e-9]
    for i in range(len(later) - hold + 1):
        if all(abs(b.rate - target) <= tolerance * target for b in later[i : i + hold]):
            return later[i].start
    return None


@dataclass
class Dip:
    """One rebalance's effect on the sink: the readings and the moments around it (Unix seconds)."""

    readings: list[tuple[float, float]]
    applied_at: float
    rebalanced_at: float | None = None
    verified_at: float | None = None
    before_s: float = 60.0
    steady_after_s: float = 45.0
    distinct: list[tuple[float, float]] = field(default_factory=list)

    @property
    def series(self) -> list[Bin]:
        return bins(self.readings)

    @property
    def centre(self) -> float:
        """The rebalance, or the apply if the rebalance was not seen."""
        return self.rebalanced_at if self.rebalanced_at is not None else self.applied_at

    def figures(self) -> dict[str, float | None]:
        """The printed numbers (see the module's docstring)."""
        series, end = self.series, max(t for t, _ in self.readings)
        steady = mean_rate(series, self.applied_at - self.before_s, self.applied_at)
        after = [b for b in series if b.start >= self.applied_at - 1e-9]
        new = mean_rate(series, end - self.steady_after_s, end)
        recovered = back_at(series, self.centre, steady)
        # the new rate is looked for from the rebalance on: before it the sink still runs at the old
        # rate, which a run too short to see the new one took for it (apply → "settled" in 1.3 s)
        settled = settled_at(series, self.centre, new)
        return {
            "steady_before": steady,
            "min_after": min((b.rate for b in after), default=math.nan),
            "lost_minute": lost(series, steady, self.centre - 30, self.centre + 30),
            "lost_dip": lost(series, steady, self.centre, recovered if recovered else end, clip=True),
            "dip_s": None if recovered is None else recovered - self.centre,
            "steady_after": new,
            "rebalance_s": None if self.rebalanced_at is None else self.rebalanced_at - self.applied_at,
            "verified_s": None if self.verified_at is None else self.verified_at - self.applied_at,
            "settled_s": None if settled is None else settled - self.applied_at,
        }

    def table(self) -> str:
        """The figures as a two-column Markdown table."""
        f = self.figures()

        def num(value: float | None, unit: str, digits: int = 1) -> str:
            return "–" if value is None or math.isnan(value) else f"{value:.{digits}f} {unit}"

        rows = [
            ("steady rate before (the 60 s before the apply)", num(f["steady_before"], "tuples/s")),
            ("apply → rebalance issued (the operator's pass)", num(f["rebalance_s"], "s")),
            ("apply → appliedBudget verified", num(f["verified_s"], "s")),
            ("minimum 5 s rate after the apply", num(f["min_after"], "tuples/s")),
            (
                "lost in the minute around the rebalance, ∫ (steady − rate) dt",
                num(f["lost_minute"], "tuples", 0),
            ),
            ("the dip: ∫ (steady − rate)⁺ dt until the old rate is back", num(f["lost_dip"], "tuples", 0)),
            ("the dip's length (rebalance → old rate back)", num(f["dip_s"], "s")),
            (f"new steady rate (the last {self.steady_after_s:.0f} s)", num(f["steady_after"], "tuples/s")),
            ("apply → new steady rate (3 × 5 s within 10 %)", num(f["settled_s"], "s")),
        ]
        return "\n".join(["| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "figures": self.figures()}


def plot_dip(dip: Dip, out: Path) -> Path:
    """The sink's 5 s rates around the rebalance, the steady rates and the lost area."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    f, zero = dip.figures(), dip.applied_at
    fig, ax = plt.subplots(figsize=(9, 4))
    xs = [x for b in dip.series for x in (b.start - zero, b.end - zero)]
    ys = [b.rate for b in dip.series for _ in (0, 1)]
    ax.plot(xs, ys, color="black", lw=1.2, label="sink, 5 s rate (keys recorded)")
    steady = f["steady_before"] or math.nan
    ax.axhline(steady, color="C0", ls="--", lw=1, label=f"steady before {steady:.1f}/s")
    if f["steady_after"] is not None:
        ax.axhline(
            f["steady_after"], color="C2", ls="--", lw=1, label=f"steady after {f['steady_after']:.1f}/s"
        )
    ax.fill_between(xs, ys, steady, where=[y < steady for y in ys], color="C3", alpha=0.25, label="lost")
    marks = [(0.0, "apply", "C0"), (f["rebalance_s"], "rebalance", "C3"), (f["verified_s"], "verified", "C2")]
    for x, label, color in marks:
        if x is not None:
            ax.axvline(x, color=color, lw=1, ls=":", label=label)
    ax.set(xlabel="seconds from kubectl apply of budget 1", ylabel="tuples/s", title="One rebalance's dip")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / "reaction-dip.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --- running the reaction part ----------------------------------------------------------------------


class Watched:
    """A watch on one namespace's list, in a thread: each event's value (``extract`` of its object),
    stamped with the wall-clock time it reached this process."""

    def __init__(
        self, list_call: Callable[..., Any], args: Sequence[Any], extract: Callable[[Any], Any]
    ) -> None:
        self.list_call, self.args, self.extract = list_call, tuple(args), extract
        self.events: list[tuple[float, Any]] = []
        self._watch: Any = watch.Watch()  # the stubs lack stop() and resource_version
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reaction-watch", daemon=True)

    def _run(self) -> None:
        version: str | None = None
        while not self._stopped.is_set():
            try:
                stream = self._watch.stream(
                    self.list_call, *self.args, resource_version=version, timeout_seconds=300
                )
                for event in stream:
                    at = time.time()
                    self.events.append((at, self.extract(event["object"])))
                version = self._watch.resource_version
            except client.ApiException as err:
                if err.status != 410:
                    raise
                version = None  # too old: list again
            except (urllib3.exceptions.HTTPError, OSError):
                # the connection ended (the control plane stopping at the end of the run): look again
                # unless stopped
                if self._stopped.wait(1.0):
                    return

    def start(self) -> Watched:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()

    def first(self, after: float, wanted: Callable[[Any], bool]) -> float | None:
        return first_at(list(self.events), after, wanted)


def start_kopf(
    plane: ControlPlane, namespace: str, run_dir: Path, modules: Sequence[str], name: str
) -> Daemon:
    """``kopf run`` of ``modules``, standalone, on ``namespace`` only, as bench/fleet.py runs the
    operator (the default timer period)."""
    port = free_port()
    argv = [sys.executable, "-m", "kopf", "run", *(a for m in modules for a in ("-m", m)), "--standalone"]
    argv += ["--namespace", namespace, "--liveness", f"http://127.0.0.1:{port}/healthz"]
    log = run_dir / f"{name}.log"
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig)}
    daemon = Daemon(LaunchSpec(name, argv, env, REPO_ROOT, log, log))
    healthz = f"http://127.0.0.1:{port}/healthz"
    daemon.wait_ready(lambda: http_ok(healthz), fleet.OPERATOR_READY_S, f"{healthz} answers")
    return daemon


@dataclass
class Side:
    """One namespace of the run: who runs there, its process and its watches."""

    who: str
    namespace: str
    daemon: Daemon
    deployments: Watched
    resources: Watched | None = None

    def manifest(self, nimbus_port: int, prometheus: str, budget: int) -> str:
        body = fleet.storm_topology_manifest(NAME, nimbus_port, prometheus, budget)
        body["metadata"]["namespace"] = self.namespace
        return json.dumps(body)


def measure_apply(side: Side, plane: ControlPlane, shared: fleet.Fakes, index: int, budget: int) -> Apply:
    """One ``kubectl apply`` of ``budget`` on ``side``'s StormTopology, and its (a), (b), (c)."""
    replicas = BASE_REPLICAS + budget
    manifest = side.manifest(shared.nimbus.port, shared.prometheus_url, budget)
    started = time.time()
    plane.kubectl("apply", "-f", "-", stdin=manifest)
    returned = time.time()
    scaled = wait_for(
        lambda: side.deployments.first(started, lambda r: r == replicas),
        APPLY_TIMEOUT_S,
        f"{replicas} replicas",
        every_s=POLL_S,
        daemons=[side.daemon],
        raise_on_timeout=False,
    )
    if side.who == "floor":
        return Apply(side.who, index, budget, replicas, started, returned, scaled)

    def rebalanced() -> float | None:
        with shared.nimbus.lock:
            return next((r.at for r in shared.nimbus.requests if r.at >= started and r.name == NAME), None)

    assert side.resources is not None
    resources = side.resources
    at = wait_for(
        rebalanced,
        APPLY_TIMEOUT_S,
        "the rebalance",
        every_s=POLL_S,
        daemons=[side.daemon],
        raise_on_timeout=False,
    )
    applied = wait_for(
        lambda: resources.first(started, lambda b: b == budget),
        APPLY_TIMEOUT_S,
        f"budget {budget} applied",
        every_s=POLL_S,
        daemons=[side.daemon],
        raise_on_timeout=False,
    )
    done = Apply(side.who, index, budget, replicas, started, returned, scaled, at, applied)
    wait_for(
        lambda: spec_done(side, at or started),
        APPLY_TIMEOUT_S,
        "the spec pass done",
        every_s=POLL_S,
        daemons=[side.daemon],
        raise_on_timeout=False,
    )
    return done


def spec_done(side: Side, after: float) -> bool:
    """Whether the operator's spec handler has finished since ``after``: a spec pass that ended Ready."""
    passes = fleet.parse_passes(side.daemon.spec.log.read_text().splitlines(), side.namespace)
    return any(p.cause == "spec" and p.end == SPEC_DONE and p.at + LOG_RESOLUTION_S >= after for p in passes)


@contextmanager
def sides(plane: ControlPlane, api: client.ApiClient, run_dir: Path) -> Iterator[dict[str, Side]]:
    """Both namespaces, each with its paused Deployment, its Kopf process and its watches."""
    apps, custom = client.AppsV1Api(api), client.CustomObjectsApi(api)
    with ExitStack() as stack:
        out = {}
        for who, namespace, modules in (
            ("operator", OPERATOR_NS, ["stormscale.operator.handlers", "bench.reaction_probe"]),
            ("floor", FLOOR_NS, ["bench.floor_operator"]),
        ):
            plane.kubectl("create", "namespace", namespace)
            deployment = fleet.deployment_manifest(NAME, BASE_REPLICAS)
            plane.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(deployment))
            deployments = Watched(
                apps.list_namespaced_deployment, [namespace], lambda d: d.spec.replicas
            ).start()
            stack.callback(deployments.stop)
            resources = None
            if who == "operator":
                resources = Watched(
                    custom.list_namespaced_custom_object,
                    [GROUP, VERSION, namespace, PLURAL],
                    lambda r: (r.get("status") or {}).get("appliedBudget"),
                ).start()
                stack.callback(resources.stop)
            daemon = start_kopf(plane, namespace, run_dir, modules, who)
            stack.callback(daemon.stop)
            out[who] = Side(who, namespace, daemon, deployments, resources)
        yield out


def run_reaction(applies: int) -> tuple[list[Apply], dict[str, list[dict[str, float]]], Path]:
    """The reaction part (see the module's docstring): every apply, and the spans of each."""
    profile = load_profile(fleet.PROFILE)
    run_dir = new_run_dir("reaction-")
    _progress(f"reaction benchmark: logs in {run_dir}")
    made: list[Apply] = []
    with heavy_lock(), ControlPlane(run_dir, bin_dir=binaries.ensure_binaries()) as plane:
        plane.apply_crds(fleet.CRD)
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        with fleet.fakes(profile, 1, HORIZON_S) as shared, sides(plane, api, run_dir) as both:
            operator, floor = both["operator"], both["floor"]
            for side in (operator, floor):
                plane.kubectl(
                    "apply", "-f", "-", stdin=side.manifest(shared.nimbus.port, shared.prometheus_url, 0)
                )
            created = time.time()
            ready = wait_for(
                lambda: spec_done(operator, created - 60),
                fleet.OPERATOR_READY_S,
                "the operator's budget 0",
                every_s=POLL_S,
                daemons=[operator.daemon],
                raise_on_timeout=False,
            )
            floor_seen = wait_for(
                lambda: parse_calls(floor.daemon.spec.log.read_text().splitlines()),
                60.0,
                "the floor's budget 0",
                every_s=POLL_S,
                daemons=[floor.daemon],
                raise_on_timeout=False,
            )
            if not ready or not floor_seen:
                raise RuntimeError(f"budget 0 not handled: operator {bool(ready)}, floor {bool(floor_seen)}")
            _progress(f"both handled budget 0; {applies} applies, budgets {BUDGETS} alternately")
            for i in range(applies):
                budget = BUDGETS[i % len(BUDGETS)]
                order = (operator, floor) if i % 2 == 0 else (floor, operator)
                for side in order:
                    made.append(measure_apply(side, plane, shared, i, budget))
                    time.sleep(GAP_S)
                _progress(_apply_line(made[-2:]))
            logs = {who: s.daemon.spec.log for who, s in both.items()}
    calls = parse_calls(line for path in logs.values() for line in path.read_text().splitlines())
    passes = fleet.parse_passes(logs["operator"].read_text().splitlines(), OPERATOR_NS)
    mine = [c for c in calls if c.name == NAME]
    spans = {
        "operator": [
            operator_spans(a, passes, [c for c in mine if c.namespace == OPERATOR_NS])
            for a in made
            if a.who == "operator"
        ],
        "floor": [
            floor_spans(a, [c for c in mine if c.namespace == FLOOR_NS]) for a in made if a.who == "floor"
        ],
    }
    return made, spans, run_dir


def _apply_line(pair: Sequence[Apply]) -> str:
    """One progress line: the seconds each apply of a round took to (a), (b), (c)."""
    parts = []
    for a in sorted(pair, key=lambda a: a.who != "operator"):
        seen = [(label[:3], a.since(fn(a))) for label, fn in MEASURES.items() if label.startswith("(")]
        shown = " ".join(
            f"{k} {'–' if v is None else f'{v:.3f}'}" for k, v in seen if a.who == "operator" or k == "(a)"
        )
        parts.append(f"{a.who} {shown}")
    return f"[apply {pair[-1].index + 1}, budget {pair[-1].budget}] " + "; ".join(parts)


# --- running the dip -----------------------------------------------------------------------------------

DIP_NAMESPACE = "reaction-dip"
TICK_S = 5.0
#: After the rebalance, at least this long is recorded (a late rebalance waits for the new pod's slot).
AFTER_REBALANCE_S = 180.0


def rebalance_pass(passes: Sequence[fleet.Pass], after: float) -> float | None:
    """When the first pass that ended by requesting a rebalance after ``after`` ended (it issued it)."""
    return next(
        (p.at for p in sorted(passes, key=lambda p: p.at) if p.at >= after and "Rebalance" in p.end), None
    )


def verified_pass(passes: Sequence[fleet.Pass], after: float) -> float | None:
    """When the first pass after ``after`` that ended Ready/Applied ended."""
    return next(
        (p.at for p in sorted(passes, key=lambda p: p.at) if p.at >= after and p.end == SPEC_DONE), None
    )


def run_dip(before_s: float, after_s: float) -> Dip:
    """The dip part (see the module's docstring) on a stack of its own."""
    from tests.harness.bed.scenarios import JVM_KAFKA_LINEAR as SCENARIO
    from tests.harness.bed.stack import Stack
    from tests.harness.bed.steady import profile_now, wait_running
    from tests.harness.kafka.seen import read_seen

    run_dir = new_run_dir("reaction-dip-")
    _progress(f"dip benchmark: logs in {run_dir}")
    with heavy_lock(), Stack(run_dir, namespace=DIP_NAMESPACE, log=_progress) as stack:
        stack.start_operator()
        stack.deploy(SCENARIO)
        stack.apply_budget(SCENARIO, 0)
        stack.wait_applied(SCENARIO, 0)
        wait_running(stack, SCENARIO, len(SCENARIO.components))
        profile_now(stack, SCENARIO)
        log = run_dir / "operator.log"
        readings: list[tuple[float, float]] = []
        distinct: list[tuple[float, float]] = []

        def record_until(stop: Callable[[], bool]) -> None:
            while not stop():
                tick = time.monotonic()
                seen = read_seen(stack.seen_dir(SCENARIO))
                at = time.time()
                readings.append((at, float(sum(seen.values()))))
                distinct.append((at, float(len(seen))))
                time.sleep(max(0.0, TICK_S - (time.monotonic() - tick)))

        started = time.time()
        _progress(f"[dip] steady: recording the sink for {before_s:.0f} s, then budget 1")
        record_until(lambda: time.time() >= started + before_s)
        applied_at = time.time()
        stack.apply_budget(SCENARIO, 1)
        dip = Dip(readings, applied_at, before_s=before_s, distinct=distinct)

        def done() -> bool:
            passes = fleet.parse_passes(log.read_text().splitlines(), DIP_NAMESPACE)
            dip.rebalanced_at = rebalance_pass(passes, applied_at)
            if dip.rebalanced_at is not None:
                dip.verified_at = verified_pass(passes, dip.rebalanced_at)
            last = max(applied_at + after_s, (dip.rebalanced_at or applied_at) + AFTER_REBALANCE_S)
            return time.time() >= last

        record_until(done)
    return dip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reaction", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--applies", type=int, default=20, help="kubectl applies per operator (reaction part)"
    )
    parser.add_argument(
        "--dip", action="store_true", help="measure one rebalance's throughput dip on the test bed instead"
    )
    parser.add_argument("--before", type=float, default=60.0, help="dip: seconds recorded before the apply")
    parser.add_argument("--after", type=float, default=120.0, help="dip: seconds recorded after it")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if args.dip:
        dip = run_dip(args.before, args.after)
        (OUT / "reaction-dip.json").write_text(json.dumps(dip.to_json(), indent=2))
        print("\n" + dip.table())
        print(f"\nplot: {plot_dip(dip, OUT)}; readings in {OUT / 'reaction-dip.json'}")
        return 0
    applies, spans, run_dir = run_reaction(args.applies)
    print("\n" + reaction_table(applies))
    print(
        "\nWhere (a) goes, per apply, from the operators' log lines\n\n"
        + spans_table(spans["operator"], spans["floor"])
    )
    document = {"run_dir": str(run_dir), "applies": [asdict(a) for a in applies], "spans": spans}
    (OUT / "reaction.json").write_text(json.dumps(document, indent=2))
    print(f"\nplot: {plot_reaction(applies, spans, OUT)}; every apply in {OUT / 'reaction.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
