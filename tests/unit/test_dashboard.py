"""The chart's Grafana dashboard, read without Grafana: every panel queries Prometheus through the
dashboard's data source variable, uses only variables it defines, and names only metrics that
Stormscale's parts (the operator, the exporter, the Kafka exporter it stands in for) serve. The
end-to-end test runs every query against the test bed's Prometheus (test_operator_e2e.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from stormscale.storm.exporter import names as exporter_names
from tests.harness.kafka.exporter import HELP as KAFKA_HELP
from tests.harness.prometheus import dashboard as dash

DASHBOARD = dash.load()
METRIC = re.compile(r"\b((?:storm|kafka|stormscale)_[a-z_]+)\b")


def test_expand_puts_all_for_every_variable_and_a_rate_interval() -> None:
    expr = 'rate(m{a=~"$namespace", b=~"${topology}"}[$__rate_interval])'
    assert dash.expand(expr) == 'rate(m{a=~".+", b=~".+"}[1m])'
    assert dash.referenced(expr) == {"namespace", "topology"}


def test_a_variable_that_is_not_label_values_is_refused() -> None:
    bad = {"templating": {"list": [{"name": "x", "type": "query", "query": {"query": "up"}}]}}
    with pytest.raises(ValueError, match="variable x"):
        dash.variable_queries(bad)


def test_every_panel_has_queries_on_the_dashboard_s_data_source() -> None:
    shown = dash.panels(DASHBOARD)
    assert len(shown) >= 10
    for panel in shown:
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_panels_fit_the_grid_and_have_unique_ids() -> None:
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] >= 0, panel["title"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]


def test_every_variable_used_is_defined_and_expands_away() -> None:
    defined = set(dash.variables(DASHBOARD))
    queries = [*dash.panel_queries(DASHBOARD), *dash.variable_queries(DASHBOARD)]
    assert queries
    assert defined
    for query in queries:
        assert dash.referenced(query.expr) <= defined, query.where
        assert "$" not in dash.expand(query.expr), query.where
    for name, variable in dash.variables(DASHBOARD).items():
        assert dash.referenced(variable.get("definition", "")) <= defined, name


def metric_names(dashboard: dict[str, Any]) -> set[str]:
    exprs = [q.expr for q in [*dash.panel_queries(dashboard), *dash.variable_queries(dashboard)]]
    names = {m for e in exprs for m in METRIC.findall(e)}
    return {re.sub(r"_(bucket|sum|count)$", "", n) if "_seconds_" in n else n for n in names}


def test_the_dashboard_shows_throughput_units_conditions_and_lag() -> None:
    """Observed against predicted throughput, units per component, conditions, and lag."""
    names = metric_names(DASHBOARD)
    assert {
        "stormscale_topology_observed_throughput",
        "stormscale_topology_predicted_throughput",
        "stormscale_topology_units",
        "stormscale_topology_ready",
        "stormscale_topology_degraded",
        "kafka_consumergroup_lag",
    } <= names


def test_storm_and_kafka_names_are_the_ones_served() -> None:
    served = {v for k, v in vars(exporter_names).items() if k.isupper() and isinstance(v, str)} | set(
        KAFKA_HELP
    )
    shown = {name for name in metric_names(DASHBOARD) if name.startswith(("storm_", "kafka_"))}
    assert {name.split("_")[0] for name in shown} == {"storm", "kafka"}, shown
    assert shown <= served, shown - served


def test_operator_names_are_the_documented_ones() -> None:
    docs = (dash.DASHBOARD.parents[3] / "docs" / "operator" / "reference.md").read_text()
    documented = set(re.findall(r"`(stormscale_[a-z_]+)`", docs))
    shown = {name for name in metric_names(DASHBOARD) if name.startswith("stormscale_")}
    assert shown
    assert shown <= documented, shown - documented
