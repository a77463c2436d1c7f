"""Shared pytest configuration: the test bed's session fixtures are registered here."""

pytest_plugins: list[str] = ["tests.harness.storm_fixtures"]
