"""A spout's demand from outside Storm: a Kafka topic's append rate, or a PromQL query.

Under backpressure a spout emits what the bottleneck lets through, not what the world offers, so its
emitted rate says "nothing is congested" by construction. The profile's offered rate for a spout
therefore comes, in this order, from (docs/operator/reference.md, "Demand"):

1. ``components[].demandQuery``: any PromQL expression whose value is the tuples/s offered to the
   spout (e.g. ``sum(rate(orders_received_total[1m]))``);
2. ``components[].kafka`` (topic, consumer group): the topic's append rate;
3. the spout's own ``offered_total`` counter (the test bed's spouts export one);
4. its emitted rate, flagged (the operator does not size on it when the spout is throttled).

Both external signals become rows of the sample contract's ``offered_total`` counter for the spout
(docs/formats/samples.md), so that both aggregation engines take them as they take a spout's own
counter:

* **Kafka**: ``Σ_p kafka_topic_partition_current_offset{topic}``, the partitions' log end offsets,
  counts every record ever appended: a counter of offered records. storm-kafka-client's translators
  emit one tuple per record, so records/s are tuples/s.
* **A query** gives a rate r(t) at each step t_k; the rows carry its running integral
  C(t_k) = Σ_{j≤k} r(t_j)·Δ (Δ the step), whose increment over (t_{k−1}, t_k] is r(t_k)·Δ: the
  aggregation's per-interval rate gives r(t_k) back.

The cross-check for Kafka: the consumer group's lag L(t) = end − committed grows at the append rate
less what the spout consumes, so ``append ≈ emitted + dL/dt``. The lag's growth is the least-squares
slope of ``Σ_p kafka_consumergroup_lag{consumergroup, topic}`` over the window.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stormscale.samples import Sample
from stormscale.samples.names import OFFERED

#: The widely used Kafka exporter's names (danielqsj/kafka_exporter; the test bed serves the same).
TOPIC_OFFSET = "kafka_topic_partition_current_offset"
GROUP_LAG = "kafka_consumergroup_lag"


def _label(value: str) -> str:
    """A PromQL string literal's content."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass(frozen=True)
class KafkaDemand:
    """A spout fed by ``topic``, consuming as ``group``."""

    topic: str
    group: str

    #: How the profile's confidence names this source.
    source = "kafka"

    def offered_query(self) -> str:
        """Records ever appended to the topic (a counter)."""
        return f'sum({TOPIC_OFFSET}{{topic="{_label(self.topic)}"}})'

    def lag_query(self) -> str:
        """Records appended but not yet committed by the group."""
        return f'sum({GROUP_LAG}{{consumergroup="{_label(self.group)}", topic="{_label(self.topic)}"}})'

    def describe(self) -> str:
        return f"Kafka topic {self.topic!r} (group {self.group!r})"


@dataclass(frozen=True)
class QueryDemand:
    """A spout whose offered tuples/s is the value of ``promql``."""

    promql: str

    source = "demand-query"

    def describe(self) -> str:
        return f"demandQuery {self.promql!r}"


Demand = KafkaDemand | QueryDemand


@dataclass(frozen=True)
class DemandRows:
    """What one demand source gave over a window: ``offered_total`` rows for the spout and, for Kafka,
    the consumer group's lag growth in records/s (None: no lag series)."""

    rows: list[Sample]
    lag_growth: float | None = None


def summed_points(result: Iterable[Mapping[str, Any]]) -> list[tuple[int, float]]:
    """A matrix result as (Unix ms, value), its series summed per timestamp, NaN points left out."""
    summed: dict[int, float] = {}
    for series in result:
        for ts, value in series["values"]:
            number = float(value)
            if not math.isnan(number):
                at = round(float(ts) * 1000)
                summed[at] = summed.get(at, 0.0) + number
    return sorted(summed.items())


def running_integral(rates: Sequence[tuple[int, float]], step_s: float) -> list[tuple[int, float]]:
    """C(t_k) = Σ_{j≤k} max(r(t_j), 0)·Δ: a rate as the counter whose per-step increments give it back
    (a negative rate, which a demand cannot be, counts as none)."""
    total, out = 0.0, []
    for ts, rate in rates:
        total += max(rate, 0.0) * step_s
        out.append((ts, total))
    return out


def offered_rows(topology: str, component: str, counter: Sequence[tuple[int, float]]) -> list[Sample]:
    """A counter of offered tuples as the spout's ``offered_total`` rows (per component, no executor)."""
    return [Sample(ts, topology, component, "", OFFERED, "", "", value) for ts, value in counter]


def slope_per_s(series: Sequence[tuple[int, float]]) -> float | None:
    """Least-squares slope of a series in units per second (None with fewer than two points).

    slope = Σ (t − t̄)(y − ȳ) / Σ (t − t̄)²
    """
    if len(series) < 2:
        return None
    ts = [t / 1000 for t, _ in series]
    ys = [y for _, y in series]
    t_mean, y_mean = sum(ts) / len(ts), sum(ys) / len(ys)
    spread = sum((t - t_mean) ** 2 for t in ts)
    if spread == 0:
        return None
    return sum((t - t_mean) * (y - y_mean) for t, y in zip(ts, ys, strict=True)) / spread


def with_demand(rows: Sequence[Sample], component: str, demand: DemandRows) -> list[Sample]:
    """``rows`` with the spout ``component``'s own ``offered_total`` rows replaced by ``demand``'s."""
    kept = [r for r in rows if not (r.component == component and r.metric == OFFERED)]
    return kept + demand.rows
