"""Model accuracy benchmark: the operator's predicted throughput against the measured one, per budget.

Run: ``make accuracy`` (or ``.venv/bin/python -m bench.accuracy [--scenarios jvm-linear ...]
[--budgets 0 1 2 3]``). It starts the whole test bed (a :class:`~tests.harness.bed.stack.Stack`)
and the operator; for each scenario in turn it deploys the scenario and raises the
budget step by step (:func:`~bench.accuracy_steps.run_budget_steps`; per bolt too: its executed
rate from Nimbus against the rate in the operator's plan and in the fit): about 17 minutes per
scenario for budgets 0 → 3 (measured on jvm-linear), about 100 minutes for the six
(``jvm-kafka-linear``: the linear JVM topology reading from Kafka, its demand the topic's append
rate, as users run it). The scenarios share one stack; each is undeployed (its pods stopped)
before the next is deployed. Where one component alone scales (``jvm-scaling``: bolt 3 at 1, 2, 3,
4 units) it also prints how throughput grows with its units against proportional growth
(:func:`linearity_table`). Meanwhile it holds
:data:`LOCK` (two real-stack runs on one machine distort each other). It writes each report to
``bench/out/accuracy-<scenario>.json``, prints the tables and writes ``bench/out/accuracy.png``. A
scenario that fails stops the run; the reports saved before it re-render with ``--from-json``.

``--from-json FILE ...`` re-renders saved reports (``Report.to_json()``) without running anything.

Per budget *b* > 0 the operator predicted Θ̂(b) before applying it; Storm then ran at the measured Θ(b)
(the sinks' executed tuples/s). The *fit* is Θ of that steady state's own profile at the units that
run. Both are scored by the relative error e = (Θ̂ − Θ) / Θ; a value is *within* a bound B when
|e| ≤ B. Budget 0 adds nothing, so its "prediction" is a fit and only budgets > 0 count as
predictions; fits count at every budget. Missing values print as ``–`` and are not counted.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import itertools
import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.accuracy_steps import (
    BUDGETS,
    MODELS,
    Report,
    error_cell,
    number_cell,
    relative_error,
    run_budget_steps,
)
from stormscale.planner import FlowModel
from tests.harness.bed.scenarios import SCENARIOS
from tests.harness.bed.stack import Stack
from tests.harness.process import new_run_dir

OUT = Path(__file__).parent / "out"
LOCK = Path("/tmp/stormscale-heavy.lock")
NAMESPACE = "accuracy"
DEFAULT_SCENARIOS = (
    "jvm-kafka-linear",
    "jvm-linear",
    "jvm-diamond",
    "jvm-scaling",
    "jvm-linear-loadaware",
    "multilang-linear",
)
#: Relative-error bounds the summary counts against.
BOUNDS = (0.10, 0.15)
FIT_MODEL = FlowModel.BACKPRESSURE
_progress = functools.partial(print, flush=True)


@dataclass(frozen=True)
class Row:
    """One budget of one scenario in the summary: measured, the operator's prediction, the fit."""

    scenario: str
    budget: int
    measured: float
    predicted: float | None
    fit: float | None


def summary_rows(reports: Iterable[Report]) -> list[Row]:
    """Per step: the operator's prediction for the strategy it ran and the backpressure fit. Budget 0
    has no prediction (the plan the operator made for it came before any steady state)."""
    return [
        Row(
            r.scenario,
            s.budget,
            s.measured,
            s.operator_predicted.get(r.strategy) if s.budget > 0 else None,
            s.fitted.get(FIT_MODEL.value),
        )
        for r in reports
        for s in r.steps
    ]


def summary_table(rows: Sequence[Row]) -> str:
    """scenario | budget | measured | operator's predicted | error | fit | error."""
    fit = f"fit ({FIT_MODEL.value})/s"
    head = f"| scenario | budget | measured/s | operator's predicted/s | error | {fit} | error |"
    lines = [head, "|" + "---|" * 7]
    for r in rows:
        predicted = f"{number_cell(r.predicted)} | {error_cell(r.predicted, r.measured)}"
        fit = f"{number_cell(r.fit)} | {error_cell(r.fit, r.measured)}"
        lines.append(f"| {r.scenario} | {r.budget} | {r.measured:.1f} | {predicted} | {fit} |")
    return "\n".join(lines)


