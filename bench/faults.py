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
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import asdict

from kubernetes import config

from bench import metrics_faults
from bench import operator_faults as faults
from bench.accuracy import heavy_lock
from bench.fleet import OUT
from bench.operator_faults import Fault
from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import new_run_dir


def parse_faults(text: str) -> list[Fault]:
    """``--faults``: names separated by commas (``all``: every fault), in the order given."""
    if text.strip() == "all":
        return list(Fault)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in {f.value for f in Fault}]
    if unknown or not names:
        known = ", ".join(f.value for f in Fault)
        raise argparse.ArgumentTypeError(f"unknown fault {', '.join(unknown) or '(none)'}; known: {known}")
    return [Fault(n) for n in dict.fromkeys(names)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--faults", type=parse_faults, default=list(Fault), help="faults to inject, comma-separated (all)"
    )
    parser.add_argument("--runs", type=int, default=20, help="applies per fault, each with one fault (20)")
    parser.add_argument("--seed", type=int, default=17, help="seed of the fault delays")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run_dir = new_run_dir("faults-")
    names = ", ".join(args.faults)
    print(f"fault benchmark: {args.runs} runs of {names}; logs in {run_dir}", flush=True)
    runs: list[faults.FaultRun] = []
    with heavy_lock(), ControlPlane(run_dir / "kube", bin_dir=binaries.ensure_binaries()) as plane:
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        with ExitStack() as beds:
            bed = mbed = None
            for fault in args.faults:
                say = lambda s: print(s, flush=True)  # noqa: E731
                if fault in faults.FAKE_BED:
                    bed = bed or beds.enter_context(faults.fault_bed(plane, api, run_dir))
                    runs += faults.run_faults(bed, fault, runs=args.runs, seed=args.seed, progress=say)
                else:
                    mbed = mbed or beds.enter_context(metrics_faults.metrics_bed(plane, api, run_dir))
                    runs += metrics_faults.run_metrics_faults(mbed, fault, runs=args.runs, progress=say)
    print("\n" + faults.fault_table(runs))
    for fault in args.faults:
        print(f"  {fault}: {faults.FAULTS[fault]}")
    failed = [r for r in runs if r.problems]
    print(f"\n{len(runs) - len(failed)} of {len(runs)} runs converged with nothing added twice")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "faults.json").write_text(json.dumps([asdict(r) for r in runs], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
