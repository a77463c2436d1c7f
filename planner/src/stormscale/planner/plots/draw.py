"""Drawing with matplotlib: the only module of the planner that imports it, and only when it draws.

matplotlib is an optional dependency (``pip install 'stormscale-planner[plot]'``); without it every
function here raises a one-line :class:`PlotInputError`. Figures are built on ``Figure`` with the Agg
canvas, never through ``pyplot``: no global state, no display needed. The file's format (PNG or SVG)
is the extension's.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from stormscale.planner.flow import FlowModel
from stormscale.planner.model import Kind
from stormscale.planner.planning import Strategy
from stormscale.planner.plots.curves import Curve
from stormscale.planner.plots.graph import SATURATION_TOLERANCE, EdgeView, GraphView, NodeView
from stormscale.planner.plots.inputs import MeasuredPoint, PlotInputError, output_format

MISSING = "matplotlib is not installed: pip install 'stormscale-planner[plot]'"
#: Raster resolution of PNG files (SVG is vector).
DPI = 150

#: Per strategy: colour (Okabe–Ito, safe for colour-blind readers), marker, line style, marker size
#: and whether the marker is hollow. Markers differ in shape and size so that strategies that agree
#: at a budget show as nested markers rather than hiding each other.
STYLES: dict[Strategy, tuple[str, str, str, float, bool]] = {
    Strategy.OPTIMAL: ("#333333", "s", "-", 12.0, True),
    Strategy.STELA: ("#E69F00", "v", "--", 9.0, True),
    Strategy.PREDICTIVE: ("#0072B2", "^", "-.", 9.0, True),
    Strategy.COMBINED: ("#009E73", "o", "-", 4.5, False),
    Strategy.BEST: ("#CC79A7", "D", ":", 3.5, False),
}
LABELS = {
    Strategy.OPTIMAL: "optimal (exact program: the ceiling)",
    Strategy.STELA: "stela (ETP, one unit at a time)",
    Strategy.PREDICTIVE: "predictive (batch allocation)",
    Strategy.COMBINED: "combined (the better of stela and predictive)",
    Strategy.BEST: "best (the highest of every strategy's predictions)",
}
MEASURED_COLOUR = "#D55E00"
SPOUT_FILL, BOLT_FILL, BOTTLENECK_FILL = "#DCEAF7", "#FFFFFF", "#F9D3CC"
BOTTLENECK_EDGE, PLAIN_EDGE, ARROW = "#C0392B", "#666666", "#555555"


def require_matplotlib() -> None:
    """Raise :class:`PlotInputError` (one line) when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401, PLC0415 - optional dependency, imported only to draw
    except ImportError:
        raise PlotInputError(MISSING) from None


def _figure(width: float, height: float) -> Any:
    """A figure on the Agg canvas (no pyplot, no display)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
        from matplotlib.figure import Figure  # noqa: PLC0415
    except ImportError:
        raise PlotInputError(MISSING) from None
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Any, path: str, flag: str) -> None:
    """Write ``figure`` in the format of ``path``'s extension; I/O errors are one line."""
    fmt = output_format(path, flag)
    metadata = {"Date": None} if fmt == "svg" else {}  # reproducible SVG: no timestamp
    try:
        figure.savefig(path, format=fmt, dpi=DPI, metadata=metadata)
    except OSError as err:
        raise PlotInputError(f"{flag}: {path}: cannot write ({err.strerror or err})") from None


def format_rate(x: float) -> str:
    """Tuples/s as people read them: ``4,740``, ``24.8``, ``∞``."""
    if x == float("inf"):
        return "∞"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}"


# --- predicted throughput against budget -------------------------------------------------------


def _curve_label(curve: Curve, chosen: Strategy | None) -> str:
    label = LABELS[curve.strategy]
    if curve.missing is not None:  # "optimal: 8192 combinations … exceed 4096; fix …" → its first clause
        reason = curve.missing.removeprefix(f"{curve.strategy.value}: ").split(";")[0]
        return f"{curve.strategy.value}: not drawn, it cannot plan here ({textwrap.shorten(reason, 80)})"
    if curve.unproven:
        label += f"; time limit, not proven at budget {', '.join(map(str, curve.unproven))}"
    if curve.strategy is chosen:
        label += "  ← this plan"
    return label


