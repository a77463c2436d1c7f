"""Fleet benchmark: 1,000 topologies' samples at a 10 s step, 1 h, 6 h and 24 h of them, aggregated
into one profile per topology by Spark ``local[2]`` (the grouped engine, the fleet's default, and the
DataFrame job) and by the single-process engine.

Run: ``make bench-fleet-spark`` (or ``.venv/bin/python -m bench.fleet_spark [--hours 1 6] [--engines
spark local]``). Prints a table (hours, samples, engine, wall s, CPU s, peak RSS, samples/s, Spark's
wall time over the single process's) and writes ``bench/out/fleet-spark.png``.

Input: the thesis profiles renamed into ``--topologies`` topologies (one in two rebalanced 30 minutes
in), generated with :mod:`tests.synthetic.samples` into ``bench/out/fleet/hour-NN.parquet``, one file
per hour, so that the 1 h run reads the first file, the 6 h run the first six and the 24 h run all
(generated once for the longest run asked for, reused when present). This is the publisher's path:
:func:`stormscale.aggregation.engines.aggregate` once for every topology, then
:func:`~stormscale.aggregation.profiles.profile_results` for each (the ConfigMaps are not applied:
that is the API server's time, not the aggregation's).

Each engine runs in a fresh subprocess. Its CPU seconds and peak memory are its whole process tree's:
the Python driver, the JVM (which in ``local[2]`` holds the driver and both executors) and the
Python workers the grouped engine runs its tasks in; memory is the tree's summed RSS, sampled every
0.5 s (and never below one process's own high-water mark). The
single process is stopped when its RSS passes ``--memory-cap`` GB or its time ``--time-cap`` s (the
machine is shared: it would otherwise take the others' memory), and the table says where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.aggregation import _jvm_peak_mb, profiles
from stormscale.aggregation import engines
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profile_results
from stormscale.aggregation.structure import load_structure
from tests.harness.spark.standalone import standalone_cluster
from tests.synthetic import samples as synthetic

OUT = Path(__file__).parent / "out"
DATA = OUT / "fleet"
TOPOLOGIES = 1000
HOURS = (1, 6, 24)
STANDALONE = "spark-grouped-standalone"
ENGINES = ("spark-grouped", STANDALONE, "spark", "local")
NAMES = {
    "spark-grouped": "spark grouped",
    STANDALONE: "grouped, standalone",
    "spark": "spark DataFrame",
    "local": "single process",
}
#: The master a measured child uses for ``STANDALONE``: the cluster the parent started.
MASTER_ENV = "STORMSCALE_BENCH_SPARK_MASTER"
#: The scheduled export's layout of the same samples, under the data directory.
PARTITIONED = "partitioned"
#: The layout a measured child reads: ``hourly`` files or the ``partitioned`` export layout.
LAYOUT_ENV = "STORMSCALE_BENCH_LAYOUT"
SPARK_CONF = {"spark.driver.memory": "3g"}
#: Topologies generated at once before their rows are split by hour (one row group per hour file).
BATCH = 16
#: Rows per shuffle partition the Spark run aims at (``--shuffle-partitions auto``).
ROWS_PER_PARTITION = 4_000_000


@dataclass(frozen=True)
class Result:
    hours: int
    samples: int
    engine: str
    seconds: float | None  # None: stopped (see ``stopped``)
    cpu: float
    peak_mb: float
    profiles: int
    partitions: int | None = None
    stopped: str | None = None
    label: str = ""

    @property
    def rate(self) -> float | None:
        return None if self.seconds is None else self.samples / self.seconds


def generate(topologies: int, hours: int, directory: Path) -> int:
    """Hourly Parquet files ``hour-00.parquet`` … and one structure per topology; reused when they
    hold at least ``hours`` hours of ``topologies`` topologies. Returns the hours on disk."""
    marker = directory / "generated.json"
    if marker.exists():
        done = json.loads(marker.read_text(encoding="utf-8"))
        if done["topologies"] == topologies and done["hours"] >= hours:
            return int(done["hours"])
    structures = directory / "structures"
    structures.mkdir(parents=True, exist_ok=True)
    library = profiles()
    writers: dict[int, pq.ParquetWriter] = {}
    rows = [0] * hours
    try:
        for first in range(0, topologies, BATCH):
            tables = []
            for i in range(first, min(first + BATCH, topologies)):
                topology = library[i % len(library)]
                scenario = synthetic.Scenario(
                    name=f"t{i:05d}", duration_s=3600.0 * hours - 10.0, noise=0.02, seed=i
                )
                if i % 2:  # one in two rebalances 30 minutes in: its last component gets 2 units
                    last = topology.components[-1].id
                    scenario = replace(scenario, rebalance_at_s=1800.0, units_after={last: 2})
                tables.append(synthetic.generate(topology, scenario))
                document = synthetic.structure(topology, scenario)
                (structures / f"{scenario.name}.json").write_text(json.dumps(document), encoding="utf-8")
            batch = pa.concat_tables(tables)
            hour = pc.cast(
                pc.divide(
                    pc.subtract(batch["ts"].cast(pa.int64()), int(synthetic.EPOCH.timestamp() * 1000)),
                    3_600_000,
                ),
                pa.int64(),
            )
            for h in range(hours):
                part = batch.filter(pc.equal(hour, pa.scalar(h, pa.int64())))
                if h not in writers:
                    writers[h] = pq.ParquetWriter(directory / f"hour-{h:02d}.parquet", part.schema)
                writers[h].write_table(part, row_group_size=len(part) or 1)
                rows[h] += part.num_rows
            print(
                f"  generated {min(first + BATCH, topologies)}/{topologies} topologies", end="\r", flush=True
            )
    finally:
        for writer in writers.values():
            writer.close()
    print()
    marker.write_text(json.dumps({"topologies": topologies, "hours": hours, "rows": rows}), encoding="utf-8")
    return hours


def rows_in(directory: Path, hours: int) -> int:
    done = json.loads((directory / "generated.json").read_text(encoding="utf-8"))
    return int(sum(done["rows"][:hours]))


def files(directory: Path, hours: int, layout: str = "hourly") -> list[str]:
    """The input of a run over the first ``hours`` hours: the hourly files, or with ``layout``
    ``partitioned`` the scheduled export's partitions (their directory when all are read)."""
    if layout == "hourly":
        return [str(directory / f"hour-{h:02d}.parquet") for h in range(hours)]
    root = directory / PARTITIONED
    if hours >= json.loads((root / "partitioned.json").read_text(encoding="utf-8"))["hours"]:
        return [str(root)]
    return sorted(str(f) for h in range(hours) for f in root.glob(f"topology=*/hour={h:02d}/samples.parquet"))


