"""Shared pytest configuration: the test bed's session fixtures are registered here; a run that
skipped a test fails; SIGTERM stops a run as Ctrl-C does (fixtures stop the daemons they started)."""

from __future__ import annotations

import os

import pytest

from tests.harness.process import interrupt_on_sigterm

pytest_plugins: list[str] = [
    "tests.harness.kubernetes.fixtures",
    "tests.harness.storm.fixtures",
    "tests.harness.prometheus.fixtures",
    "tests.harness.kafka.fixtures",
]


def pytest_configure(config: pytest.Config) -> None:
    """A run stopped by SIGTERM (a CI timeout, ``kill``) tears its fixtures down like Ctrl-C: without
    this, Python dies at once and leaves the test bed's JVMs, etcd and Prometheus running."""
    interrupt_on_sigterm()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A skipped test is a missing dependency hidden from CI: a run of the whole suite that skipped
    any fails (``STORMSCALE_ALLOW_SKIPS=1`` permits it, for a partial local setup)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    skipped = len(reporter.stats.get("skipped", []))
    if skipped and exitstatus == pytest.ExitCode.OK and os.environ.get("STORMSCALE_ALLOW_SKIPS") != "1":
        reporter.ensure_newline()
        reporter.write_line(f"{skipped} test(s) skipped: each hides a missing dependency (see -rs)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
