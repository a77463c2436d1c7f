"""``stormscale-samples-export``: the fleet's samples on a schedule, nothing written by hand.

Each run, for every running topology (Nimbus's list, or the ``--topology`` names):

* its samples, hour by hour, into ``<root>/topology=<name>/hour=<YYYY-MM-DDTHH>/samples.parquet``
  (docs/formats/samples.md): every hour that ``[end − lookback, end]`` touches is read whole from its
  start to ``min(its end, end)`` and replaced atomically, so a run that repeats or overlaps the last one
  rewrites the same rows, and an hour is complete once a run after its end has written it;
* its structure from Nimbus (the submitted graph and the running tasks) into
  ``<root>/structures/<name>.json``, the publisher's ``--structure`` directory;
* the hours that ``--retention`` expired are deleted (:mod:`~stormscale.storm.samples.retention`).

The publisher reads ``--samples <root> --structure <root>/structures``. One topology's failure (Nimbus
or Prometheus refusing, a name that cannot be a directory) is one line on stderr and exit status 1
after the others were exported; bad arguments are exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from stormscale.samples import parse_duration, write_parquet
from stormscale.storm.client import NimbusClient
from stormscale.storm.errors import NimbusError, one_line, redact
from stormscale.storm.model import Endpoint, Kind
from stormscale.storm.samples.reader import PrometheusError, SampleReader, Window
from stormscale.storm.samples.retention import HOUR_FORMAT, parse_retention, prune
from stormscale.storm.stats import tasks_per_component

PROG = "stormscale-samples-export"
HOUR_S = 3600
SAMPLES_FILE = "samples.parquet"
STRUCTURES_DIR = "structures"


@dataclass(frozen=True)
class HourSlice:
    """One hour partition's range query: ``[hour, min(hour + 1 h − step, end)]``.

    The last point stops one step short of the next hour, whose partition starts with it: no sample
    is written twice and none is missing between partitions."""

    hour: int
    window: Window

    @property
    def label(self) -> str:
        """``YYYY-MM-DDTHH`` (UTC), the partition directory's value."""
        return datetime.fromtimestamp(self.hour, UTC).strftime(HOUR_FORMAT)


def hour_slices(end: int, lookback_s: int, step_s: int) -> list[HourSlice]:
    """The hours that ``[end − lookback_s, end]`` touches, oldest first, each read from its start.

    With ``h₀ = ⌊(end − lookback)/3600⌋·3600`` and ``h₁ = ⌊end/3600⌋·3600``, hour ``h`` for
    ``h₀ ≤ h ≤ h₁`` is read over ``[h, min(h + 3600 − step, end)]``; an hour that starts at ``end``
    (nothing scraped in it yet) is left for the next run."""
    first = (end - lookback_s) // HOUR_S * HOUR_S
    last = end // HOUR_S * HOUR_S
    return [
        HourSlice(hour, Window(hour, min(hour + HOUR_S - step_s, end), step_s))
        for hour in range(first, last + 1, HOUR_S)
        if hour < end
    ]


def usable_name(topology: str) -> str | None:
    """Why ``topology`` cannot name a directory (``None``: it can). Storm refuses ``/``, ``.``, ``:``
    and ``\\`` in names; a name from ``--topology`` is checked the same way."""
    if not topology or any(c in topology for c in "/\\:.\0"):
        return f"topology name {topology!r} cannot name a partition directory"
    return None


def partition_file(root: Path, topology: str, hour: HourSlice) -> Path:
    """``<root>/topology=<name>/hour=<YYYY-MM-DDTHH>/samples.parquet``."""
    return root / f"topology={topology}" / f"hour={hour.label}" / SAMPLES_FILE