def draw_throughput(
    curves: Sequence[Curve],
    measured: Sequence[MeasuredPoint],
    *,
    topology: str,
    model: FlowModel,
    path: str,
    chosen: Strategy | None = None,
    flag: str = "--plot",
) -> None:
    """Predicted Θ against budget, one line per strategy, measured points on top; write ``path``."""
    from matplotlib.lines import Line2D  # noqa: PLC0415 - the caller checked require_matplotlib()
    from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: PLC0415

    figure = _figure(7.5, 5.6)
    ax = figure.add_subplot()
    handles: list[Any] = []
    for curve in sorted(curves, key=lambda c: c.strategy is not Strategy.OPTIMAL):  # the ceiling first
        colour, marker, style, size, hollow = STYLES[curve.strategy]
        (line,) = ax.plot(
            curve.budgets,
            curve.throughput,
            color=colour,
            linestyle=style if curve.budgets else "none",
            linewidth=2.6 if curve.strategy is Strategy.OPTIMAL else 1.6,
            marker=marker,
            markersize=size,
            markerfacecolor="none" if hollow else colour,
            markeredgewidth=1.6,
            alpha=0.75 if curve.strategy is Strategy.OPTIMAL else 1.0,
            label=_curve_label(curve, chosen),
        )
        handles.append(line)
    if measured:
        points = ax.scatter(
            [p.budget for p in measured],
            [p.throughput for p in measured],
            marker="*",
            s=260,
            color=MEASURED_COLOUR,
            edgecolors="black",
            linewidths=0.6,
            zorder=5,
            label="measured at the sinks",
        )
        handles.append(points)
        for p in measured:
            ax.annotate(
                format_rate(p.throughput),
                (p.budget, p.throughput),
                xytext=(9, -4),
                textcoords="offset points",
                fontsize=9,
                color=MEASURED_COLOUR,
                fontweight="bold",
            )
    budgets = [b for c in curves for b in c.budgets] + [p.budget for p in measured]
    if budgets:
        ax.set_xlim(min(budgets) - 0.4, max(budgets) + 0.6)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:,.0f}" if y == round(y) else f"{y:,.1f}"))
    ax.grid(True, color="#DDDDDD", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_xlabel(
        "budget (extra units; negative: units removed)"
        if min(budgets, default=0) < 0
        else "extra units (budget)"
    )
    ax.set_ylabel("throughput Θ at the sinks (tuples/s)")
    ax.set_title(
        f"{topology or 'topology'}: predicted throughput by budget\n"
        f"flow model: {model.value} · every strategy plans every budget from the same profile",
        fontsize=11,
    )
    if not handles:
        handles = [Line2D([], [], linestyle="none")]
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=1,
        fontsize=9,
        frameon=False,
        title="strategy (markers overlap where strategies predict the same Θ)",
        title_fontsize=9,
    )
    _save(figure, path, flag)


# --- the topology ------------------------------------------------------------------------------


def percent(u: float | None) -> str:
    """A utilization as ``98 %`` (``∞`` for demand on no capacity)."""
    if u is None:
        return ""
    return "∞" if u == float("inf") else f"{u * 100:.0f} %"


def node_label(node: NodeView) -> str:
    """The lines of one box: id and kind, units, utilization (or a spout's rate), bottleneck."""
    units = str(node.units_after)
    if node.units_before != node.units_after:
        units = f"{node.units_before} → {node.units_after}"
    lines = [f"{node.id} · {node.kind.value}", f"units {units}"]
    if node.kind is Kind.SPOUT:
        rate = f"emits {format_rate(node.emitted)}/s"
        if node.emitted < node.offered * (1 - 1e-9):
            rate += f" of {format_rate(node.offered)}"
        lines.append(rate)
    else:
        util = percent(node.utilization_after)
        if percent(node.utilization_before) != util:
            util = f"{percent(node.utilization_before)} → {util}"
        lines.append(f"utilization {util}")
    if node.bottleneck:
        saturated = node.utilization_after is not None and node.utilization_after >= 1 - SATURATION_TOLERANCE
        lines.append("BOTTLENECK" if saturated else "BOTTLENECK (most utilized)")
    return "\n".join(lines)


def _fill(node: NodeView) -> tuple[str, str, float]:
    if node.bottleneck:
        return BOTTLENECK_FILL, BOTTLENECK_EDGE, 2.2
    return (SPOUT_FILL if node.kind is Kind.SPOUT else BOLT_FILL), PLAIN_EDGE, 1.0


