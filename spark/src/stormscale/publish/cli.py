"""``stormscale-publish``: profile every StormTopology that asks for it and publish each as a ConfigMap.

1. The targets: the StormTopology objects whose ``spec.metrics.profile`` is ``Published`` (``--all``:
   every one), in ``--namespace`` (repeatable; default all namespaces), from the API server.
2. Each names its Storm topology (``spec.topologyName``); its structure is
   ``<--structure DIR>/<name>.json`` (or any structure file given whose ``topology`` is that name).
3. The samples (Parquet from ``stormscale-samples``) of the window ``[end − window, end]`` are
   aggregated once for all of them (Spark by default, ``--master`` any cluster, each task one group
   of topologies: ``--engine spark-grouped``; ``--engine spark`` the DataFrame job; ``--engine local``
   in one process), and each profile is built on its own.
4. Each profile is applied, server-side, as ``<stormtopology>-profile`` in the StormTopology's
   namespace; its window is the one its samples actually span.

Exit status: 0 with every target published; 1 when some could not be (one line each on stderr,
the others published: a fleet does not wait for its worst topology); 2 for bad arguments or input
that stops everything (unreadable samples, no API server), with one line naming the problem.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from stormscale.aggregation import engines
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import profile_results
from stormscale.aggregation.published import PublishedError, configmap
from stormscale.aggregation.schema import AggregationError
from stormscale.aggregation.structure import Structure, load_structure
from stormscale.publish.targets import Target, targets
from stormscale.samples import parse_duration

PROG = "stormscale-publish"


class Fleet(Protocol):
    def stormtopologies(self, namespaces: Sequence[str] = ()) -> list[dict[str, Any]]: ...

    def apply(self, body: Mapping[str, Any]) -> None: ...


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _duration(text: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Samples → one published profile per StormTopology.")
    p.add_argument("--samples", nargs="+", required=True, help="Parquet files or directories (any Spark URL)")
    p.add_argument(
        "--structure", action="append", required=True, help="structure JSON file, or a directory of them"
    )
    p.add_argument("--window", type=_duration, default=_duration("24h"), help="how far back (e.g. 24h)")
    p.add_argument("--end", type=_timestamp, help="window end, ISO 8601 (default: now)")
    p.add_argument("--namespace", action="append", default=[], help="only StormTopologies here (repeat)")
    p.add_argument("--all", action="store_true", help="every StormTopology, not only profile: Published")
    d = Params()
    p.add_argument("--settle", type=float, default=d.settle_s, help="seconds dropped after a rebalance")
    p.add_argument("--max-cv", type=float, default=d.max_cv, help="rate spread above which it is unsteady")
    p.add_argument("--min-intervals", type=int, default=d.min_intervals, help="fewest steady intervals")
    engines.add_engine_arguments(p)
    p.add_argument(
        "--conf", type=_setting, action="append", default=[], help="KEY=VALUE Spark setting (repeat)"
    )
    return p


def _setting(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    if not key or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def load_structures(paths: Sequence[str]) -> dict[str, Structure]:
    """Every structure file under ``paths`` (files or directories of ``*.json``), by topology name."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    found: dict[str, Structure] = {}
    for file in files:
        structure = load_structure(file)
        if structure.topology in found:
            raise AggregationError(f"structure: two files describe topology {structure.topology!r}")
        found[structure.topology] = structure
    return found


def window_of(document: Mapping[str, Any]) -> tuple[datetime, datetime]:
    """The window the profile's samples span (its ``confidence.window`` start and end)."""
    window = document["confidence"]["window"]
    return datetime.fromisoformat(window["start"]), datetime.fromisoformat(window["end"])


def publish(
    fleet: Fleet,
    found: Sequence[Target],
    results: Mapping[str, dict[str, Any] | Exception],
    now: datetime,
    *,
    say: Callable[[str], None] = print,
    complain: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> int:
    """Apply one ConfigMap per target whose topology has a profile; the number of targets that got none."""
    failed = 0
    for target in found:
        result = results.get(target.topology)
        if result is None or isinstance(result, Exception):
            why = result if result is not None else f"no profile of topology {target.topology!r}"
            complain(f"{PROG}: {target.where}: not published: {why}")
            failed += 1
            continue
        start, end = window_of(result)
        try:
            body = configmap(
                namespace=target.namespace,
                stormtopology=target.name,
                uid=target.uid,
                document=result,
                start=start,
                end=end,
                computed_at=now,
            )
            fleet.apply(body)
        except (PublishedError, RuntimeError) as err:
            complain(f"{PROG}: {target.where}: not published: {err}")
            failed += 1
            continue
        steady = "steady" if result["confidence"]["steady"] else "NOT steady"
        say(
            f"{target.namespace}/{body['metadata']['name']}: {target.topology}, {start:%Y-%m-%dT%H:%M:%SZ}/"
            f"{end:%Y-%m-%dT%H:%M:%SZ}, {steady}"
        )
    return failed


def run(args: argparse.Namespace, fleet: Fleet, now: datetime) -> int:
    """Everything after the arguments; raises :class:`AggregationError` or ``RuntimeError`` for
    what stops the whole run."""
    end = args.end or now
    params = Params(
        settle_s=args.settle,
        min_intervals=args.min_intervals,
        max_cv=args.max_cv,
        start=end - timedelta(seconds=args.window),
        end=end,
    )
    found = targets(fleet.stormtopologies(args.namespace), every=args.all)
    if not found:
        print(f"{PROG}: no StormTopology asks for a published profile (spec.metrics.profile: Published)")
        return 0
    structures = load_structures(args.structure)
    wanted = sorted({t.topology for t in found if t.topology in structures})
    results: dict[str, dict[str, Any] | Exception] = {
        t.topology: AggregationError(f"no structure file for topology {t.topology!r} in --structure")
        for t in found
        if t.topology not in structures
    }
    if wanted:
        aggregates = engines.aggregate_with(args, wanted, params)
        results.update(profile_results([structures[t] for t in wanted], aggregates, params))
    return 1 if publish(fleet, found, results, now) else 0


def main(argv: Sequence[str] | None = None, fleet: Fleet | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if fleet is None:
            from stormscale.publish.kube import FleetApi, api_client  # noqa: PLC0415

            fleet = FleetApi(api_client())
        return run(args, fleet, datetime.now(UTC))
    except (AggregationError, RuntimeError) as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
