"""The scheduled export: which hours a run rewrites, the partition layout, the structure from Nimbus,
one topology's failure kept to itself, and the layout read back by the aggregation's engines.

Nimbus and Prometheus are small in-test stand-ins (the export's own logic is under test; the real
daemons are exercised by the test bed's export → publish test)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.schema import AggregationError, files_of, parquet_files, partition_topology
from stormscale.samples import Sample
from stormscale.storm.errors import NimbusUnavailableError
from stormscale.storm.model import (
    ComponentSpec,
    Executor,
    Kind,
    StreamId,
    TopologyInfo,
    TopologyStructure,
    TopologySummary,
)
from stormscale.storm.samples import PrometheusUnavailableError, Window
from stormscale.storm.samples.export import (
    HOUR_S,
    export_topology,
    hour_slices,
    main,
    partition_file,
    report,
    running_topologies,
    usable_name,
)

#: 2026-11-28 16:20:00 UTC
END = int(datetime(2026, 11, 28, 16, 20, tzinfo=UTC).timestamp())
H16 = END - 20 * 60


def test_a_run_rewrites_every_hour_its_lookback_touches_each_from_its_start() -> None:
    slices = hour_slices(END, 3600, 10)
    assert [s.label for s in slices] == ["2026-11-28T15", "2026-11-28T16"]
    assert slices[0].window == Window(H16 - HOUR_S, H16 - 10, 10)  # the whole hour, one step short
    assert slices[1].window == Window(H16, END, 10)  # the current hour so far


def test_consecutive_hours_neither_overlap_nor_leave_a_step_out() -> None:
    first, second = hour_slices(END, 3600, 10)
    assert second.window.start - first.window.end == 10


def test_an_hour_that_starts_at_the_end_is_left_for_the_next_run() -> None:
    assert [s.label for s in hour_slices(H16, 600, 10)] == ["2026-11-28T15"]


@pytest.mark.parametrize("name", ["", "a/b", "..", "a.b", "c:d"])
def test_a_name_that_cannot_be_a_directory_is_refused(name: str) -> None:
    assert usable_name(name) is not None


def test_a_storm_topology_name_is_a_directory() -> None:
    assert usable_name("word-count_2") is None


def sample(ts_s: int, topology: str, metric: str = "executed_total", value: float = 1.0) -> Sample:
    return Sample(ts_s * 1000, topology, "count", "[2-2]", metric, "default", "split", value)


@dataclass
class Nimbus:
    """Two running topologies: ``spout`` → ``count``."""

    failing: set[str] = field(default_factory=set)

    def topologies(self) -> tuple[TopologySummary, ...]:
        return tuple(
            TopologySummary(f"{name}-1-1", name, status, 1, 2, 2, 60)
            for name, status in (("alpha", "ACTIVE"), ("beta", "ACTIVE"), ("gamma", "KILLED"))
        )

    def topology(self, name: str) -> TopologySummary | None:
        if name in self.failing:
            raise NimbusUnavailableError(f"Nimbus 127.0.0.1:6627: no answer for {name}")
        return next((t for t in self.topologies() if t.name == name), None)

    def structure(self, topology_id: str) -> TopologyStructure:
        return TopologyStructure(
            {
                "spout": ComponentSpec("spout", Kind.SPOUT, {}, ("default",), 1),
                "count": ComponentSpec("count", Kind.BOLT, {StreamId("spout", "default"): "shuffle"}, (), 2),
            }
        )

    def topology_info(self, name: str) -> TopologyInfo:
        executors = (
            Executor("spout", 1, 1, "h", 6700, 60),
            Executor("count", 2, 3, "h", 6700, 60),
            Executor("__acker", 4, 4, "h", 6700, 60),
        )
        return TopologyInfo(f"{name}-1-1", name, "ACTIVE", 60, executors)


@dataclass
class Prometheus:
    """One sample at each window's start; ``empty`` topologies have none; ``failing`` ones fail."""

    empty: set[str] = field(default_factory=set)
    failing: set[str] = field(default_factory=set)
    asked: list[tuple[str, Window]] = field(default_factory=list)

    def read(self, topology: str, window: Window) -> list[Sample]:
        self.asked.append((topology, window))
        if topology in self.failing:
            raise PrometheusUnavailableError("Prometheus http://127.0.0.1:9090: no answer within 10s")
        return (
            [] if topology in self.empty else [sample(window.start, topology), sample(window.end, topology)]
        )


def export(root: Path, name: str, nimbus: Any, prometheus: Any) -> Any:
    return export_topology(name, nimbus, prometheus, root, hour_slices(END, 3600, 10))


def test_each_hour_lands_in_its_partition_with_the_structure_beside(tmp_path: Path) -> None:
    result = export(tmp_path, "alpha", Nimbus(), Prometheus())
    assert result.failure is None
    files = [path for path, _ in result.written]
    assert files == [partition_file(tmp_path, "alpha", s) for s in hour_slices(END, 3600, 10)]
    assert files[1] == tmp_path / "topology=alpha" / "hour=2026-11-28T16" / "samples.parquet"
    table = pq.read_table(files[1])
    assert table.column("ts").cast(pa.int64()).to_pylist() == [H16 * 1000, END * 1000]
    structure = json.loads((tmp_path / "structures" / "alpha.json").read_text())
    assert structure == {
        "topology": "alpha",
        "components": [
            {"id": "count", "kind": "bolt", "children": [], "tasks": 2},
            {"id": "spout", "kind": "spout", "children": ["count"], "tasks": 1},
        ],
    }


