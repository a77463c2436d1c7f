"""The sink's seen files: keys counted, duplicates and missing keys found."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.harness.kafka.seen import compare, read_seen


def test_seen_keys_count_duplicates_and_missing(tmp_path: Path) -> None:
    (tmp_path / "seen-7.txt").write_text("0\n1\n2\n")
    (tmp_path / "seen-8.txt").write_text("3\n1\n5\n4")  # a torn last line is not counted
    (tmp_path / "other.txt").write_text("99\n")
    counts = read_seen(tmp_path)
    assert counts == Counter({0: 1, 1: 2, 2: 1, 3: 1, 5: 1})
    report = compare(counts, 6)
    assert (report.lines, report.distinct, report.duplicates) == (6, 5, 1)
    assert report.missing == (4,)
    assert not report.complete
    assert "1 missing" in str(report)
    assert compare(counts, 4).unexpected == (5,)
    assert compare(Counter({0: 1, 1: 3}), 2).complete