def partition(directory: Path, hours: int) -> None:
    """The hourly files split as ``stormscale-samples-export`` writes samples:
    ``partitioned/topology=<name>/hour=<HH>/samples.parquet`` (each hourly file is sorted by topology,
    so a topology's rows are one slice of it); reused when present for ``hours`` hours."""
    root = directory / PARTITIONED
    marker = root / "partitioned.json"
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8"))["hours"] >= hours:
        return
    for h in range(hours):
        table = pq.read_table(directory / f"hour-{h:02d}.parquet")
        names = table["topology"].to_numpy(zero_copy_only=False)
        starts = [0, *(i for i in range(1, len(names)) if names[i] != names[i - 1])]
        for start, end in zip(starts, [*starts[1:], len(names)], strict=True):
            target = root / f"topology={names[start]}" / f"hour={h:02d}"
            target.mkdir(parents=True, exist_ok=True)
            pq.write_table(table.slice(start, end - start), target / "samples.parquet")
        print(f"  partitioned hour {h + 1}/{hours}", end="\r", flush=True)
    print()
    marker.write_text(json.dumps({"hours": hours}), encoding="utf-8")


def measure(engine: str, hours: int, directory: Path, partitions: int) -> dict[str, Any]:
    """One engine on the first ``hours`` files, in this (fresh) process; CPU counts the whole tree."""
    specs = [load_structure(p) for p in sorted((directory / "structures").glob("t*.json"))]
    names = [s.topology for s in specs]
    params = Params()
    paths = files(directory, hours, os.environ.get(LAYOUT_ENV, "hourly"))
    jvm_mb = 0.0
    if engine == "local":
        begin, cpu = time.perf_counter(), -tree_cpu_s(os.getpid())
        aggregates = engines.aggregate(paths, names, params, engine="local")
    else:
        from stormscale.aggregation.spark import job

        master = os.environ[MASTER_ENV] if engine == STANDALONE else "local[2]"
        spark = job.session(master, partitions, app="bench-fleet", conf=SPARK_CONF)
        pid = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
        begin, cpu = time.perf_counter(), -tree_cpu_s(os.getpid())
        aggregates = engines.aggregate(paths, names, params, engine=engine.removesuffix("-standalone"))
    results = profile_results(specs, aggregates, params)
    seconds = time.perf_counter() - begin
    cpu += tree_cpu_s(os.getpid())
    if engine != "local":
        jvm_mb = _jvm_peak_mb(pid)
        spark.stop()
    failed = {t: str(r) for t, r in results.items() if isinstance(r, Exception)}
    return {
        "seconds": seconds,
        "cpu": cpu,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 + jvm_mb,
        "profiles": len(results) - len(failed),
        "failed": dict(list(failed.items())[:3]),
    }


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (field 3 onwards), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except OSError:
        return None


