"""A replica workload for pod-runner tests (run as a script, standard library only).

``spin`` counts loop iterations as fast as the CPU allows and prints ``<monotonic seconds> <count>``
four times a second, so a test can compute iterations per second over a window. ``sleep`` idles.
``--fork N`` first starts N copies of itself as child processes, to show that descendants stay in
the replica's cgroup.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

REPORT_EVERY_S = 0.25


def spin() -> None:
    """Count iterations forever, reporting the running total."""
    count = 0
    next_report = time.monotonic()
    while True:
        for _ in range(10_000):
            count += 1
        now = time.monotonic()
        if now >= next_report:
            print(f"{now:.6f} {count}", flush=True)
            next_report = now + REPORT_EVERY_S


def main() -> None:
    """Parse the mode, fork children if asked, then spin or sleep."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["spin", "sleep"])
    parser.add_argument("--fork", type=int, default=0)
    args = parser.parse_args()
    children = [subprocess.Popen([sys.executable, __file__, args.mode]) for _ in range(args.fork)]
    print(f"started, children: {[c.pid for c in children]}", flush=True)
    if args.mode == "spin":
        spin()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
