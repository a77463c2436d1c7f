"""The aggregation's typed profile (:func:`stormscale.aggregation.typed_profile_table`): the same
profile as the document it writes, read into the planner's :class:`~stormscale.planner.Profile`
(topology and confidence), with the single-process engine (no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stormscale.aggregation import Params, parse_structure, profile_table, typed_profile_table, write_profile
from stormscale.planner import parse_profile, read_profile
from tests.synthetic import samples as synthetic
from tests.unit.spark.conftest import thesis

LINEAR = thesis("linear")
SCENARIO = synthetic.Scenario(name="linear", duration_s=600, noise=0.01, seed=7)


def test_the_typed_profile_is_the_written_documents_topology_and_confidence(tmp_path: Path) -> None:
    table = synthetic.generate(LINEAR, SCENARIO)
    structure = parse_structure(synthetic.structure(LINEAR, SCENARIO))
    (document,), _ = profile_table(table, [structure], Params())
    (profile,), aggregates = typed_profile_table(table, [structure], Params())
    written = json.loads(write_profile(document, tmp_path).read_text(encoding="utf-8"))
    assert written == document  # the document writer is unchanged: the format's JSON
    assert profile == read_profile(written)
    assert profile.topology == parse_profile(written)
    assert profile.confidence.steady is True
    assert profile.confidence.window is not None
    assert profile.confidence.window.intervals == written["confidence"]["window"]["intervals"]
    sink = profile.confidence.of("4")
    assert sink.executed_rate == written["components"][3]["confidence"]["executedRate"]
    assert sink.executed_rate == pytest.approx(aggregates.components["linear"]["4"].executed_rate, rel=1e-5)
    assert (sink.capacity_source, profile.confidence.of("1").output_source) == ("busy-counter", "offered")
