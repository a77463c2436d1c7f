"""The chart's Grafana dashboard, read as Grafana reads it: every panel's queries and every template
variable's query, with the variables expanded the way Grafana sends them to Prometheus.

Grafana expands ``$var`` (and ``${var}``) in a panel's ``expr`` to the variable's selection; with
"All" selected and ``allValue: ".+"`` that is ``.+``. ``$__rate_interval`` is at least four scrape
intervals; :data:`RATE_INTERVAL` stands for it. A variable of the form ``label_values(metric, label)``
lists the values of ``label`` among ``metric``'s series: it has values exactly when
``count by (label) (metric)`` has data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).parents[3] / "charts" / "stormscale" / "dashboards" / "stormscale.json"
RATE_INTERVAL = "1m"
VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
LABEL_VALUES = re.compile(r"^label_values\((?P<metric>.+),\s*(?P<label>\w+)\)$")


@dataclass(frozen=True)
class Query:
    """One query the dashboard sends: where it is (panel title and refId, or the variable) and its PromQL."""

    where: str
    expr: str


def load(path: Path = DASHBOARD) -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(path.read_text())
    return dashboard


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """The panels that show data (rows are only headings), nested rows' panels included."""
    found: list[dict[str, Any]] = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            found.extend(panels({"panels": panel.get("panels", [])}))
        else:
            found.append(panel)
    return found


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def expand(expr: str, all_value: str = ".+") -> str:
    """``expr`` as Grafana sends it with every variable on "All"."""
    expr = expr.replace("$__rate_interval", RATE_INTERVAL)
    return VARIABLE.sub(all_value, expr)


def referenced(expr: str) -> set[str]:
    """The variables an expression uses (Grafana's own ``$__…`` excluded)."""
    return {a or b for a, b in VARIABLE.findall(expr)} - {"__rate_interval"}


def panel_queries(dashboard: dict[str, Any]) -> list[Query]:
    return [
        Query(f"{panel['title']} ({target['refId']})", target["expr"])
        for panel in panels(dashboard)
        for target in panel["targets"]
    ]


def variable_queries(dashboard: dict[str, Any]) -> list[Query]:
    """Each ``label_values`` variable as the PromQL that has data exactly when it has values."""
    queries = []
    for name, variable in variables(dashboard).items():
        if variable["type"] != "query":
            continue
        match = LABEL_VALUES.match(variable["query"]["query"])
        if match is None:
            raise ValueError(f"variable {name}: not label_values(metric, label): {variable['query']}")
        queries.append(Query(f"variable {name}", f"count by ({match['label']}) ({match['metric']})"))
    return queries
