"""The score of a cosmic-ray session, per module: ``python tests/mutation/score.py SESSION.sqlite
[--survivors]``.

A mutant counts as *killed* when the tests failed on it (cosmic-ray counts a test run over its
timeout as killed too), *survived* when they passed, *skipped* when ``prepare.py`` found it inside an
annotation (equivalent: never evaluated). Mutants not run yet (a session stopped early) are counted
apart, so a partial session still gives an honest score of what ran:

    score(module) = killed / (killed + survived)

with its 95 % Wilson interval, which holds for a random sample of the module's mutants (``SAMPLE=N``;
a session stopped early ran the first mutants in file order, not a sample):

    p̂ ± z·sqrt(p̂(1−p̂)/n + z²/4n²), centred at (p̂ + z²/2n), all over (1 + z²/n), z = 1.96
"""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

QUERY = """
SELECT s.module_path, s.start_pos_row, s.definition_name, s.operator_name, r.worker_outcome, r.test_outcome
FROM mutation_specs s LEFT JOIN work_results r ON r.job_id = s.job_id
ORDER BY s.module_path, s.start_pos_row
"""


@dataclass(frozen=True)
class Mutant:
    """One mutation and what the tests made of it (``None``: not run)."""

    module: str
    line: int
    definition: str | None
    operator: str
    outcome: str | None


def outcome(worker_outcome: str | None, test_outcome: str | None) -> str | None:
    """killed, survived, skipped (inside an annotation), incompetent (the mutant did not even load)
    or None (not run)."""
    if worker_outcome == "SKIPPED":
        return "skipped"
    if test_outcome is None:
        return None
    return {"KILLED": "killed", "SURVIVED": "survived"}.get(test_outcome, "incompetent")


def wilson(killed: int, judged: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of the kill rate killed/judged (see the module's docstring)."""
    p = killed / judged
    centre = (p + z * z / (2 * judged)) / (1 + z * z / judged)
    half = z * math.sqrt(p * (1 - p) / judged + z * z / (4 * judged * judged)) / (1 + z * z / judged)
    return centre - half, centre + half


def read_session(path: Path) -> list[Mutant]:
    """Every mutant of the session, in module and line order."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute(QUERY).fetchall()
    return [Mutant(m, row, d, op.removeprefix("core/"), outcome(w, t)) for m, row, d, op, w, t in rows]


def score_table(mutants: Iterable[Mutant]) -> str:
    """| module | mutants | skipped | run | killed | survived | score | 95 % interval | per module, then
    the total."""
    counts: dict[str, Counter[str | None]] = {}
    for m in mutants:
        counts.setdefault(Path(m.module).name, Counter())[m.outcome] += 1
    counts["total"] = sum(counts.values(), Counter())
    lines = [
        "| module | mutants | skipped | run | killed | survived | score | 95 % interval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for module, c in counts.items():
        run = c.total() - c[None] - c["skipped"]
        judged = c["killed"] + c["survived"]
        score, interval = "–", "–"
        if judged:
            low, high = wilson(c["killed"], judged)
            score, interval = f"{100 * c['killed'] / judged:.1f} %", f"{100 * low:.1f}–{100 * high:.1f} %"
        lines.append(
            f"| {module} | {c.total()} | {c['skipped']} | {run} | {c['killed']} | {c['survived']} "
            f"| {score} | {interval} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants too")
    args = parser.parse_args(argv)
    if not args.session.is_file():
        parser.error(f"{args.session}: no such session file")
    mutants = read_session(args.session)
    print(score_table(mutants))
    if args.survivors:
        for m in mutants:
            if m.outcome == "survived":
                print(f"{m.module}:{m.line} ({m.definition or 'module'}): {m.operator}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
