"""What the operator's process holds that a pass of a healthy topology does not need: modules imported
at startup (each adds to the RSS of every replica) and per-resource state kept after a deletion."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import kopf
import pytest

from stormscale.operator import handlers
from stormscale.operator.kept_profiles import ProfileMemory
from stormscale.storm.errors import forget_secrets, redact, register_secrets, registered_owners

from .test_kept_profiles import BASELINE, _profile
from .test_reconcile import T0

#: Parquet's reader and writer (pyarrow.parquet, pyarrow.dataset): about 16 MiB of RSS at import, for
#: files only the offline aggregation reads or writes; the operator profiles from in-memory tables.
PARQUET_MODULES = ("pyarrow.parquet", "pyarrow.dataset", "pyarrow._parquet", "pyarrow._dataset")


def test_the_operator_imports_no_parquet_reader_or_writer() -> None:
    probe = (
        "import sys, stormscale.operator.handlers\n"
        f"print(','.join(m for m in {PARQUET_MODULES!r} if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == ""


def test_a_deleted_resource_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its pass lock, its kept profile and its registered secrets go with its ``DELETED`` watch event;
    another resource's stay."""
    monkeypatch.setattr(handlers, "_LOCKS", {})
    monkeypatch.setattr(handlers, "PROFILES", ProfileMemory(fresh_s=600))
    for uid, name in (("u-gone", "gone"), ("u-kept", "kept")):
        handlers._lock_for(uid)
        assert handlers.PROFILES.keep(uid, "inputs", BASELINE, _profile(), T0)
        register_secrets(f"streaming/{name}", [f"secret-of-{name}"])
    body = kopf.Body({"metadata": {"namespace": "streaming", "name": "gone", "uid": "u-gone"}})

    for event in ("MODIFIED", "DELETED"):
        assert set(handlers._LOCKS) == {"u-gone", "u-kept"}
        # kopf types the handler as its callback protocol; it takes these two and ignores the rest
        asyncio.run(handlers.on_event(type=event, body=body))  # type: ignore[call-arg, arg-type]

    assert set(handlers._LOCKS) == {"u-kept"}
    assert handlers.PROFILES.age("u-gone", T0) is None
    assert handlers.PROFILES.age("u-kept", T0) == 0
    assert "streaming/gone" not in registered_owners()
    assert "streaming/kept" in registered_owners()
    assert redact("secret-of-gone, secret-of-kept") == "secret-of-gone, ***"
    forget_secrets("streaming/kept")
