"""Shukla & Simmhan, §8.5 of the paper: the model-based prediction of a given mapping.

Given where every thread runs, the per-task models 𝒫_i predict the rate the DAG sustains and each
slot's CPU and memory. n_{i,s} is the number of task i's threads on slot s; ℐ_i, 𝒞_i, ℳ_i are
interpolated at it (ℐ_i(0) = 0). Tasks without a model (source, sink) are not limits.

Two routings (how a task's input ω_i is split over its slots):

* ``MODEL`` (the paper): slots take what they can, the best first, so the task's capacity is the sum
  of its slots' peaks and a partial slot only gets the rest (its "47 %" CPU example).
* ``SHUFFLE`` (beyond the paper): Storm's shuffle grouping gives every executor ω_i/τ_i, so a
  slot receives ``n_{i,s}·ω_i/τ_i`` whatever its capacity; the paper names this as its main error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from stormscale.planner.placement.model import Placement, Pod, Slot
from stormscale.planner.sizing.performance import PerformanceModel, TaskGraph


class Routing(StrEnum):
    """How a task's input is split over the slots that run its threads."""

    MODEL = "model"
    SHUFFLE = "shuffle"


def threads_per_slot(placement: Placement, task: str) -> list[int]:
    """n_{i,s} for every slot, VM-major (0 where the task has no thread)."""
    return [slot.executors.get(task, 0) for pod in placement.pods for slot in pod.slots]


def task_capacity(placement: Placement, task: str, model: PerformanceModel) -> float:
    """cap_i = Σ_s ℐ_i(n_{i,s}): the rate task i sustains in this mapping (the paper's predictor)."""
    return sum(model.rate(n) for n in threads_per_slot(placement, task) if n)


def shuffle_limit(placement: Placement, task: str, model: PerformanceModel, gain: float) -> float:
    """Ω_max,i under shuffle grouping: every slot s must keep up with its equal share::

    n_{i,s} · ω_i/τ_i ≤ ℐ_i(n_{i,s})   ⇒   Ω_max,i = min_s ℐ_i(n_{i,s}) · τ_i / (n_{i,s} · g_i)
    """
    counts = [n for n in threads_per_slot(placement, task) if n]
    if not counts or gain <= 0:
        return 0.0 if gain > 0 else float("inf")
    total = sum(counts)
    return min(model.rate(n) * total / (n * gain) for n in counts)


def slot_arrivals(
    placement: Placement, task: str, model: PerformanceModel, omega: float, routing: Routing
) -> list[float]:
    """The rate each slot (VM-major) receives of task i's input ω_i.

    ``SHUFFLE``: ``n_{i,s}·ω_i/τ_i``. ``MODEL``: slots take up to their peak ℐ_i(n_{i,s}) until ω_i is
    spent, the highest peak first, then slots the task has to itself (SAM's full bundles: our tie
    rule, so that a partial bundle gets the rest as in the paper's "47 %" example), then placement
    order. Beyond cap_i the rest is not sustained and is not assigned.
    """
    counts = threads_per_slot(placement, task)
    total = sum(counts)
    if routing is Routing.SHUFFLE:
        return [n * omega / total if total else 0.0 for n in counts]
    shared = [len(slot.executors) > 1 for pod in placement.pods for slot in pod.slots]
    out = [0.0] * len(counts)
    left = omega
    for s in sorted(
        (s for s, n in enumerate(counts) if n), key=lambda s: (-model.rate(counts[s]), shared[s], s)
    ):
        take = min(left, model.rate(counts[s]))
        out[s] = take
        left -= take
    return out


def slot_usage(model: PerformanceModel, threads: int, arrival: float) -> tuple[float, float]:
    """Predicted (CPU, memory) of n threads of a task receiving r on one slot::

    r ≥ ℐ_i(n):  𝒞_i(n), ℳ_i(n)                          (at its peak: the measured use)
    r < ℐ_i(n):  𝒞_i(n) · r/ℐ_i(n), ℳ_i(n) · r/ℐ_i(n)     ("proportionally scales down")

    n = 1 is the paper's rule; n > 1 is our extension of it.
    """
    if threads <= 0:
        return 0.0, 0.0
    peak = model.rate(threads)
    share = min(arrival, peak) / peak
    return model.cpu(threads) * share, model.memory(threads) * share


