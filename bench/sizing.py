"""Sizing and placement benchmark: time per strategy, and each heuristic's units and pods against
the exact minimum (``sizing/exact.py``) under the stated mapping of ``sizing/adapters.py``.

Run: ``make bench-sizing`` (or ``.venv/bin/python -m bench.sizing [--quick]``). Prints tables and
writes ``bench/out/sizing.png``. Times are CPU seconds (``time.process_time``).

Ratios: ``units / exact units`` (the proven minimum with one unit per slot) and ``pods / pod lower
bound``, where the bound is ``⌈⌈S_min⌉ / K⌉`` with ``S_min`` the slots' worth of CPU the target needs
(``ExactSizing.shared_pods``): no placement, sharing slots or not, uses fewer pods, so every ratio
is ≥ 1 and says how far a strategy is from the best any placement could do.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stormscale.planner import Topology, load_profile, parse_profile
from stormscale.planner.placement.strategies import PlacementStrategy, place
from stormscale.planner.placement.units import place_units
from stormscale.planner.sizing.exact import minimum_units, offered_rate, scaled_to
from stormscale.planner.sizing.strategies import SizingStrategy, size
from tests.synthetic.profiles import random_profile

OUT = Path(__file__).parent / "out"
PROFILES = Path(__file__).parents[1] / "examples" / "profiles"
SLOTS_PER_POD = 2
HEURISTICS = ("lsa", "mba", "pdeployer", "dsm", "rsm", "sam")


def synthetic(size_: int, seed: int) -> Topology:
    rng = random.Random(seed)
    return parse_profile(random_profile(rng, size_, min_units=1, bounded_share=0.0, load=(0.6, 1.4)))


def pods_per_pod_size(name: str) -> int:
    """P-Deployer packs one slot per pod (a machine is one worker); the others use ``SLOTS_PER_POD``."""
    return 1 if name == "pdeployer" else SLOTS_PER_POD


def run_one(topology: Topology, omega: float, name: str) -> tuple[int, int]:
    """(units, pods) of one strategy; sizing strategies size, mappings place MBA's allocation."""
    k = pods_per_pod_size(name)
    if name in ("exact", "lsa", "mba"):
        z = size(topology, omega, SizingStrategy(name), k)
        assert z.pods is not None
        return z.total_units, z.pods
    result = place(topology, omega, PlacementStrategy(name), k)
    return sum(result.placement.executors().values()), result.placement.pod_count


def timed(topology: Topology, omega: float, name: str) -> float:
    start = time.process_time()
    run_one(topology, omega, name)
    return time.process_time() - start


@dataclass(frozen=True)
class Timing:
    size: int
    seconds: dict[str, float]


def timing_table(sizes: Sequence[int], skip_rsm_above: int) -> list[Timing]:
    names = ("exact", *HEURISTICS)
    print("\nTime per sizing or placement at 1.5 × today's rate (CPU seconds; mappings include MBA's sizing)")
    print(f"{'size':>6}" + "".join(f"{n:>11}" for n in names))
    rows = []
    for n in sizes:
        topology = synthetic(n, seed=n)
        omega = 1.5 * offered_rate(topology)
        seconds = {}
        for name in names:
            if name == "rsm" and n > skip_rsm_above:
                seconds[name] = float("nan")
                continue
            seconds[name] = timed(topology, omega, name)
        rows.append(Timing(n, seconds))
        print(f"{n:>6}" + "".join(f"{seconds[x]:>11.3f}" for x in names), flush=True)
    return rows


@dataclass(frozen=True)
class Ratio:
    source: str
    strategy: str
    units: float
    pods: float


def ratios_for(source: str, topology: Topology, omega: float) -> list[Ratio]:
    exact = {k: size(topology, omega, SizingStrategy.EXACT, k) for k in (1, SLOTS_PER_POD)}
    lower_bound = minimum_units(topology, omega)
    out = []
    for name in HEURISTICS:
        units, pods = run_one(topology, omega, name)
        k = pods_per_pod_size(name)
        bound = lower_bound.shared_pods(k)
        out.append(Ratio(source, name, units / exact[k].total_units, pods / bound))
    return out


def p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def ratio_tables(random_count: int) -> list[Ratio]:
    ratios: list[Ratio] = []
    for path in sorted(PROFILES.glob("*.json")):
        topology = load_profile(path)
        for factor in (0.5, 1.0, 1.5, 2.0, 3.0, 5.0):
            ratios += ratios_for("thesis", topology, factor * offered_rate(topology))
    rng = random.Random(2025)
    for i in range(random_count):
        topology = synthetic(rng.randint(4, 30), seed=20_000 + i)
        ratios += ratios_for("random", topology, rng.uniform(0.5, 3.0) * offered_rate(topology))
    print(
        "\nUnits against the exact minimum, pods against the CPU lower bound "
        f"(pods of {SLOTS_PER_POD} slots; pdeployer: 1)"
    )
    print(
        f"{'source':<8}{'strategy':<11}{'n':>6}  {'units mean':>10}{'p95':>7}{'max':>7}"
        f"  {'pods mean':>10}{'p95':>7}{'max':>7}{'min':>7}"
    )
    for source in ("thesis", "random"):
        for name in HEURISTICS:
            rs = [r for r in ratios if (r.source, r.strategy) == (source, name)]
            u = [r.units for r in rs]
            p = [r.pods for r in rs]
            print(
                f"{source:<8}{name:<11}{len(rs):>6}  {statistics.fmean(u):>10.3f}{p95(u):>7.3f}{max(u):>7.3f}"
                f"  {statistics.fmean(p):>10.3f}{p95(p):>7.3f}{max(p):>7.3f}{min(p):>7.3f}"
            )
    return ratios


