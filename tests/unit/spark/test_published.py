"""The published profile's ConfigMap (format, name, labels, parser) and the fleet job's command line
with the single-process engine and a recording fleet (no JVM, no API server: the real ones are in
tests/integration/test_published_profiles.py)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from stormscale.aggregation import published
from stormscale.aggregation.published import (
    MAX_BYTES,
    MAX_DEPTH,
    PublishedError,
    configmap,
    configmap_name,
    nesting_depth,
    owner_label,
    parse_published,
    read_document,
)
from stormscale.planner import read_profile
from stormscale.publish import cli
from stormscale.publish.targets import Target, targets
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import PROFILES, thesis

LINEAR = thesis("linear")
DIAMOND = thesis("diamond")
START = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


def document(topology: str = "linear") -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((PROFILES / "thesis-linear.json").read_text(encoding="utf-8"))
    return {**raw, "topology": topology, "confidence": {"steady": True, "unstable": [], "notes": []}}


def body(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "namespace": "streaming",
        "stormtopology": "clicks",
        "uid": "uid-1",
        "document": document(),
        "start": START,
        "end": START + timedelta(hours=24),
        "computed_at": START + timedelta(hours=24, minutes=3),
    }
    return configmap(**(arguments | changes))


def test_the_config_map_round_trips_through_the_parser() -> None:
    made = body()
    assert made["metadata"]["name"] == "clicks-profile"
    assert made["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "stormscale",
        "stormscale.io/stormtopology": "clicks",
    }
    assert made["metadata"]["ownerReferences"] == [
        {"apiVersion": "stormscale.io/v1alpha1", "kind": "StormTopology", "name": "clicks", "uid": "uid-1"}
    ]
    assert made["data"]["window"] == "2026-03-01T10:00:00Z/2026-03-02T10:00:00Z"
    assert json.loads(made["data"]["confidence.json"])["steady"] is True
    parsed = parse_published(made["data"])
    assert parsed.document == document()
    assert (parsed.start, parsed.end) == (START, START + timedelta(hours=24))
    assert parsed.computed_at == START + timedelta(hours=24, minutes=3)
    assert parsed.window == made["data"]["window"]
    assert [c.id for c in parsed.topology.components] == ["1", "2", "3", "4"]
    assert parsed.profile == read_profile(document())  # the typed profile: topology and confidence
    assert parsed.profile.confidence.steady is True


def test_without_a_uid_there_is_no_owner_reference() -> None:
    assert "ownerReferences" not in body(uid=None)["metadata"]


def test_names_and_labels_fit_kubernetes_limits() -> None:
    assert configmap_name("a" * 245) == "a" * 245 + "-profile"
    with pytest.raises(PublishedError, match="too long"):
        configmap_name("a" * 246)
    assert owner_label("clicks") == "clicks"
    long = owner_label("team.streaming." + "x" * 80)
    assert len(long) <= 63
    assert long != owner_label("team.streaming." + "x" * 81)  # the hash keeps them apart
    assert long[0].isalnum()
    assert long[-1].isalnum()


def test_a_profile_too_large_for_a_config_map_is_refused() -> None:
    huge = document() | {"confidence": {"steady": True, "notes": ["x" * MAX_BYTES]}}
    with pytest.raises(PublishedError, match="1 MiB"):
        body(document=huge)


def depth_of(value: Any) -> int:
    """The nesting of a parsed JSON value, counted on the value itself (the oracle)."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize(
    "value",
    [
        0,
        "[{",
        [],
        {"a": [1, 2, {"b": '[[[\\"]]'}]},
        {"x": 'a\\"{', "y": ["\u00e9[", ["ü"]], "z": [[[]], {}]},
        [[[[[[[["deep"]]]]]]]],
        document(),
    ],
)
def test_the_nesting_depth_is_the_documents_skipping_strings_and_escapes(value: Any) -> None:
    assert nesting_depth(json.dumps(value)) == depth_of(value)
    assert nesting_depth(json.dumps(value, ensure_ascii=False, indent=2)) == depth_of(value)


