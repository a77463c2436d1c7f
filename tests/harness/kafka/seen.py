"""What a sink saw: the keys a CpuBolt with ``--seen-dir`` appended to ``seen-<task>.txt``, one per line.

Each sink task writes its own file before it acks a tuple, so after the topology has drained, every
key it acked is there; at-least-once delivery may repeat a key (a replayed tuple), never lose one.
:func:`read_seen` counts the keys of every file of a folder; :func:`compare` sets them against the
keys a load generator produced (``0 .. n-1``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PATTERN = "seen-*.txt"


def read_seen(folder: Path) -> Counter[int]:
    """How often each key appears in ``folder``'s seen files (a torn last line is not counted)."""
    counts: Counter[int] = Counter()
    for path in sorted(folder.glob(PATTERN)):
        for line in path.read_text().split("\n")[:-1]:  # complete lines only
            counts[int(line)] += 1
    return counts


@dataclass(frozen=True)
class SeenReport:
    """The sink's keys against ``0 .. produced-1``."""

    produced: int
    lines: int
    distinct: int
    missing: tuple[int, ...]
    unexpected: tuple[int, ...]

    @property
    def duplicates(self) -> int:
        """Lines beyond the first for each key (at-least-once replays)."""
        return self.lines - self.distinct

    @property
    def complete(self) -> bool:
        """Every produced key seen, and nothing else."""
        return not self.missing and not self.unexpected

    def __str__(self) -> str:
        missing = (
            f"{len(self.missing)} missing (first {list(self.missing[:10])})"
            if self.missing
            else "none missing"
        )
        extra = f", {len(self.unexpected)} never produced" if self.unexpected else ""
        return (
            f"{self.distinct} of {self.produced} keys seen in {self.lines} lines "
            f"({self.duplicates} duplicates), {missing}{extra}"
        )


def compare(counts: Counter[int], produced: int) -> SeenReport:
    """``counts`` (from :func:`read_seen`) against the keys ``0 .. produced-1``."""
    expected = range(produced)
    missing = tuple(k for k in expected if k not in counts)
    unexpected = tuple(sorted(k for k in counts if not 0 <= k < produced))
    return SeenReport(produced, sum(counts.values()), len(counts), missing, unexpected)
