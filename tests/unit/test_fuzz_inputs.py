"""Bounded fuzzing of the hostile-input parsers: the profile loader, its confidence reader and the
StormTopology spec parser. Every example must give a valid result or the documented error
(``ProfileError``, ``InvalidSpecError``; the confidence reader has none) — no other exception —
within a per-example deadline.

400 examples each here (seconds); ``make fuzz`` runs ``STORMSCALE_FUZZ_EXAMPLES`` (20,000).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from stormscale.operator.policy import InvalidSpecError, Policy, parse_spec
from stormscale.planner.model import Topology
from stormscale.planner.profile import ProfileError, load_profile, parse_confidence, parse_profile
from tests.unit.fuzzing import fuzz_settings, outcome

FUZZ = fuzz_settings(deadline_ms=500)


NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, -1, 10**400, 2**63, 10**6, 10**6 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 1e12, 1e12 * 1.0001, 5e-324]),
)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=8))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)

IDS = st.sampled_from(["1", "2", "3", "a", "", "b10"])
FIELD = {
    "id": st.one_of(IDS, JSON),
    "kind": st.one_of(st.sampled_from(["spout", "bolt"]), JSON),
    "units": st.one_of(NUMBERS, JSON),
    "maxUnits": st.one_of(st.none(), NUMBERS, JSON),
    "outputPerUnit": NUMBERS,
    "capacityPerUnit": NUMBERS,
    "selectivity": NUMBERS,
    "externalInput": NUMBERS,
    "memoryPerUnit": NUMBERS,
    "tasks": st.one_of(st.none(), NUMBERS, JSON),
    "children": st.one_of(st.dictionaries(IDS, NUMBERS, max_size=3), JSON),
}
COMPONENT = st.fixed_dictionaries({}, optional=FIELD)
PROFILE = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {"components": st.lists(COMPONENT, max_size=6)},
        optional={"topology": st.one_of(st.text(max_size=8), JSON)},
    ),
)


@FUZZ
@given(PROFILE)
@example({"components": [{"id": "1", "kind": "spout", "units": 0, "outputPerUnit": 10**400}]})  # make fuzz's
def test_the_profile_loader_gives_a_topology_or_a_profile_error(document: Any) -> None:
    topology = outcome(parse_profile, document, ProfileError)
    if isinstance(topology, Topology):
        assert len(topology.order) == len(topology.components)  # loaded means acyclic and complete


SOURCED = st.fixed_dictionaries({}, optional={"source": JSON, "throttled": JSON})
DEMAND = st.fixed_dictionaries(
    {},
    optional={
        k: st.one_of(NUMBERS, JSON) for k in ("appendRate", "emittedRate", "lagGrowth", "disagreement")
    },
)
COMPONENT_CONFIDENCE = st.fixed_dictionaries(
    {},
    optional={
        **{k: st.one_of(SOURCED, JSON) for k in ("units", "maxUnits", "outputPerUnit", "capacityPerUnit")},
        **{k: st.one_of(NUMBERS, JSON) for k in ("executedRate", "emittedRate", "fanout", "stable")},
        "demand": st.one_of(DEMAND, JSON),
    },
)
WINDOW = st.dictionaries(st.sampled_from(["start", "end", "intervals", "settleSeconds", "maxCv"]), JSON)
TOP_CONFIDENCE = st.fixed_dictionaries(
    {}, optional={"steady": JSON, "unstable": JSON, "notes": JSON, "window": st.one_of(WINDOW, JSON)}
)
CONFIDENT = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {
            "components": st.lists(
                st.fixed_dictionaries(
                    {"id": st.one_of(IDS, JSON), "confidence": st.one_of(COMPONENT_CONFIDENCE, JSON)}
                ),
                max_size=4,
            )
        },
        optional={"confidence": st.one_of(TOP_CONFIDENCE, JSON)},
    ),
)


@FUZZ
@given(CONFIDENT)
def test_the_confidence_reader_never_raises(document: Any) -> None:
    """A published profile's confidence is hostile input: anything not of its type reads as unsaid."""
    confidence = parse_confidence(document)
    assert confidence.steady in (True, False)
    for component in confidence.components.values():
        assert component.fanout > 0
        assert component.demand is None or math.isfinite(component.demand.lag_growth)


