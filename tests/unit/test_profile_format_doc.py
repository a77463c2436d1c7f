"""docs/formats/profile.md: the repository's copy of the shared profile format, and what it promises.

The page is kept verbatim from ``../shared/formats/profile.md`` (the checkout's sibling). Where that
sibling is absent (a user's clone) the copy cannot be compared, so the other tests here check the
copy against the code: it documents every field the planner's loader reads, and every example
profile loads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stormscale.planner import load_profile

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "formats" / "profile.md"
SHARED = ROOT.parent / "shared" / "formats" / "profile.md"
EXAMPLES = sorted((ROOT / "examples" / "profiles").glob("*.json"))

# What stormscale.planner.profile reads: the document's keys, then each component's.
TOP_LEVEL = ("topology", "components")
COMPONENT = (
    "id",
    "kind",
    "units",
    "capacityPerUnit",
    "selectivity",
    "outputPerUnit",
    "externalInput",
    "maxUnits",
    "children",
)


def documented_fields() -> set[str]:
    """Field names in the first column of the page's Profile table (``components[].id`` names both)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Profile", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)
    return {part for name in names for part in name.split("[].")}


def test_the_repository_copy_equals_the_shared_page() -> None:
    if not SHARED.is_file():
        pytest.skip(f"{SHARED} is absent (a clone without shared/ beside it); nothing to compare")
    assert DOC.read_text(encoding="utf-8") == SHARED.read_text(encoding="utf-8"), (
        f"{DOC.relative_to(ROOT)} differs from {SHARED}: copy the shared page over it"
    )


def test_the_page_documents_every_field_the_loader_reads() -> None:
    assert set(TOP_LEVEL) | set(COMPONENT) <= documented_fields()


def test_the_loader_names_every_field_listed_here() -> None:
    loader = (ROOT / "planner" / "src" / "stormscale" / "planner" / "profile.py").read_text(encoding="utf-8")
    assert [f for f in (*TOP_LEVEL, *COMPONENT) if f'"{f}"' not in loader] == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_profile_loads(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    topology = load_profile(path)
    assert topology.name == document["topology"]
    assert [c.id for c in topology.components] == [c["id"] for c in document["components"]]


def test_there_are_example_profiles() -> None:
    assert EXAMPLES
