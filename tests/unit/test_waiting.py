"""The one poll loop (tests/harness/waiting.py): what it returns, when it gives up, what it says."""

from __future__ import annotations

import itertools

import pytest

from tests.harness.waiting import SHOWN_CHARS, WaitTimeoutError, seconds_until, timed_out, wait_for


class Exited:
    """A daemon that has exited with ``code``."""

    def __init__(self, code: int | None) -> None:
        self.code = code

    def exited(self) -> int | None:
        return self.code

    def failure(self, reason: str) -> Exception:
        return RuntimeError(f"fake {reason}")


def test_returns_the_first_truthy_value_of_the_check() -> None:
    values = iter([0, None, "", {"ready": True}, {"later": True}])
    assert wait_for(lambda: next(values), 5, "a value", every_s=0) == {"ready": True}


def test_names_what_it_waited_for_and_the_last_value_when_time_runs_out() -> None:
    counter = itertools.count()
    with pytest.raises(
        WaitTimeoutError, match=r"not within 0\.05 s: the budget applied \(last seen: False\)"
    ):
        wait_for(lambda: next(counter) < 0, 0.05, "the budget applied", every_s=0.01)


def test_a_wait_that_is_an_assertion_fails_a_test_and_its_error_can_be_chosen() -> None:
    assert issubclass(WaitTimeoutError, AssertionError)
    with pytest.raises(KeyError):
        wait_for(lambda: None, 0, "x", every_s=0, error=KeyError)


def test_without_raising_it_returns_the_last_value_seen() -> None:
    values = iter([None, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    assert wait_for(lambda: next(values, 0), 0.02, "x", every_s=0.01, raise_on_timeout=False) == 0


def test_an_exited_daemon_fails_the_wait_at_once_with_its_own_failure() -> None:
    calls = itertools.count()
    with pytest.raises(RuntimeError, match="fake exited with code 3 while waiting for Ready"):
        wait_for(lambda: next(calls) < 0, 60, "Ready", daemons=[Exited(None), Exited(3)])
    assert next(calls) == 0  # the exit is seen before the check, and no minute of polling


def test_seconds_until_times_the_wait_and_says_none_when_it_gives_up() -> None:
    values = iter([False, False, True])
    took = seconds_until(lambda: next(values), 5, "x", every_s=0.01)
    assert 0.02 <= took < 1
    assert seconds_until(lambda: False, 0.02, "x", every_s=0.01, raise_on_timeout=False) is None


def test_a_long_last_value_is_cut_in_the_message() -> None:
    said = timed_out("Ready", 60, {"status": "x" * 10_000})
    assert said.startswith("not within 60 s: Ready (last seen: {'status': 'xxx")
    assert len(said) < SHOWN_CHARS + 60
    assert said.endswith(" …)")
