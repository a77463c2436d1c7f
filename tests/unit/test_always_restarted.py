"""The test bed's restartPolicy-Always stand-in: a daemon that exits is started again, one that was
stopped is not."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.harness.process import AlwaysRestarted, LaunchSpec
from tests.harness.waiting import wait_for


def spec(tmp_path: Path, code: str) -> LaunchSpec:
    log = tmp_path / "daemon.log"
    return LaunchSpec("short-lived", [sys.executable, "-c", code], {}, tmp_path, log, log)


def test_a_daemon_that_exits_is_started_again_with_the_same_spec(tmp_path: Path) -> None:
    marker = tmp_path / "starts"
    code = f"open({str(marker)!r}, 'a').write('x')"  # each start appends one x, then exits
    kept = AlwaysRestarted(spec(tmp_path, code), backoff_s=0.05, every_s=0.05)
    try:
        wait_for(lambda: kept.restarts >= 2, 30, "two restarts")
        wait_for(lambda: marker.exists() and len(marker.read_text()) >= 3, 30, "three starts")
    finally:
        kept.stop()


def test_a_stopped_daemon_stays_stopped(tmp_path: Path) -> None:
    kept = AlwaysRestarted(spec(tmp_path, "import time; time.sleep(60)"), backoff_s=0.05, every_s=0.05)
    first = kept.daemon
    kept.stop(grace_s=5)
    assert first.exited() is not None
    assert kept.daemon is first
    assert kept.restarts == 0
