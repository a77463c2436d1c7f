"""The suite's own guards (tests/conftest.py): SIGTERM tears fixtures down, and a skip fails the run;
a benchmark stopped by SIGTERM stops what it started too (bench/__init__.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.harness.waiting import wait_for

REPO = Path(__file__).parents[2]

SLOW_TEST = """
import time
import pytest

@pytest.fixture
def resource(tmp_path_factory):
    yield
    open({marker!r}, "w").write("torn down")

def test_waits(resource):
    open({started!r}, "w").write("started")
    time.sleep(120)
"""


def run_pytest(test_file: Path, **env: str) -> subprocess.Popen[str]:
    """``python -m pytest test_file`` from the repository (so that tests/conftest.py applies)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_file(path: Path, timeout_s: float) -> bool:
    return wait_for(path.exists, timeout_s, f"{path}", every_s=0.1, raise_on_timeout=False)


def test_sigterm_runs_the_fixture_teardown(tmp_path: Path) -> None:
    marker, started = tmp_path / "marker", tmp_path / "started"
    test_file = REPO / "tests" / "unit" / f"test_zz_sigterm_{os.getpid()}.py"
    test_file.write_text(SLOW_TEST.format(marker=str(marker), started=str(started)))
    try:
        run = run_pytest(test_file)
        assert wait_for_file(started, 60), run.communicate(timeout=5)[0] if run.poll() is not None else ""
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=60)
    finally:
        test_file.unlink()
    assert marker.read_text() == "torn down", output
    assert run.returncode != 0


SLOW_BENCH = """
import contextlib, time
import bench

@contextlib.contextmanager
def daemon():
    try:
        yield
    finally:
        open({marker!r}, "w").write("stopped")

with daemon():
    open({started!r}, "w").write("started")
    time.sleep(120)
"""


def test_sigterm_stops_a_benchmark_s_daemons(tmp_path: Path) -> None:
    marker, started = tmp_path / "marker", tmp_path / "started"
    run = subprocess.Popen(
        [sys.executable, "-c", SLOW_BENCH.format(marker=str(marker), started=str(started))],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert wait_for_file(started, 60), run.communicate(timeout=5)[0] if run.poll() is not None else ""
    run.send_signal(signal.SIGTERM)
    output, _ = run.communicate(timeout=60)
    assert marker.read_text() == "stopped", output
    assert run.returncode != 0


def test_a_skipped_test_fails_the_run_unless_skips_are_allowed(tmp_path: Path) -> None:
    test_file = REPO / "tests" / "unit" / f"test_zz_skip_{os.getpid()}.py"
    test_file.write_text("import pytest\n\ndef test_skips():\n    pytest.skip('no dependency')\n")
    try:
        strict = run_pytest(test_file)
        strict_output, _ = strict.communicate(timeout=120)
        allowed = run_pytest(test_file, STORMSCALE_ALLOW_SKIPS="1")
        allowed.communicate(timeout=120)
    finally:
        test_file.unlink()
    assert strict.returncode == 1, strict_output
    assert "hides a missing dependency" in strict_output
    assert allowed.returncode == 0
