#!/usr/bin/env bash
# make mutation: copy the tree to .run/mutation, mutate the copy (its sources first on PYTHONPATH, so
# they shadow the editable installs), run the unit tests per mutant, print the score.
# MUTATE: another config (e.g. a single module, to try it quickly).
# RERUN: a finished session (.run/mutation/<config>.sqlite): run its surviving mutants again against
# today's tests (after tests were added to kill them), keeping every other result.
# SAMPLE=N (SEED=S, 1 by default): run a uniform random sample of N mutants (prepare.py), for a score
# with a stated interval in an hour instead of a census in hours. Mutants inside annotations are
# never run (equivalent: prepare.py marks them skipped).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
config=${MUTATE:-tests/mutation/cosmic-ray.toml}
rerun=${RERUN:+$(realpath "$RERUN")}
work=${MUTATION_WORK:-$repo/.run/mutation}  # another directory lets two selections run at once
rm -rf "$work/tree" && mkdir -p "$work/tree"
cd "$repo"
git ls-files -z planner/src operator/src spark/src tests examples crds charts pyproject.toml \
  | xargs -0 cp --parents -t "$work/tree"
cp "$config" "$work/config.toml"
config="$work/config.toml"
cd "$work/tree"
export PATH="$repo/.venv/bin:$PATH"
export PYTHONPATH="$work/tree/planner/src:$work/tree/operator/src:$work/tree/spark/src"
python -c "import stormscale.planner as p, sys; sys.exit(0 if p.__file__.startswith('$work/tree') else 'the copy does not shadow the install: ' + p.__file__)"
rm -f "$work/session.sqlite"
if [ -n "$rerun" ]; then
  cp "$rerun" "$work/session.sqlite"
  python -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(\"DELETE FROM work_results WHERE test_outcome = 'SURVIVED'\"); db.commit()" "$work/session.sqlite"
else
  cosmic-ray init "$config" "$work/session.sqlite"
fi
python "$repo/tests/mutation/prepare.py" "$work/session.sqlite" --root "$work/tree" \
  ${SAMPLE:+--sample "$SAMPLE" --seed "${SEED:-1}"}
cosmic-ray baseline "$config"
cosmic-ray exec "$config" "$work/session.sqlite"
cr-report "$work/session.sqlite" > "$work/report.txt"
name=$(basename "${MUTATE:-tests/mutation/cosmic-ray.toml}" .toml)${SAMPLE:+-sample$SAMPLE}${RERUN:+-rerun}
cp "$work/session.sqlite" "$work/$name.sqlite" && cp "$work/report.txt" "$work/$name-report.txt"
python "$repo/tests/mutation/score.py" "$work/$name.sqlite"
