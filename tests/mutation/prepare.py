"""Prepare a cosmic-ray session before ``cosmic-ray exec``: ``python tests/mutation/prepare.py
SESSION.sqlite [--sample N] [--seed S]``.

1. *Annotations are not run.* Every module here has ``from __future__ import annotations``, so an
   annotation is a string Python never evaluates: a mutant inside one (``X | None`` → ``X - None``)
   is equivalent by construction. They are marked ``SKIPPED`` (cosmic-ray's own outcome for
   filtered mutants) and counted apart by ``score.py``; about a third of the operator's mutants.
2. *A sample, when asked*: ``--sample N`` keeps a uniform random sample of N mutants (the others
   are removed from the session), so that a module of 1,200 mutants gets a score with a stated
   interval in an hour instead of a census in five. Results the session already holds for sampled
   mutants are kept (``RERUN``).
"""

from __future__ import annotations

import argparse
import ast
import random
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

Span = tuple[tuple[int, int], tuple[int, int]]


def annotation_spans(source: str) -> list[Span]:
    """((row, col), (end row, end col)) of every annotation: arguments', returns', ``x: T = …``'s."""
    spans: list[Span] = []
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.arg | ast.AnnAssign):
            annotations.append(node.annotation)
        for a in annotations:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def inside(position: tuple[int, int], spans: Iterable[Span]) -> bool:
    """Whether a (row, col) position (cosmic-ray's: rows from 1, columns from 0) lies in a span."""
    return any(start <= position < end for start, end in spans)


def annotation_jobs(db: sqlite3.Connection, root: Path) -> Iterator[str]:
    """The job ids of the session's mutants that lie inside an annotation."""
    spans: dict[str, list[Span]] = {}
    for job, module, row, col in db.execute(
        "SELECT job_id, module_path, start_pos_row, start_pos_col FROM mutation_specs"
    ):
        if module not in spans:
            spans[module] = annotation_spans((root / module).read_text(encoding="utf-8"))
        if inside((row, col), spans[module]):
            yield job


def sample_jobs(jobs: Sequence[str], size: int, seed: int) -> set[str]:
    """A uniform random sample of ``size`` job ids (all of them when there are fewer)."""
    return set(random.Random(seed).sample(sorted(jobs), min(size, len(jobs))))


def prepare(session: Path, root: Path, sample: int | None, seed: int) -> str:
    """Sample (if asked), then mark the annotation mutants skipped; one line saying what was done."""
    with sqlite3.connect(session) as db:
        jobs = [job for (job,) in db.execute("SELECT job_id FROM mutation_specs")]
        said = []
        if sample is not None:
            keep = sample_jobs(jobs, sample, seed)
            dropped = [(job,) for job in jobs if job not in keep]
            for table in ("work_results", "mutation_specs", "work_items"):
                db.executemany(f"DELETE FROM {table} WHERE job_id = ?", dropped)
            said.append(f"sampled {len(keep)} of {len(jobs)} mutants (seed {seed})")
        skipped = list(annotation_jobs(db, root))
        db.executemany(
            "INSERT OR REPLACE INTO work_results (worker_outcome, output, test_outcome, diff, job_id) "
            "VALUES ('SKIPPED', 'inside an annotation: equivalent', NULL, NULL, ?)",
            [(job,) for job in skipped],
        )
        said.append(f"{len(skipped)} inside annotations skipped")
    return "; ".join(said)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", type=Path)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the tree the module paths are under")
    parser.add_argument("--sample", type=int, help="keep a uniform random sample of this many mutants")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (1)")
    args = parser.parse_args(argv)
    if not args.session.is_file():
        parser.error(f"{args.session}: no such session file")
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample {args.sample}: must be at least 1")
    print(prepare(args.session, args.root, args.sample, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
