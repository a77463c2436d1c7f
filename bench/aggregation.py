"""Aggregation benchmark: samples/s and peak memory, Spark ``local[2]`` against the single process.

Run: ``make bench-aggregation`` (or ``.venv/bin/python -m bench.aggregation [--sizes 1e6 1e7]``).
Prints a table and writes ``bench/out/aggregation.png`` (time against input size).

Input: a platform's history, i.e. many topologies (the thesis profiles, renamed, one in two with a
rebalance) over 4 hours at a 10 s scrape step, generated with :mod:`tests.synthetic.samples` to
``bench/out/samples-<n>.parquet`` (git-ignored, reused when present). Each engine runs in a fresh
subprocess so its peak memory is its own: the single process's is its RSS high-water mark; Spark's
is the Python driver's and the JVM's (in ``local[2]`` the JVM holds the driver and the executors).
The machine is shared, so CPU seconds (the JVM's and Python's, user + system) are reported next to
wall time: they are what the job costs, wall time is what it costs on a busy box.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.spark import job
from stormscale.aggregation.structure import load_structure
from stormscale.planner import Topology, load_profile
from tests.synthetic import samples as synthetic

OUT = Path(__file__).parent / "out"
PROFILES = Path(__file__).parents[1] / "examples" / "profiles"
DEFAULT_SIZES = (1_000_000, 10_000_000, 50_000_000)
HOURS = 4
ENGINES = ("local", "spark")
SPARK_CONF = {"spark.driver.memory": "3g"}


@dataclass(frozen=True)
class Result:
    engine: str
    samples: int
    seconds: float
    startup: float
    driver_mb: float
    jvm_mb: float | None
    topologies: int
    cpu: float

    @property
    def rate(self) -> float:
        return self.samples / self.seconds


def profiles() -> list[Topology]:
    return [load_profile(p) for p in sorted(PROFILES.glob("thesis-*.json"))]


def generate(size: int, directory: Path, hours: float = HOURS) -> tuple[Path, Path, int]:
    """At least ``size`` samples of as many topologies of ``hours`` each as it takes; returns paths and
    the exact count."""
    name = f"{size}" if hours == HOURS else f"{size}-{hours:g}h"
    samples, structures = directory / f"samples-{name}.parquet", directory / f"structures-{name}"
    done = structures / "rows.txt"
    if samples.exists() and done.exists():
        return samples, structures, int(done.read_text(encoding="utf-8"))
    structures.mkdir(parents=True, exist_ok=True)
    rows, i, writer = 0, 0, None
    library = profiles()
    try:
        while rows < size:
            topology = library[i % len(library)]
            scenario = synthetic.Scenario(name=f"t{i:05d}", duration_s=3600.0 * hours, noise=0.02, seed=i)
            if i % 2:  # one topology in two rebalances half way: its last component gets 2 units
                last = topology.components[-1].id
                scenario = replace(scenario, rebalance_at_s=scenario.duration_s / 2, units_after={last: 2})
            table = synthetic.generate(topology, scenario)
            writer = writer or pq.ParquetWriter(samples, table.schema)
            writer.write_table(table, row_group_size=1_000_000)
            document = synthetic.structure(topology, scenario)
            (structures / f"{scenario.name}.json").write_text(json.dumps(document), encoding="utf-8")
            rows += table.num_rows
            i += 1
    finally:
        if writer is not None:
            writer.close()
    done.write_text(str(rows), encoding="utf-8")
    return samples, structures, rows


def _jvm_peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _jvm_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (``/proc/<pid>/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(engine: str, samples: Path, structures: Path) -> dict[str, Any]:
    """One engine on one input, in this (fresh) process; CPU seconds count the JVM too."""
    specs = [load_structure(p) for p in sorted(structures.glob("t*.json"))]
    begin = time.perf_counter()
    jvm_mb = None
    if engine == "local":
        startup, cpu = 0.0, -_own_cpu_s()
        documents = local.run([str(samples)], specs, Params())
        cpu += _own_cpu_s()
    else:
        spark = job.session("local[2]", shuffle_partitions=8, app="bench-aggregation", conf=SPARK_CONF)
        pid = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
        startup = time.perf_counter() - begin
        begin = time.perf_counter()
        cpu = -_own_cpu_s() - _jvm_cpu_s(pid)
        documents = job.run(spark, [str(samples)], specs, Params())
        cpu += _own_cpu_s() + _jvm_cpu_s(pid)
        jvm_mb = _jvm_peak_mb(pid)
        spark.stop()
    seconds = time.perf_counter() - begin
    first = documents[0]["components"][-1]
    return {
        "seconds": seconds,
        "startup": startup,
        "driver_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jvm_mb": jvm_mb,
        "topologies": len(documents),
        "cpu": cpu,
        "check": first.get("capacityPerUnit"),
    }


def run_engine(engine: str, samples: Path, structures: Path, rows: int) -> Result:
    command = [sys.executable, "-m", "bench.aggregation", "--measure", engine, str(samples), str(structures)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} failed on {samples.name}: {done.stderr.strip().splitlines()[-1:]}")
    m = json.loads(done.stdout.strip().splitlines()[-1])
    return Result(
        engine, rows, m["seconds"], m["startup"], m["driver_mb"], m["jvm_mb"], m["topologies"], m["cpu"]
    )


def table(results: list[Result]) -> str:
    head = f"{'engine':<7} {'samples':>11} {'topologies':>10} {'seconds':>8} {'samples/s':>11} "
    head += f"{'CPU s':>7} {'samples/CPU s':>13} {'startup s':>9} {'driver MB':>9} {'JVM MB':>7}"
    lines = [head, "-" * len(head)]
    for r in results:
        jvm = "" if r.jvm_mb is None else f"{r.jvm_mb:7.0f}"
        lines.append(
            f"{r.engine:<7} {r.samples:>11,} {r.topologies:>10} {r.seconds:>8.1f} {r.rate:>11,.0f} "
            f"{r.cpu:>7.1f} {r.samples / r.cpu:>13,.0f} {r.startup:>9.1f} {r.driver_mb:>9.0f} {jvm:>7}"
        )
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for engine in ENGINES:
        rows = sorted((r for r in results if r.engine == engine), key=lambda r: r.samples)
        label = "Spark local[2]" if engine == "spark" else "single process (pyarrow/NumPy)"
        ax.plot([r.samples for r in rows], [r.seconds for r in rows], marker="o", label=label)
    ax.set(xscale="log", yscale="log", xlabel="samples", ylabel="seconds (job, without JVM start)")
    ax.set_title("Aggregation: time against input size (2 cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _hours(text: str) -> float:
    """A positive number of hours, at most a week (a topology's samples are generated in memory)."""
    try:
        hours = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.01 <= hours <= 168:
        raise argparse.ArgumentTypeError(f"{text} is not between 0.01 and 168")
    return hours


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.aggregation")
    p.add_argument("--sizes", nargs="+", type=float, default=DEFAULT_SIZES, help="samples per run")
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--hours", type=_hours, default=HOURS, help="per topology (default %(default)s)")
    p.add_argument("--measure", nargs=3, metavar=("ENGINE", "SAMPLES", "STRUCTURES"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.measure:
        engine, samples, structures = args.measure
        print(json.dumps(measure(engine, Path(samples), Path(structures))))
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for size in (int(s) for s in args.sizes):
        begin = time.perf_counter()
        samples, structures, rows = generate(size, OUT, args.hours)
        print(f"{rows:,} samples ready in {time.perf_counter() - begin:.1f} s", flush=True)
        for engine in args.engines:
            results.append(run_engine(engine, samples, structures, rows))
            print(table(results[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(results))
    plot(results, OUT / "aggregation.png")
    print(f"\nplot: {OUT / 'aggregation.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