@dataclass(frozen=True)
class Prediction:
    """What the models predict for a mapping.

    ``rate`` is Ω_pred = min_i limit_i; ``limits`` are each task's Ω limit (cap_i/g_i, or Ω_max,i under
    shuffle); ``bottleneck`` the task that sets it; ``usage`` the same placement with every slot's
    ``cpu``/``memory`` replaced by its predicted use at ``usage_rate``.
    """

    rate: float
    routing: Routing
    capacities: dict[str, float]
    limits: dict[str, float]
    bottleneck: str | None
    usage: Placement
    usage_rate: float

    def pod_usage(self) -> list[tuple[float, float]]:
        """Per VM: the sum of its slots' predicted CPU and memory (0–p_j; divide by p_j for a mean)."""
        return [(sum(s.cpu for s in p.slots), sum(s.memory for s in p.slots)) for p in self.usage.pods]


def predict(
    placement: Placement,
    models: Mapping[str, PerformanceModel],
    graph: TaskGraph,
    *,
    routing: Routing = Routing.MODEL,
    omega: float | None = None,
    fixed: Mapping[str, tuple[float, float]] | None = None,
) -> Prediction:
    """Predict the rate and the slots' use of ``placement`` from the models (§8.5)::

    g_i = GetRate(𝒢, t_i, 1)                    (input per unit of Ω)
    Ω_pred = min_i cap_i / g_i                  (MODEL)      or   min_i Ω_max,i   (SHUFFLE)

    Usage is predicted at ``omega`` (default Ω_pred, the rate the paper measures at); ``fixed`` adds
    the source's and sink's fixed (CPU, memory) per executor.
    """
    gains = graph.input_rates(1.0)
    modelled = [t for t in graph.order if t in models and gains[t] > 0]
    capacities = {t: task_capacity(placement, t, models[t]) for t in modelled}
    if routing is Routing.MODEL:
        limits = {t: capacities[t] / gains[t] for t in modelled}
    else:
        limits = {t: shuffle_limit(placement, t, models[t], gains[t]) for t in modelled}
    bottleneck = min(modelled, key=lambda t: limits[t]) if modelled else None
    rate = limits[bottleneck] if bottleneck is not None else float("inf")
    at = rate if omega is None else omega
    usage = predicted_usage(placement, models, graph.input_rates(at), routing=routing, fixed=fixed)
    return Prediction(rate, routing, capacities, limits, bottleneck, usage, at)


def predicted_usage(
    placement: Placement,
    models: Mapping[str, PerformanceModel],
    rates: Mapping[str, float],
    *,
    routing: Routing = Routing.MODEL,
    fixed: Mapping[str, tuple[float, float]] | None = None,
) -> Placement:
    """``placement`` with each slot's cpu/memory = Σ_i its predicted use at input rates ω_i (``rates``)."""
    flat = [slot for pod in placement.pods for slot in pod.slots]
    cpu = [0.0] * len(flat)
    mem = [0.0] * len(flat)
    for task, model in models.items():
        arrivals = slot_arrivals(placement, task, model, rates.get(task, 0.0), routing)
        for s, slot in enumerate(flat):
            c, m = slot_usage(model, slot.executors.get(task, 0), arrivals[s])
            cpu[s] += c
            mem[s] += m
    for task, (c, m) in (fixed or {}).items():
        for s, slot in enumerate(flat):
            cpu[s] += c * slot.executors.get(task, 0)
            mem[s] += m * slot.executors.get(task, 0)
    pods: list[Pod] = []
    k = 0
    for pod in placement.pods:
        slots = []
        for slot in pod.slots:
            slots.append(Slot(slot.executors, cpu[k], mem[k]))
            k += 1
        pods.append(Pod(tuple(slots)))
    return Placement(
        placement.strategy, tuple(pods), (*placement.notes, f"predicted use ({routing} routing)")
    )
