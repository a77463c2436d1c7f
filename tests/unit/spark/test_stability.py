"""Steadiness: a rate spread makes a window unsteady; a throttled spout is judged by its offered rate,
and the window by its spouts and sinks (a bolt between them swings with backpressure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import build_profile
from stormscale.aggregation.structure import parse_structure
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

DIAMOND = thesis("diamond")


def diamond_profile(offered_scale: float, **spreads: dict[str, Any]) -> dict[str, Any]:
    """The profile of the diamond (1 → {2, 3} → 4) with per-interval spreads forced: ``spreads`` maps
    a component to the ``ComponentStats`` fields to replace (``rate_cv``, ``offered_cv``)."""
    scenario = synthetic.Scenario(name="d", duration_s=600, offered_scale=offered_scale, noise=0.01, seed=3)
    params = Params()
    with np.errstate(divide="ignore", invalid="ignore"):
        aggregates = local.aggregate(synthetic.generate(DIAMOND, scenario), params)
    stats = dict(aggregates.components["d"])
    for component, fields in spreads.items():
        stats[component] = dataclasses.replace(stats[component], **fields)
    structure = parse_structure(synthetic.structure(DIAMOND, scenario))
    return build_profile(structure, aggregates.windows["d"], stats, aggregates.edges["d"], params)


def spout_confidence(
    offered_scale: float, spout_cv: float, offered_cv: float | None = None
) -> dict[str, object]:
    """The diamond's verdict and its spout's confidence, the spout's rate spread forced to ``spout_cv``."""
    fields = {"rate_cv": spout_cv} | ({} if offered_cv is None else {"offered_cv": offered_cv})
    document = diamond_profile(offered_scale, **{"1": fields})
    return {"steady": document["confidence"]["steady"], **document["components"][0]["confidence"]}


def test_a_throttled_spouts_swinging_emits_do_not_make_the_window_unsteady() -> None:
    confidence = spout_confidence(offered_scale=3.0, spout_cv=0.9)
    assert confidence["outputPerUnit"]["throttled"] is True  # type: ignore[index]
    assert (confidence["stable"], confidence["steady"]) == (True, True)


def test_an_unthrottled_spout_with_swinging_rates_is_unsteady() -> None:
    confidence = spout_confidence(offered_scale=0.2, spout_cv=0.9)  # nothing congested
    assert confidence["outputPerUnit"]["throttled"] is False  # type: ignore[index]
    assert (confidence["stable"], confidence["steady"]) == (False, False)


def test_a_throttled_spout_with_a_swinging_offered_rate_is_unsteady() -> None:
    confidence = spout_confidence(offered_scale=3.0, spout_cv=0.1, offered_cv=0.9)
    assert (confidence["stable"], confidence["steady"]) == (False, False)


def test_a_bolt_swinging_between_a_steady_spout_and_sink_leaves_the_window_steady() -> None:
    document = diamond_profile(3.0, **{"2": {"rate_cv": 0.9}})
    bolt = next(c for c in document["components"] if c["id"] == "2")
    assert bolt["confidence"]["stable"] is False  # its own spread is still reported
    assert (document["confidence"]["steady"], document["confidence"]["unstable"]) == (True, [])
    assert any(
        note.startswith("rates vary more than cv 0.25 in 2 between")
        for note in document["confidence"]["notes"]
    )


def test_a_swinging_sink_makes_the_window_unsteady() -> None:
    document = diamond_profile(3.0, **{"2": {"rate_cv": 0.9}, "4": {"rate_cv": 0.9}})
    assert (document["confidence"]["steady"], document["confidence"]["unstable"]) == (False, ["4"])
