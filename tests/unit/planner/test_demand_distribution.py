"""A spout's ``demandPerUnit`` in a profile: read when present, validated naming the field, absent in
every profile written before it (the mean is used)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stormscale.planner import DemandDistribution, ProfileError, parse_profile, read_profile

GOOD = {"mean": 18.1, "p50": 17.0, "p95": 23.4, "max": 25.0, "steps": 30, "stepSeconds": 10.0}


def profile(**distribution: Any) -> dict[str, Any]:
    return {
        "topology": "t",
        "components": [
            {
                "id": "s",
                "kind": "spout",
                "units": 1,
                "outputPerUnit": 18.1,
                "children": {"b": 1},
                "demandPerUnit": {**GOOD, **distribution},
            },
            {"id": "b", "kind": "bolt", "units": 1, "capacityPerUnit": 20.0},
        ],
    }


def test_a_spout_s_distribution_is_read() -> None:
    assert read_profile(profile()).demand == {"s": DemandDistribution(18.1, 17.0, 23.4, 25.0, 30, 10.0)}


def test_a_profile_without_distributions_reads_as_before() -> None:
    doc = profile()
    del doc["components"][0]["demandPerUnit"]
    read = read_profile(doc)
    assert read.demand == {}
    assert read.topology == parse_profile(profile())


BAD = [
    ({"p95": 26.0}, "components[0].demandPerUnit: p50 ≤ p95 ≤ max must hold, got 17, 26, 25"),
    ({"p50": 24.0}, "p50 ≤ p95 ≤ max must hold"),
    ({"mean": -3.0}, "components[0].demandPerUnit.mean: must be ≥ 0"),
    ({"p95": -1.0}, "components[0].demandPerUnit.p95: must be ≥ 0"),
    ({"max": float("inf")}, "components[0].demandPerUnit.max: must be a finite number"),
    ({"max": "25"}, "components[0].demandPerUnit.max: must be a finite number"),
    ({"steps": 0}, "components[0].demandPerUnit.steps: must be at least 1"),
    ({"steps": 2.5}, "components[0].demandPerUnit.steps: must be an integer"),
    ({"stepSeconds": 0}, "components[0].demandPerUnit.stepSeconds: must be > 0"),
]


@pytest.mark.parametrize(("change", "says"), BAD, ids=[b[1] for b in BAD])
def test_a_malformed_distribution_is_refused_naming_the_field(change: dict[str, Any], says: str) -> None:
    with pytest.raises(ProfileError) as caught:
        parse_profile(profile(**change))
    assert says in str(caught.value)


def test_a_missing_statistic_or_a_bolt_s_distribution_is_refused() -> None:
    doc = profile()
    del doc["components"][0]["demandPerUnit"]["p95"]
    with pytest.raises(ProfileError, match=r"components\[0\]\.demandPerUnit\.p95: missing"):
        parse_profile(doc)
    doc = profile()
    doc["components"][1]["demandPerUnit"] = copy.deepcopy(GOOD)
    with pytest.raises(ProfileError, match=r"components\[1\]\.demandPerUnit: only a spout"):
        parse_profile(doc)
    doc = profile()
    doc["components"][0]["demandPerUnit"] = [1, 2]
    with pytest.raises(ProfileError, match=r"components\[0\]\.demandPerUnit: must be an object"):
        parse_profile(doc)
