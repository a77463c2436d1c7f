"""The in-process engine's allocator: Arrow's buffers from ``malloc`` in a long-running process,
unless the user's ``ARROW_DEFAULT_MEMORY_POOL`` chose one (each case in a fresh interpreter: the
allocator is the process's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from stormscale.aggregation.local import ARROW_POOL_ENV

CHOSEN = "from stormscale.aggregation import use_system_allocator; print(use_system_allocator())"


def allocator_after_the_call(environ: dict[str, str]) -> str:
    answer = subprocess.run(
        [sys.executable, "-c", CHOSEN], env=environ, capture_output=True, text=True, timeout=120, check=True
    )
    return answer.stdout.strip()


def test_without_a_choice_arrow_allocates_with_malloc() -> None:
    environ = {k: v for k, v in os.environ.items() if k != ARROW_POOL_ENV}
    assert allocator_after_the_call(environ) == "system"


@pytest.mark.parametrize("pool", ["mimalloc", "jemalloc"])
def test_the_user_s_choice_of_allocator_is_kept(pool: str) -> None:
    assert allocator_after_the_call({**os.environ, ARROW_POOL_ENV: pool}) == pool