def within(errors: Iterable[float | None], bound: float) -> tuple[int, int]:
    """(how many known errors have |e| ≤ ``bound``, how many are known)."""
    known = [e for e in errors if e is not None]
    return sum(abs(e) <= bound + 1e-12 for e in known), len(known)


def counts(rows: Sequence[Row]) -> str:
    """Two lines: predictions (budgets > 0) and fits (every budget) within each of :data:`BOUNDS`."""
    predictions = [relative_error(r.predicted, r.measured) for r in rows if r.budget > 0]
    fits = [relative_error(r.fit, r.measured) for r in rows]
    lines = []
    for errors, what in ((predictions, "predictions"), (fits, "fits")):
        parts = [f"within {b * 100:g} %: {k} of {n}" for b in BOUNDS for k, n in [within(errors, b)]]
        lines.append("; ".join([f"{parts[0]} {what}", *parts[1:]]))
    return "\n".join(lines)


def component_counts(reports: Iterable[Report]) -> str:
    """Two lines, per bolt and step under :data:`FIT_MODEL`: the operator's plan's rate for each bolt
    (budgets > 0) and the fit, against each bolt's measured executed rate, within each of :data:`BOUNDS`."""
    predictions: list[float | None] = []
    fits: list[float | None] = []
    for s in (s for r in reports for s in r.steps):
        predicted = s.component_predicted.get(FIT_MODEL.value, {})
        fit = s.component_fitted.get(FIT_MODEL.value, {})
        for c, rate in s.component_measured.items():
            if s.budget > 0:
                predictions.append(relative_error(predicted.get(c), rate))
            fits.append(relative_error(fit.get(c), rate))
    lines = []
    for errors, what in ((predictions, "bolt predictions"), (fits, "bolt fits")):
        parts = [f"within {b * 100:g} %: {k} of {n}" for b in BOUNDS for k, n in [within(errors, b)]]
        lines.append("; ".join([f"{parts[0]} {what}", *parts[1:]]))
    return "\n".join(lines)


def scaled_component(report: Report) -> str | None:
    """The one component whose units change from step to step (``None`` if none or several do)."""
    varying = {
        c
        for a, b in itertools.pairwise(report.steps)
        for c in a.storm_executors.keys() | b.storm_executors.keys()
        if a.storm_executors.get(c) != b.storm_executors.get(c)
    }
    return next(iter(varying)) if len(varying) == 1 else None


def linearity_table(report: Report, component: str) -> str:
    """How Θ grows with ``component``'s units, against proportional growth from the first step::

    efficiency(u) = (Θ(u) / Θ(u₀)) / (u / u₀)      (1 where throughput is linear in the units)
    """
    first = report.steps[0]
    u0 = first.storm_executors[component]
    lines = [f"| units of {component} | measured/s | Θ/Θ₀ | u/u₀ | efficiency |", "|" + "---|" * 5]
    for s in report.steps:
        u = s.storm_executors[component]
        growth = s.measured / first.measured
        lines.append(
            f"| {u} | {s.measured:.1f} | {growth:.2f} | {u / u0:.2f} | {growth / (u / u0) - 1:+.1%} |"
        )
    return "\n".join(lines)


def _line(ax: Any, pairs: Iterable[tuple[int, float | None]], style: str, **kwargs: Any) -> None:
    """Draw the pairs whose value is known (a missing value is not drawn; nothing known, no line)."""
    known = [(x, y) for x, y in pairs if y is not None]
    if known:
        ax.plot([x for x, _ in known], [y for _, y in known], style, **kwargs)


