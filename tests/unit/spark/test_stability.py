"""Steadiness: a rate spread makes a window unsteady; a throttled spout is judged by its offered rate."""

from __future__ import annotations

import dataclasses

import numpy as np

from stormscale.aggregation import local
from stormscale.aggregation.params import Params
from stormscale.aggregation.profiles import build_profile
from stormscale.aggregation.structure import parse_structure
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

DIAMOND = thesis("diamond")


def spout_confidence(
    offered_scale: float, spout_cv: float, offered_cv: float | None = None
) -> dict[str, object]:
    """The profile of the diamond with the spout's per-interval rate spread forced to ``spout_cv``."""
    scenario = synthetic.Scenario(name="d", duration_s=600, offered_scale=offered_scale, noise=0.01, seed=3)
    params = Params()
    with np.errstate(divide="ignore", invalid="ignore"):
        aggregates = local.aggregate(synthetic.generate(DIAMOND, scenario), params)
    stats = dict(aggregates.components["d"])
    stats["1"] = dataclasses.replace(stats["1"], rate_cv=spout_cv)
    if offered_cv is not None:
        stats["1"] = dataclasses.replace(stats["1"], offered_cv=offered_cv)
    structure = parse_structure(synthetic.structure(DIAMOND, scenario))
    document = build_profile(structure, aggregates.windows["d"], stats, aggregates.edges["d"], params)
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
