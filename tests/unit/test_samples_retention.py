"""Retention of exported sample partitions: parsing, the expiry boundary, pruning on disk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from stormscale.storm.samples.retention import (
    expired_partitions,
    is_expired,
    parse_retention,
    partition_hour,
    prune,
)

NOW = datetime(2026, 11, 28, 16, 30, tzinfo=UTC)


def test_parse_retention_hours_and_days() -> None:
    assert parse_retention("48h") == timedelta(hours=48)
    assert parse_retention("2d") == timedelta(days=2)


@pytest.mark.parametrize("text", ["", "0h", "48", "-1h", "1w", "h", "1.5h"])
def test_parse_retention_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError, match="retention must look like"):
        parse_retention(text)


def test_partition_hour_reads_only_hour_directories() -> None:
    assert partition_hour("hour=2026-11-28T16") == datetime(2026, 11, 28, 16, tzinfo=UTC)
    assert partition_hour("hour=yesterday") is None
    assert partition_hour("part.parquet") is None


def test_expiry_boundary_is_the_end_of_the_hour() -> None:
    retention = timedelta(hours=2)
    # now - retention = 14:30; the 13h partition ends at 14:00 (expired), the 14h one at 15:00 (kept).
    assert is_expired(datetime(2026, 11, 28, 13, tzinfo=UTC), NOW, retention)
    assert not is_expired(datetime(2026, 11, 28, 14, tzinfo=UTC), NOW, retention)


def _partition(root: Path, topology: str, hour: str) -> Path:
    path = root / f"topology={topology}" / f"hour={hour}"
    path.mkdir(parents=True)
    (path / "part.parquet").write_bytes(b"x")
    return path


def test_prune_deletes_only_expired_partitions(tmp_path: Path) -> None:
    old = _partition(tmp_path, "wordcount", "2026-11-26T10")
    kept = _partition(tmp_path, "wordcount", "2026-11-28T15")
    other_old = _partition(tmp_path, "sized", "2026-11-26T15")
    (tmp_path / "wordcount.json").write_text("{}")
    deleted = prune(tmp_path, NOW, parse_retention("48h"))
    assert deleted == [other_old, old]
    assert not old.exists()
    assert not other_old.exists()
    assert kept.exists()
    assert (tmp_path / "wordcount.json").exists()
    assert expired_partitions(tmp_path, NOW, parse_retention("48h")) == []