def tree(pid: int) -> list[int]:
    """``pid`` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        found.append(current := todo.pop())
        todo.extend(children.get(current, []))
    return found


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process tree: each live process's user + system time and its reaped
    children's (fields 14-17), so every process that ever ran under it counts once."""
    ticks = 0
    for member in tree(pid):
        if (fields := _stat(member)) is not None:
            ticks += sum(int(f) for f in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_rss_mb(pid: int) -> float:
    """The summed RSS of a process tree, in MB."""
    return sum(_rss_mb(member) for member in tree(pid))


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_engine(
    engine: str,
    hours: int,
    directory: Path,
    rows: int,
    args: argparse.Namespace,
    *,
    cluster: Sequence[int] = (),
) -> Result:
    """One engine in a fresh child; ``cluster``: the pids of a standalone cluster's daemons, whose
    executors' CPU and memory count with the child's (they are not its descendants)."""
    partitions = args.shuffle_partitions or max(8, math.ceil(rows / ROWS_PER_PARTITION))
    measure_args = [engine, str(hours), str(partitions), str(directory)]
    command = [sys.executable, "-m", "bench.fleet_spark", "--measure", *measure_args]
    cluster_cpu = -sum(tree_cpu_s(pid) for pid in cluster)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    begin, peak, stopped = time.monotonic(), 0.0, None
    while child.poll() is None:
        time.sleep(0.5)
        peak = max(peak, tree_rss_mb(child.pid) + sum(tree_rss_mb(pid) for pid in cluster))
        if engine != "local":
            continue
        elapsed = time.monotonic() - begin
        if peak > args.memory_cap * 1024:
            stopped = f"RSS passed {args.memory_cap:g} GB after {elapsed:.0f} s"
        elif elapsed > args.time_cap:
            stopped = f"still running after {args.time_cap:g} s"
        if stopped:
            child.kill()
            child.wait()
            return Result(hours, rows, engine, None, float("nan"), peak, 0, None, stopped)
    out, err = child.communicate()
    if child.returncode != 0:
        tail = err.strip().splitlines()[-1:] if err.strip() else [f"exit {child.returncode}"]
        return Result(hours, rows, engine, None, float("nan"), peak, 0, None, f"failed: {tail[0][:80]}")
    m = json.loads(out.strip().splitlines()[-1])
    m["cpu"] += cluster_cpu + sum(tree_cpu_s(pid) for pid in cluster)
    if m["failed"]:
        print(f"  {engine}: topologies without a profile, e.g. {m['failed']}", flush=True)
    peak = max(m["peak_mb"], peak)
    if engine == "local" and peak > args.memory_cap * 1024:  # it ended between two of the polls above
        stopped = f"RSS passed {args.memory_cap:g} GB (it ended in {m['seconds']:.1f} s, between two polls)"
        return Result(hours, rows, engine, None, float("nan"), peak, 0, None, stopped)
    return Result(
        hours,
        rows,
        engine,
        m["seconds"],
        m["cpu"],
        peak,
        m["profiles"],
        partitions if engine == "spark" else None,
    )


def table(results: list[Result]) -> str:
    """One row per run, with its wall time over the single process's and the DataFrame job's (same
    hours, same run)."""
    head = (
        f"{'hours':>5} {'samples':>13} {'engine':<24} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>11} "
        f"{'samples/s':>10} {'÷ single':>9} {'÷ DataFrame':>11} {'÷ local[2]':>10} {'profiles':>8}  note"
    )
    lines = [head, "-" * len(head)]
    done = {(r.hours, r.engine): r.seconds for r in results if r.seconds}

    def ratio(r: Result, other: str) -> str:
        base = done.get((r.hours, other))
        return "" if r.engine == other or not r.seconds or base is None else f"{r.seconds / base:.2f}"

    for r in results:
        name = NAMES[r.engine] + (f" {r.label}" if r.label else "")
        wall = "-" if r.seconds is None else f"{r.seconds:8.1f}"
        rate = "-" if r.rate is None else f"{r.rate:10,.0f}"
        note = r.stopped or (f"{r.partitions} shuffle partitions" if r.partitions else "")
        lines.append(
            f"{r.hours:>5} {r.samples:>13,} {name:<24} {wall:>8} {r.cpu:>8.1f} {r.peak_mb:>11,.0f} "
            f"{rate:>10} {ratio(r, 'local'):>9} {ratio(r, 'spark'):>11} {ratio(r, 'spark-grouped'):>10} "
            f"{r.profiles:>8}  {note}"
        )
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    series = sorted({(r.engine, r.label) for r in results})
    for engine, tag in series:
        label = NAMES[engine] + (f" ({tag})" if tag else "")
        mine = [r for r in results if (r.engine, r.label) == (engine, tag)]
        done = sorted((r for r in mine if r.seconds), key=lambda r: r.samples)
        left.plot([r.samples for r in done], [r.seconds for r in done], marker="o", label=label)
        mem = sorted(mine, key=lambda r: r.samples)
        right.plot([r.samples for r in mem], [r.peak_mb / 1024 for r in mem], marker="o", label=label)
        for r in mem:
            if r.stopped:
                right.annotate("stopped", (r.samples, r.peak_mb / 1024), fontsize=8)
    left.axhline(1800, color="grey", linestyle="--", linewidth=1, label="30 min target")
    sizes = [r.samples for r in results]
    for ax in (left, right):
        ax.set_xlim(min(sizes) / 2, max(sizes) * 2)
    left.set(xscale="log", yscale="log", xlabel="samples", ylabel="wall seconds", title="Time")
    right.set(xscale="log", xlabel="samples", ylabel="peak RSS (GB)", title="Memory")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"{TOPOLOGIES:,} topologies at a 10 s step: aggregation on 2 cores")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench.fleet_spark")
    p.add_argument("--hours", nargs="+", type=int, default=list(HOURS))
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    p.add_argument("--topologies", type=int, default=TOPOLOGIES)
    p.add_argument("--shuffle-partitions", type=int, default=0, help="0: one per 4M samples (at least 8)")
    p.add_argument("--memory-cap", type=float, default=16.0, help="GB of RSS the single process may use")
    p.add_argument("--time-cap", type=float, default=2400.0, help="seconds the single process may take")
    p.add_argument("--data", type=Path, default=DATA, help="where the generated samples go")
    p.add_argument("--label", default="", help="a name for this run's rows (e.g. the code measured)")
    p.add_argument(
        "--layout",
        choices=("hourly", PARTITIONED),
        default="hourly",
        help="hourly files, or the scheduled export's topology=/hour= partitions of the same samples",
    )
    p.add_argument("--save", type=Path, help="also write the results as JSON here")
    p.add_argument("--combine", nargs="+", type=Path, help="only print and plot saved results together")
    p.add_argument(
        "--measure", nargs=4, metavar=("ENGINE", "HOURS", "PARTITIONS", "DATA"), help=argparse.SUPPRESS
    )
    args = p.parse_args(argv)
    if args.measure:
        engine, hours, partitions, data = args.measure
        print(json.dumps(measure(engine, int(hours), Path(data), int(partitions))))
        return 0
    if args.combine:
        saved = [Result(**r) for path in args.combine for r in json.loads(path.read_text(encoding="utf-8"))]
        print(table(saved))
        OUT.mkdir(parents=True, exist_ok=True)
        plot(saved, OUT / "fleet-spark.png")
        print(f"\nplot: {OUT / 'fleet-spark.png'}")
        return 0
    begin = time.perf_counter()
    generate(args.topologies, max(args.hours), args.data)
    if args.layout == PARTITIONED:
        partition(args.data, max(args.hours))
        args.label = args.label or PARTITIONED
    os.environ[LAYOUT_ENV] = args.layout
    print(f"samples ready in {time.perf_counter() - begin:.0f} s", flush=True)
    results: list[Result] = []
    with contextlib.ExitStack() as stack:
        cluster: list[int] = []
        if STANDALONE in args.engines:
            running = stack.enter_context(
                standalone_cluster(OUT / "spark-standalone", workers=2, memory="2g")
            )
            os.environ[MASTER_ENV] = running.master_url
            # the executors' Python workers run the interpreter that has the package (a user's image
            # names its own); Spark's default, python3, has not
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            cluster = [d.pid for d in running.daemons]
            print(f"standalone cluster: {running.master_url}, 2 workers of 1 core", flush=True)
        for hours in sorted(args.hours):
            rows = rows_in(args.data, hours)
            for engine in args.engines:
                found = run_engine(
                    engine, hours, args.data, rows, args, cluster=cluster if engine == STANDALONE else ()
                )
                results.append(replace(found, label=args.label))
                print(table(results[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(results))
    if args.save:
        args.save.write_text(json.dumps([asdict(r) for r in results]), encoding="utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    plot(results, OUT / "fleet-spark.png")
    print(f"\nplot: {OUT / 'fleet-spark.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
