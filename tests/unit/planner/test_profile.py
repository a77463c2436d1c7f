"""The profile loader: the five examples load, and every rejection rule names its field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from stormscale.planner import (
    ComponentConfidence,
    DemandCheck,
    Kind,
    Profile,
    ProfileConfidence,
    ProfileError,
    WindowConfidence,
    load_profile,
    parse_confidence,
    parse_profile,
    read_profile,
)
from stormscale.planner.profile import profile_document

EXAMPLES = sorted((Path(__file__).parents[3] / "examples" / "profiles").glob("*.json"))


def test_the_five_thesis_examples_are_in_the_repository() -> None:
    assert [p.stem for p in EXAMPLES] == [
        "thesis-diamond",
        "thesis-linear",
        "thesis-simple-tree",
        "thesis-topology-10",
        "thesis-topology-17",
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_load_with_their_components_and_edges(path: Path) -> None:
    document = json.loads(path.read_text())
    topology = load_profile(path)
    assert [c.id for c in topology.components] == [c["id"] for c in document["components"]]
    edges = sum(len(c.get("children", {})) for c in document["components"])
    assert sum(len(c.children) for c in topology.components) == edges
    assert len(topology.order) == len(topology.components)


def base() -> dict[str, Any]:
    return {
        "topology": "t",
        "components": [
            {
                "id": "s",
                "kind": "spout",
                "units": 1,
                "outputPerUnit": 100.0,
                "children": {"a": 0.5, "b": 0.5},
            },
            {"id": "a", "kind": "bolt", "units": 1, "capacityPerUnit": 80.0, "children": {"b": 1.0}},
            {"id": "b", "kind": "bolt", "units": 2, "capacityPerUnit": 50.0},
        ],
    }


def mutated(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base())
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


DELETE = object()

REJECTIONS = [
    ("repeated id", mutated(["components", 2, "id"], "a"), "components[2].id: 'a' repeats components[1]"),
    (
        "unknown child",
        mutated(["components", 1, "children"], {"9": 1.0}),
        "components[1].children.9: unknown component",
    ),
    ("cycle", mutated(["components", 2, "children"], {"a": 1.0}), "components[1].children: cycle a → b → a"),
    ("self loop", mutated(["components", 2, "children"], {"b": 1.0}), "components[2].children: cycle b → b"),
    (
        "fraction above 1",
        mutated(["components", 1, "children"], {"b": 1.5}),
        "components[1].children.b: fraction",
    ),
    (
        "negative fraction",
        mutated(["components", 1, "children"], {"b": -0.1}),
        "components[1].children.b: fraction",
    ),
    (
        "fractions sum above 1",
        mutated(["components", 0, "children"], {"a": 0.6, "b": 0.5}),
        "components[0].children: fractions sum to 1.1",
    ),
    (
        "negative rate",
        mutated(["components", 1, "capacityPerUnit"], -1.0),
        "components[1].capacityPerUnit: must be ≥ 0",
    ),
    (
        "zero capacity",
        mutated(["components", 1, "capacityPerUnit"], 0.0),
        "components[1].capacityPerUnit: must be > 0",
    ),
    (
        "infinite rate",
        mutated(["components", 0, "outputPerUnit"], float("inf")),
        "components[0].outputPerUnit: must be a finite number",
    ),
    (
        "NaN selectivity",
        mutated(["components", 1, "selectivity"], float("nan")),
        "components[1].selectivity: must be a finite number",
    ),
    (
        "negative external input",
        mutated(["components", 2, "externalInput"], -5),
        "components[2].externalInput: must be ≥ 0",
    ),
    (
        "units above maxUnits",
        mutated(["components", 2, "maxUnits"], 1),
        "components[2].units: 2 exceeds maxUnits 1",
    ),
    (
        "bolt without capacity",
        mutated(["components", 1, "capacityPerUnit"], DELETE),
        "components[1].capacityPerUnit: missing",
    ),
    (
        "spout without output",
        mutated(["components", 0, "outputPerUnit"], DELETE),
        "components[0].outputPerUnit: missing",
    ),
    ("unknown kind", mutated(["components", 1, "kind"], "sink"), "components[1].kind: must be"),
    ("fractional units", mutated(["components", 1, "units"], 1.5), "components[1].units: must be an integer"),
    (
        "negative units",
        mutated(["components", 1, "units"], -1),
        "components[1].units: must be an integer ≥ 0",
    ),
    ("boolean units", mutated(["components", 1, "units"], True), "components[1].units: must be an integer"),
    ("empty components", mutated(["components"], []), "components: must be a non-empty list"),
    ("zero tasks", mutated(["components", 1, "tasks"], 0), "components[1].tasks: must be at least 1"),
    ("fractional tasks", mutated(["components", 1, "tasks"], 2.5), "components[1].tasks: must be an integer"),
    (
        "more units than tasks",
        mutated(["components", 2, "tasks"], 1),
        "components[2].units: 2 exceeds tasks 1",
    ),
    (
        "spout as a child",
        mutated(["components", 1, "children"], {"s": 1.0}),
        "components[1].children.s: a spout cannot receive tuples",
    ),
    # Integers beyond a float (make fuzz found the first: math.isfinite raised OverflowError).
    (
        "integer rate beyond a float",
        mutated(["components", 0, "outputPerUnit"], 10**400),
        "components[0].outputPerUnit: must be a finite number, got an integer of 401 digits",
    ),
    (
        "integer rate within a float, above the bound",
        mutated(["components", 1, "capacityPerUnit"], 10**300),
        "components[1].capacityPerUnit: must be at most 1e+12, got an integer of 301 digits",
    ),
    (
        "integer fraction beyond a float",
        mutated(["components", 1, "children"], {"3": 10**400}),
        "components[1].children.3: fraction must be a number in [0, 1], got an integer of 401 digits",
    ),
]


@pytest.mark.parametrize(
    ("document", "message"), [(d, m) for _, d, m in REJECTIONS], ids=[n for n, _, _ in REJECTIONS]
)
def test_invalid_profiles_are_rejected_naming_the_field(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(document)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_the_base_profile_itself_is_valid() -> None:
    topology = parse_profile(base())
    assert [c.id for c in topology.components] == ["s", "a", "b"]


def test_max_units_absent_null_and_set() -> None:
    doc = base()
    doc["components"][1]["maxUnits"] = 4
    topology = parse_profile(doc)
    spout, a, b = topology.components
    assert spout.kind is Kind.SPOUT
    assert spout.max_units == 1
    assert spout.min_units == 1
    assert a.max_units == 4
    assert b.max_units is None  # absent: bolt unbounded
    doc["components"][0]["maxUnits"] = None
    assert parse_profile(doc).components[0].max_units is None  # null: unbounded spout


def test_fractions_may_sum_to_one_within_tolerance_and_unknown_fields_are_ignored() -> None:
    doc = base()
    doc["components"][0]["children"] = {"a": 0.5, "b": 0.5 + 5e-7}
    doc["components"][0]["confidence"] = {"samples": 12}
    doc["owner"] = "team-x"
    assert parse_profile(doc).components[0].children == (("a", 0.5), ("b", 0.5 + 5e-7))


def test_missing_file_and_bad_json_are_profile_errors(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ nope")
    with pytest.raises(ProfileError, match=r"not valid JSON \(line 1"):
        load_profile(bad)


def test_tasks_bound_the_units_and_round_trip() -> None:
    doc = base()
    doc["components"][1]["tasks"] = 4
    doc["components"][1]["maxUnits"] = 10
    doc["components"][2]["tasks"] = 6
    doc["components"][2]["maxUnits"] = 3
    topology = parse_profile(doc)
    assert [c.tasks for c in topology.components] == [None, 4, 6]
    assert topology.max_units == (1.0, 4.0, 3.0)  # the tighter of maxUnits and tasks
    assert parse_profile(profile_document(topology)) == topology


# --- confidence: typed, and never an exception from a hostile document ------------------------------


def test_the_confidence_is_read_into_typed_values() -> None:
    document = {
        "components": [
            {
                "id": "1",
                "confidence": {
                    "units": {"source": "executors-gauge"},
                    "maxUnits": {"source": "tasks-gauge"},
                    "outputPerUnit": {"source": "kafka", "throttled": True},
                    "emittedRate": 400,
                    "fanout": 2.0,
                    "stable": True,
                    "demand": {
                        "appendRate": 1000.0,
                        "emittedRate": 400.0,
                        "lagGrowth": 600,
                        "disagreement": False,
                    },
                },
            },
            {"id": "2", "confidence": {"capacityPerUnit": {"source": "pod-cpu"}, "executedRate": 250.5}},
        ],
        "confidence": {
            "steady": True,
            "unstable": [],
            "window": {"start": "2026-01-01T00:00:00+00:00", "intervals": 30, "maxCv": 0.25},
            "notes": ["a note"],
        },
    }
    confidence = parse_confidence(document)
    assert confidence == ProfileConfidence(
        steady=True,
        window=WindowConfidence(start="2026-01-01T00:00:00+00:00", intervals=30, max_cv=0.25),
        notes=("a note",),
        components={
            "1": ComponentConfidence(
                units_source="executors-gauge",
                max_units_source="tasks-gauge",
                output_source="kafka",
                throttled=True,
                emitted_rate=400.0,
                fanout=2.0,
                stable=True,
                demand=DemandCheck(append_rate=1000.0, lag_growth=600.0, emitted_rate=400.0),
            ),
            "2": ComponentConfidence(capacity_source="pod-cpu", executed_rate=250.5),
        },
    )
    assert confidence.of("9") == ComponentConfidence()  # a component it says nothing of


HOSTILE: list[Any] = [
    None,
    [],
    "profile",
    {"confidence": "steady"},
    {"confidence": {"steady": "yes", "unstable": "3", "window": [], "notes": {"a": 1}}},
    {"confidence": {"steady": 1, "unstable": [3, None], "window": {"intervals": 10**400, "maxCv": "x"}}},
    {"components": "all"},
    {"components": [None, 3, {"id": 4}, {"id": "1", "confidence": []}]},
    {
        "components": [
            {"id": "1", "confidence": {"outputPerUnit": "kafka", "capacityPerUnit": [], "units": 7}}
        ]
    },
    {"components": [{"id": "1", "confidence": {"executedRate": 10**400, "emittedRate": float("nan")}}]},
    {
        "components": [
            {"id": "1", "confidence": {"fanout": -2, "stable": "no", "demand": {"lagGrowth": True}}}
        ]
    },
    {"components": [{"id": "1", "confidence": {"demand": {"lagGrowth": -1, "appendRate": float("inf")}}}]},
    {
        "components": [
            {"id": "1", "confidence": {"fanout": 0, "demand": {"lagGrowth": -1, "appendRate": "9"}}}
        ]
    },
]


@pytest.mark.parametrize("document", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_confidence_reads_as_unsaid_and_never_raises(document: Any) -> None:
    confidence = parse_confidence(document)
    assert confidence.steady is False  # only ``steady: true`` is steady
    assert all(isinstance(u, str) for u in confidence.unstable)
    for component in confidence.components.values():
        assert component.demand is None
        assert component.executed_rate is None
        assert component.emitted_rate is None
        assert component.fanout == 1.0
        assert (component.output_source, component.capacity_source, component.units_source) == (
            None,
            None,
            None,
        )
    if confidence.window is not None:
        assert (confidence.window.intervals, confidence.window.max_cv) == (None, None)


def test_read_profile_is_the_topology_and_its_confidence() -> None:
    document = json.loads((EXAMPLES[1]).read_text(encoding="utf-8"))  # thesis-linear
    document["confidence"] = {"steady": True, "unstable": [], "notes": []}
    profile = read_profile(document)
    assert profile == Profile(
        parse_profile(document), ProfileConfidence(steady=True, components=profile.confidence.components)
    )
    assert set(profile.confidence.components) == {"1", "2", "3", "4"}
    with pytest.raises(ProfileError, match="components"):
        read_profile({"confidence": {"steady": True}})