def _edge(ax: Any, edge: EdgeView, boxes: dict[str, Any]) -> None:
    """The arrow along the edge's route, clipped at both boxes, labelled with its fraction if not 1."""
    route = edge.route
    for i, (a, b) in enumerate(itertools.pairwise(route)):
        last = i == len(route) - 2
        ax.annotate(
            "",
            xy=b,
            xytext=a,
            arrowprops={
                "arrowstyle": "-|>" if last else "-",
                "color": ARROW,
                "linewidth": 1.2,
                "mutation_scale": 14,
                "patchA": boxes[edge.source] if i == 0 else None,
                "patchB": boxes[edge.target] if last else None,
                "shrinkA": 1 if i == 0 else 0,
                "shrinkB": 1 if last else 0,
            },
            zorder=3,
        )
    if abs(edge.fraction - 1) > 1e-9:
        (x0, y0), (x1, y1) = route[0], route[1]
        t = 0.5
        ax.text(
            x0 + t * (x1 - x0),
            y0 + t * (y1 - y0),
            f"{edge.fraction * 100:.3g} %",
            ha="center",
            va="center",
            fontsize=8,
            color="#333333",
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"},
            zorder=4,
        )


def plan_moves(allocation: Mapping[str, int]) -> str:
    """An allocation in words: ``+1 unit on 2, +2 on 3`` (``no change`` when empty)."""
    moves = [f"{n:+d} on {cid}" for cid, n in allocation.items()]
    if not moves:
        return "no change"
    first = allocation[next(iter(allocation))]
    moves[0] = moves[0].replace(" on ", " unit on " if abs(first) == 1 else " units on ", 1)
    return ", ".join(moves)


def graph_title(view: GraphView) -> str:
    """Name, flow model and Θ (before → after the plan, with its allocation)."""
    title = f"{view.topology or 'topology'} · flow model {view.model.value}"
    theta = f"Θ {format_rate(view.throughput_before)} tuples/s"
    if view.allocation is not None:
        theta = (
            f"plan: {plan_moves(view.allocation)} · Θ {format_rate(view.throughput_before)} → "
            f"{format_rate(view.throughput_after)} tuples/s (units, utilization: before → after)"
        )
    return f"{title}\n{theta}"


def draw_graph(view: GraphView, path: str, flag: str = "--out") -> None:
    """The topology left to right: boxes with units and utilization, the bottlenecks in red."""
    from matplotlib.patches import Patch  # noqa: PLC0415 - the caller checked require_matplotlib()

    depth = max(1, len(view.layers))
    height = max(len(layer) for layer in view.layers) if view.layers else 1
    bends = [y for e in view.edges for _, y in e.route[1:-1]]
    ys = [n.position[1] for n in view.nodes] + bends
    inches = max(6.5, 2.5 * depth)
    figure = _figure(inches, max(3.0, 1.25 * height + 1.6))
    ax = figure.add_subplot()
    ax.set_xlim(-0.5, depth - 0.5)
    ax.set_ylim(min(ys, default=0) - 0.55, max(ys, default=0) + 0.55)
    ax.set_axis_off()
    boxes: dict[str, Any] = {}
    for node in view.nodes:
        fill, edge, width = _fill(node)
        text = ax.text(
            *node.position,
            node_label(node),
            ha="center",
            va="center",
            fontsize=9,
            linespacing=1.35,
            color=BOTTLENECK_EDGE if node.bottleneck else "black",
            bbox={"boxstyle": "round,pad=0.45", "facecolor": fill, "edgecolor": edge, "linewidth": width},
            zorder=2,
        )
        boxes[node.id] = text.get_bbox_patch()
    for e in view.edges:
        _edge(ax, e, boxes)
    ax.set_title(graph_title(view), fontsize=11)
    legend = [
        Patch(facecolor=SPOUT_FILL, edgecolor=PLAIN_EDGE, label="spout (a source)"),
        Patch(facecolor=BOLT_FILL, edgecolor=PLAIN_EDGE, label="bolt"),
        Patch(
            facecolor=BOTTLENECK_FILL,
            edgecolor=BOTTLENECK_EDGE,
            linewidth=2,
            label="bottleneck: utilization ≥ 100 %, or the highest",
        ),
    ]
    demand = "what arrives" if view.model is FlowModel.DROP else "what arrives with every source unthrottled"
    note = f"utilization = demand ({demand}) / capacity of the units, under the {view.model.value} model"
    if any(abs(e.fraction - 1) > 1e-9 for e in view.edges):
        note += "; % on an arrow: the share of the source's output it carries"
    figure.legend(
        handles=legend,
        loc="outside lower center",
        ncols=3,
        fontsize=9,
        frameon=False,
        title=textwrap.fill(note, width=int(12 * inches)),
        title_fontsize=8,
    )
    _save(figure, path, flag)
