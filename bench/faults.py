"""Fault benchmark: the operator SIGKILLed at a random moment of each of ``--runs`` applies (20 by
default), restarted, and what it converged to; prints the fault table (issue 17, item 2).

Run: ``make bench-faults`` (or ``.venv/bin/python -m bench.faults [--runs 20] [--seed 17]``), about
8 minutes, under the real-stack lock of ``make accuracy``. A real control plane with the CRD; Storm
and Prometheus behind the light fakes of ``tests/harness/fakes``; each run and its checks are
described in :mod:`tests.harness.tools.operator_faults` (tests/integration/test_operator_faults.py
runs 4 of them in ``make test``). Writes ``bench/out/faults.json`` (every run).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict

from kubernetes import config

from bench.accuracy import heavy_lock
from bench.fleet import OUT
from tests.harness.kubernetes import binaries
from tests.harness.kubernetes.control_plane import ControlPlane
from tests.harness.process import new_run_dir
from tests.harness.tools import operator_faults as faults


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="applies, each with one kill (default 20)")
    parser.add_argument("--seed", type=int, default=17, help="seed of the kill delays")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run_dir = new_run_dir("faults-")
    print(f"fault benchmark: {args.runs} kills, logs in {run_dir}", flush=True)
    with heavy_lock(), ControlPlane(run_dir / "kube", bin_dir=binaries.ensure_binaries()) as plane:
        api = config.new_client_from_config(config_file=str(plane.kubeconfig))
        with faults.fault_bed(plane, api) as fakes:
            runs = faults.run_kills(
                plane,
                api,
                fakes,
                run_dir,
                runs=args.runs,
                seed=args.seed,
                progress=lambda s: print(s, flush=True),
            )
    print("\n" + faults.fault_table(runs))
    failed = [r for r in runs if r.problems]
    print(f"\n{len(runs) - len(failed)} of {len(runs)} runs converged with nothing added twice")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "faults.json").write_text(json.dumps([asdict(r) for r in runs], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
