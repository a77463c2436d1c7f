"""docs/formats/profile.md: the repository's copy of the shared profile format, and what it promises.

The page contains ``../shared/formats/profile.md`` (the checkout's sibling) unchanged, at its start,
and adds only sections marked as Stormscale extensions. Where that sibling is absent (a user's
clone) the copy cannot be compared, so the other tests here check the copy against the code: it
documents every field the planner's loader reads, and every example profile loads.
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
    "memoryPerUnit",
    "tasks",
    "demandPerUnit",
)
EXTENSION = "## Stormscale extensions"
PROFILE_EXTENSIONS = ("memory per unit", "task counts", "demand distribution")
MARK = "*This section is a Stormscale extension"


def documented_fields() -> set[str]:
    """Field names in the first column of the Profile tables (the shared one and the extensions')."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Profile", 1)[1].split("\n## ", 1)[0]
    extensions = [
        text.split(f"### Profile: {name}", 1)[1].split("\n### ", 1)[0] for name in PROFILE_EXTENSIONS
    ]
    names = re.findall(r"^\| `([^`]+)` \|", section + "".join(extensions), flags=re.MULTILINE)
    return {part for name in names for part in name.split("[].")}


def extension_problems(page: str, shared: str) -> list[str]:
    """Why ``page`` is not ``shared`` unchanged followed only by marked Stormscale extension sections."""
    if not page.startswith(shared.rstrip("\n")):
        return ["the shared page is not contained unchanged at the start"]
    added = page[len(shared.rstrip("\n")) :].strip("\n")
    if not added:
        return []
    sections = [s for s in re.split(r"^(?=## )", added, flags=re.MULTILINE) if s.strip()]
    problems = []
    for section in sections:
        title = section.splitlines()[0]
        if not section.startswith(EXTENSION):
            problems.append(f"added section {title!r} is not titled {EXTENSION!r}")
        elif MARK not in section.split("\n### ", 1)[0]:
            problems.append(f"added section {title!r} does not say at its top that it is an extension")
    return problems


def test_the_repository_page_is_the_shared_page_plus_marked_extensions() -> None:
    if not SHARED.is_file():
        pytest.skip(f"{SHARED} is absent (a clone without shared/ beside it); nothing to compare")
    page, shared = DOC.read_text(encoding="utf-8"), SHARED.read_text(encoding="utf-8")
    assert extension_problems(page, shared) == [], f"{DOC.relative_to(ROOT)} vs {SHARED}"


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        ("# T\nchanged\n", "not contained unchanged"),
        ("# T\nbody\n\n## Extra\ntext\n", "is not titled"),
        ("# T\nbody\n\n## Stormscale extensions: x\nunmarked\n", "does not say"),
    ],
)
def test_the_containment_check_can_fail(page: str, problem: str) -> None:
    assert any(problem in p for p in extension_problems(page, "# T\nbody\n"))
    assert extension_problems(f"# T\nbody\n\n{EXTENSION}: x\n\n{MARK}.*\n", "# T\nbody\n") == []


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
