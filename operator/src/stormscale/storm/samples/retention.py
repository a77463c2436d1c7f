"""Bounded retention of exported samples: ``<root>/topology=<name>/hour=<YYYY-MM-DDTHH>/`` partitions
whose hour ended before ``now - retention`` are deleted by the exporter's run.

A partition for hour ``h`` covers ``[h, h + 1h)``; it is expired when ``h + 1h <= now - retention``.
"""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

HOUR_FORMAT = "%Y-%m-%dT%H"
_RETENTION = re.compile(r"^([1-9][0-9]*)([hd])$")


def parse_retention(text: str) -> timedelta:
    """``"48h"`` → 48 hours, ``"2d"`` → 2 days; anything else raises ``ValueError`` (one line)."""
    match = _RETENTION.match(text.strip())
    if match is None:
        raise ValueError(f"retention must look like 48h or 2d, got {text!r}")
    count, unit = int(match.group(1)), match.group(2)
    return timedelta(hours=count) if unit == "h" else timedelta(days=count)


def partition_hour(name: str) -> datetime | None:
    """``hour=2026-11-28T16`` → that hour in UTC; any other directory name → ``None`` (left alone)."""
    if not name.startswith("hour="):
        return None
    try:
        return datetime.strptime(name.removeprefix("hour="), HOUR_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def is_expired(hour: datetime, now: datetime, retention: timedelta) -> bool:
    """Expired when the hour's end ``hour + 1h`` is at or before ``now - retention``."""
    return hour + timedelta(hours=1) <= now - retention


def expired_partitions(root: Path, now: datetime, retention: timedelta) -> list[Path]:
    """The ``topology=*/hour=*`` directories under ``root`` that ``retention`` has expired, sorted."""
    found: list[Path] = []
    for topology in sorted(root.glob("topology=*")):
        for partition in sorted(topology.glob("hour=*")):
            hour = partition_hour(partition.name)
            if partition.is_dir() and hour is not None and is_expired(hour, now, retention):
                found.append(partition)
    return found


def prune(root: Path, now: datetime, retention: timedelta) -> list[Path]:
    """Delete the expired partitions under ``root``; returns what was deleted."""
    expired = expired_partitions(root, now, retention)
    for partition in expired:
        shutil.rmtree(partition)
    return expired