def test_a_refused_profile_is_not_read_again_until_its_text_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The published ConfigMap of ``[`` × 500,000 is read every pass: scanning it each time held the
    interpreter, and every other tenant's pass waited (their p99 3.5× the baseline's)."""
    reads: list[str] = []

    def counted(raw: str, where: str) -> Any:
        reads.append(where)
        return read_document(raw, where)

    monkeypatch.setattr(published, "read_document", counted)
    hostile = body()["data"] | {"profile.json": "[" * 500_000}
    refusals = []
    for _ in range(3):
        with pytest.raises(PublishedError, match="nested too deeply") as refused:
            parse_published(hostile, "ns/hostile-profile")
        refusals.append(str(refused.value))
    assert reads == ["ns/hostile-profile"]
    assert refusals == [refusals[0]] * 3
    with pytest.raises(PublishedError, match="nested too deeply"):
        parse_published(hostile, "ns/other-profile")  # its own message: read for it
    assert parse_published(body()["data"], "ns/hostile-profile").document == document()  # mended: read
    assert reads == ["ns/hostile-profile", "ns/other-profile", "ns/hostile-profile"]


def test_the_refusals_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(published, "_REFUSALS", OrderedDict())
    for i in range(published.REFUSALS_KEPT + 10):
        with pytest.raises(PublishedError):
            parse_published({"profile.json": "[" * (MAX_DEPTH + 1) + str(i)}, f"ns/t{i}-profile")
    assert len(published._REFUSALS) == published.REFUSALS_KEPT
    assert ("ns/t0-profile", hashlib.sha256(("[" * (MAX_DEPTH + 1) + "0").encode()).digest()) not in (
        published._REFUSALS
    )


# --- the fleet job ---------------------------------------------------------------------------------


def stormtopology(
    namespace: str, name: str, topology: str, profile: str | None = "Published"
) -> dict[str, Any]:
    metrics = {"prometheus": "http://p:9090"} | ({"profile": profile} if profile else {})
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"},
        "spec": {"topologyName": topology, "metrics": metrics},
    }


def test_targets_are_the_stormtopologies_that_ask_for_a_published_profile() -> None:
    items = [
        stormtopology("b", "two", "diamond"),
        stormtopology("a", "one", "linear"),
        stormtopology("a", "measured", "linear", profile="InProcess"),
        stormtopology("a", "default", "linear", profile=None),
        {"metadata": {"namespace": "a", "name": "broken"}, "spec": {"metrics": {"profile": "Published"}}},
    ]
    assert targets(items) == [
        Target("a", "one", "linear", "uid-one"),
        Target("b", "two", "diamond", "uid-two"),
    ]
    assert len(targets(items, every=True)) == 4


@dataclass
class Fleet:
    """A recording API server: StormTopologies to list, ConfigMaps applied."""

    items: list[dict[str, Any]]
    applied: list[dict[str, Any]] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)
    listed: list[Sequence[str]] = field(default_factory=list)

    def stormtopologies(self, namespaces: Sequence[str] = ()) -> list[dict[str, Any]]:
        self.listed.append(tuple(namespaces))
        return self.items

    def apply(self, body: Mapping[str, Any]) -> None:
        if body["metadata"]["namespace"] in self.refuse:
            raise RuntimeError(f"apply ConfigMap {body['metadata']['namespace']}/x: 403 Forbidden")
        self.applied.append(dict(body))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """15 minutes of linear and diamond (a rebalance 10 minutes in: too few steady intervals after it)."""
    folder = tmp_path_factory.mktemp("fleet")
    linear = synthetic.Scenario(name="linear", duration_s=900, noise=0.01, seed=1, start=START)
    diamond = synthetic.Scenario(
        name="diamond",
        duration_s=900,
        noise=0.01,
        seed=2,
        start=START,
        rebalance_at_s=780,
        units_after={"3": 2},
    )
    tables = [synthetic.generate(LINEAR, linear), synthetic.generate(DIAMOND, diamond)]
    pq.write_table(pa.concat_tables(tables), folder / "samples.parquet")
    structures = folder / "structures"
    structures.mkdir()
    for topology, scenario in ((LINEAR, linear), (DIAMOND, diamond)):
        document = synthetic.structure(topology, scenario)
        (structures / f"{scenario.name}.json").write_text(json.dumps(document), encoding="utf-8")
    return folder / "samples.parquet", structures


def argv(inputs: tuple[Path, Path], *extra: str) -> list[str]:
    samples, structures = inputs
    end = (START + timedelta(minutes=15)).isoformat()
    return [
        "--samples",
        str(samples),
        "--structure",
        str(structures),
        "--end",
        end,
        "--window",
        "1h",
        "--engine",
        "local",
        *extra,
    ]


def test_every_target_with_a_profile_is_published_and_the_others_are_named(
    inputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = Fleet(
        [
            stormtopology("a", "one", "linear"),
            stormtopology("b", "also-linear", "linear"),
            stormtopology("b", "two", "diamond"),
            stormtopology("c", "three", "unknown"),
        ]
    )
    assert cli.main(argv(inputs, "--namespace", "a", "--namespace", "b"), fleet=fleet) == 1
    assert fleet.listed == [("a", "b")]
    assert [(b["metadata"]["namespace"], b["metadata"]["name"]) for b in fleet.applied] == [
        ("a", "one-profile"),
        ("b", "also-linear-profile"),
    ]
    parsed = parse_published(fleet.applied[0]["data"])
    assert parsed.document["topology"] == "linear"
    assert parsed.start == START
    assert parsed.end == START + timedelta(minutes=15)
    truth = {c.id: c for c in LINEAR.components}
    for c in parsed.topology.components:
        if not c.is_spout:
            assert c.capacity_per_unit == pytest.approx(truth[c.id].capacity_per_unit, rel=0.02)
    out, err = capsys.readouterr()
    assert "a/one-profile: linear, 2026-03-01T10:00:00Z/2026-03-01T10:15:00Z, steady" in out
    lines = err.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("stormscale-publish: b/two: not published: samples: topology 'diamond' has")
    assert "no structure file for topology 'unknown'" in lines[1]


def test_a_refused_apply_is_one_line_and_the_rest_go_on(
    inputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = Fleet([stormtopology("a", "one", "linear"), stormtopology("b", "two", "linear")], refuse={"a"})
    assert cli.main(argv(inputs), fleet=fleet) == 1
    assert [b["metadata"]["namespace"] for b in fleet.applied] == ["b"]
    assert "a/one: not published: apply ConfigMap a/x: 403 Forbidden" in capsys.readouterr().err


def test_nothing_to_do_is_success(inputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    fleet = Fleet([stormtopology("a", "one", "linear", profile="InProcess")])
    assert cli.main(argv(inputs), fleet=fleet) == 0
    assert "no StormTopology asks for a published profile" in capsys.readouterr().out
    assert cli.main(argv(inputs, "--all"), fleet=fleet) == 0
    assert len(fleet.applied) == 1


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--samples", "/nonexistent.parquet"), "samples: cannot read /nonexistent.parquet"),
        (("--structure", "/nonexistent.json"), "/nonexistent.json: cannot read structure"),
    ],
)
def test_input_that_stops_everything_is_exit_2_and_one_line(
    inputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], extra: tuple[str, str], says: str
) -> None:
    fleet = Fleet([stormtopology("a", "one", "linear")])
    args = argv(inputs)
    flag = args.index(extra[0])
    args[flag + 1] = extra[1]
    assert cli.main(args, fleet=fleet) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert says in err[0]
    assert fleet.applied == []


def test_bad_arguments_exit_2(inputs: tuple[Path, Path]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([*argv(inputs), "--window", "a day"], fleet=Fleet([]))
    assert done.value.code == 2