def structure_document(nimbus: NimbusClient, topology: str) -> dict[str, Any]:
    """The aggregation's structure (docs/formats/samples.md) of running ``topology``, from Nimbus: the
    submitted graph (``getUserTopology``) and each component's running tasks."""
    summary = nimbus.topology(topology)
    if summary is None:
        raise NimbusError(f"topology {topology!r} is not running on Nimbus")
    graph = nimbus.structure(summary.id)
    tasks = tasks_per_component(nimbus.topology_info(topology))
    components: list[dict[str, Any]] = []
    for cid, spec in sorted(graph.components.items()):
        kind = "spout" if spec.kind is Kind.SPOUT else "bolt"
        component: dict[str, Any] = {"id": cid, "kind": kind, "children": list(graph.children(cid))}
        if cid in tasks:  # absent until Nimbus has assigned the topology's executors
            component["tasks"] = tasks[cid]
        components.append(component)
    return {"topology": topology, "components": components}


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` into a sibling temporary file, then rename it over ``path``: a reader (the publisher
    running at the same time) sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def write_structure(document: dict[str, Any], path: Path) -> None:
    """The structure document as JSON at ``path``, atomically."""
    replace_atomically(path, lambda p: p.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8"))


@dataclass(frozen=True)
class Exported:
    """One topology's run: the partitions written (with their sample counts), or why it failed."""

    topology: str
    written: tuple[tuple[Path, int], ...] = ()
    failure: str | None = None


def export_topology(
    topology: str, nimbus: NimbusClient, reader: SampleReader, root: Path, slices: Sequence[HourSlice]
) -> Exported:
    """Write ``topology``'s structure and each hour slice's samples; a failure is its one line.

    An hour without a sample is not written (a topology submitted within it, or not yet scraped): an
    empty partition would only hide that from the publisher's own check."""
    refused = usable_name(topology)
    if refused is not None:
        return Exported(topology, failure=refused)
    try:
        write_structure(structure_document(nimbus, topology), root / STRUCTURES_DIR / f"{topology}.json")
        written: list[tuple[Path, int]] = []
        for hour in slices:
            rows = reader.read(topology, hour.window)
            if rows:
                path = partition_file(root, topology, hour)
                replace_atomically(path, partial(write_parquet, rows))
                written.append((path, len(rows)))
    except (NimbusError, PrometheusError, OSError) as err:
        return Exported(topology, failure=one_line(redact(f"{type(err).__name__}: {err}")))
    return Exported(topology, tuple(written))


def running_topologies(nimbus: NimbusClient, named: Sequence[str]) -> list[str]:
    """``named`` if given, else every topology Nimbus lists as ``ACTIVE``, by name."""
    if named:
        return sorted(set(named))
    return sorted(t.name for t in nimbus.topologies() if t.status == "ACTIVE")


def seconds(text: str) -> int:
    """A duration in the one grammar of :func:`stormscale.samples.parse_duration`."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def retention(text: str) -> Any:
    """``48h`` or ``2d``."""
    try:
        return parse_retention(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def nimbus_address(text: str) -> Endpoint:
    """``host:port`` or ``host``."""
    try:
        return Endpoint.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (exit status 2 with one line on a bad argument)."""
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--prometheus", required=True, help="Prometheus base URL")
    parser.add_argument("--nimbus", type=nimbus_address, required=True, help="Nimbus host:port")
    parser.add_argument("--root", type=Path, required=True, help="directory of the partitions and structures")
    parser.add_argument("--topology", action="append", default=[], help="only this topology (repeat)")
    parser.add_argument("--lookback", type=seconds, default=seconds("1h"), help="hours touched are rewritten")
    parser.add_argument("--step", type=seconds, default=seconds("10s"), help="resolution (e.g. 10s)")
    parser.add_argument("--retention", type=retention, default=retention("48h"), help="e.g. 48h or 2d")
    parser.add_argument("--end", type=int, default=None, help="Unix seconds (default: now)")
    args = parser.parse_args(argv)
    if args.lookback > 48 * HOUR_S:
        parser.error("--lookback: at most 48h (a run rewrites every hour it touches)")
    if args.step > HOUR_S:
        parser.error("--step: at most 1h")
    return args


def report(results: Iterable[Exported], say: Callable[[str], None], complain: Callable[[str], None]) -> int:
    """One line per topology; the number that failed."""
    failed = 0
    for result in results:
        if result.failure is not None:
            complain(f"{PROG}: {result.topology}: not exported: {result.failure}")
            failed += 1
        else:
            rows = sum(n for _, n in result.written)
            say(f"{PROG}: {result.topology}: {rows} samples in {len(result.written)} hour partition(s)")
    return failed


def main(argv: Sequence[str] | None = None) -> None:
    """Export every topology, prune, report; exit 1 if any topology failed."""
    args = parse_args(argv)
    end = args.end if args.end is not None else int(time.time())
    nimbus = NimbusClient(args.nimbus)
    reader = SampleReader(args.prometheus)
    try:
        topologies = running_topologies(nimbus, args.topology)
        slices = hour_slices(end, args.lookback, args.step)
    except (NimbusError, PrometheusError) as err:
        sys.exit(f"{PROG}: {one_line(redact(str(err)))}")
    results = [export_topology(t, nimbus, reader, args.root, slices) for t in topologies]
    removed = prune(args.root, datetime.fromtimestamp(end, UTC), args.retention)
    failed = report(results, print, lambda line: print(line, file=sys.stderr))
    print(f"{PROG}: {len(topologies)} topologies, {len(removed)} expired hour partition(s) deleted")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