@dataclass(frozen=True)
class Packed:
    """Pods for the units a plan runs (the operator's ``workers.placement``), against Storm's default
    of one unit per slot (``⌈Σ n / K⌉`` pods: the operator without a placement) and the CPU bound."""

    source: str
    default: int
    sam: int
    pdeployer: int
    one_per_pod: int
    bound: int
    bound_one: int
    seconds: float


def packed_for(source: str, topology: Topology, factor: float) -> Packed:
    """The exact sizing's units at ``factor`` × today's rate, placed by SAM (pods of K slots) and
    P-Deployer (pods of one slot)."""
    omega = factor * offered_rate(topology)
    exact = minimum_units(topology, omega)
    target = scaled_to(topology, omega)
    units = exact.units
    start = time.process_time()
    sam = place_units(target, units, PlacementStrategy.SAM, SLOTS_PER_POD).placement
    seconds = time.process_time() - start
    pdeployer = place_units(target, units, PlacementStrategy.PDEPLOYER, 1).placement
    total = sum(units.values())
    return Packed(
        source,
        -(-total // SLOTS_PER_POD),
        sum(1 for pod in sam.pods if any(s.executors for s in pod.slots)),
        pdeployer.pod_count,
        total,
        exact.shared_pods(SLOTS_PER_POD),
        exact.shared_pods(1),
        seconds,
    )


def packing_table(random_count: int) -> list[Packed]:
    rows = [
        packed_for("thesis", load_profile(path), factor)
        for path in sorted(PROFILES.glob("*.json"))
        for factor in (1.0, 2.0, 3.0)
    ]
    rng = random.Random(2026)
    rows += [
        packed_for("random", synthetic(rng.randint(4, 30), seed=30_000 + i), rng.uniform(0.5, 3.0))
        for i in range(random_count)
    ]
    print(
        "\nPlacing the units a plan runs (workers.placement; the exact sizing's units): pods, mean over the "
        f"cases, against Storm's one unit per slot (pods of {SLOTS_PER_POD} slots; P-Deployer: 1)"
    )
    print(
        f"{'source':<8}{'n':>5}  {'default K=2':>11}{'SAM K=2':>9}{'bound K=2':>10}"
        f"  {'default K=1':>11}{'P-Deployer':>11}{'bound K=1':>10}  {'SAM ms p95':>10}"
    )
    for source in ("thesis", "random"):
        rs = [r for r in rows if r.source == source]

        def mean(get: Callable[[Packed], float], rs: list[Packed] = rs) -> float:
            return statistics.fmean(get(r) for r in rs)

        print(
            f"{source:<8}{len(rs):>5}  {mean(lambda r: r.default):>11.2f}{mean(lambda r: r.sam):>9.2f}"
            f"{mean(lambda r: r.bound):>10.2f}  {mean(lambda r: r.one_per_pod):>11.2f}"
            f"{mean(lambda r: r.pdeployer):>11.2f}{mean(lambda r: r.bound_one):>10.2f}"
            f"  {1000 * p95([r.seconds for r in rs]):>10.1f}"
        )
    return rows


def plot(rows: Sequence[Timing], ratios: Sequence[Ratio]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    OUT.mkdir(parents=True, exist_ok=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    sizes = [r.size for r in rows]
    for name in ("exact", *HEURISTICS):
        left.plot(sizes, [max(r.seconds[name], 1e-4) for r in rows], marker="o", label=name)
    left.set(xscale="log", yscale="log", xlabel="components", ylabel="CPU seconds", title="Time per call")
    left.legend(fontsize=8)
    data = [[r.pods for r in ratios if r.strategy == name] for name in HEURISTICS]
    right.boxplot(data, tick_labels=list(HEURISTICS), showfliers=True)
    right.axhline(1.0, color="grey", linestyle=":")
    right.set(ylabel="pods / lower bound", title="Pods against the proven lower bound (thesis + random DAGs)")
    fig.tight_layout()
    path = OUT / "sizing.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes and 100 random DAGs")
    args = parser.parse_args(argv)
    sizes = [10, 100] if args.quick else [10, 100, 500, 2000]
    rows = timing_table(sizes, skip_rsm_above=500)
    ratios = ratio_tables(100 if args.quick else 1000)
    packing_table(50 if args.quick else 300)
    print(f"\nwrote {plot(rows, ratios)}")


if __name__ == "__main__":
    main()
