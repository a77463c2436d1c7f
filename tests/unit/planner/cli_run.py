"""The planner's command line as users run it: a subprocess, its output captured."""

from __future__ import annotations

import subprocess
import sys


def run_cli(*args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``python -m stormscale.planner.cli ARGS``; never raises on its exit status."""
    return subprocess.run(
        [sys.executable, "-m", "stormscale.planner.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_s,
    )
