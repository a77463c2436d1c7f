"""Shared pytest configuration: the test bed's session fixtures are registered here."""

pytest_plugins: list[str] = [
    "tests.harness.kubernetes.fixtures",
    "tests.harness.storm.fixtures",
    "tests.harness.prometheus.fixtures",
]
