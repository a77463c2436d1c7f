"""The Helm chart's static files: CRDs identical to crds/, values documented key by key."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

REPO = Path(__file__).parents[2]
CHART = REPO / "charts" / "stormscale"


def test_chart_crds_are_exact_copies_of_the_source() -> None:
    source = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    copies = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert copies == source
    for name in source:
        assert (CHART / "crds" / name).read_bytes() == (REPO / "crds" / name).read_bytes(), (
            f"charts/stormscale/crds/{name} drifted from crds/{name}: cp crds/*.yaml charts/stormscale/crds/"
        )


def test_every_value_is_documented_and_in_the_schema() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    values = yaml.safe_load("\n".join(lines))
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(values) == set(schema["properties"])
    documented = {
        line.split("--")[0].strip("# ").strip() for line in lines if line.startswith("# ") and " -- " in line
    }
    assert set(values) <= documented  # each top-level key has a "# key -- meaning" comment