def plot(reports: Sequence[Report], path: Path) -> Path:
    """One panel per report (three to a row): measured, the operator's prediction (budgets > 0), the
    harness's predictions for the operator's strategy per flow model, and each model's fit, against
    the budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(3, len(reports))
    rows = -(-len(reports) // columns)
    fig, grid = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.9 * rows), squeeze=False)
    axes = [ax for row in grid for ax in row]
    for unused in axes[len(reports) :]:
        unused.set_visible(False)
    colours = {FlowModel.BACKPRESSURE: "tab:orange", FlowModel.DROP: "tab:green"}
    #: the models often agree: drop's markers point down and are hollow, so both stay visible
    markers = {FlowModel.BACKPRESSURE: ("^", "x", None), FlowModel.DROP: ("v", "+", "none")}
    for ax, report in zip(axes, reports, strict=False):
        steps, ran = report.steps, report.strategy
        _line(ax, ((s.budget, s.measured) for s in steps), "-o", color="black", label="measured")
        operator = ((s.budget, s.operator_predicted.get(ran)) for s in steps if s.budget > 0)
        _line(ax, operator, "--s", color="tab:blue", label=f"operator's prediction ({ran})")
        for m in MODELS:
            predicted, fitted, face = markers[m]
            harness = ((s.budget, s.predicted.get(m.value, {}).get(ran)) for s in steps)
            label = f"harness's prediction, {m.value}"
            _line(ax, harness, f":{predicted}", color=colours[m], mfc=face, ms=7, label=label)
            fit = ((s.budget, s.fitted.get(m.value)) for s in steps)
            _line(ax, fit, fitted, color=colours[m], ms=10, label=f"fit, {m.value}")
        ax.set(title=report.scenario, xlabel="budget (units added)", ylabel="tuples/s")
        ax.set_xticks(sorted({s.budget for s in steps}))
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(reports: Sequence[Report]) -> Path:
    """Print every report's tables and the summary across them; write the plot and return its path."""
    for report in reports:
        print(f"\n{report.scenario} (the operator ran {report.strategy})\n\n{report.table()}")
        component = scaled_component(report)
        if component is not None and report.steps[0].measured > 0:
            table = linearity_table(report, component)
            print(f"\nOnly {component} scaled: its throughput against its units\n\n{table}")
    rows = summary_rows(reports)
    print("\nSummary: the operator's prediction for each budget and the fit, against the measured rate\n")
    print(summary_table(rows) + "\n\n" + counts(rows) + "\n" + component_counts(reports))
    path = plot(reports, OUT / "accuracy.png")
    print(f"\nplot: {path}")
    return path


def load(path: Path) -> Report:
    """A report saved by ``Report.to_json()``."""
    return Report.from_json(json.loads(path.read_text(encoding="utf-8")))


@contextlib.contextmanager
def heavy_lock(path: Path = LOCK) -> Iterator[None]:
    """Hold ``path`` exclusively (``flock``); say so while another real-stack run holds it."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _progress(f"waiting for {path}: another real-stack run holds it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_live(scenarios: Sequence[str], budgets: Sequence[int]) -> list[Report]:
    """The scenarios one after the other on one stack (each undeployed before the next, so that its
    pods' CPU is free); each report saved as it completes."""
    reports = []
    OUT.mkdir(parents=True, exist_ok=True)
    run_dir = new_run_dir("accuracy-")
    with heavy_lock(), Stack(run_dir, namespace=NAMESPACE, log=_progress) as stack:
        stack.start_operator()
        for i, key in enumerate(scenarios, 1):
            scenario = SCENARIOS[key]
            _progress(f"[accuracy] {key} ({i} of {len(scenarios)}), budgets {list(budgets)}; logs: {run_dir}")
            stack.deploy(scenario)
            try:
                report = run_budget_steps(stack, scenario, budgets)
            finally:
                stack.undeploy(scenario)
            document = json.dumps(report.to_json(), indent=2)
            (run_dir / f"accuracy-{key}.json").write_text(document, encoding="utf-8")
            saved = OUT / f"accuracy-{key}.json"
            saved.write_text(document, encoding="utf-8")
            _progress(f"[accuracy] {key}: report saved to {saved}")
            reports.append(report)
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.accuracy", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--scenarios", nargs="+", choices=sorted(SCENARIOS), help="live, in this order")
    source.add_argument("--from-json", nargs="+", type=Path, metavar="FILE", help="re-render saved reports")
    parser.add_argument("--budgets", type=int, nargs="+", help="live: ascending, from 0")
    args = parser.parse_args(argv)
    if args.from_json:
        if args.budgets:
            parser.error("--budgets applies to a live run, not to --from-json")
        render([load(p) for p in args.from_json])
        return 0
    budgets = args.budgets or list(BUDGETS)
    if budgets[0] != 0 or any(a >= b for a, b in itertools.pairwise(budgets)):
        parser.error(f"--budgets must ascend from 0, got {budgets}")
    render(run_live(args.scenarios or list(DEFAULT_SCENARIOS), budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