def test_a_rerun_replaces_an_hour_and_leaves_no_partial_file(tmp_path: Path) -> None:
    export(tmp_path, "alpha", Nimbus(), Prometheus())
    export(tmp_path, "alpha", Nimbus(), Prometheus())
    hour = tmp_path / "topology=alpha" / "hour=2026-11-28T16"
    assert sorted(p.name for p in hour.iterdir()) == ["samples.parquet"]
    assert pq.read_table(hour / "samples.parquet").num_rows == 2


def test_an_hour_without_samples_is_not_written(tmp_path: Path) -> None:
    result = export(tmp_path, "alpha", Nimbus(), Prometheus(empty={"alpha"}))
    assert (result.failure, result.written) == (None, ())
    assert not (tmp_path / "topology=alpha").exists()


@pytest.mark.parametrize(
    ("nimbus", "prometheus", "named"),
    [
        (Nimbus(failing={"alpha"}), Prometheus(), "NimbusUnavailableError"),
        (Nimbus(), Prometheus(failing={"alpha"}), "PrometheusUnavailableError"),
    ],
)
def test_a_failure_is_one_line_naming_it(
    tmp_path: Path, nimbus: Nimbus, prometheus: Prometheus, named: str
) -> None:
    result = export(tmp_path, "alpha", nimbus, prometheus)
    assert result.failure is not None
    assert result.failure.startswith(named)
    assert "\n" not in result.failure
    lines: list[str] = []
    assert report([result], print, lines.append) == 1
    assert lines == [f"stormscale-samples-export: alpha: not exported: {result.failure}"]


def test_every_active_topology_unless_named(tmp_path: Path) -> None:
    assert running_topologies(Nimbus(), []) == ["alpha", "beta"]  # type: ignore[arg-type]
    assert running_topologies(Nimbus(), ["beta", "beta"]) == ["beta"]  # type: ignore[arg-type]


def test_the_layout_is_read_back_as_files_without_partition_columns(tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        export(tmp_path, name, Nimbus(), Prometheus())
    (tmp_path / "topology=alpha" / "_SUCCESS").write_text("")
    files = parquet_files([str(tmp_path)])
    assert len(files) == 4
    assert all(f.endswith("samples.parquet") for f in files)
    assert parquet_files(["s3://bucket/samples"]) == ["s3://bucket/samples"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(AggregationError, match="no Parquet files under"):
        parquet_files([str(tmp_path / "empty")])


@pytest.mark.parametrize(
    "argv",
    [
        ["--prometheus", "http://p", "--root", "r"],  # no --nimbus
        ["--prometheus", "http://p", "--nimbus", "n:x", "--root", "r"],
        ["--prometheus", "http://p", "--nimbus", "n", "--root", "r", "--retention", "1w"],
        ["--prometheus", "http://p", "--nimbus", "n", "--root", "r", "--lookback", "72h"],
        ["--prometheus", "http://p", "--nimbus", "n", "--root", "r", "--step", "2h"],
    ],
)
def test_bad_arguments_are_one_line_and_status_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("stormscale-samples-export: error:")


def test_a_group_opens_only_the_partitions_of_its_topologies(tmp_path: Path) -> None:
    """A task of the grouped engine reads its group's partitions; another topology's file is not even
    opened (here it is no Parquet at all: opening it would fail)."""
    export(tmp_path, "alpha", Nimbus(), Prometheus())
    broken = tmp_path / "topology=beta" / "hour=2026-11-28T16" / "samples.parquet"
    broken.parent.mkdir(parents=True)
    broken.write_bytes(b"not parquet")
    files = parquet_files([str(tmp_path)])
    assert files_of(files, ["alpha"]) == [f for f in files if "topology=alpha" in f]
    assert partition_topology(str(broken)) == "beta"
    assert partition_topology("/data/samples.parquet") is None
    rows = local.read([str(tmp_path)], ["alpha"], Params())
    assert set(rows.column("topology").to_pylist()) == {"alpha"}
    assert rows.num_rows == 4  # two hours of two samples each
    assert local.read([str(tmp_path)], ["gamma"], Params()).num_rows == 0  # no partition of its own
    with pytest.raises(AggregationError, match="cannot read"):
        local.read([str(tmp_path)], ["beta"], Params())


def test_a_group_does_not_even_walk_the_partitions_of_other_topologies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing the fleet's files in every task cost a second a task at 1,000 topologies' day: a group
    enters only its own ``topology=`` directories (and those that name none)."""
    for name in ("alpha", "beta"):
        export(tmp_path, name, Nimbus(), Prometheus())
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "x.parquet").write_bytes(b"")
    everything = parquet_files([str(tmp_path)])
    entered: list[str] = []
    scandir = os.scandir

    def recording(path: str) -> Any:
        entered.append(path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    files = parquet_files([str(tmp_path)], ["alpha"])
    assert files == [f for f in everything if "topology=beta" not in f]
    assert not [p for p in entered if "topology=beta" in p]
    assert any("topology=alpha" in p for p in entered)
    assert parquet_files([str(tmp_path / "loose")], ["gamma"]) == [str(tmp_path / "loose" / "x.parquet")]
