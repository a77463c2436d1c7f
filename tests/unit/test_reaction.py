"""The reaction benchmark's pure parts, in milliseconds (bench/reaction.py): percentiles and the
tables, the log lines of the probe and the floor and where an apply's time went, and the dip's
figures on a hand-made series."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from bench import fleet
from bench import reaction as bench
from bench.floor_operator import replicas_for
from bench.reaction_probe import Timed

T0 = 1_800_000_000.0


def apply(who: str, index: int, scaled: float | None, **kwargs: float) -> bench.Apply:
    return bench.Apply(who, index, 1, 5, T0 + 100 * index, T0 + 100 * index + 0.1, scaled, **kwargs)


def test_percentiles_are_nearest_rank_and_stats_take_the_maximum() -> None:
    values = [0.4, 0.1, 0.3, 0.2, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert bench.percentile(values, 50) == 0.5  # x_(5) of 10
    assert bench.percentile(values, 90) == 0.9  # x_(9)
    assert bench.percentile([2.0], 90) == 2.0
    assert bench.stats(values) == (0.5, 0.9, 1.0)
    assert all(math.isnan(v) for v in bench.stats([]))


def test_durations_count_from_the_apply_s_start_and_skip_what_was_not_seen() -> None:
    made = [
        apply("operator", 0, T0 + 0.8, rebalanced=T0 + 0.9, applied=T0 + 16),
        apply("floor", 0, T0 + 0.3),
        apply("operator", 1, None),
        apply("floor", 1, T0 + 100.2),
    ]
    scaled = bench.MEASURES["(a) Deployment replicas set"]
    assert bench.durations(made, "operator", scaled) == pytest.approx([0.8])
    assert bench.durations(made, "floor", scaled) == pytest.approx([0.3, 0.2])
    table = bench.reaction_table(made)
    assert "| (a) Deployment replicas set | operator | 1/2 | 0.800 | 0.800 | 0.800 |" in table
    assert "| (a) Deployment replicas set | floor | 2/2 | 0.200 | 0.300 | 0.300 |" in table
    assert "| (c) status.appliedBudget | operator | 1/2 | 16.000 |" in table
    assert "(c) status.appliedBudget | floor" not in table  # the floor has no status
    assert "(a) operator / floor: p50 4.00×, p90 2.67×, max 2.67×" in table


def test_first_at_is_the_first_wanted_event_from_the_moment_on() -> None:
    events = [(1.0, 5), (2.0, 6), (3.0, 5), (4.0, 6)]
    assert bench.first_at(events, 2.5, lambda r: r == 6) == 4.0
    assert bench.first_at(events, 2.0, lambda r: r == 6) == 2.0
    assert bench.first_at(events, 4.5, lambda r: r == 6) is None


OP = "[x] stormscale.probe [INFO    ] [reaction-operator/t-000] probe"
LOG = [
    "[2027-01-15 08:00:00,100] kopf.objects [INFO    ] some other line",
    f"{OP} deployments.read {T0 + 0.30} {T0 + 0.32}",
    f"{OP} profiler.profile {T0 + 0.35} {T0 + 0.95}",
    f"{OP} status.save {T0 + 1.05} {T0 + 1.07}",
    f"{OP} deployments.scale {T0 + 1.08} {T0 + 1.10}",
    f"{OP} nimbus.rebalance {T0 + 1.11} {T0 + 1.12}",
    f"[x] stormscale.floor [INFO    ] [reaction-floor/t-000] floor handler started {T0 + 0.25} "
    f"scaled {T0 + 0.27} to 5",
]


def test_the_probe_s_and_the_floor_s_lines_are_read() -> None:
    calls = bench.parse_calls(LOG)
    assert [c.call for c in calls] == [
        "deployments.read",
        "profiler.profile",
        "status.save",
        "deployments.scale",
        "nimbus.rebalance",
        "floor.handler",
    ]
    assert (calls[1].namespace, calls[1].name) == ("reaction-operator", "t-000")
    assert calls[1].start == pytest.approx(T0 + 0.35)
    assert calls[-1].end == pytest.approx(T0 + 0.27)


def test_the_operator_s_and_the_floor_s_time_is_split_into_spans_that_add_up() -> None:
    calls = bench.parse_calls(LOG)
    passes = [fleet.Pass("t-000", T0 + 1.2, 0.95, "Ready False RebalanceRequested", "spec")]
    op = apply("operator", 0, T0 + 1.13)
    spans = bench.operator_spans(op, passes, [c for c in calls if c.namespace == "reaction-operator"])
    assert list(spans) == list(bench.OPERATOR_SPANS)
    assert [round(v, 3) for v in spans.values()] == [0.25, 0.1, 0.6, 0.1, 0.02, 0.03, 0.03]
    assert sum(spans.values()) == pytest.approx(1.13)
    floor = bench.floor_spans(
        apply("floor", 0, T0 + 0.3), [c for c in calls if c.namespace == "reaction-floor"]
    )
    assert [round(v, 3) for v in floor.values()] == [0.25, 0.02, 0.03]
    assert bench.operator_spans(apply("operator", 0, None), passes, calls) == {}  # not scaled
    table = bench.spans_table([spans], [floor])
    assert "| profile | 600 | 600 | – | – |" in table
    assert "| scale call | 30 | 30 | 20 | 20 |" in table
    assert "| (a), applies broken down: 1 and 1 | 1130 | 1130 | 300 | 300 |" in table


def test_a_pass_on_a_kept_profile_has_an_empty_profile_span_after_its_last_read() -> None:
    kept = [line for line in LOG if "profiler.profile" not in line]
    calls = [c for c in bench.parse_calls(kept) if c.namespace == "reaction-operator"]
    passes = [fleet.Pass("t-000", T0 + 1.2, 0.95, "Ready False RebalanceRequested", "spec")]
    spans = bench.operator_spans(apply("operator", 0, T0 + 1.13), passes, calls)
    assert [round(v, 3) for v in spans.values()] == [0.25, 0.07, 0.0, 0.73, 0.02, 0.03, 0.03]
    assert sum(spans.values()) == pytest.approx(1.13)
    table = bench.spans_table([spans], [])
    assert "planned on a kept profile (no query): 1 of 1 applies broken down" in table


def test_the_probe_times_every_call_of_a_port(caplog: pytest.LogCaptureFixture) -> None:
    class Port:
        limit = 3

        def scale(self, replicas: int) -> int:
            return replicas * 2

    port = Timed(Port(), "deployments", "[ns/t-000]")
    with caplog.at_level(logging.INFO, logger="stormscale.probe"):
        assert port.scale(3) == 6
        assert port.limit == 3
    (call,) = bench.parse_calls(caplog.messages)
    assert (call.namespace, call.call) == ("ns", "deployments.scale")
    assert call.start <= call.end


def test_the_floor_sets_one_pod_per_unit() -> None:
    assert [replicas_for(b, 4) for b in (-5, 0, 1, 2)] == [0, 4, 5, 6]


# --- the dip -------------------------------------------------------------------------------------------

#: 10/s for 60 s, then nothing for 10 s, 5/s for 10 s, then 20/s; applied at 60, rebalanced at 62.
RATES = [10.0] * 12 + [0.0, 0.0, 5.0, 5.0] + [20.0] * 24


def readings(rates: list[float]) -> list[tuple[float, float]]:
    out, count = [(T0, 0.0)], 0.0
    for i, rate in enumerate(rates):
        count += 5 * rate
        out.append((T0 + 5 * (i + 1), count))
    return out


def test_bins_are_the_rate_between_two_readings_and_lost_is_their_integral() -> None:
    series = bench.bins(readings(RATES))
    assert len(series) == len(RATES)
    assert [b.rate for b in series] == pytest.approx(RATES)
    assert bench.mean_rate(series, T0, T0 + 60) == pytest.approx(10.0)
    assert bench.mean_rate(series, T0 + 57.5, T0 + 62.5) == pytest.approx(5.0)  # half a 10, half a 0
    # [60, 80]: 10 s at 0, 10 s at 5 → 10·10 + 10·5 lost against 10/s
    assert bench.lost(series, 10.0, T0 + 60, T0 + 80) == pytest.approx(150.0)
    # the next 10 s at 20/s count against the loss unless clipped
    assert bench.lost(series, 10.0, T0 + 60, T0 + 90) == pytest.approx(50.0)
    assert bench.lost(series, 10.0, T0 + 60, T0 + 90, clip=True) == pytest.approx(150.0)
    assert bench.back_at(series, T0 + 60, 10.0) == pytest.approx(T0 + 85)
    assert bench.settled_at(series, T0 + 60, 20.0) == pytest.approx(T0 + 80)
    assert bench.settled_at(series, T0 + 60, 50.0) is None
    assert math.isnan(bench.mean_rate([], T0, T0 + 1))


def test_the_dip_s_figures_table_json_and_plot(tmp_path: Path) -> None:
    dip = bench.Dip(readings(RATES), T0 + 60, rebalanced_at=T0 + 62, verified_at=T0 + 80, before_s=60)
    f = dip.figures()
    assert f["steady_before"] == pytest.approx(10.0)
    assert f["min_after"] == 0.0
    # [32, 92] around the rebalance at 62: 10/s until 60 (0), 0 for 10 s, 5 for 10 s, 20/s from 80 to 92
    assert f["lost_minute"] == pytest.approx(100 + 50 - 12 * 10)
    assert f["lost_dip"] == pytest.approx(8 * 10 + 10 * 5)  # from 62 until back at 10/s (85)
    assert f["dip_s"] == pytest.approx(23.0)
    assert f["steady_after"] == pytest.approx(20.0)
    assert (f["rebalance_s"], f["verified_s"], f["settled_s"]) == pytest.approx((2.0, 20.0, 20.0))
    table = dip.table()
    assert "| steady rate before (the 60 s before the apply) | 10.0 tuples/s |" in table
    assert "| the dip's length (rebalance → old rate back) | 23.0 s |" in table
    assert dip.to_json()["figures"]["lost_dip"] == pytest.approx(130.0)
    assert bench.plot_dip(dip, tmp_path).exists()


def test_the_rebalance_and_the_verification_are_read_from_the_pass_lines() -> None:
    passes = [
        fleet.Pass("e", T0 + 1, 0.5, "Ready False WaitingForSlots", "spec"),
        fleet.Pass("e", T0 + 9, 0.5, "Ready False RebalanceRequested", "timer"),
        fleet.Pass("e", T0 + 30, 0.1, "Ready True Applied", "spec"),
    ]
    assert bench.rebalance_pass(passes, T0) == T0 + 9
    assert bench.verified_pass(passes, T0 + 9) == T0 + 30
    assert bench.rebalance_pass(passes, T0 + 10) is None


def test_the_reaction_plot_renders(tmp_path: Path) -> None:
    made = [apply("operator", 0, T0 + 0.8, rebalanced=T0 + 0.9), apply("floor", 0, T0 + 0.3)]
    spans: dict[str, list[dict[str, float]]] = {
        "operator": [dict.fromkeys(bench.OPERATOR_SPANS, 0.1)],
        "floor": [{}],
    }
    assert bench.plot_reaction(made, spans, tmp_path).exists()
