"""The mutation score's reader (per module, killed over judged, mutants not run or skipped counted apart)
and the session's preparation (annotations skipped, a random sample)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.mutation.prepare import annotation_spans, inside, prepare, sample_jobs
from tests.mutation.score import main, outcome, read_session, score_table, wilson

SCHEMA = (
    "CREATE TABLE work_items (job_id VARCHAR PRIMARY KEY)",
    "CREATE TABLE mutation_specs (module_path VARCHAR, operator_name VARCHAR, start_pos_row INTEGER,"
    " start_pos_col INTEGER, definition_name VARCHAR, job_id VARCHAR PRIMARY KEY)",
    "CREATE TABLE work_results (worker_outcome VARCHAR, output TEXT, test_outcome VARCHAR, diff TEXT,"
    " job_id VARCHAR PRIMARY KEY)",
)


def session(
    tmp_path: Path, mutants: list[tuple[str, int, str | None]], column: int = 0, worker: str = "NORMAL"
) -> Path:
    """A session file with one spec per (module, line, test outcome or None for not run)."""
    path = tmp_path / "session.sqlite"
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement)
        for i, (module, line, test_outcome) in enumerate(mutants):
            db.execute("INSERT INTO work_items VALUES (?)", (str(i),))
            spec = (module, line, column, str(i))
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/NumberReplacer', ?, ?, 'flow', ?)", spec)
            if test_outcome is not None:
                result = (worker, test_outcome, str(i))
                db.execute("INSERT INTO work_results VALUES (?, '', ?, NULL, ?)", result)
    return path


def test_outcomes_map_cosmic_rays_words_and_a_missing_result_is_not_run() -> None:
    tests = ("KILLED", "SURVIVED", "INCOMPETENT", None)
    assert [outcome("NORMAL", t) for t in tests] == ["killed", "survived", "incompetent", None]
    assert outcome("SKIPPED", None) == "skipped"


def test_the_wilson_interval_matches_its_published_values() -> None:
    low, high = wilson(8, 10)  # 0.4902–0.9433 (Wilson 1927; e.g. Newcombe 1998, table I)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    low, high = wilson(10, 10)
    assert high == pytest.approx(1.0)
    assert round(low, 4) == 0.7225


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
    assert table[2] == "| policy.py | 4 | 0 | 3 | 2 | 1 | 66.7 % | 20.8–93.9 % |"
    assert table[3] == "| stela.py | 2 | 0 | 2 | 1 | 0 | 100.0 % | 20.7–100.0 % |"
    assert table[4] == "| total | 6 | 0 | 5 | 3 | 1 | 75.0 % | 30.1–95.4 % |"


def test_survivors_are_listed_by_module_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = session(tmp_path, [("a/flow.py", 7, "SURVIVED"), ("a/flow.py", 8, "KILLED")])
    assert main([str(path), "--survivors"]) == 0
    out = capsys.readouterr().out
    assert "a/flow.py:7 (flow): NumberReplacer" in out
    assert "a/flow.py:8" not in out


SOURCE = """from __future__ import annotations


def f(x: int | None, *, y: list[int] = []) -> dict[str, int | None]:
    z: int | None = x | 1
    return {"a": z}
"""


def test_annotation_spans_cover_arguments_returns_and_annotated_names_only() -> None:
    spans = annotation_spans(SOURCE)
    assert inside((4, 13), spans)  # the | of x's annotation
    assert inside((4, 60), spans)  # the | of the return annotation
    assert inside((5, 11), spans)  # z's annotation
    assert not inside((5, 22), spans)  # x | 1: code, not an annotation
    assert not inside((4, 39), spans)  # the default [] of y


def test_prepare_skips_the_annotation_mutants_and_keeps_the_others(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    path = session(tmp_path, [("m.py", 4, None), ("m.py", 5, None), ("m.py", 5, "SURVIVED")], column=13)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE mutation_specs SET start_pos_col = 22 WHERE job_id = '1'")
    assert prepare(path, tmp_path, None, 1) == "2 inside annotations skipped"
    assert [m.outcome for m in read_session(path)] == ["skipped", None, "skipped"]


def test_a_sample_is_seeded_uniform_and_keeps_the_results_it_holds(tmp_path: Path) -> None:
    jobs = [str(i) for i in range(100)]
    assert sample_jobs(jobs, 10, seed=3) == sample_jobs(list(reversed(jobs)), 10, seed=3)
    assert sample_jobs(jobs, 10, seed=3) != sample_jobs(jobs, 10, seed=4)
    assert sample_jobs(jobs, 500, seed=3) == set(jobs)
    (tmp_path / "m.py").write_text("x = 1\n", encoding="utf-8")
    path = session(tmp_path, [("m.py", 1, "KILLED" if i % 2 else None) for i in range(40)])
    assert prepare(path, tmp_path, 10, 7) == "sampled 10 of 40 mutants (seed 7); 0 inside annotations skipped"
    kept = read_session(path)
    with sqlite3.connect(path) as db:
        items = db.execute("SELECT count(*) FROM work_items").fetchone()[0]
        results = db.execute("SELECT count(*) FROM work_results").fetchone()[0]
    assert (len(kept), items) == (10, 10)
    assert results == sum(m.outcome == "killed" for m in kept)
