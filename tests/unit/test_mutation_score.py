"""The mutation score's reader: per module, killed over judged, mutants not run counted apart."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.mutation.score import main, outcome, read_session, score_table

SCHEMA = (
    "CREATE TABLE mutation_specs (module_path VARCHAR, operator_name VARCHAR, start_pos_row INTEGER,"
    " definition_name VARCHAR, job_id VARCHAR)",
    "CREATE TABLE work_results (test_outcome VARCHAR, worker_outcome VARCHAR, job_id VARCHAR)",
)


def session(tmp_path: Path, mutants: list[tuple[str, int, str | None]]) -> Path:
    """A session file with one spec per (module, line, test outcome or None for not run)."""
    path = tmp_path / "session.sqlite"
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement)
        for i, (module, line, test_outcome) in enumerate(mutants):
            spec = (module, line, str(i))
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/NumberReplacer', ?, 'flow', ?)", spec)
            if test_outcome is not None:
                db.execute("INSERT INTO work_results VALUES (?, 'NORMAL', ?)", (test_outcome, str(i)))
    return path


def test_outcomes_map_cosmic_rays_words_and_a_missing_result_is_not_run() -> None:
    assert [outcome(t) for t in ("KILLED", "SURVIVED", "INCOMPETENT", None)] == [
        "killed",
        "survived",
        "incompetent",
        None,
    ]


def test_the_score_is_per_module_over_the_mutants_judged(tmp_path: Path) -> None:
    path = session(
        tmp_path,
        [
            ("a/policy.py", 3, "KILLED"),
            ("a/policy.py", 5, "KILLED"),
            ("a/policy.py", 9, "SURVIVED"),
            ("a/policy.py", 12, None),
            ("b/stela.py", 1, "KILLED"),
            ("b/stela.py", 2, "INCOMPETENT"),
        ],
    )
    table = score_table(read_session(path)).splitlines()
    assert table[2] == "| policy.py | 4 | 3 | 2 | 1 | 66.7 % |"
    assert table[3] == "| stela.py | 2 | 2 | 1 | 0 | 100.0 % |"
    assert table[4] == "| total | 6 | 5 | 3 | 1 | 75.0 % |"


def test_survivors_are_listed_by_module_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path, [("a/flow.py", 7, "SURVIVED"), ("a/flow.py", 8, "KILLED")])
    assert main([str(path), "--survivors"]) == 0
    out = capsys.readouterr().out
    assert "a/flow.py:7 (flow): NumberReplacer" in out
    assert "a/flow.py:8" not in out
