"""Shared pytest configuration: the test bed's session fixtures are registered here."""

pytest_plugins: list[str] = ["tests.harness.kube_fixtures", "tests.harness.storm_fixtures"]