FILE = Path(tempfile.mkdtemp(prefix="stormscale-fuzz-")) / "p.json"  # one file, rewritten per example


@FUZZ
@given(st.one_of(st.binary(max_size=64), PROFILE.map(lambda d: json.dumps(d).encode())))
def test_the_profile_file_reader_gives_a_topology_or_a_profile_error(data: bytes) -> None:
    FILE.write_bytes(data)
    outcome(load_profile, FILE, ProfileError)


DURATIONS = st.one_of(
    st.sampled_from(["0s", "1s", "10s", "5m", "48h", "2m", "1h", "999999h", "8784h", "8785h"]),
    st.sampled_from(["9" * 5000 + "s", "9" * 400 + "h", "0" * 11 + "1s", "0" * 12 + "1s"]),
    st.from_regex(r"\A[0-9]{1,30}[smh]\Z"),
    JSON,
)
SPEC = st.fixed_dictionaries(
    {},
    optional={
        "topologyName": st.one_of(st.text(max_size=8), JSON),
        "nimbus": st.one_of(
            st.fixed_dictionaries({"host": st.text(max_size=8)}, optional={"port": NUMBERS}), JSON
        ),
        "workers": st.one_of(
            st.fixed_dictionaries(
                {"deployment": st.text(max_size=8)},
                optional={
                    "slotsPerPod": NUMBERS,
                    "podOverheadCPU": st.one_of(
                        st.sampled_from(["0", "100m", "1.5", "x", "9" * 400, "9" * 400 + ".5m"]),
                        st.from_regex(r"\A[0-9]{1,20}(\.[0-9]{1,5})?m?\Z"),
                    ),
                },
            ),
            JSON,
        ),
        "metrics": st.one_of(
            st.fixed_dictionaries(
                {"prometheus": st.sampled_from(["http://p:9090", "https://p", "ftp://p", ""])},
                optional={
                    "window": DURATIONS,
                    "step": DURATIONS,
                    "settle": DURATIONS,
                    "maxAge": DURATIONS,
                    "publishedMaxAge": DURATIONS,
                },
            ),
            JSON,
        ),
        "scaling": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "mode": st.sampled_from(["Manual", "Recommend", "Auto", "auto"]),
                    "budget": NUMBERS,
                    "minUnits": NUMBERS,
                    "maxUnits": NUMBERS,
                    "strategy": st.sampled_from(["Combined", "Stela", "Predictive", "Optimal", "x"]),
                    "cooldown": DURATIONS,
                    "scaleInDelay": DURATIONS,
                    "congestionThreshold": NUMBERS,
                },
            ),
            JSON,
        ),
        "components": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"name": st.one_of(IDS, JSON)}, optional={"capacityPerUnit": NUMBERS, "maxUnits": NUMBERS}
                ),
                max_size=3,
            ),
            JSON,
        ),
        "extra": JSON,
    },
)


@FUZZ
@given(st.one_of(SPEC, JSON))
def test_the_spec_parser_gives_a_policy_or_an_invalid_spec_error(raw: Any) -> None:
    policy = outcome(parse_spec, raw, InvalidSpecError)
    if isinstance(policy, Policy):
        assert policy.settle_s < policy.window_s
        assert policy.max_age_s >= policy.step_s > 0
        # every number the spec yields is a finite one the reconcile arithmetic can use
        assert 0 <= policy.spec.workers.pod_overhead_cores <= 1000
        assert all(math.isfinite(c.capacity_per_unit or 0) for c in policy.spec.components)
        assert max(policy.cooldown_s, policy.scale_in_delay_s, policy.published_max_age_s) <= 366 * 86400
