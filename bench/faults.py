"""Fault benchmark: ``--runs`` applies (20 by default) for each fault of ``--faults`` (all by default),
each with the fault injected, and what the operator converged to; prints the fault table.

Run: ``make bench-faults`` (or ``.venv/bin/python -m bench.faults [--faults operator-kill,...]
[--runs 20] [--seed 17]``), under the real-stack lock of ``make accuracy``. A real control plane with
the CRD and the operator as a real ``kopf run`` process; Storm behind the light fake Nimbus; Prometheus
behind a fake for the Storm and API-server faults, the real one (scraping the project's exporter) for
the metrics faults. The faults and each run's checks are described in
:mod:`bench.operator_faults` and :mod:`bench.metrics_faults`
(tests/integration/test_operator_faults.py runs a few of each in ``make test``, ``nimbus-loses``
aside). A run takes about 16 s (``operator-kill``), 35-55 s (``apiserver-restart``,
``nimbus-restart``, ``prometheus-stop``, ``metrics-stale``) or 77 s (``nimbus-loses``): 20 runs of
all six, about 95 minutes. Writes ``bench/out/faults.json`` (every run).

The faults of the real parts (``--faults real``: ``storm-nimbus-restart``, ``storm-supervisor-kill``,
``storm-worker-kill``, ``zookeeper-restart``, ``kafka-restart``; ``all`` keeps to the faults above) run
on the whole test bed instead, one stack for all of them (:mod:`bench.storm_faults`: real Storm with
Stormscale's scheduler, ZooKeeper, Kafka, the Kafka-fed JVM linear topology), 10 runs each unless
``--runs`` says otherwise; their table follows the other one and ``bench/out/real-faults.json`` holds
every run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path

from kubernetes import config

from bench import metrics_faults, storm_faults
from bench import operator_faults as faults
from bench.accuracy import heavy_lock
from bench.fleet import OUT
from bench.operator_faults import Fault
from bench.storm_faults import REAL_FAULTS, RealFault, run_real_faults
from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import new_run_dir

AnyFault = Fault | RealFault
#: Names that stand for several faults: ``all`` (the fake-Nimbus and metrics faults), ``real`` (the
#: real parts' faults).
GROUPS: dict[str, tuple[AnyFault, ...]] = {"all": tuple(Fault), "real": tuple(RealFault)}


def parse_faults(text: str) -> list[AnyFault]:
    """``--faults``: names separated by commas (``all``: every fault on the fake Nimbus and the metrics
    faults; ``real``: every fault of the real parts), in the order given."""
    known: dict[str, tuple[AnyFault, ...]] = {
        **{f.value: (f,) for f in Fault},
        **{f.value: (f,) for f in RealFault},
        **GROUPS,
    }
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        listed = ", ".join(known)
        raise argparse.ArgumentTypeError(f"unknown fault {', '.join(unknown) or '(none)'}; known: {listed}")
    return list(dict.fromkeys(f for n in names for f in known[n]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--faults", type=parse_faults, default=list(Fault), help="faults to inject, comma-separated (all)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help=f"applies per fault, each with one fault (20; {storm_faults.RUNS} for the real parts' faults)",
    )
    parser.add_argument("--seed", type=int, default=17, help="seed of the fault delays")
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")
    fake = [f for f in args.faults if isinstance(f, Fault)]
    real = [f for f in args.faults if isinstance(f, RealFault)]
    fake_runs = args.runs or 20
    real_runs = args.runs or storm_faults.RUNS
    run_dir = new_run_dir("faults-")
    names = ", ".join(args.faults)
    print(f"fault benchmark: {names}; logs in {run_dir}", flush=True)
    say = lambda s: print(s, flush=True)  # noqa: E731
    runs: list[faults.FaultRun] = []
    real_done: list[storm_faults.RealRun] = []
    with heavy_lock():
        if fake:
            runs = run_fake(fake, fake_runs, args.seed, run_dir, say)
        if real:
            real_done = run_real_faults(
                real, runs=real_runs, seed=args.seed, run_dir=run_dir / "real", progress=say
            )
    OUT.mkdir(parents=True, exist_ok=True)
    if fake:
        print("\n" + faults.fault_table(runs))
        for fault in fake:
            print(f"  {fault}: {faults.FAULTS[fault]}")
        (OUT / "faults.json").write_text(json.dumps([asdict(r) for r in runs], indent=2))
    if real:
        print("\n" + storm_faults.fault_table(real_done))
        for real_fault in real:
            print(f"  {real_fault}: {REAL_FAULTS[real_fault]}")
        (OUT / "real-faults.json").write_text(json.dumps(storm_faults.as_json(real_done), indent=2))
    failed = [r for r in runs if r.problems] + [r for r in real_done if r.problems]
    total = len(runs) + len(real_done)
    lost = ", nothing lost" if real else ""
    print(f"\n{total - len(failed)} of {total} runs converged with nothing added twice{lost}")
    return 1 if failed else 0


def run_fake(
    chosen: Sequence[Fault], runs: int, seed: int, run_dir: Path, say: Callable[[str], None]
) -> list[faults.FaultRun]:
    """The faults of the fake-Nimbus bed and the metrics bed, on one control plane."""
    done: list[faults.FaultRun] = []
    with ControlPlane(run_dir / "kube", bin_dir=binaries.ensure_binaries()) as plane:
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        with ExitStack() as beds:
            bed = mbed = None
            for fault in chosen:
                if fault in faults.FAKE_BED:
                    bed = bed or beds.enter_context(faults.fault_bed(plane, api, run_dir))
                    done += faults.run_faults(bed, fault, runs=runs, seed=seed, progress=say)
                else:
                    mbed = mbed or beds.enter_context(metrics_faults.metrics_bed(plane, api, run_dir))
                    done += metrics_faults.run_metrics_faults(mbed, fault, runs=runs, progress=say)
    return done


if __name__ == "__main__":
    raise SystemExit(main())
